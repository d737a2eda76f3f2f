"""Real Apache Kafka on this machine, as the JVM program it is: no container, no Docker.

`fakekafka kafka install` (and `.ci/install.sh`) resolves the broker's jars from Maven Central with Maven (the
pom shipped beside this module, kafka-pom.xml) into ~/.cache/fakekafka/kafka-<version>/lib, or the directory
$FAKEKAFKA_KAFKA_LIB names. `KafkaCluster` then runs it in KRaft
mode the way Kafka's own scripts do (bin/kafka-storage.sh and bin/kafka-server-start.sh are thin wrappers
over these two main classes):

    java -cp LIB/* kafka.tools.StorageTool format -t CLUSTER_ID -c server.properties
    java -cp LIB/* kafka.Kafka server.properties

Each node is one JVM with both roles (broker and controller; `brokers=3` makes three such nodes, all
voters), in a temporary directory, on free loopback ports, started in its own process group and stopped by
its PID. The cluster counts as ready once a Metadata request lists every broker and the group coordinator
answers FindCoordinator (so `__consumer_offsets` exists). `start_seconds` is the time from the first
format to ready.

    with KafkaCluster(brokers=1) as kafka:
        print(kafka.bootstrap_servers, kafka.start_seconds)

It lives in the fakekafka package (not only in the repository's compat/) because `pytest --kafka-real`
starts it from the plugin; compat/apache_kafka.py re-exports it.

The settings a test suite wants from a broker (auto-create off, no initial rebalance delay, KIP-848
assignments without the assignment interval and 0.5 s heartbeats, as fakekafka's defaults, replication
factors that fit the node count) are the defaults; `configs=` adds or overrides broker configs (None
removes one of these, leaving Kafka's own default).
"""

from __future__ import annotations

import base64
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from fakekafka.testing.ports import free_ports
from fakekafka.wire import ApiKey

__all__ = ["INSTALL_HINT", "KAFKA_VERSION", "OLDER_KAFKA", "KafkaCluster", "KafkaUnavailable", "cache_lib",
           "kafka_lib", "lib_env"]

KAFKA_VERSION = "4.4.0"  # kept equal to kafka-pom.xml's kafka.version (a unit test checks)
HOST = "127.0.0.1"
INSTALL_HINT = "run `fakekafka kafka install` (resolves Apache Kafka's jars from Maven Central with Maven)"

# A JVM per node on a 2-core machine: a small heap and the serial collector are plenty for tests, and the quick
# JIT alone (C1) spends less CPU than C2's compiles in a broker's minutes of life (a compat run of three clients
# against Kafka: 34.5 s of CPU in all where it took 44.3, in the same time).
JVM_ARGS = ("-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
            "-Dfile.encoding=UTF-8")
# What Kafka's own scripts start a broker with (kafka-server-start.sh's KAFKA_HEAP_OPTS, kafka-run-class.sh's
# KAFKA_JVM_PERFORMANCE_OPTS): what a benchmark against Kafka should measure.
STOCK_JVM_ARGS = ("-Xms1G", "-Xmx1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
                  "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
                  "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8")

LOG4J2 = """\
status = error
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = STDOUT
logger.raft.name = kafka.server.KafkaRaftServer
logger.raft.level = info
logger.fencing.name = org.apache.kafka.controller.ReplicationControlManager
logger.fencing.level = info
logger.fencing.filter.fenced.type = RegexFilter
logger.fencing.filter.fenced.regex = .*Fencing broker.*
logger.fencing.filter.fenced.onMatch = ACCEPT
logger.fencing.filter.fenced.onMismatch = DENY
logger.groups.name = org.apache.kafka.coordinator.group
logger.groups.level = info
logger.classic_groups.name = kafka.coordinator.group
logger.classic_groups.level = info
"""
"""Warnings and errors; the controller's fencing of a broker; the group coordinators' account of each group (a
member joining, leaving, fenced; a new epoch and target assignment), which tells what Kafka did when a test's group
did not come to the state it waited for."""


