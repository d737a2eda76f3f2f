"""The brokers a run compares: started here (fakekafka, tansu, a Kafka container, librdkafka's mock
cluster) or reached at an address (bootstrap=HOST:PORT).

    fakekafka          `python -m fakekafka serve --port 0 --no-auto-create-topics` (a subprocess)
    tansu              $FAKEKAFKA_BIN/tansu (from `eval "$(bash .ci/install.sh)"`), memory storage; it always
                       auto-creates topics and joins groups only after session.timeout.ms / 2, so it runs
                       with session.timeout.ms=10000 and long waits
    kafka              Apache Kafka 4.x (KRaft, one combined node) as a JVM process from its Maven jars
                       (compat/apache_kafka.py; `.ci/install.sh` resolves them), auto-create off; where the
                       jars are missing and Docker is reachable, apache/kafka through testcontainers
    kafka-3            the same with three nodes (each broker and controller): the reference of the fault
                       scenarios (compat/scenarios/faults.py), which SIGKILL a node's JVM and start it again
    fakekafka-3        `fakekafka serve --brokers 3`, judged against kafka-3; its brokers killed and restarted
                       through its control port (`fakekafka ctl kill-broker` / `restart-broker`)
    kafka-3.9          Apache Kafka 3.9.1 (KRaft, one node) from its Maven jars (.ci/install.sh resolves them):
                       the reference of fakekafka-3.9
    fakekafka-3.9      `fakekafka serve --kafka-version 3.9`, judged against kafka-3.9 when the run has it
    librdkafka-mock    the mock cluster inside librdkafka (confluent-kafka): only librdkafka clients can
                       talk to it; no CreateTopics (topics appear with 4 partitions when first asked for)
    bootstrap=H:P      any running cluster; whether it auto-creates topics is probed once
    proxy:KIND         any of the above behind `fakekafka proxy` (a subprocess): every client reaches the
                       broker only through the proxy's listeners. With KIND itself in the same run, the proxy
                       stands in front of that very broker (one Kafka, two ways in), and each proxied cell is
                       judged against the direct cell of the same scenario and client

A broker that cannot be had here raises Unavailable with the reason and how to fix it; its cells are
skipped, not failed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from compat.clients.base import Timing, Unsupported
from fakekafka.testing.ports import free_port
from fakekafka.wire import ApiKey

if TYPE_CHECKING:
    from fakekafka.testing.client import RemoteCluster

__all__ = ["KINDS", "PROXY", "THREE_BROKERS", "Faults", "Target", "Unavailable", "start_proxy", "start_target",
           "stop_live_targets", "stop_targets", "tansu_binary"]

HOST = "127.0.0.1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KAFKA_IMAGE = "apache/kafka:3.9.0"
KINDS = ("fakekafka", "tansu", "kafka", "kafka-3", "fakekafka-3", "kafka-3.9", "fakekafka-3.9", "librdkafka-mock",
         "bootstrap=HOST:PORT", "proxy:KIND")
REFERENCES = {"fakekafka-3.9": "kafka-3.9", "fakekafka-3": "kafka-3"}
"""A broker judged against another real Kafka than `kafka` (4.4): fakekafka standing in for an older release, or
three fakekafka brokers against three Kafka nodes (the fault scenarios need three)."""
REAL_KAFKAS = ("kafka", "kafka-3.9", "kafka-3")
"""The reference Kafkas: their cells are judged against the written expectations."""
THREE_BROKERS = "three_brokers"
"""The feature of a broker kind with three brokers whose faults a scenario can cause (Target.faults)."""

FAULT_TIMING = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
"""Set on both three-broker kinds: a killed broker is fenced, and its partitions led elsewhere, 3 s after its last
heartbeat instead of Kafka's 9 s (broker.session.timeout.ms, a controller config; heartbeats every 0.5 s), so a
fault scenario waits seconds, not tens of them."""
PROXY = "proxy:"

FAST = Timing(op_s=15, fetch_s=10, group_s=30, session_timeout_ms=6000, heartbeat_ms=500, metadata_ms=4000)
REFERENCE = Timing(op_s=25, fetch_s=20, group_s=60, session_timeout_ms=6000, heartbeat_ms=500, metadata_ms=4000)
"""The real Kafkas' waits: longer than FAST's, as a JVM broker on a loaded 2-core machine can take seconds to list a
topic just created or to answer a fetch; every wait ends as soon as the answer comes, so a healthy run pays
nothing for them (the few fetches a scenario expects to come back empty wait `fetch_s` in full)."""
SLOW_GROUPS = Timing(op_s=12, fetch_s=12, group_s=45, session_timeout_ms=10000, heartbeat_ms=1000, metadata_ms=3000)


class Unavailable(Exception):
    """This broker cannot be had on this machine (the reason says what to install or start)."""


@dataclass
class Faults:
    """What a scenario can do to a broker kind's brokers, by node id: SIGKILL one (no controlled shutdown; on
    fakekafka `kill-broker`, its connections dropped at once) and start it again. `lock` is held by each fault
    cell for its whole run: a killed broker is every lane's, so fault cells on one cluster take turns."""

    kill: Callable[[int], None]
    restart: Callable[[int], None]
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Target:
    name: str
    bootstrap: str
    timing: Timing
    auto_create: bool | None
    clients: tuple[str, ...] | None = None  # the only clients that can talk to it (None: all)
    create_topics: bool = True  # CreateTopics works
    slow_groups: bool = False  # group joins take seconds (`--quick` leaves out the slow scenarios)
    note: str = ""
    cannot: dict[str, str] = field(default_factory=dict)  # client abilities it cannot serve (see Client.cannot)
    client_cannot: dict[str, dict[str, str]] = field(default_factory=dict)  # the same, for one client only
    stop: Callable[[], None] = field(default=lambda: None, repr=False)
    behind: str | None = None  # proxy:KIND: the name of the broker behind the proxy
    direct: str | None = None  # `compat diff`: the broker's own address behind the recording relay (Env.waiter)
    faults: Faults | None = None  # three brokers a scenario may kill and restart (the fault scenarios)
    log: Callable[[], str] | None = field(default=None, repr=False)  # the end of the broker's own log, if it keeps one
    about: Callable[[str], list[str]] | None = field(default=None, repr=False)  # its log's lines naming a text

    @property
    def prefix_tag(self) -> str:
        """Set into every topic and group name of this broker's cells: a proxy and the broker behind it, in
        one run, are one cluster, and their cells must not share names."""
        return "p-" if self.behind is not None else ""

    def features(self) -> set[str]:
        return ({"auto_create_off"} if self.auto_create is False else set()) | \
            ({THREE_BROKERS} if self.faults is not None and self.behind is None else set())

    def create_topic(self, cluster: RemoteCluster, topic: str, partitions: int, configs: dict[str, str] | None,
                     replication_factor: int = 1) -> None:
        if self.create_topics:
            cluster.create_topic(topic, partitions, replication_factor=replication_factor, configs=configs)
        else:
            if partitions != 1 or configs:
                raise Unsupported(f"{self.name} cannot create topics with {partitions} partitions or configs")
            _auto_create(self.bootstrap, topic)
        deadline = time.monotonic() + self.timing.op_s
        while True:  # until every partition has a leader (Kafka creates topics asynchronously)
            try:
                t = cluster._topic(topic)
                if len(t.partitions) >= partitions and all(p.leader_id >= 0 for p in t.partitions):
                    return
            except Exception:  # noqa: BLE001 - not there yet
                if time.monotonic() > deadline:
                    raise
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} has no leaders after {self.timing.op_s}s")
            time.sleep(0.05)


def _auto_create(bootstrap: str, topic: str) -> bool:
    """Metadata for `topic` with allow_auto_topic_creation; True if the broker then knows the topic."""
    from fakekafka.testing.client import WireConnection
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = WireConnection(host, int(port), "compat-probe", 10)
    try:
        v = min(conn.version_for(ApiKey.METADATA), 12)
        for _ in range(20):
            r = conn.request(ApiKey.METADATA, v, {"topics": [{"name": topic}], "allow_auto_topic_creation": True})
            if any(t.name == topic and t.error_code == 0 for t in r.topics):
                return True
            if not any(t.error_code == 5 for t in r.topics):  # LEADER_NOT_AVAILABLE: being created
                return False
            time.sleep(0.1)
        return False
    finally:
        conn.close()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.1):
            return True
    except OSError:
        return False


def _spawn(cmd: list[str], ready: re.Pattern[bytes], timeout: float, port: int | None = None,
           env: dict[str, str] | None = None) -> tuple[subprocess.Popen[bytes], re.Match[bytes]]:
    """Starts cmd in its own process group; returns once its output matches `ready` (and `port` accepts)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, cwd=ROOT, env=env)
    out = bytearray()
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    match = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unavailable(f"{cmd[0]} exited with {proc.returncode}: {out.decode(errors='replace')[-1000:]}")
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            out += os.read(fd, 65536)
        match = match or ready.search(out)
        if match and (port is None or _accepts(port)):
            # keep draining its output so it never blocks on a full pipe
            import threading
            threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(fd, 65536), b"")],
                             daemon=True).start()
            return proc, match
    _kill(proc)
    raise Unavailable(f"{cmd[0]} not ready after {timeout:.0f}s: {out.decode(errors='replace')[-1000:]}")


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the process group, SIGKILL after 5 s."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def tansu_binary() -> str | None:
    """$FAKEKAFKA_BIN/tansu, else ~/.cache/fakekafka/bin/tansu, else `tansu` on PATH."""
    for d in (os.environ.get("FAKEKAFKA_BIN"), os.path.expanduser("~/.cache/fakekafka/bin")):
        if d and os.access(os.path.join(d, "tansu"), os.X_OK):
            return os.path.join(d, "tansu")
    return shutil.which("tansu")


CLEANER_BACKOFF = {"log.cleaner.backoff.ms": "100"}
"""Set in both brokers' properties: the log cleaner looks for work every 100 ms instead of Kafka's 15 s, so the
compaction scenarios (compacted_topic_read_from_earliest) see it clean within a second. Static, so every cell
sees the same DescribeConfigs (a scenario setting it dynamically would show in the other cells' answers)."""

RETENTION_CHECKS = {"log.initial.task.delay.ms": "0", "log.retention.check.interval.ms": "100"}
"""Set in both brokers' properties too: retention is checked from the start (Kafka's first check otherwise comes
30 s after start: log.initial.task.delay.ms, an internal config Kafka then lists among the broker's configs) and
every 100 ms instead of 5 minutes (log.retention.check.interval.ms, static), so the retention scenario
(retention_leaves_readable) sees segments deleted within a second."""

UNMODELLED = {"num.io.threads": "4", "background.threads": "5", "socket.listen.backlog.size": "100"}
"""Set in both brokers' properties as well: broker configs fakekafka takes by name but has no use for (Kafka's
thread pools, its listen backlog), so `python -m compat diff` compares how each describes a setting it was
started with (value, STATIC_BROKER_CONFIG, read_only, synonyms), not only Kafka's defaults. Harmless for the
reference: fewer request and background threads than Kafka's 8 and 10 suit a 2-core machine."""

BROKER_PROPERTIES = {**CLEANER_BACKOFF, **RETENTION_CHECKS, **UNMODELLED}
"""Every property both compat brokers are started with beyond their defaults."""


def start_fakekafka(kafka_version: str | None = None) -> Target:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "fakekafka", "serve", "--host", HOST, "--port", "0", "--no-auto-create-topics",
           "--log-level", "warning", *(a for k, v in BROKER_PROPERTIES.items() for a in ("--config", f"{k}={v}")),
           *(("--kafka-version", kafka_version) if kafka_version else ())]
    proc, m = _spawn(cmd, re.compile(rb"bootstrap\.servers=(\S+)"), 30, env=env)
    return Target("fakekafka" + (f"-{kafka_version}" if kafka_version else ""), m.group(1).decode(), FAST,
                  auto_create=False, stop=lambda: _kill(proc),
                  note=f"--kafka-version {kafka_version}" if kafka_version else "")


