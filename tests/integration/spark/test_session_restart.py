"""The `spark` fixture's isolation: a test that breaks the shared SparkSession (kills its JVM, times out inside a
py4j call, stops it) fails alone; the next test gets a working session, and the summary says why it restarted."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.mark.timeout(300)  # four Spark starts in a child pytest
def test_a_broken_session_is_started_again_for_the_next_test(pytester):
    pytester.makepyfile(test_breaks="""
        import os
        import signal

        import pytest

        def test_kills_the_jvm(spark):
            proc = spark.sparkContext._gateway.proc
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)

        def test_after_the_kill(spark):
            assert spark.range(5).count() == 5

        @pytest.mark.timeout(5, func_only=True)
        def test_times_out_inside_a_jvm_call(spark):
            spark.sparkContext._jvm.java.lang.Thread.sleep(600_000)

        def test_after_the_timeout(spark):
            assert spark.range(3).count() == 3

        def test_stops_the_session(spark):
            spark.stop()

        def test_after_the_stop(spark):
            assert spark.range(2).count() == 2
    """)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--spark-route=auto")
    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines([
        "spark: the SparkSession was started again before test_breaks.py::test_after_the_kill: "
        "the Spark JVM (pid *) exited with -9",
        "spark: the SparkSession was started again before test_breaks.py::test_after_the_timeout: "
        "a py4j call into its JVM was cut off*",
        "spark: the SparkSession was started again before test_breaks.py::test_after_the_stop: "
        "its SparkContext was stopped",
        "FAILED test_breaks.py::test_times_out_inside_a_jvm_call - Failed: Timeout*",
    ])
