"""The open-client check of tests/conftest.py: a client left open past its test's cluster fails the session,
naming the test that left it."""

from __future__ import annotations

import pytest

pytest.importorskip("confluent_kafka")


@pytest.mark.parametrize("workers", [[], ["-n", "1"]], ids=["serial", "xdist"])
def test_a_client_left_open_fails_the_session_naming_its_test(pytester, monkeypatch, request, workers):
    """Also under xdist (as .ci/test runs the tiers), where a worker finds it and the controller reports it."""
    monkeypatch.setenv("PYTHONPATH", str(request.config.rootpath))
    pytester.makepyfile(test_leak="""
        import sys

        import confluent_kafka

        import fakekafka

        left_open = []

        def test_leaves_a_consumer_open():
            with fakekafka.Cluster() as cluster:
                consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                                                     "group.id": "g", "reconnect.backoff.max.ms": 200})
                consumer.subscribe(["t"])
                consumer.poll(0.5)
                left_open.append(consumer)

        def test_later(capfd):
            # the consumer keeps reconnecting to the stopped cluster: its refused connections land in this test's
            # output (read here to know when, then written back for the check to see)
            err = ""
            while "Connection refused" not in err:
                left_open[0].poll(0.2)
                err += capfd.readouterr().err
            sys.stderr.write(err)

        def test_closes_it():
            left_open.pop().close()
    """)
    result = pytester.runpytest_subprocess("-p", "tests.conftest", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["open client: test_leak.py::test_leaves_a_consumer_open left a Kafka client open; "
                                 "it still connected to its stopped cluster (port *) during test_leak.py::test_later"])