def start_fakekafka_3() -> Target:
    """`fakekafka serve --brokers 3` (a subprocess), its brokers killed and restarted through its control port."""
    from fakekafka.ops.control import send_command
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    props = {**BROKER_PROPERTIES, **FAULT_TIMING}
    cmd = [sys.executable, "-m", "fakekafka", "serve", "--host", HOST, "--port", "0", "--brokers", "3",
           "--no-auto-create-topics", "--log-level", "warning", "--control-port", "0",
           *(a for k, v in props.items() for a in ("--config", f"{k}={v}"))]
    proc, m = _spawn(cmd, re.compile(rb"bootstrap\.servers=(\S+) control=(\S+)"), 30, env=env)
    control = m.group(2).decode()

    def command(name: str) -> Callable[[int], None]:
        def run(node_id: int) -> None:
            reply = send_command(control, name, {"broker": node_id})
            if not reply.get("ok"):
                raise RuntimeError(f"fakekafka ctl {name} {node_id}: {reply.get('error')}")
        return run
    return Target("fakekafka-3", m.group(1).decode(), FAST, auto_create=False, stop=lambda: _kill(proc),
                  note="--brokers 3", faults=Faults(command("kill-broker"), command("restart-broker")))


def start_tansu() -> Target:
    binary = tansu_binary()
    if binary is None:
        raise Unavailable('tansu is not installed: run `eval "$(bash .ci/install.sh)"` (sets FAKEKAFKA_BIN)')
    port = free_port(HOST)
    url = f"tcp://{HOST}:{port}"
    proc, _ = _spawn([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                      "--storage-engine", "memory://tansu/"], re.compile(rb"ready in"), 30, port=port)
    # kafka-clients 4.x hangs against tansu: its consumer never gets a group coordinator
    # (ensureCoordinatorReady retries until its timeout) and its producer's flush() does not return, so
    # every java cell waits out its timeouts (minutes per scenario). java-3.9 and java-2.8 still run.
    clients = ("kafka-python", "aiokafka", "confluent-kafka", "kcat", "java-3.9", "java-2.8",
               "kafka-python-2.0.2", "confluent-kafka-1.9.2")
    return Target("tansu", f"{HOST}:{port}", SLOW_GROUPS, auto_create=True, slow_groups=True,
                  note="session.timeout.ms=10000 (tansu answers JoinGroup after half of it)",
                  clients=clients,
                  stop=lambda: _kill(proc))