def _cds_archive(java: str, jvm: tuple[str, ...], lib: Path) -> Path | None:
    """Where the class-data archive for this Java, these JVM flags and these jars is kept (None: the cache cannot
    be written)."""
    import hashlib
    try:
        real = Path(java).resolve()
        jars = sorted((j.name, j.stat().st_size, j.stat().st_mtime_ns) for j in lib.glob("*.jar"))
        key = repr((str(real), real.stat().st_mtime_ns, jvm, str(lib.resolve()), jars))
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fakekafka" / "cds"
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return cache / f"kafka-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def _cluster_id() -> str:
    """A random cluster id as Kafka's Uuid.randomUuid() makes them: never starting with "-", which the
    storage tool's argument parser would take for an option (1 start in 64 failed with "--cluster-id:
    expected one argument")."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


class KafkaUnavailable(RuntimeError):
    """Real Kafka cannot be started here (the message says what is missing or what it printed)."""


def cache_lib(version: str = KAFKA_VERSION) -> Path:
    """Where `fakekafka kafka install` puts a version's jars and where `kafka_lib` looks:
    $XDG_CACHE_HOME (default ~/.cache)/fakekafka/kafka-VERSION/lib."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fakekafka" / f"kafka-{version}" / "lib"


OLDER_KAFKA = "3.9.1"
"""The older release that runs as a reference broker (`--kafka-version 3.9`'s): `.ci/install.sh` resolves its jars
into ~/.cache/fakekafka/kafka-3.9.1/lib ($FAKEKAFKA_KAFKA39_LIB)."""


def lib_env(version: str) -> str:
    """The environment variable naming a version's jar directory: FAKEKAFKA_KAFKA_LIB for the one fakekafka follows,
    FAKEKAFKA_KAFKA39_LIB for 3.9.x and so on."""
    if version == KAFKA_VERSION:
        return "FAKEKAFKA_KAFKA_LIB"
    major, minor = version.split(".")[:2]
    return f"FAKEKAFKA_KAFKA{major}{minor}_LIB"


def kafka_lib(version: str = KAFKA_VERSION) -> Path | None:
    """The directory of Kafka's jars ($FAKEKAFKA_KAFKA_LIB, or $FAKEKAFKA_KAFKA39_LIB for 3.9.1, else the user's
    cache), or None."""
    env = os.environ.get(lib_env(version))
    for d in ([Path(env)] if env else []) + [cache_lib(version)]:
        if glob.glob(str(d / "kafka_2.13-*.jar")):
            return d
    return None


