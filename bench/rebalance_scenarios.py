"""The seeds' rebalance scenarios under both group protocols, timed from the change to a stable assignment, on
fakekafka and on Apache Kafka 4.4 in one run.

    python bench/rebalance_scenarios.py [--protocols consumer,classic] [--brokers fakekafka,kafka]
                                        [--client confluent-kafka|java|java-3.9|franz-go|rdkafka]
                                        [--partitions 6] [--repeat N] [--timeout S] [--json out.json]

The scenarios are the seeds' (/work/shared/seeds: rebalance, Join/Sync/Heartbeat), each on a new group of
confluent-kafka consumers polled by this one process, or (--client) of members run by a compat client's driver
(the Java client's JVM, the franz-go or rdkafka driver process; KIP-848 only, topic subscriptions only):

    join          two members hold the topic; a third subscribes
    leave         three members; one closes (LeaveGroup, or a heartbeat with epoch -1)
    crash         three members; one is a child process killed with SIGKILL, so the coordinator notices only
                  when its session ends (3 s here on both brokers, see BROKER_CONFIGS)
    partitions    two members; CreatePartitions grows the topic from --partitions to twice as many
    new_topic     two members subscribed to a regular expression; a second matching topic is created

The clock starts just before the change (the subscribe, close, kill, CreatePartitions or CreateTopics call) and
stops at a stable assignment: the consumers' own assignments (on_assign / on_revoke) hold every partition of
the subscribed topics exactly once with every member holding one, and the broker agrees: for
`group.protocol=consumer` ConsumerGroupDescribe shows the group Stable with every member at the group's epoch,
the assignment epoch equal to it, and each member's assignment equal to its target (nothing pending); for
`classic` DescribeGroups shows it Stable with that many members. The broker is asked every 20 ms, the
consumers polled in between.

Both brokers get the same settings beside the reference launcher's test ones (KIP-848 heartbeats every 0.5 s,
no assignment interval, no initial rebalance delay): a 3 s floor for both protocols' session timeouts and 3 s as
the consumer groups' session timeout (Kafka's 45 s floor would make `crash` a 45 s wait), and classic members ask
for 3 s sessions with 0.5 s heartbeats (librdkafka's default 45 s / 3 s otherwise). Clients refresh metadata
every second (topic.metadata.refresh.interval.ms; librdkafka's default is 5 minutes), which is how a classic
group hears of added partitions and new topics; a consumer group hears of them from its broker. --repeat runs
each cell N times (the table shows the median and the range); one run is a single sample, for orders of
magnitude.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from _peers import kafka_available, start_broker, stop_all  # noqa: E402
from groups import close_all, create_topic  # noqa: E402

from fakekafka.testing.client import RemoteCluster  # noqa: E402

try:
    from confluent_kafka import Consumer, TopicPartition, libversion
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic
except ImportError:  # pragma: no cover
    sys.exit("bench/rebalance_scenarios.py needs confluent-kafka: pip install confluent-kafka")

SESSION_MS = 3000
BROKER_CONFIGS = {
    "group.consumer.min.session.timeout.ms": str(SESSION_MS),
    "group.consumer.session.timeout.ms": str(SESSION_MS),
    "group.min.session.timeout.ms": str(SESSION_MS),
}
"""The same on both brokers: sessions short enough for `crash` to be a few seconds."""

COMMON = {"enable.auto.commit": False, "log_level": 2, "topic.metadata.refresh.interval.ms": 1000}
PROTOCOLS = {
    "consumer": {"group.protocol": "consumer"},
    "classic": {"group.protocol": "classic", "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": SESSION_MS, "heartbeat.interval.ms": 500},
}
"""classic with the cooperative-sticky assignor, the incremental rebalance closest to KIP-848's (the consumer
protocol leaves the assignor to the broker: its `uniform`)."""
SCENARIOS = ("join", "leave", "crash", "partitions", "new_topic")

CRASHER = textwrap.dedent("""
    import json, sys, time
    from confluent_kafka import Consumer
    conf = json.loads(sys.argv[1])
    c = Consumer(conf)
    c.subscribe([sys.argv[2]])
    while True:
        c.poll(0.05)
        if c.assignment():
            print("assigned", flush=True)
            break
    while True:  # keep heartbeating until killed
        c.poll(0.05)
""")


class Group:
    """Consumers of one group, polled here, with the partitions each holds by its own callbacks."""

    def __init__(self, bootstrap: str, group: str, protocol: str) -> None:
        self.bootstrap, self.group, self.protocol = bootstrap, group, protocol
        self.consumers: list[Consumer] = []
        self.held: list[set[tuple[str, int]]] = []

    def conf(self) -> dict:
        return {"bootstrap.servers": self.bootstrap, "group.id": self.group, "auto.offset.reset": "earliest",
                **COMMON, **PROTOCOLS[self.protocol]}

    def add(self, subscription: str) -> None:
        i = len(self.consumers)
        self.held.append(set())
        held = self.held[i]

        def assign(_c: Consumer, tps: list[TopicPartition]) -> None:
            held.update((tp.topic, tp.partition) for tp in tps)

        def revoke(_c: Consumer, tps: list[TopicPartition]) -> None:
            held.difference_update((tp.topic, tp.partition) for tp in tps)

        c = Consumer(self.conf())
        c.subscribe([subscription], on_assign=assign, on_revoke=revoke, on_lost=revoke)
        self.consumers.append(c)

    def remove(self, i: int) -> None:
        self.consumers.pop(i).close()
        self.held.pop(i)

    def poll(self) -> None:
        for c in self.consumers:
            c.poll(0)

    def covers(self, partitions: dict[str, int]) -> bool:
        held = self.held
        owned = sorted(tp for h in held for tp in h)
        want = sorted((t, p) for t, n in partitions.items() for p in range(n))
        return owned == want and all(held)


class DriverGroup:
    """Members through a compat client's driver (compat/clients: the Java client's JVM, the Go and Rust driver
    processes), whose assignments are asked of the driver. Topic subscriptions only (no regex)."""

    def __init__(self, client: Any, group: str, protocol: str) -> None:
        self.client, self.group, self.protocol = client, group, protocol
        self.consumers: list[Any] = []

    def add(self, subscription: str, own_process: bool = False) -> None:
        extra = {} if self.protocol == "consumer" else {"session_timeout_ms": SESSION_MS}
        self.consumers.append(self.client.member(self.group, subscription, group_protocol=self.protocol,
                                                 own_process=own_process, **extra))

    def remove(self, i: int) -> None:
        self.consumers.pop(i).close()

    def kill_last(self) -> None:
        self.consumers.pop().kill()

    @property
    def held(self) -> list[set[tuple[str, int]]]:
        return [set(m.assignment()) for m in self.consumers]

    def poll(self) -> None:
        """The driver's members poll on their own."""

    def covers(self, partitions: dict[str, int]) -> bool:
        return Group.covers(self, partitions)  # type: ignore[arg-type]

    def close(self) -> None:
        for m in self.consumers:
            try:
                m.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass


def stable_on_broker(remote: RemoteCluster, group: str, protocol: str, members: int) -> bool:
    """The broker's side of "stable": every member at the group's epoch with nothing pending (KIP-848), or
    the classic group Stable."""
    if protocol == "consumer":
        view = remote.consumer_group(group)
        return (view is not None and view.state == "Stable" and len(view.members) == members
                and view.assignment_epoch == view.group_epoch
                and all(m.member_epoch == view.group_epoch and m.assignment == m.target_assignment
                        for m in view.members))
    classic = remote.group(group)
    return classic is not None and classic.state == "Stable" and len(classic.members) == members