def start_older_kafka() -> Target:
    """Apache Kafka 3.9.1 (KRaft, one node): the JVM process from its Maven jars."""
    from compat.apache_kafka import OLDER_KAFKA, KafkaCluster, KafkaUnavailable
    cluster = KafkaCluster(1, dict(BROKER_PROPERTIES), version=OLDER_KAFKA)
    try:
        cluster.start()
        _warm_up(cluster.bootstrap_servers)
    except (KafkaUnavailable, Unavailable) as e:
        cluster.stop()
        raise Unavailable(str(e)) from None
    return Target("kafka-3.9", cluster.bootstrap_servers, REFERENCE, auto_create=False,
                  note=f"Apache Kafka {OLDER_KAFKA} (JVM, KRaft, 1 node), ready in {cluster.start_seconds} s",
                  stop=cluster.stop, about=lambda text: _about(cluster, 1, text))


def start_kafka(brokers: int = 1) -> Target:
    """Real Kafka: the JVM process from Maven jars when installed, else a testcontainers container."""
    from compat.apache_kafka import KafkaCluster, KafkaUnavailable, kafka_lib
    if kafka_lib() is not None or brokers > 1:
        cluster = KafkaCluster(brokers, {**BROKER_PROPERTIES, **(FAULT_TIMING if brokers == 3 else {})})
        try:
            cluster.start()
            _warm_up(cluster.bootstrap_servers, brokers)
        except (KafkaUnavailable, Unavailable) as e:
            cluster.stop()
            raise Unavailable(str(e)) from None
        name = "kafka" if brokers == 1 else f"kafka-{brokers}"
        return Target(name, cluster.bootstrap_servers, REFERENCE, auto_create=False,
                      note=f"Apache Kafka {_kafka_version()} (JVM, KRaft, {brokers} node(s)), ready in "
                           f"{cluster.start_seconds} s", stop=cluster.stop,
                      faults=Faults(cluster.kill_node, cluster.restart_node) if brokers == 3 else None,
                      log=lambda: "\n".join(f"--- node {n}:\n{_notable(cluster.log(n, tail=1 << 26))}"
                                            for n in range(1, brokers + 1)),
                      about=lambda text: _about(cluster, brokers, text))
    return _start_kafka_container()