class KafkaCluster:
    """Apache Kafka in KRaft mode: `brokers` combined broker+controller JVMs on loopback."""

    def __init__(self, brokers: int = 1, configs: dict[str, str | None] | None = None, *, lib: Path | None = None,
                 java: str | None = None, heap: str = "512m", timeout: float = 120.0,
                 listeners: tuple[str, ...] = (), scram_users: dict[str, str] | None = None,
                 log_dirs: int = 1, advertised: dict[str, list[int]] | None = None,
                 stock_jvm: bool = False, version: str = KAFKA_VERSION, classpath: tuple[str, ...] = (),
                 node_configs: dict[int, dict[str, str]] | None = None) -> None:
        """`log_dirs`: how many log directories each node has (`log.dirs`: `node-N/dir-K` when several, between
        which AlterReplicaLogDirs moves replicas); `listeners`: more listeners by security protocol
        ("SASL_PLAINTEXT", "SASL_SSL", "SSL"), each named
        after its protocol, beside PLAINTEXT (their ssl.*, sasl.* and JAAS settings come through `configs`), or
        "NAME:PROTOCOL" for a listener of another name; `advertised`: ports Metadata gives for a listener's
        nodes instead of its own (a relay in front of it, as bench/proxy.py's);
        `scram_users` are written at format time (kafka-storage --add-scram) for SCRAM-SHA-256 and -512;
        `stock_jvm`: the brokers run with Kafka's own JVM settings (1 GiB heap, G1) instead of the small test heap
        (the tools it runs, such as the storage format, keep the small one). `version`: which Kafka (its jars from
        `kafka_lib(version)`), e.g. OLDER_KAFKA; configs an older release does not know are only warned of in its
        log. `classpath`: entries put before Kafka's jars (a plugin of a test's, such as a metrics reporter that
        receives client telemetry). `node_configs`: a node's own settings by node id (1, 2, ...), over `configs`
        (its `broker.rack`, say)."""
        if brokers < 1:
            raise ValueError("brokers must be at least 1")
        self.brokers = brokers
        self.log_dirs = log_dirs
        self.version = version
        self.lib = lib or kafka_lib(version)
        self.java = java or shutil.which("java")
        self.heap = heap
        self.stock_jvm = stock_jvm
        self.classpath = classpath
        self.node_configs = {n: dict(c) for n, c in (node_configs or {}).items()}
        self.timeout = timeout
        rf = str(min(3, brokers))
        self.configs: dict[str, str] = {
            "auto.create.topics.enable": "false",
            "group.initial.rebalance.delay.ms": "0",
            "group.consumer.assignment.interval.ms": "0",  # KIP-848 assignments at once, as fakekafka's default
            "group.consumer.max.session.timeout.ms": "600000",  # room for a test's long-lived member (default 60 s)
            "group.consumer.heartbeat.interval.ms": "500",  # KIP-848 rebalance steps in 0.5 s, as fakekafka's
            "group.consumer.min.heartbeat.interval.ms": "500",
            "num.partitions": "1",
            "default.replication.factor": "1",
            "offsets.topic.replication.factor": rf,
            "offsets.topic.num.partitions": "50",
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": "1",
            "group.share.assignment.interval.ms": "0",  # share-group assignments at once, as fakekafka's
            "log.flush.interval.messages": str(2**63 - 1),
            "delete.topic.enable": "true",
            **{k: v for k, v in (configs or {}).items() if v is not None},
        }
        for name, value in (configs or {}).items():  # None: Kafka's own default (DescribeConfigs: DEFAULT_CONFIG)
            if value is None:
                self.configs.pop(name, None)
        self.listeners = listeners
        self.advertised = dict(advertised or {})
        self.scram_users = dict(scram_users or {})
        self.listener_ports: dict[str, list[int]] = {}
        self.dir: Path | None = None
        self.procs: list[subprocess.Popen[bytes]] = []
        self.ports: list[int] = []
        self.controller_ports: list[int] = []
        self.start_seconds: float | None = None
        self.cluster_id = _cluster_id()
        self._logs: list[Path] = []
        self._dumping: Path | None = None  # the class-data archive a broker of this cluster writes when stopped
        self._recorder: subprocess.Popen[bytes] | None = None  # that broker (a node restarted is another JVM)

    # --- lifecycle -----------------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{HOST}:{p}" for p in self.ports)

    def bootstrap_servers_for(self, listener: str) -> str:
        return ",".join(f"{HOST}:{p}" for p in self.listener_ports[listener])

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def __enter__(self) -> KafkaCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> KafkaCluster:
        if self.lib is None:
            hint = INSTALL_HINT if self.version == KAFKA_VERSION else (
                f"run `fakekafka kafka install --version {self.version}` or .ci/install.sh")
            raise KafkaUnavailable(f"Apache Kafka {self.version}'s jars are not installed: {hint}")
        if self.java is None:
            raise KafkaUnavailable(f"java is not on PATH: {INSTALL_HINT}")
        try:
            return self._start()
        except KafkaUnavailable as e:
            # the free ports it chose can be taken by another process before its JVMs bind them (seen in a
            # clean-clone run): new ports once; any other failure is the answer
            if "Address already in use" not in str(e):
                raise
        return self._start()

    def _start(self) -> KafkaCluster:
        t0 = time.monotonic()
        self._logs = []
        self.dir = Path(tempfile.mkdtemp(prefix="fakekafka-apache-kafka-"))
        (self.dir / "log4j2.properties").write_text(LOG4J2)
        ports = free_ports((2 + len(self.listeners)) * self.brokers, HOST)  # below the ephemeral range
        self.ports, self.controller_ports = ports[: self.brokers], ports[self.brokers:2 * self.brokers]
        for k, listener in enumerate(self.listeners):
            self.listener_ports[listener.split(":")[0]] = ports[(2 + k) * self.brokers:(3 + k) * self.brokers]
        voters = ",".join(f"{i + 1}@{HOST}:{p}" for i, p in enumerate(self.controller_ports))
        try:
            props = [self._node_properties(i, voters) for i in range(self.brokers)]
            scram = [arg for user, password in self.scram_users.items()
                     for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
                     for arg in ("--add-scram", f"{mechanism}=[name={user},password={password}]")]
            formats = [self._java("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(p),
                                  "--ignore-formatted", *scram) for p in props]
            for i, f in enumerate(formats):
                out, _ = f.communicate(timeout=self.timeout)
                if f.returncode != 0:
                    raise KafkaUnavailable(f"formatting node {i + 1} failed ({f.returncode}): "
                                           f"{out.decode(errors='replace')[-2000:]}")
            for i, p in enumerate(props):
                log = self.dir / f"node-{i + 1}.log"
                self._logs.append(log)
                self.procs.append(self._java("kafka.Kafka", str(p), log=log, stock=self.stock_jvm))
            self._wait_ready(t0 + self.timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = round(time.monotonic() - t0, 2)
        return self

    def stop(self, *, graceful: bool = True) -> None:
        """SIGTERM to each node's process group (a controlled shutdown), SIGKILL after 15 s; removes its files.
        Not graceful: SIGKILL at once (a cluster being thrown away, whose shutdown would wait for a dead node)."""
        if graceful and self._dumping is not None and self._recorder is not None and self._recorder.poll() is None:
            self._dump_classes(self._recorder.pid, self._dumping)
        self._recorder = None
        for proc in self.procs:
            _signal(proc, signal.SIGTERM if graceful else signal.SIGKILL)
        deadline = time.monotonic() + 15
        for proc in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal(proc, signal.SIGKILL)
                proc.wait(5)
        self.procs = []
        if self._dumping is not None:  # written by the first node's JVM before it was stopped
            if self._dumping.exists() and self._dumping.stat().st_size > 0:
                os.replace(self._dumping, self._dumping.with_name(self._dumping.name.split(".jsa.")[0] + ".jsa"))
            self._dumping.unlink(missing_ok=True)
            self._dumping = None
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def kill_node(self, node_id: int) -> None:
        """SIGKILL one node (a crash, no controlled shutdown)."""
        proc = self.procs[node_id - 1]
        _signal(proc, signal.SIGKILL)
        proc.wait(10)

    def restart_node(self, node_id: int) -> None:
        """Starts a killed or stopped node again with its own properties and data (its log appended to); returns
        once the JVM runs (whether it rejoined, the caller sees in Metadata and the ISRs)."""
        assert self.dir is not None, "the cluster is not running"
        proc = self.procs[node_id - 1]
        if proc.poll() is None:
            raise ValueError(f"Kafka node {node_id} is running")
        log = self._logs[node_id - 1]
        with open(log, "ab") as f:
            f.write(f"\n--- restarted node {node_id} ---\n".encode())
        self.procs[node_id - 1] = self._java("kafka.Kafka", str(self.dir / f"node-{node_id}.properties"), log=log,
                                             stock=self.stock_jvm, append=True)

    def log(self, node_id: int = 1, tail: int = 4000) -> str:
        """The end of a node's output (warnings and errors), for reports."""
        try:
            return self._logs[node_id - 1].read_text(errors="replace")[-tail:]
        except (IndexError, OSError):
            return ""

    # --- internals -----------------------------------------------------------------------------------
    def _node_properties(self, i: int, voters: str) -> Path:
        assert self.dir is not None
        node = i + 1
        data = self.dir / f"node-{node}"
        data.mkdir()
        dirs = [data] if self.log_dirs == 1 else [data / f"dir-{k}" for k in range(self.log_dirs)]
        for d in dirs:
            d.mkdir(exist_ok=True)
        conf: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": node,
            "listeners": f"PLAINTEXT://{HOST}:{self.ports[i]},CONTROLLER://{HOST}:{self.controller_ports[i]}"
                         + "".join(f",{n}://{HOST}:{ports[i]}" for n, ports in self.listener_ports.items()),
            "advertised.listeners": f"PLAINTEXT://{HOST}:{self.ports[i]}"
                                    + "".join(f",{n}://{HOST}:{self.advertised.get(n, ports)[i]}"
                                              for n, ports in self.listener_ports.items()),
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
                                              + "".join(f",{n}" if ":" in n else f",{n}:{n}" for n in self.listeners),
            "controller.quorum.voters": voters,
            "log.dirs": ",".join(map(str, dirs)),
            **self.configs,
            **self.node_configs.get(node, {}),
        }
        path = self.dir / f"node-{node}.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in conf.items()))
        return path

    def _java(self, main: str, *args: str, log: Path | None = None,
              stock: bool = False, append: bool = False) -> subprocess.Popen[bytes]:
        assert self.dir is not None and self.java is not None and self.lib is not None
        jvm = STOCK_JVM_ARGS if stock else (*JVM_ARGS, f"-Xmx{self.heap}")
        sharing = self._class_data_sharing(main, jvm)
        cmd = [self.java, *jvm, *sharing,
               f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
               "-cp", os.pathsep.join([*self.classpath, str(self.lib / "*")]), main, *args]
        out: Any = open(log, "ab" if append else "wb") if log is not None else subprocess.PIPE  # noqa: SIM115
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=self.dir)
            if "-XX:+RecordDynamicDumpInfo" in sharing:
                self._recorder = proc
            return proc
        finally:
            if log is not None:
                out.close()

    def _class_data_sharing(self, main: str, jvm: tuple[str, ...]) -> tuple[str, ...]:
        """The JVM flags that load Kafka's classes from an archive of them (the JDK's class-data sharing), written
        by the first broker of this Java, these flags and these jars as it is stopped: a broker then loads most of
        its classes mapped from the archive (5,900 of 8,400) and is ready on about two thirds of the CPU (4.2 CPU-s
        to 2.7 on this project's CI machine). The archive is the user's cache's, keyed by all three; a JVM that
        cannot use it loads the classes as before. Not with a test's own classes before Kafka's (`classpath`):
        those would make an archive per test."""
        if self.classpath or self.java is None or self.lib is None:
            return ()
        archive = _cds_archive(self.java, jvm, self.lib)
        if archive is None or archive.with_name(archive.name + ".failed").exists():
            return ()
        if archive.exists():
            return (f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off")
        if main != "kafka.Kafka" or self._dumping is not None:
            return ()
        self._dumping = archive.with_name(f"{archive.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
        return ("-XX:+RecordDynamicDumpInfo",)  # stop() has the JVM write its classes (jcmd VM.cds dynamic_dump)

    def _dump_classes(self, pid: int, path: Path) -> None:
        """Has a running broker write the classes it loaded to a class-data archive (then kept in the cache by
        stop()); where it cannot (an older JDK, no jcmd, no attach), a marker beside the archive's name says so."""
        assert self.java is not None
        jcmd = Path(self.java).resolve().parent / "jcmd"
        try:
            done = subprocess.run([str(jcmd), str(pid), "VM.cds", "dynamic_dump", str(path)], capture_output=True,
                                  timeout=60, check=False).returncode == 0 and path.exists()
        except (OSError, subprocess.TimeoutExpired):
            done = False
        if not done:  # not tried again for this archive: each try costs a JVM (jcmd)
            path.unlink(missing_ok=True)
            archive = path.with_name(path.name.split(".jsa.")[0] + ".jsa")
            archive.with_name(archive.name + ".failed").touch()

    def _wait_ready(self, deadline: float) -> None:
        from fakekafka.testing.client import WireConnection
        last: str = "no answer yet"
        while time.monotonic() < deadline:
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None:
                    raise KafkaUnavailable(f"Kafka node {i + 1} exited with {proc.returncode}:\n{self.log(i + 1)}")
            try:
                conn = WireConnection(HOST, self.ports[0], "fakekafka-ready-probe", 5)
                try:
                    md = conn.request(ApiKey.METADATA, min(conn.version_for(ApiKey.METADATA), 12), {"topics": []})
                    if len(md.brokers) < self.brokers:
                        last = f"{len(md.brokers)} of {self.brokers} brokers registered"
                    else:
                        fc = conn.request(ApiKey.FIND_COORDINATOR, 0, {"key": "fakekafka-ready-probe"})
                        if fc.error_code == 0:
                            return
                        last = f"FindCoordinator error {fc.error_code}"
                finally:
                    conn.close()
            except (OSError, EOFError) as e:
                last = f"{type(e).__name__}: {e}"
            time.sleep(0.1)
        raise KafkaUnavailable(f"Kafka not ready after {self.timeout:.0f}s ({last}):\n{self.log(1)}")


def _signal(proc: subprocess.Popen[bytes], sig: int) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass

