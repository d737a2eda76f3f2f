"""The pytest plugin, driven by pytest itself (pytester): fixtures, marker, factory, isolation, report
sections, --fakekafka-bootstrap, xdist, async tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

USES_KAFKA_PYTHON = '''
import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition


def produce(kafka, topic, values, partition=0):
    p = KafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    for v in values:
        p.send(topic, v, partition=partition)
    p.flush()
    p.close()
'''


def _outcomes(result: pytest.RunResult) -> dict[str, int]:
    return result.parseoutcomes()


def test_fixtures_marker_and_factory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_KAFKA_PYTHON + '''
def test_kafka_fixture_round_trip(kafka, fakekafka):
    assert kafka is fakekafka
    produce(kafka, "orders", [b"a", b"b"])
    assert [r.value for r in kafka.records("orders")] == [b"a", b"b"]
    assert kafka.end_offsets("orders") == {0: 2}


@pytest.mark.fakekafka(topics={"orders": 6}, auto_create_topics=False)
def test_marker(kafka):
    assert kafka.end_offsets("orders") == {i: 0 for i in range(6)}
    with pytest.raises(Exception):
        kafka.produce("other", b"x")


def test_factory_with_frozen_clock(fakekafka_cluster):
    a = fakekafka_cluster(partitions=3, clock="frozen")
    b = fakekafka_cluster()
    assert a.bootstrap_servers != b.bootstrap_servers
    before = a.produce("t", b"x")[1]
    now = a.advance_clock(60_000)
    assert a.records("t")[0].offset == before
    assert now == a.state.clock.now_ms()
    assert len(a.state.topics["t"].partitions) == 3


def test_unknown_setting_is_a_clear_error(fakekafka_cluster):
    with pytest.raises(TypeError, match="unknown fakekafka setting"):
        fakekafka_cluster(partitionz=3)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_no_state_leaks_between_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_KAFKA_PYTHON + '''
def test_first(kafka):
    kafka.create_topic("leaky", 2)
    produce(kafka, "leaky", [b"x"])
    c = KafkaConsumer("leaky", group_id="g", bootstrap_servers=kafka.bootstrap_servers,
                      auto_offset_reset="earliest")
    kafka.wait_until(lambda: c.poll(1000))  # long: kafka-python quirk, see the README
    c.commit()
    c.close()
    assert kafka.committed("g")


def test_second(kafka):
    assert kafka.topics() == []
    assert kafka.groups() == []
    assert kafka.requests() == []
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_failing_test_gets_a_cluster_report(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(USES_KAFKA_PYTHON + '''
def test_fails(kafka):
    produce(kafka, "reported-topic", [b"x", b"y"])
    c = KafkaConsumer("reported-topic", group_id="reported-group", bootstrap_servers=kafka.bootstrap_servers,
                      auto_offset_reset="earliest")
    got = []
    kafka.wait_until(lambda: got.extend(sum(c.poll(1000).values(), [])) or len(got) == 2)  # long: see the README
    c.commit()
    kafka.assert_committed("reported-group", {("reported-topic", 0): 1})
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "fakekafka cluster 1" in out
    assert "reported-topic (1 partitions) [0: 0..2]" in out
    assert "reported-group: Stable" in out and "committed reported-topic-0: 2" in out
    assert "OffsetCommit v" in out and "Produce v" in out
    assert "(committed, expected): {('reported-topic', 0): (2, 1)}" in out


@pytest.fixture
def external_broker() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, "-m", "fakekafka", "serve", "--port", "0"], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "bootstrap.servers=" in line, line
    yield next(part.split("=", 1)[1] for part in line.split() if part.startswith("bootstrap.servers="))
    proc.terminate()
    proc.wait(10)


def test_bootstrap_option_runs_against_another_cluster(pytester: pytest.Pytester, external_broker: str) -> None:
    pytester.makepyfile(USES_KAFKA_PYTHON + f'''
@pytest.mark.fakekafka(topics={{"remote-orders": 3}})
def test_same_test_on_any_cluster(kafka):
    assert kafka.bootstrap_servers == "{external_broker}"
    produce(kafka, "remote-orders", [b"1", b"2"], partition=2)
    assert [(r.partition, r.value) for r in kafka.records("remote-orders")] == [(2, b"1"), (2, b"2")]
    assert kafka.end_offsets("remote-orders") == {{0: 0, 1: 0, 2: 2}}


@pytest.mark.fakekafka_only
def test_steering(kafka):
    kafka.advance_clock(1)
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--fakekafka-bootstrap={external_broker}",
                                           "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*steers the cluster*"])


def test_parallel_runs_with_xdist_never_clash(pytester: pytest.Pytester) -> None:
    """Each xdist worker is a process with its own plugin, loop thread and clusters; ports come from the
    kernel, so workers never clash. Every test records its worker: both workers served tests."""
    pytest.importorskip("xdist", reason="pytest-xdist is not installed: pip install pytest-xdist")
    seen = pytester.mkdir("seen")
    body = "".join(f'''
def test_{i}(kafka, worker_id):
    produce(kafka, "t", [b"{i}"])
    assert [r.value for r in kafka.records("t")] == [b"{i}"]
    open(r"{seen}/{i}", "w").write(worker_id + " " + kafka.bootstrap_servers)
''' for i in range(8))
    pytester.makepyfile(USES_KAFKA_PYTHON + body)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    result.assert_outcomes(passed=8)
    workers = {(seen / str(i)).read_text().split()[0] for i in range(8)}
    assert workers == {"gw0", "gw1"}


ASYNC_TESTS = '''
import pytest
import pytest_asyncio
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


@pytest_asyncio.fixture
async def producer(kafka):
    p = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    await p.start()
    yield p
    await p.stop()


@pytest.mark.asyncio
async def test_marked(kafka, producer):
    await producer.send_and_wait("a", b"hello")
    consumer = AIOKafkaConsumer("a", bootstrap_servers=kafka.bootstrap_servers, group_id="ag",
                                auto_offset_reset="earliest")
    await consumer.start()
    msg = await consumer.getone()
    await consumer.commit()
    await consumer.stop()
    assert msg.value == b"hello"
    kafka.assert_committed("ag", {("a", 0): 1})


def test_sync_beside_them(kafka):
    kafka.produce("s", b"x")
    assert kafka.end_offsets("s") == {0: 1}

'''
UNMARKED = '''

async def test_unmarked(kafka):
    p = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    await p.start()
    await p.send_and_wait("u", b"1")
    await p.stop()
    assert kafka.end_offsets("u") == {0: 1}
'''


@pytest.mark.parametrize("mode", ["strict", "auto"])
def test_async_tests_with_aiokafka(pytester: pytest.Pytester, mode: str) -> None:
    """pytest-asyncio's two modes: the cluster runs on its own thread, so whichever event loop pytest-asyncio
    gives a test, the test and its async fixtures built on `kafka` just use its address. In auto mode an
    unmarked async test runs too (strict mode needs the marker: pytest-asyncio's rule, not ours)."""
    pytester.makepyfile(ASYNC_TESTS + (UNMARKED if mode == "auto" else ""))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-o", f"asyncio_mode={mode}",
                                           "-o", "asyncio_default_fixture_loop_scope=function")
    result.assert_outcomes(passed=3 if mode == "auto" else 2)