def _about(cluster: Any, brokers: int, text: str) -> list[str]:
    """The lines of every node's log that contain `text`, node by node."""
    return [f"node {n}: {ln}" for n in range(1, brokers + 1)
            for ln in cluster.log(n, tail=1 << 26).splitlines() if text in ln]


def _notable(log: str, lines: int = 60) -> str:
    """A Kafka log's last warnings and errors, and its controller fencing a broker (a broker whose heartbeats
    stopped for broker.session.timeout.ms: its partitions lose their leader and Metadata leaves it out)."""
    kept = [ln for ln in log.splitlines() if "] WARN " in ln or "] ERROR " in ln or "Fencing broker" in ln]
    return "\n".join(kept[-lines:]) or "(no warning, error or fencing)"


def _warm_up(bootstrap: str, brokers: int = 1, timeout: float = 120.0) -> None:
    """Creates and deletes a topic before the lanes start: a Kafka just started beside other JVMs on a loaded
    machine took over 15 s to list its first topics, and every lane's first scenarios failed on it."""
    from fakekafka.testing.client import RemoteCluster
    topic = f"compat-warm-up-{uuid.uuid4().hex[:8]}"
    try:
        with RemoteCluster(bootstrap, client_id="compat-setup", timeout=timeout) as cluster:
            cluster.create_topic(topic, 1, replication_factor=min(brokers, 3))
            cluster.delete_topic(topic)
    except Exception as e:  # noqa: BLE001 - any failure: this broker cannot serve the run
        raise Unavailable(f"Kafka at {bootstrap} did not create and delete a topic within {timeout:.0f} s: {e}") \
            from None


def _kafka_version() -> str:
    from compat.apache_kafka import KAFKA_VERSION
    return KAFKA_VERSION


def _start_kafka_container() -> Target:
    try:
        import docker  # testcontainers' own dependency
        from testcontainers.core.container import DockerContainer
    except ImportError:
        raise Unavailable("real Kafka needs its jars (run `eval \"$(bash .ci/install.sh)\"`) or testcontainers "
                          "and Docker") from None
    try:
        docker.from_env(timeout=5).ping()
    except Exception as e:  # noqa: BLE001 - any failure to reach the daemon
        raise Unavailable(f"real Kafka needs a Docker daemon, and none is reachable ({type(e).__name__}: "
                          f"{str(e)[:200]}): start Docker (or use --broker bootstrap=HOST:PORT with "
                          f"`docker compose up -d` elsewhere)") from None
    port = free_port(HOST)
    container = DockerContainer(KAFKA_IMAGE).with_bind_ports(9092, port)
    for k, v in {
        "KAFKA_NODE_ID": "1", "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://{HOST}:{port}",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0", "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }.items():
        container = container.with_env(k, v)
    container.start()
    bootstrap = f"{HOST}:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            from fakekafka.testing.client import RemoteCluster
            with RemoteCluster(bootstrap, timeout=5) as rc:
                rc.topics()
            break
        except Exception:  # noqa: BLE001 - still starting
            if time.monotonic() > deadline:
                container.stop()
                raise Unavailable(f"{KAFKA_IMAGE} did not answer on {bootstrap} within 120 s") from None
            time.sleep(1)
    return Target("kafka", bootstrap, REFERENCE, auto_create=False,
                  note=KAFKA_IMAGE, stop=container.stop)


def start_librdkafka_mock() -> Target:
    try:
        import logging
        import queue

        from confluent_kafka import Producer
    except ImportError:
        raise Unavailable("librdkafka's mock cluster comes with confluent-kafka: pip install confluent-kafka") from None
    lines: queue.Queue[str] = queue.Queue()

    class Catch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.put(record.getMessage())
    logger = logging.getLogger(f"compat.librdkafka-mock.{uuid.uuid4().hex[:6]}")
    logger.propagate = False
    logger.addHandler(Catch())
    logger.setLevel(logging.DEBUG)
    holder = Producer({"bootstrap.servers": "unused:1", "test.mock.num.brokers": 1, "logger": logger,
                       "log_level": 6})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        holder.poll(0.1)
        while not lines.empty():
            m = re.search(r"replaced with (\S+)", lines.get())
            if m:
                def stop(p: Any = holder) -> None:
                    p.flush(1)
                return Target("librdkafka-mock", m.group(1), FAST, auto_create=True,
                              clients=("confluent-kafka", "kcat"), create_topics=False,
                              cannot={"admin": "librdkafka's mock cluster has no CreateTopics"},
                              note="topics auto-created with 4 partitions; only librdkafka clients", stop=stop)
    raise Unavailable("librdkafka did not report its mock cluster's address")