def wait_stable(g: Group, remote: RemoteCluster, partitions: Callable[[], dict[str, int]], members: int,
                timeout: float) -> float | None:
    """Seconds until stable (None: not within `timeout`), counted from now."""
    t0 = time.perf_counter()
    next_ask = t0
    while time.perf_counter() - t0 < timeout:
        g.poll()
        if g.covers(partitions()) and len(g.consumers) == members and time.perf_counter() >= next_ask:
            if stable_on_broker(remote, g.group, g.protocol, members):
                return time.perf_counter() - t0
            next_ask = time.perf_counter() + 0.02
        time.sleep(0.002)
    return None


def run_scenario(name: str, bootstrap: str, protocol: str, partitions: int, timeout: float,
                 client: Any = None) -> float | None:
    """One scenario on a new group and topic; the seconds from its change to a stable assignment. `client`: a
    compat client whose driver runs the members (None: confluent-kafka consumers in this process)."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"bench-rb-{tag}", f"bench-rb-{name}-{protocol}-{tag}"
    create_topic(bootstrap, topic, partitions, 60)
    remote = RemoteCluster(bootstrap)
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    g: Any = Group(bootstrap, group, protocol) if client is None else DriverGroup(client, group, protocol)
    counts = {topic: partitions}
    subscription = f"^bench-rb-{tag}.*" if name == "new_topic" else topic
    crasher: subprocess.Popen[str] | None = None
    try:
        for _ in range(3 if name == "leave" else 2):
            g.add(subscription)
        if name == "crash" and client is not None:  # the driver's own process for the member to kill
            g.add(subscription, own_process=True)
            if wait_stable(g, remote, lambda: counts, 3, timeout) is None:
                raise RuntimeError("never stable with the member to kill")
        elif name == "crash":  # the third member lives in a child process, to be killed
            conf = {k: v for k, v in g.conf().items() if k != "log_level"}
            crasher = subprocess.Popen([sys.executable, "-c", CRASHER, json.dumps(conf), subscription],
                                       stdout=subprocess.PIPE, text=True, start_new_session=True)
            if not settled_with_child(g, remote, crasher, timeout):
                raise RuntimeError("never stable with the child member")
        elif wait_stable(g, remote, lambda: counts, len(g.consumers), timeout) is None:
            raise RuntimeError("never stable before the change")
        members = len(g.consumers) - (1 if name == "crash" and client is not None else 0)
        t0 = time.perf_counter()  # the clock, then the change
        if name == "join":
            g.add(subscription)
            members += 1
        elif name == "leave":
            g.remove(0)
            members -= 1
        elif name == "crash" and client is not None:
            g.kill_last()
        elif name == "crash":
            assert crasher is not None
            os.killpg(crasher.pid, signal.SIGKILL)
            crasher.wait()
        elif name == "partitions":
            admin.create_partitions([NewPartitions(topic, partitions * 2)])[topic].result(30)
            counts[topic] = partitions * 2
        elif name == "new_topic":
            second = f"bench-rb-{tag}-b"
            admin.create_topics([NewTopic(second, num_partitions=partitions, replication_factor=1)])[second].result(30)
            counts[second] = partitions
        if wait_stable(g, remote, lambda: counts, members, timeout) is None:
            return None
        return time.perf_counter() - t0
    finally:
        if crasher is not None and crasher.poll() is None:
            os.killpg(crasher.pid, signal.SIGKILL)
            crasher.wait()
        if client is None:
            close_all(g.consumers, 30)
        else:
            g.close()
        remote.close()


def settled_with_child(g: Group, remote: RemoteCluster, child: subprocess.Popen[str], timeout: float) -> bool:
    """Whether the group settled with its member in `child` too: the child holds partitions, each local member
    holds some, and the broker shows all three stable."""
    assigned = threading.Event()

    def read() -> None:
        for line in child.stdout or ():
            if "assigned" in line:
                assigned.set()
    threading.Thread(target=read, daemon=True).start()
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline:
        g.poll()
        if assigned.is_set() and all(g.held) and stable_on_broker(remote, g.group, g.protocol, 3):
            return True
        time.sleep(0.02)
    return False


def _cell(runs: list[float | None]) -> str:
    """One run: its seconds; several: the median with the range (a timeout counts as slowest)."""
    if len(runs) == 1:
        return "timeout" if runs[0] is None else f"{runs[0]:.2f} s"
    done = sorted(r for r in runs if r is not None)
    timeouts = len(runs) - len(done)
    if len(done) <= len(runs) // 2:
        return f"timeout ({timeouts} of {len(runs)})"
    median = done[(len(runs) - 1) // 2]
    high = "timeout" if timeouts else f"{done[-1]:.2f}"
    return f"{median:.2f} s ({done[0]:.2f}-{high})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--protocols", default="consumer,classic")
    ap.add_argument("--brokers", default="fakekafka,kafka")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS))
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each cell; the table shows the median")
    ap.add_argument("--client", default="confluent-kafka",
                    help="confluent-kafka (consumers in this process), or a compat client whose driver speaks "
                         "KIP-848: java, java-3.9, franz-go, rdkafka (consumer protocol; no new_topic)")
    ap.add_argument("--json")
    args = ap.parse_args()
    protocols = [p for p in args.protocols.split(",") if p]
    scenarios = list(dict.fromkeys(s for s in args.scenarios.split(",") if s))
    driver = args.client != "confluent-kafka"
    if driver:
        # the drivers subscribe to topic names (no regex), and their classic members keep each client's own
        # assignor and metadata refresh (minutes): only the consumer protocol compares
        protocols = ["consumer"]
        scenarios = [s for s in scenarios if s != "new_topic"]
    brokers = [b for b in args.brokers.split(",") if b]
    if "kafka" in brokers and not kafka_available():
        print("Apache Kafka is not installed (eval \"$(bash .ci/install.sh)\"): fakekafka only", file=sys.stderr)
        brokers.remove("kafka")
    rows = []
    try:
        for kind in brokers:
            broker = start_broker(kind, timeout=120, configs=BROKER_CONFIGS)
            bootstrap = f"127.0.0.1:{broker.port}"
            client = None
            if driver:
                from compat.clients.base import Timing
                from compat.clients.registry import make_client
                client = make_client(args.client, bootstrap, Timing(session_timeout_ms=SESSION_MS))
            for scenario in [s for s in scenarios for _ in range(args.repeat)]:
                for protocol in protocols:
                    try:
                        seconds = run_scenario(scenario, bootstrap, protocol, args.partitions, args.timeout,
                                               client)
                    except RuntimeError as e:
                        print(f"  {kind} {scenario} {protocol}: {e}", file=sys.stderr)
                        seconds = None
                    rows.append({"broker": kind, "scenario": scenario, "protocol": protocol, "seconds": seconds})
                    took = "timeout" if seconds is None else f"{seconds:.2f} s"
                    print(f"  {kind:9} {scenario:10} {protocol:8} {took}", file=sys.stderr)
            if client is not None:
                client.close()
            broker.stop()
    finally:
        stop_all()
    runs = "one run each" if args.repeat == 1 else f"median (range) of {args.repeat} runs"
    print(f"\nTime from the change to a stable assignment, {args.partitions} partitions, {runs} "
          f"({args.client if driver else f'confluent-kafka {libversion()[0]}'}; consumer: the broker's uniform "
          f"assignor{', classic: cooperative-sticky' if 'classic' in protocols else ''})\n")
    header = ["scenario", *(f"{b} {p}" for b in brokers for p in protocols)]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for s in scenarios:
        cells = []
        for b in brokers:
            for p in protocols:
                runs = [r["seconds"] for r in rows if r["broker"] == b and r["protocol"] == p and r["scenario"] == s]
                cells.append(_cell(runs))
        print(f"| {s} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
