"""The Spark pytest plugin without Spark: it loads, the fixture skips saying what to install, and the `spark`
marker lets `-m "not spark"` leave Spark tests out. Runs in subprocesses where pyspark cannot be imported."""

from __future__ import annotations

import subprocess
import sys

BLOCK_PYSPARK = "import sys; sys.modules['pyspark'] = None  # as if pyspark were not installed\n"


def test_fakekafka_and_the_plugin_import_without_pyspark():
    code = BLOCK_PYSPARK + ("import fakekafka, fakekafka.spark, fakekafka.spark.pytest_plugin\n"
                            "assert 'pyspark' not in {m.split('.')[0] for m, v in sys.modules.items() if v}\n"
                            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_spark_fixture_skips_with_the_install_hint_and_is_marked(pytester):
    pytester.makeconftest(BLOCK_PYSPARK)
    pytester.makepyfile(test_job="""
        def test_uses_spark(spark):
            raise AssertionError("not reached: the fixture skips")

        def test_plain():
            pass
    """)
    result = pytester.runpytest_subprocess("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.re_match_lines([r".*pyspark is not installed: pip install 'fakekafka\[spark\]'"])
    # the marker comes with the fixture, so the core suite can run without Spark
    result = pytester.runpytest_subprocess("-m", "not spark")
    result.assert_outcomes(passed=1, deselected=1)


def test_spark_route_option_parametrises_the_spark_tests(pytester):
    """--spark-route both: every test using `spark` twice, [connector] and [standin], but those marked
    spark_any_route; marked: only the spark_both_routes ones; auto (the default): no parameter. Collection only,
    so no Spark starts."""
    pytester.makepyfile(test_routes="""
        import pytest

        def test_job(spark):
            pass

        @pytest.mark.spark_both_routes
        def test_marked(spark):
            pass

        @pytest.mark.spark_any_route
        def test_route_choice(spark):
            pass

        def test_plain():
            pass
    """)
    def collected(*args: str) -> list[str]:
        out = pytester.runpytest_subprocess("--collect-only", "-q", *args).stdout.lines
        return sorted(line.split("::")[1] for line in out if "::" in line)

    assert collected() == ["test_job", "test_marked", "test_plain", "test_route_choice"]
    assert collected("--spark-route", "both") == [
        "test_job[connector]", "test_job[standin]", "test_marked[connector]", "test_marked[standin]", "test_plain",
        "test_route_choice"]
    assert collected("--spark-route", "marked") == [
        "test_job", "test_marked[connector]", "test_marked[standin]", "test_plain", "test_route_choice"]
    assert collected("--spark-route", "standin") == [
        "test_job[standin]", "test_marked[standin]", "test_plain", "test_route_choice"]