def connect_bootstrap(address: str) -> Target:
    from fakekafka.testing.client import RemoteCluster
    try:
        with RemoteCluster(address, timeout=10) as rc:
            rc.topics()
    except Exception as e:  # noqa: BLE001
        raise Unavailable(f"nothing answers at {address}: {e}") from None
    auto = _auto_create(address, f"compat-probe-{uuid.uuid4().hex[:8]}")
    return Target(f"bootstrap={address}", address, dataclasses.replace(FAST, group_s=60, op_s=30),
                  auto_create=auto, note=f"auto-create {'on' if auto else 'off'} (probed)")


def start_proxy(behind: Target, stop_behind: Callable[[], None] | None = None) -> Target:
    """`fakekafka proxy` (a subprocess, as users run it) in front of `behind`: the same broker, reached
    through the proxy's listeners. `stop_behind` also stops the broker when the proxy stops (a broker
    started for the proxy alone)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "fakekafka", "proxy", "--upstream", behind.bootstrap, "--listen", f"{HOST}:0",
           "--log-level", "warning"]
    try:
        proc, m = _spawn(cmd, re.compile(rb"bootstrap\.servers=(\S+)"), 30, env=env)
    except Unavailable:
        if stop_behind is not None:
            stop_behind()
        raise

    def stop() -> None:
        try:
            _kill(proc)
        finally:
            if stop_behind is not None:
                stop_behind()
    note = f"fakekafka proxy in front of {behind.name} ({behind.bootstrap}{'; ' + behind.note if behind.note else ''})"
    return dataclasses.replace(behind, name=f"{PROXY}{behind.name}", bootstrap=m.group(1).decode(), note=note,
                               stop=stop, behind=behind.name)


_LIVE: list[Target] = []


def start_target(spec: str, running: dict[str, Target] | None = None) -> Target:
    """The broker named on the command line (see the module docstring); Unavailable if it cannot be had.
    `proxy:KIND` puts a proxy in front of `running[KIND]` when the run has that broker already, else in front
    of a KIND of its own. Until it is stopped it is also in the list stop_live_targets() stops (on SIGTERM,
    see compat/__main__.py)."""
    if spec.startswith(PROXY):
        inner = spec[len(PROXY):]
        if inner.startswith(PROXY) or not inner:
            raise ValueError(f"{spec!r}: proxy:KIND takes one broker kind, e.g. proxy:kafka")
        shared = (running or {}).get(inner)
        if shared is not None:
            return _live(start_proxy(shared))
        behind = start_target(inner)
        return _live(start_proxy(behind, behind.stop))
    if spec.startswith("bootstrap="):
        return connect_bootstrap(spec.split("=", 1)[1])
    starters = {"fakekafka": start_fakekafka, "tansu": start_tansu, "kafka": start_kafka,
                "kafka-3": lambda: start_kafka(3), "fakekafka-3": start_fakekafka_3,
                "librdkafka-mock": start_librdkafka_mock,
                "kafka-3.9": start_older_kafka, "fakekafka-3.9": lambda: start_fakekafka("3.9")}
    if spec not in starters:
        raise ValueError(f"unknown broker {spec!r}: choose from {', '.join(KINDS)}")
    return _live(starters[spec]())


def _live(target: Target) -> Target:
    """Lists the target for stop_live_targets() until it stops (once)."""
    stop = target.stop

    def stop_once() -> None:
        if target in _LIVE:
            _LIVE.remove(target)
            stop()
    target.stop = stop_once
    _LIVE.append(target)
    return target


def stop_targets(targets: list[Target]) -> None:
    """Stops each target; one that fails to stop does not keep the rest running."""
    for target in list(targets):
        try:
            target.stop()
        except Exception:  # noqa: BLE001, S110 - stopping the rest matters more
            pass


def stop_live_targets() -> None:
    """Stops every broker start_target started and nobody stopped yet (they run in sessions of their own,
    so a run killed from outside would leave them behind)."""
    stop_targets(_LIVE)