def test_p_no_fakekafka_turns_the_plugin_off(pytester: pytest.Pytester) -> None:
    """`-p no:fakekafka`: no fixtures, no options; a project's own `kafka` fixture is left alone."""
    pytester.makeconftest('''
import pytest


@pytest.fixture
def kafka():
    return "the project's own"
''')
    pytester.makepyfile('''
def test_own_fixture(kafka):
    assert kafka == "the project's own"


def test_no_factory(fakekafka_cluster):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:fakekafka")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'fakekafka_cluster' not found*"])
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:fakekafka", "--fakekafka-bootstrap=x:1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # with the plugin on, the conftest's fixture overrides the plugin's, as any closer fixture does
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "own")
    result.assert_outcomes(passed=1, deselected=1)


def test_client_deprecation_noise_is_filtered_for_users(pytester: pytest.Pytester) -> None:
    """kafka-python 3 warns twice per protocol schema it loads (importlib.resources.read_text, deprecated in
    Python 3.11-3.12): the plugin filters exactly those, even under `filterwarnings = error`; a user's own
    deprecated call still warns."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nfilterwarnings =\n    error\n"
                     "    default:read_text:DeprecationWarning:test_noise\n")
    pytester.makepyfile(test_noise=USES_KAFKA_PYTHON + '''
import importlib.resources


def test_uses_kafka_python(kafka):
    produce(kafka, "t", [b"x"])
    c = KafkaConsumer("t", bootstrap_servers=kafka.bootstrap_servers, auto_offset_reset="earliest")
    assert kafka.wait_until(lambda: c.poll(1000))
    c.close()


def test_users_own_deprecated_call():
    importlib.resources.read_text("json", "__init__.py")
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*test_noise.py:*: DeprecationWarning: read_text is deprecated*"])
    assert "kafka/protocol" not in result.stdout.str()


def _kafka_libs() -> dict[str, str]:
    from fakekafka.testing.apache_kafka import KAFKA_VERSION, OLDER_KAFKA, kafka_lib, lib_env
    return {lib_env(v): str(lib) for v in (KAFKA_VERSION, OLDER_KAFKA) if (lib := kafka_lib(v)) is not None}


KAFKA_LIBS = _kafka_libs()
"""Kafka 4.4.0's and 3.9.1's jars, found at import under the real HOME (pytester's is a temporary one)."""


def _real_kafka_or_skip() -> None:
    from fakekafka.testing.apache_kafka import INSTALL_HINT, kafka_lib
    if kafka_lib() is None or shutil.which("java") is None:
        pytest.skip(f"Apache Kafka's jars or java are missing: {INSTALL_HINT}")


def test_kafka_version_runs_on_kafka_391_under_kafka_real(pytester: pytest.Pytester,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The same test, marked kafka_version="3.9", on fakekafka standing in for 3.9 and (--kafka-real) on Apache Kafka
    3.9.1 itself: the same ApiVersions ranges a client sees, the consumer protocol refused the same way, 3.9's config
    names and defaults; 2.8 has no broker to run here and is skipped, saying why."""
    from fakekafka.testing.apache_kafka import OLDER_KAFKA
    if len(KAFKA_LIBS) < 2 or shutil.which("java") is None:
        pytest.skip(f"Apache Kafka 4.4.0's or {OLDER_KAFKA}'s jars or java are missing: run .ci/install.sh")
    for name, lib in KAFKA_LIBS.items():
        monkeypatch.setenv(name, lib)
    pytester.makepyfile('''
import time

import pytest
from fakekafka.testing.client import WireConnection
from fakekafka.wire import ApiKey, ErrorCode


@pytest.mark.fakekafka(kafka_version="3.9")
def test_as_39(kafka):
    host, port = kafka.bootstrap_servers.split(",")[0].rsplit(":", 1)
    conn = WireConnection(host, int(port), "t", 30)
    try:
        assert conn.versions[ApiKey.API_VERSIONS] == (0, 4) and conn.versions[ApiKey.PRODUCE][1] == 11
        assert ApiKey.SHARE_GROUP_HEARTBEAT not in conn.versions
        hb = conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "g", "member_id": "", "member_epoch": 0, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": ["t"], "server_assignor": None, "topic_partitions": []})
        assert hb.error_code == ErrorCode.UNSUPPORTED_VERSION
        created = conn.request(ApiKey.CREATE_TOPICS, 5, {"topics": [{"name": "cfg", "num_partitions": 1,
            "replication_factor": 1, "assignments": [], "configs": []}], "timeout_ms": 30000, "validate_only": False})
        assert created.topics[0].error_code == ErrorCode.NONE
        node = conn.request(ApiKey.METADATA, 9, {"topics": [], "allow_auto_topic_creation": False,
                                                 "include_cluster_authorized_operations": False,
                                                 "include_topic_authorized_operations": False}).brokers[0].node_id
        keys = {2: ["message.format.version", "message.timestamp.after.max.ms", "max.decompressed.message.bytes"],
                4: ["num.recovery.threads.per.data.dir", "group.coordinator.rebalance.protocols",
                    "log.message.format.version"]}
        ask = {"resources": [{"resource_type": t, "resource_name": "cfg" if t == 2 else str(node),
                              "configuration_keys": k} for t, k in keys.items()],
               "include_synonyms": False, "include_documentation": False}
        deadline = time.monotonic() + 30
        while (described := conn.request(ApiKey.DESCRIBE_CONFIGS, 4, ask)).results[0].error_code \
                and time.monotonic() < deadline:  # Kafka's broker learns of the new topic from its controller
            time.sleep(0.05)
        got = [{c.name: (c.value, c.config_source) for c in r.configs} for r in described.results]
        unlimited = str(2**63 - 1)
        assert got == [{"message.format.version": ("3.0-IV1", 5), "message.timestamp.after.max.ms": (unlimited, 5)},
                       {"num.recovery.threads.per.data.dir": ("1", 5),
                        "group.coordinator.rebalance.protocols": ("classic", 5),
                        "log.message.format.version": ("3.0-IV1", 5)}]  # 3.9's defaults, not 4.4's
    finally:
        conn.close()


@pytest.mark.fakekafka(kafka_version="2.8")
def test_as_28(kafka):
    pass
''')
    local = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    local.assert_outcomes(passed=2)
    real = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kafka-real", "-rs")
    real.assert_outcomes(passed=1, skipped=1)
    real.stdout.fnmatch_lines(["*--kafka-real has no Apache Kafka 2.8 to run*"])


def test_kafka_real_runs_the_same_tests_against_apache_kafka(pytester: pytest.Pytester) -> None:
    """One JVM for the session's one-node tests, another for `brokers=3`; each test starts on an empty cluster
    (the plugin deletes what the previous one left); tests that need fakekafka are skipped, saying why."""
    _real_kafka_or_skip()
    pytester.makepyfile(USES_KAFKA_PYTHON + '''
from fakekafka.testing.client import RemoteCluster


@pytest.mark.fakekafka(topics={"orders": 3})
def test_first(kafka):
    assert isinstance(kafka, RemoteCluster)
    produce(kafka, "orders", [b"1", b"2"], partition=2)
    produce(kafka, "auto-created", [b"x"])
    assert [(r.partition, r.value) for r in kafka.records("orders")] == [(2, b"1"), (2, b"2")]
    c = KafkaConsumer("auto-created", group_id="g", bootstrap_servers=kafka.bootstrap_servers,
                      auto_offset_reset="earliest")
    kafka.wait_until(lambda: c.poll(1000))
    c.commit()
    c.close()
    kafka.assert_committed("g", {("auto-created", 0): 1})
    assert kafka.topics() == ["auto-created", "orders"] and kafka.groups() == ["g"]


@pytest.mark.fakekafka(topics={"orders": 1}, partitions=4)
def test_second_starts_empty(kafka):
    assert kafka.end_offsets("orders") == {0: 0}
    assert kafka.groups() == [] and kafka.committed("g") == {}
    kafka.create_topic("four")
    assert kafka.end_offsets("four") == {i: 0 for i in range(4)}


def test_leaves_a_consumer_open(kafka):
    produce(kafka, "t", [b"x"])
    c = KafkaConsumer("t", group_id="left-open", bootstrap_servers=kafka.bootstrap_servers,
                      auto_offset_reset="earliest")
    kafka.wait_until(lambda: c.poll(1000))


@pytest.mark.fakekafka(brokers=3)
def test_three_brokers(kafka):
    kafka.create_topic("replicated", 3, replication_factor=3)
    assert kafka.produce("replicated", b"v", partition=1) == (1, 0)
    assert len(kafka.bootstrap_servers.split(",")) == 3


@pytest.mark.fakekafka_only
def test_steering(kafka):
    kafka.advance_clock(1)


@pytest.mark.fakekafka(clock="frozen")
def test_frozen_clock(kafka):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kafka-real", "-rs")
    result.assert_outcomes(passed=4, skipped=2)
    result.stdout.fnmatch_lines(["*--kafka-real: group(s) left-open still had members after the test*",
                                 "--kafka-real: Apache Kafka (1 node) at 127.0.0.1:*, started in * s",
                                 "--kafka-real: Apache Kafka (3 nodes) at *",
                                 "*steers the cluster*Apache Kafka*", "*clock needs an in-process fakekafka*"])


def test_kafka_real_without_kafka_says_what_to_install(pytester: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKEKAFKA_KAFKA_LIB", str(pytester.mkdir("no-jars")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(pytester.mkdir("no-cache")))
    pytester.makepyfile("def test_never_runs(kafka):\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--kafka-real")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kafka-real: Apache Kafka 4.* jars are not installed: run `fakekafka kafka "
                                 "install`*"])


def test_marker_data_dir_keeps_a_topic_for_the_next_test(pytester: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The second test's cluster opens the dir the first one's closed (the plugin's teardown waits for a data
    dir's files to close)."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).resolve().parents[2]))  # this checkout's fakekafka
    data = str(pytester.path / "kept")
    pytester.makepyfile(f'''
import pytest


@pytest.mark.fakekafka(data_dir={data!r})
def test_first(kafka):
    kafka.create_topic("kept", 2)
    kafka.produce("kept", b"v", key=b"k")


@pytest.mark.fakekafka(data_dir={data!r})
def test_second(kafka):
    assert kafka.topics() == ["kept"]
    assert [r.value for r in kafka.records("kept")] == [b"v"]
''')
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_kafka_real_starts_a_cluster_again_when_a_node_died(monkeypatch: pytest.MonkeyPatch) -> None:
    """A --kafka-real cluster whose node JVM died is not handed to the next test: a new one is started, and the
    summary says which process died (stand-in clusters: no JVM needed)."""
    import importlib
    import subprocess
    import sys

    from fakekafka.testing.pytest_plugin import RealKafka

    class Stub:
        made = 0

        def __init__(self, *args: object, **kwargs: object) -> None:
            Stub.made += 1
            self.procs = [subprocess.Popen([sys.executable, "-c", "pass"])]
            self.procs[0].wait()
            self.bootstrap_servers, self.stopped = f"127.0.0.1:{Stub.made}", False

        def start(self) -> Stub:
            return self

        def stop(self, *, graceful: bool = True) -> None:
            self.stopped = True

        def log(self, node_id: int = 1, tail: int = 4000) -> str:
            return "node log"

    # the module RealKafka imports from (pytester's in-process runs may have left another copy as the attribute)
    monkeypatch.setattr(importlib.import_module("fakekafka.testing.apache_kafka"), "KafkaCluster", Stub)
    real = RealKafka()
    assert real.bootstrap(1, True) == "127.0.0.1:1"
    first = real.clusters[(1, True, None)]
    assert real.bootstrap(1, True) == "127.0.0.1:2" and first.stopped  # its one node had exited
    pid = first.procs[0].pid
    assert real.restarts == [f"1 node: node JVM pid {pid} exited with 0; its log: 'node log'"]
