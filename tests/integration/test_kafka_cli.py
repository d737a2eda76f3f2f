"""Kafka's own command-line tools against the broker: the same output as against Apache Kafka.

Each test runs one tool (bin/kafka-<name>.sh's main class, from the kafka-tools jars; tests/kafkacli.py)
through its everyday commands and compares what it printed, normalised (topic and member ids, hosts, ports,
times, rates), with the text written here, which is what the tool printed against Apache Kafka 4.4.0.
`python -m pytest` runs this module on fakekafka, and (the kafka-real tier: `-m kafka_real`) runs it again under
`--kafka-real` against Kafka itself, so both brokers are held to the same text. One JVM runs every tool
invocation of the module (kafka-tools' Exit procedure is replaced so a tool's exit does not end it); the
broker is the plugin's module-wide cluster (`cluster_for`), each test with topics and groups of its own.

Skips (naming .ci/install.sh) when java or the tools' jars are missing.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fakekafka.model.metadata_hash import group_hash, topic_hash
from fakekafka.model.offsets_topic import decode_record
from fakekafka.testing.client import RemoteCluster
from fakekafka.testing.handle import ClusterHandle
from fakekafka.testing.pytest_plugin import cluster_for
from fakekafka.wire import ApiKey
from tests.kafkacli import ToolResult, ToolSession, normalise
from tests.rawclient import RawClient

pytestmark = [pytest.mark.clients, pytest.mark.kafka_real]

LAUNCHER_FLUSH = ",flush.messages=9223372036854775807"
"""fakekafka/testing/apache_kafka.py starts Kafka with log.flush.interval.messages set (a static broker config that
kafka-topics lists as a topic override); fakekafka is not given it, so it is left out of Kafka's text."""


class Cli:
    """The module's tool JVM and broker: `run(tool, *args)` adds `--bootstrap-server`; `out` normalises."""

    def __init__(self, session: ToolSession, cluster: ClusterHandle) -> None:
        self.session, self.cluster = session, cluster
        self.bootstrap = cluster.bootstrap_servers

    def run(self, tool: str, *args: str, stdin: str = "", bootstrap: bool = True) -> ToolResult:
        extra = ("--bootstrap-server", self.bootstrap) if bootstrap else ()
        return self.session.run(tool, *extra, *args, stdin=stdin)

    def out(self, tool: str, *args: str, stdin: str = "", status: int = 0,
            clean: Callable[[str], str] = lambda s: s) -> str:
        """The tool's normalised stdout, then its messages on stderr (log lines and stack frames dropped), after
        checking its exit status."""
        r = self.run(tool, *args, stdin=stdin)
        assert r.status == status, f"{tool} {' '.join(args)} exited {r.status}:\n{r.stdout}\n{r.stderr}"
        text = normalise(r.stdout, self.bootstrap)
        messages = normalise(r.messages, self.bootstrap).strip("\n")
        if messages:
            text += "\n[stderr]\n" + messages
        text = "\n".join(line.lstrip(" ") for line in text.replace(LAUNCHER_FLUSH, "").splitlines())
        return clean(text).strip("\n")

    def create_topic(self, name: str, partitions: int) -> None:
        assert self.out("kafka-topics", "--create", "--topic", name, "--partitions", str(partitions),
                        "--replication-factor", "1") == f"Created topic {name}."
        self.cluster.wait_for_topic(name, partitions)

    def produce(self, topic: str, lines: list[str], *props: str) -> None:
        """Console producer, one request per record (--sync, without the tool's 1 s linger): batches, and so log
        sizes, are the same on both."""
        args = [arg for p in props for arg in ("--reader-property", p)]
        assert self.out("kafka-console-producer", "--topic", topic, "--sync", "--command-property", "linger.ms=0",
                        *args,
                        stdin="".join(f"{line}\n" for line in lines)) == ""


LOG_DIRS = "/var/lib/kafka/data-0,/var/lib/kafka/data-1"
"""The module's fakekafka has two log dirs per broker, as --kafka-real's Kafka (REAL_KAFKA_LOG_DIRS)."""


@pytest.fixture(scope="module")
def cli(request: pytest.FixtureRequest) -> Iterator[Cli]:
    session = ToolSession()
    remote = request.config.getoption("--kafka-real") or request.config.getoption("--fakekafka-bootstrap")
    try:
        with cluster_for(request.config, **({} if remote else {"config": {"log.dirs": LOG_DIRS}})) as cluster:
            yield Cli(session, cluster)
    finally:
        session.close()


def lines(text: str) -> str:
    """Dedented expected text (tabs kept: kafka-topics and kafka-transactions separate columns with them)."""
    return "\n".join(line.strip(" ") for line in text.strip("\n").splitlines())


def sub(pattern: str, repl: str) -> Callable[[str], str]:
    return lambda s: re.sub(pattern, repl, s, flags=re.M)


def test_kafka_topics(cli: Cli) -> None:
    cli.create_topic("cli-topics", 3)
    assert cli.out("kafka-topics", "--create", "--topic", "cli-topics-cfg", "--partitions", "1",
                   "--config", "retention.ms=1000", "--config", "cleanup.policy=compact") == \
        "Created topic cli-topics-cfg."
    cli.cluster.wait_for_topic("cli-topics-cfg", 1)
    assert cli.out("kafka-topics", "--create", "--topic", "cli-topics", status=1) == \
        "Error while executing topic command : Topic 'cli-topics' already exists."
    assert cli.out("kafka-topics", "--create", "--topic", "cli-topics-x", "--replication-factor", "3", status=1) == (
        "Error while executing topic command : Unable to replicate the partition 3 time(s): The target replication "
        "factor of 3 cannot be reached because only 1 broker(s) are registered or some brokers have all their log "
        "directories cordoned.")
    assert cli.out("kafka-topics", "--create", "--topic", "cli-topics-x", "--config", "nosuch.cfg=1", status=1) == \
        "Error while executing topic command : Unknown topic config name: nosuch.cfg"
    assert cli.out("kafka-topics", "--create", "--topic", "cli-topics-x", "--config", "retention.ms=abc",
                   status=1) == ("Error while executing topic command : Invalid value abc for configuration "
                                 "retention.ms: Not a number of type LONG")
    listed = cli.out("kafka-topics", "--list", "--exclude-internal").splitlines()
    assert [t for t in listed if t.startswith("cli-topics")] == ["cli-topics", "cli-topics-cfg"]
    assert cli.out("kafka-topics", "--describe", "--topic", "cli-topics") == lines("""
        Topic: cli-topics\tTopicId: <id>\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: min.insync.replicas=1
        \tTopic: cli-topics\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:
        \tTopic: cli-topics\tPartition: 1\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:
        \tTopic: cli-topics\tPartition: 2\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:""")
    assert cli.out("kafka-topics", "--describe", "--topic", "cli-topics-cfg") == lines("""
        Topic: cli-topics-cfg\tTopicId: <id>\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: min.insync.replicas=1,cleanup.policy=compact,retention.ms=1000
        \tTopic: cli-topics-cfg\tPartition: 0\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr:""")  # noqa: E501
    assert cli.out("kafka-topics", "--alter", "--topic", "cli-topics", "--partitions", "4") == ""
    assert cli.out("kafka-topics", "--alter", "--topic", "cli-topics", "--partitions", "2", status=1) == \
        "Error while executing topic command : The topic cli-topics currently has 4 partition(s); 2 would not be " \
        "an increase."
    assert cli.out("kafka-topics", "--alter", "--topic", "cli-topics", "--partitions", "4", status=1) == \
        "Error while executing topic command : Topic already has 4 partition(s)."
    cli.cluster.wait_for_topic("cli-topics", 4)
    assert cli.out("kafka-topics", "--describe", "--topic", "cli-topics").splitlines()[0] == \
        "Topic: cli-topics\tTopicId: <id>\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: min.insync.replicas=1"
    assert cli.out("kafka-topics", "--describe", "--topic", "nosuch", status=1) == \
        "Error while executing topic command : Topic 'nosuch' does not exist as expected"
    assert cli.out("kafka-topics", "--describe", "--under-replicated-partitions") == ""
    overrides = cli.out("kafka-topics", "--describe", "--topics-with-overrides", "--exclude-internal").splitlines()
    assert [t for t in overrides if "cli-topics" in t] == [
        "Topic: cli-topics\tTopicId: <id>\tPartitionCount: 4\tReplicationFactor: 1\tConfigs: min.insync.replicas=1",
        "Topic: cli-topics-cfg\tTopicId: <id>\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "
        "min.insync.replicas=1,cleanup.policy=compact,retention.ms=1000"]
    assert cli.out("kafka-topics", "--delete", "--topic", "cli-topics-cfg") == ""
    assert cli.out("kafka-topics", "--delete", "--topic", "nosuch", status=1) == \
        "Error while executing topic command : Topic 'nosuch' does not exist as expected"
    assert split(cli.out("kafka-topics", "--bogus", status=1))[1][0] == "bogus is not a recognized option"


KIP_848_NOTE = ("The consumer rebalance protocol (KIP-848) is production-ready! Set group.protocol=consumer to try it "
                "out. See https://kafka.apache.org/documentation/#consumer_rebalance_protocol")
"""What a 4.x consumer of the classic protocol prints first, on either broker."""


def split(text: str) -> tuple[list[str], list[str]]:
    """A tool's stdout and stderr lines (as `Cli.out` joined them), the consumer's KIP-848 note left out."""
    out, _, err = text.partition("[stderr]\n")
    return out.strip("\n").splitlines(), [line for line in err.splitlines() if line != KIP_848_NOTE]


def test_kafka_console_producer_and_consumer(cli: Cli) -> None:
    cli.create_topic("cli-console", 2)
    cli.produce("cli-console", ["h1:v1|k1:one", "h2:v2,h3:v3|k2:two", "h4:v4|k3:three", "h5:v5|k4:four"],
                "parse.key=true", "key.separator=:", "parse.headers=true", "headers.delimiter=|")
    assert cli.out("kafka-console-producer", "--topic", "cli-console", "--reader-property", "parse.key=true",
                   stdin="no separator\n", status=1) == \
        "[stderr]\norg.apache.kafka.common.KafkaException: No key separator found on line number 1: 'no separator'"
    printed = ["--formatter-property", "print.key=true", "--formatter-property", "print.headers=true",
               "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
               "--formatter-property", "key.separator= ~ "]
    out, err = split(cli.out("kafka-console-consumer", "--topic", "cli-console", "--from-beginning",
                             "--max-messages", "4", *printed, "--timeout-ms", "10000"))
    # keys k1, k2 hash to partition 1 and k3, k4 to 0 (the producer's murmur2); partitions are printed in the
    # order their fetches return, records of one partition in order
    assert sorted(out) == ["Partition:0 ~ Offset:0 ~ h4:v4 ~ k3 ~ three",
                           "Partition:0 ~ Offset:1 ~ h5:v5 ~ k4 ~ four",
                           "Partition:1 ~ Offset:0 ~ h1:v1 ~ k1 ~ one",
                           "Partition:1 ~ Offset:1 ~ h2:v2,h3:v3 ~ k2 ~ two"]
    assert err == ["Processed a total of 4 messages"]
    assert cli.out("kafka-console-consumer", "--topic", "cli-console", "--partition", "0", "--offset", "1",
                   "--max-messages", "1", "--timeout-ms", "10000", "--formatter-property", "print.key=true") == \
        "k4\tfour\n[stderr]\nProcessed a total of 1 messages"
    out, err = split(cli.out("kafka-console-consumer", "--include", "cli-con.*", "--from-beginning", "--max-messages",
                             "4", "--timeout-ms", "10000", "--formatter-property", "print.value=false",
                             "--formatter-property", "print.key=true"))
    assert (sorted(out), err) == (["k1", "k2", "k3", "k4"], ["Processed a total of 4 messages"])
    out, err = split(cli.out("kafka-console-consumer", "--topic", "cli-console", "--from-beginning", "--max-messages",
                             "4", "--group", "cli-console-group", "--timeout-ms", "10000"))
    assert (sorted(out), err) == (["four", "one", "three", "two"], ["Processed a total of 4 messages"])
    # the group committed what it read: a second run of the group finds nothing new and times out
    out, err = split(cli.out("kafka-console-consumer", "--topic", "cli-console", "--max-messages", "1", "--group",
                             "cli-console-group", "--timeout-ms", "1000"))
    assert (out, err) == ([], ["org.apache.kafka.common.errors.TimeoutException", "Processed a total of 0 messages"])


OFFSETS = "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID"
RESET = "GROUP TOPIC PARTITION NEW-OFFSET"


def test_kafka_consumer_groups(cli: Cli) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cli.create_topic("cli-groups", 2)
    cli.produce("cli-groups", ["a:1", "b:2", "c:3", "d:4"], "parse.key=true", "key.separator=:")  # 3 in p0, 1 in p1
    out, _ = split(cli.out("kafka-console-consumer", "--topic", "cli-groups", "--from-beginning", "--max-messages",
                           "3", "--group", "cli-g", "--timeout-ms", "10000"))
    assert len(out) == 3
    assert "cli-g" in cli.out("kafka-consumer-groups", "--list").splitlines()
    # the group's coordinator made __consumer_offsets (on Kafka it is there from start): its configs as Kafka's
    assert cli.out("kafka-configs", "--describe", "--entity-type", "topics", "--entity-name", "__consumer_offsets") \
        == lines("""
        Dynamic configs for topic __consumer_offsets are:
        cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}
        compression.type=producer sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:compression.type=producer, DEFAULT_CONFIG:compression.type=producer}
        segment.bytes=104857600 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=104857600, DEFAULT_CONFIG:log.segment.bytes=1073741824}""")  # noqa: E501
    state = cli.out("kafka-consumer-groups", "--list", "--state").splitlines()
    assert state[0] == "GROUP STATE" and "cli-g Empty" in state
    committed = cli.out("kafka-consumer-groups", "--describe", "--group", "cli-g")
    assert committed in (lines(f"""
        {OFFSETS}
        cli-g cli-groups 0 3 3 0 - - -
        cli-g cli-groups 1 0 1 1 - - -
        [stderr]
        Consumer group 'cli-g' has no active members."""), lines(f"""
        {OFFSETS}
        cli-g cli-groups 0 2 3 1 - - -
        cli-g cli-groups 1 1 1 0 - - -
        [stderr]
        Consumer group 'cli-g' has no active members."""))  # which 3 of the 4 it read is the fetches' order

    # a member that stays: confluent-kafka's consumer in the group, holding both partitions
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cli.bootstrap, "group.id": "cli-live",
                                         "client.id": "cli-member", "auto.offset.reset": "earliest",
                                         "enable.auto.commit": False})
    try:
        consumer.subscribe(["cli-groups"])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert len(consumer.assignment()) == 2
        consumer.commit(offsets=[confluent_kafka.TopicPartition("cli-groups", 0, 1)], asynchronous=False)
        assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-live") == lines(f"""
            {OFFSETS}
            cli-live cli-groups 0 1 3 2 cli-member-<member> <host> cli-member
            cli-live cli-groups 1 - 1 - cli-member-<member> <host> cli-member""")
        assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-live", "--members") == lines("""
            GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
            cli-live cli-member-<member> <host> cli-member 2""")
        assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-live", "--members", "--verbose") == \
            lines("""
            GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT
            cli-live cli-member-<member> <host> cli-member 2 - cli-groups:0,1 - -""")
        assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-live", "--state") == lines("""
            GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
            cli-live <bootstrap> (1) range Stable 1""")
        assert cli.out("kafka-consumer-groups", "--reset-offsets", "--group", "cli-live", "--topic", "cli-groups",
                       "--to-earliest", "--execute") == lines(f"""
            Error: Assignments can only be reset if the group 'cli-live' is inactive, but the current state is Stable.

            {RESET}""")
        assert cli.out("kafka-consumer-groups", "--delete", "--group", "cli-live") == lines("""
            Error: Deletion of some consumer groups failed:
            * Group 'cli-live' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.""")  # noqa: E501
    finally:
        consumer.close()

    assert cli.out("kafka-consumer-groups", "--describe", "--group", "nosuch") == lines("""
        Error: Executing consumer group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group nosuch not found.
        [stderr]
        java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.GroupIdNotFoundException: Group nosuch not found.""")  # noqa: E501

    def reset(*args: str) -> str:
        return cli.out("kafka-consumer-groups", "--reset-offsets", "--group", "cli-g", *args)

    assert reset("--topic", "cli-groups", "--to-earliest", "--dry-run") == lines(f"""
        {RESET}
        cli-g cli-groups 0 0
        cli-g cli-groups 1 0""")
    assert reset("--topic", "cli-groups", "--to-earliest", "--execute") == lines(f"""
        {RESET}
        cli-g cli-groups 0 0
        cli-g cli-groups 1 0""")
    assert reset("--topic", "cli-groups:0", "--to-offset", "1", "--execute") == lines(f"""
        {RESET}
        cli-g cli-groups 0 1""")
    assert reset("--all-topics", "--shift-by", "1", "--execute") == lines(f"""
        {RESET}
        cli-g cli-groups 0 2
        cli-g cli-groups 1 1""")
    assert reset("--topic", "cli-groups", "--shift-by", "-5", "--dry-run") == lines(f"""
        {RESET}
        cli-g cli-groups 0 0
        cli-g cli-groups 1 0""")
    assert reset("--topic", "cli-groups", "--to-datetime", "2000-01-01T00:00:00.000", "--dry-run") == lines(f"""
        {RESET}
        cli-g cli-groups 0 0
        cli-g cli-groups 1 0""")
    assert reset("--topic", "cli-groups", "--to-datetime", "2999-01-01T00:00:00.000", "--dry-run") == lines(f"""
        Warn: Partition 0 from topic cli-groups is empty. Falling back to latest known offset.

        Warn: Partition 1 from topic cli-groups is empty. Falling back to latest known offset.

        {RESET}
        cli-g cli-groups 0 3
        cli-g cli-groups 1 1""")
    assert reset("--topic", "cli-groups", "--to-latest", "--export", "--dry-run") == "cli-groups,0,3\ncli-groups,1,1"
    assert reset("--topic", "cli-groups", "--to-offset", "99", "--dry-run") == lines(f"""
        {RESET}
        cli-g cli-groups 0 3
        cli-g cli-groups 1 1""")
    assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-g", "--offsets") == lines(f"""
        {OFFSETS}
        cli-g cli-groups 0 2 3 1 - - -
        cli-g cli-groups 1 1 1 0 - - -
        [stderr]
        Consumer group 'cli-g' has no active members.""")
    assert cli.out("kafka-consumer-groups", "--delete-offsets", "--group", "cli-g", "--topic", "cli-groups:1") == \
        lines("""
        Request succeeded for deleting offsets from group cli-g.

        TOPIC PARTITION STATUS
        cli-groups 1 Successful""")
    assert cli.out("kafka-consumer-groups", "--delete-offsets", "--group", "cli-g", "--topic", "nosuch") == lines("""
        Request succeeded for deleting offsets from group cli-g.

        TOPIC PARTITION STATUS
        nosuch - Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition.""")  # noqa: E501
    assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-g", "--offsets") == lines(f"""
        {OFFSETS}
        cli-g cli-groups 0 2 3 1 - - -
        [stderr]
        Consumer group 'cli-g' has no active members.""")
    assert cli.out("kafka-consumer-groups", "--delete", "--group", "cli-g") == \
        "Deletion of requested consumer groups ('cli-g') was successful."
    assert cli.out("kafka-consumer-groups", "--delete", "--group", "cli-g") == lines("""
        Error: Deletion of some consumer groups failed:
        * Group 'cli-g' could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.""")  # noqa: E501
    assert "cli-g" not in cli.out("kafka-consumer-groups", "--list").splitlines()


def _streams_member(client: RawClient, group: str, topic: str) -> tuple[dict[str, Any], int]:
    """One member (raw StreamsGroupHeartbeats) of a one-subtopology topology reading `topic`, with a changelog,
    heartbeating until it holds its tasks: its join request and member epoch."""
    join = {"group_id": group, "member_id": "member-1", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 0, "subtopologies": [{
                "subtopology_id": "0", "source_topics": [topic], "source_topic_regex": [],
                "state_changelog_topics": [{"name": f"{group}-store-changelog", "partitions": 0,
                                            "replication_factor": 0, "topic_configs": []}],
                "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]},
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "process-1",
            "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False}
    r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, join)
    deadline = time.monotonic() + 30
    while not r.active_tasks:  # the internal topic created, the initial delay over: the tasks come
        assert r.error_code == 0 and time.monotonic() < deadline, r
        time.sleep(0.5)
        r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
            **join, "member_epoch": r.member_epoch, "topology": None, "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None})
    return join, r.member_epoch


def test_kafka_streams_groups(cli: Cli) -> None:
    """kafka-streams-groups on a streams group whose one member (raw StreamsGroupHeartbeats, KIP-1071) holds both
    tasks of a one-subtopology topology with a changelog: list, state, members and offsets, as Kafka 4.4.0
    prints them."""
    group = f"cli-sg-{uuid.uuid4().hex[:6]}"
    topic = f"{group}-in"
    cli.create_topic(topic, 2)
    client = RawClient(cli.bootstrap)
    try:
        # the epoch the member holds its tasks at: 3 on fakekafka (its join, the changelog topic created, its
        # partitions placed), 3 or 4 on Kafka, as the topic's metadata reaches the coordinator in one image or two
        join, epoch = _streams_member(client, group, topic)
        assert epoch == 3 or (isinstance(cli.cluster, RemoteCluster) and epoch == 4), epoch
        assert group in cli.out("kafka-streams-groups", "--list").splitlines()
        assert cli.out("kafka-streams-groups", "--describe", "--group", group, "--state", "--verbose") == lines(f"""
            GROUP COORDINATOR (ID) STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS
            {group} <bootstrap> (1) Stable {epoch} {epoch} 1""")
        header = ("GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID "
                  "ASSIGNMENTS")
        assert cli.out("kafka-streams-groups", "--describe", "--group", group, "--members", "--verbose") == lines(f"""
            {header}
            {group} {epoch} 0 member-1 streams {epoch} process-1 raw ACTIVE: 0:[0,1]; TARGET-ACTIVE: 0:[0,1];""")
        offsets = cli.out("kafka-streams-groups", "--describe", "--group", group, "--offsets", "--verbose")
        head, *rows = offsets.splitlines()  # Kafka lists the partitions in its hash map's order
        assert [head, *sorted(rows)] == [
            "GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG",
            f"{group} {topic} 0 - - 0 0", f"{group} {topic} 1 - - 0 0"]
        left = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
            **join, "member_epoch": -1, "topology": None, "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None})
        assert left.error_code == 0
    finally:
        client.close()


def test_kafka_streams_groups_reset_delete_offsets_and_delete(cli: Cli) -> None:
    """kafka-streams-groups' --reset-offsets (refused while the group has members; --dry-run, then --execute,
    which also deletes the group's internal topics), --delete-offsets and --delete, as Kafka 4.4.0 prints them."""
    group = f"cli-sgr-{uuid.uuid4().hex[:6]}"
    topic, changelog = f"{group}-in", f"{group}-store-changelog"
    cli.create_topic(topic, 2)
    client = RawClient(cli.bootstrap)
    try:
        join, epoch = _streams_member(client, group, topic)
        committed = client.request(ApiKey.OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": "member-1",
            "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                {"partition_index": p, "committed_offset": 5 + p, "committed_leader_epoch": -1,
                 "committed_metadata": ""} for p in (0, 1)]}]})
        assert [p.error_code for p in committed.topics[0].partitions] == [0, 0]
        # while the member is there: each command refused, in Kafka's words
        reset = ("--reset-offsets", "--group", group, "--all-input-topics", "--to-earliest")
        assert cli.out("kafka-streams-groups", *reset, "--dry-run") == lines(f"""
            Error: Assignments can only be reset if the group '{group}' is inactive, but the current state is Stable.

            GROUP TOPIC PARTITION NEW-OFFSET""")
        assert cli.out("kafka-streams-groups", "--delete", "--group", group) == lines(f"""
            Error: Deletion of some streams groups failed:
            * Group '{group}' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Streams group '{group}' is not EMPTY.""")  # noqa: E501
        subscribed = ("Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a "
                      "topic is forbidden while the consumer group is actively subscribed to it.")
        assert cli.out("kafka-streams-groups", "--delete-offsets", "--group", group, "--input-topic", topic) == \
            lines(f"""
            Error: Encountered some partition-level error, see the follow-up details.

            TOPIC PARTITION STATUS
            {topic} 0 {subscribed}
            {topic} 1 {subscribed}""")
        left = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
            **join, "member_epoch": -1, "topology": None, "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None})
        assert left.error_code == 0
        # the group empty: a dry run changes nothing, --execute resets, --delete-offsets and --delete go through
        head, *rows = cli.out("kafka-streams-groups", *reset, "--dry-run").splitlines()
        assert [head, *sorted(rows)] == [  # Kafka lists the partitions in its hash map's order
            "GROUP TOPIC PARTITION NEW-OFFSET", f"{group} {topic} 0 0", f"{group} {topic} 1 0"]
        assert cli.cluster.committed(group) == {(topic, 0): 5, (topic, 1): 6}
        assert cli.out("kafka-streams-groups", "--reset-offsets", "--group", group, "--input-topic", f"{topic}:1",
                       "--to-offset", "0", "--execute") == lines(f"""
            GROUP TOPIC PARTITION NEW-OFFSET
            {group} {topic} 1 0""")
        assert cli.cluster.committed(group) == {(topic, 0): 5, (topic, 1): 0}
        assert changelog in cli.out("kafka-topics", "--list").splitlines()  # kept by both brokers' tools
        assert cli.out("kafka-streams-groups", "--delete-offsets", "--group", group, "--input-topic", topic) == \
            lines(f"""
            Request succeeded for deleting offsets from group {group}.

            TOPIC PARTITION STATUS
            {topic} 0 Successful
            {topic} 1 Successful""")
        assert cli.cluster.committed(group) == {}
        assert cli.out("kafka-streams-groups", "--delete", "--group", group) == \
            f"Deletion of requested streams groups ('{group}') was successful."
        assert cli.out("kafka-streams-groups", "--delete", "--group", group) == lines(f"""
            Error: Deletion of some streams groups failed:
            * Group '{group}' could not be deleted due to: java.lang.IllegalArgumentException: Group '{group}' does not exist or is not a streams group.""")  # noqa: E501
        assert group not in cli.out("kafka-streams-groups", "--list").splitlines()
    finally:
        client.close()


def test_kafka_configs(cli: Cli) -> None:
    cli.create_topic("cli-configs", 1)

    def configs(*args: str, status: int = 0) -> str:
        return cli.out("kafka-configs", *args, status=status)

    topic = ("--entity-type", "topics", "--entity-name", "cli-configs")
    assert configs("--describe", *topic) == "Dynamic configs for topic cli-configs are:"
    assert configs("--alter", *topic, "--add-config", "retention.ms=86400000,cleanup.policy=[delete,compact]") == \
        "Completed updating config for topic cli-configs."
    assert configs("--describe", *topic) == lines("""
        Dynamic configs for topic cli-configs are:
        cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}
        retention.ms=86400000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=86400000}""")  # noqa: E501
    assert configs("--alter", *topic, "--delete-config", "retention.ms") == \
        "Completed updating config for topic cli-configs."
    assert configs("--describe", "--topic", "cli-configs") == lines("""
        Dynamic configs for topic cli-configs are:
        cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}""")  # noqa: E501
    not_long = "Invalid value abc for configuration retention.ms: Not a number of type LONG"
    for bad, why in (("nosuch=1", "Unknown topic config name: nosuch"), ("retention.ms=abc", not_long)):
        assert split(configs("--alter", *topic, "--add-config", bad, status=1))[1] == [
            f"Error while executing config command with args '--bootstrap-server <bootstrap> --alter --entity-type "
            f"topics --entity-name cli-configs --add-config {bad}'",
            f"java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidConfigurationException: "
            f"{why}"]
    assert configs("--describe", "--entity-type", "topics", "--entity-name", "nosuch") == \
        "The topic 'nosuch' doesn't exist and doesn't have dynamic config."

    broker = ("--entity-type", "brokers", "--entity-name", "1")
    default = ("--entity-type", "brokers", "--entity-default")
    assert configs("--describe", *broker) == "Dynamic configs for broker 1 are:"
    assert configs("--alter", *broker, "--add-config", "message.max.bytes=2000000") == \
        "Completed updating config for broker 1."
    assert configs("--alter", *default, "--add-config", "max.connections=1000") == \
        "Completed updating default config for brokers in the cluster."
    assert configs("--describe", *broker) == lines("""
        Dynamic configs for broker 1 are:
        message.max.bytes=2000000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:message.max.bytes=2000000, DEFAULT_CONFIG:message.max.bytes=1048588}""")  # noqa: E501
    assert configs("--describe", *default) == lines("""
        Default configs for brokers in the cluster are:
        max.connections=1000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:max.connections=1000}
        min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}""")
    assert configs("--alter", *broker, "--delete-config", "message.max.bytes") == \
        "Completed updating config for broker 1."
    assert configs("--alter", *default, "--delete-config", "max.connections") == \
        "Completed updating default config for brokers in the cluster."
    assert configs("--describe", *broker) == "Dynamic configs for broker 1 are:"
    everything = configs("--describe", *broker, "--all").splitlines()
    assert everything[0] == "All configs for broker 1 are:"
    assert "message.max.bytes=1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}" in everything


def test_kafka_get_offsets_and_delete_records(cli: Cli, tmp_path: Path) -> None:
    cli.create_topic("cli-offsets", 2)
    cli.produce("cli-offsets", ["a:1", "b:2", "c:3", "d:4", "e:5", "f:6"], "parse.key=true", "key.separator=:")
    ends = cli.out("kafka-get-offsets", "--topic", "cli-offsets")
    assert ends == "cli-offsets:0:4\ncli-offsets:1:2"  # the keys hash: a, c, d, f to 0; b, e to 1
    assert cli.out("kafka-get-offsets", "--topic", "cli-offsets", "--time", "-2") == "cli-offsets:0:0\ncli-offsets:1:0"
    assert cli.out("kafka-get-offsets", "--topic-partitions", "cli-offsets:1", "--time", "latest") == "cli-offsets:1:2"
    max_ts = cli.out("kafka-get-offsets", "--topic", "cli-offsets", "--time", "-3")
    assert max_ts.splitlines()[0].startswith("cli-offsets:0:") and len(max_ts.splitlines()) == 2
    assert cli.out("kafka-get-offsets", "--topic", "nosuch", status=1) == \
        "[stderr]\nError occurred: Could not match any topic-partitions with the specified filters"
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "cli-offsets", "partition": 0, "offset": 2}],
                                   "version": 1}))
    assert cli.out("kafka-delete-records", "--offset-json-file", str(offsets)) == lines("""
        Executing records delete operation
        Records delete operation completed:
        partition: cli-offsets-0\tlow_watermark: 2""")
    assert cli.out("kafka-get-offsets", "--topic", "cli-offsets", "--time", "earliest") == \
        "cli-offsets:0:2\ncli-offsets:1:0"
    offsets.write_text(json.dumps({"partitions": [{"topic": "cli-offsets", "partition": 1, "offset": 9}],
                                   "version": 1}))
    assert cli.out("kafka-delete-records", "--offset-json-file", str(offsets)) == lines("""
        Executing records delete operation
        Records delete operation completed:
        partition: cli-offsets-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not within the range of offsets maintained by the server.""")  # noqa: E501


def log_dirs_report(cli: Cli, topic: str) -> dict[str, list[dict[str, object]]]:
    """kafka-log-dirs' report of the topic's replicas on broker 1: {log dir: its partitions}, after checking
    its header lines and that no dir has an error."""
    out = cli.out("kafka-log-dirs", "--describe", "--topic-list", topic)
    head, _, body = out.rpartition("\n")
    assert head == "Querying brokers for log directories information\nReceived log directory information from brokers 1"
    (broker,) = json.loads(body)["brokers"]
    assert broker["broker"] == 1 and all(d["error"] is None for d in broker["logDirs"])
    return {d["logDir"]: d["partitions"] for d in broker["logDirs"]}


def test_kafka_log_dirs(cli: Cli, tmp_path: Path) -> None:
    cli.create_topic("cli-logdirs", 2)
    cli.produce("cli-logdirs", ["a:1", "b:2", "c:3"], "parse.key=true", "key.separator=:")
    dirs = log_dirs_report(cli, "cli-logdirs")
    # three records of one request each (--sync), keys a, b, c all hashing to partition 0: the batches, so the
    # sizes, are the same on both brokers; which of the broker's log dirs holds each replica depends on what
    # the dirs held before (the one with the fewest partitions), so the dirs are merged
    assert sorted((p for parts in dirs.values() for p in parts), key=lambda p: p["partition"]) == [
        {"partition": "cli-logdirs-0", "size": 210, "offsetLag": 0, "isFuture": False},
        {"partition": "cli-logdirs-1", "size": 0, "offsetLag": 0, "isFuture": False}]
    # records deleted below a new log start stay in their segment, and in its size, until the segment goes
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"partitions": [{"topic": "cli-logdirs", "partition": 0, "offset": 2}],
                                   "version": 1}))
    assert "partition: cli-logdirs-0\tlow_watermark: 2" in cli.out("kafka-delete-records", "--offset-json-file",
                                                                    str(offsets))
    after = log_dirs_report(cli, "cli-logdirs")
    assert sorted((p["partition"], p["size"]) for parts in after.values() for p in parts) == [
        ("cli-logdirs-0", 210), ("cli-logdirs-1", 0)]
    assert cli.out("kafka-log-dirs", "--describe", "--topic-list", "cli-logdirs", "--broker-list", "5", status=1) == \
        "[stderr]\nERROR: The given brokers do not exist from --broker-list: 5. Current existent brokers: 1"


def test_kafka_reassign_partitions_between_log_dirs(cli: Cli, tmp_path: Path) -> None:
    """A plan naming log dirs: kafka-reassign-partitions moves the replica with AlterReplicaLogDirs, --verify
    polls DescribeLogDirs, and kafka-log-dirs finds it in its new dir; a dir the broker lacks is refused."""
    cli.create_topic("cli-movedir", 1)
    cli.produce("cli-movedir", ["a:1", "b:2"], "parse.key=true", "key.separator=:")
    dirs = log_dirs_report(cli, "cli-movedir")
    if len(dirs) < 2:
        pytest.skip(f"the broker has one log dir ({next(iter(dirs))}): there is nowhere to move a replica")
    source = next(d for d, parts in dirs.items() if parts)
    target = next(d for d in dirs if d != source)
    paths = sub(f'"{re.escape(source)}"', '"<from>"')
    paths_to = sub(re.escape(target), "<to>")

    def clean(text: str) -> str:
        return paths_to(paths(text))

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-movedir", "partition": 0, "replicas": [1], "log_dirs": [target]}]}))
    assert cli.out("kafka-reassign-partitions", "--execute", "--reassignment-json-file", str(plan),
                   clean=clean) == lines("""
        Current partition replica assignment

        {"version":1,"partitions":[{"topic":"cli-movedir","partition":0,"replicas":[1],"log_dirs":["<from>"]}]}

        Save this to use as the --reassignment-json-file option during rollback
        Successfully started partition reassignment for cli-movedir-0
        Successfully started moving log directory to <to> for replica cli-movedir-0 with broker 1""")
    deadline = time.monotonic() + 30
    while True:
        # Kafka copies the replica into a future one that takes over a moment later; while it takes over, a
        # DescribeLogDirs can find the replica in its old dir with no future one (LogManager renames the future
        # log, then moves it between its maps), which --verify words "is not being moved"
        verified = cli.out("kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan))
        if "completed successfully" in verified or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert verified == lines("""
        Status of partition reassignment:
        Reassignment of partition cli-movedir-0 is completed.
        Reassignment of replica cli-movedir-0-1 completed successfully.
        Clearing broker-level throttles on broker 1
        Clearing topic-level throttles on topic cli-movedir""")
    assert log_dirs_report(cli, "cli-movedir") == {
        source: [], target: [{"partition": "cli-movedir-0", "size": 140, "offsetLag": 0, "isFuture": False}]}
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-movedir", "partition": 0, "replicas": [1], "log_dirs": ["/no/such/dir"]}]}))
    printed = [line for line in split(cli.out("kafka-reassign-partitions", "--execute", "--reassignment-json-file",
                                              str(plan), status=1, clean=clean))[0] if not line.startswith("\t")]
    assert printed[2] == '{"version":1,"partitions":[{"topic":"cli-movedir","partition":0,"replicas":[1],' \
                         '"log_dirs":["<to>"]}]}'
    assert printed[5:] == [
        "Successfully started partition reassignment for cli-movedir-0",
        "Error: Failed to alter dir for cli-movedir-0-1",
        "org.apache.kafka.tools.AdminCommandFailedException: Failed to alter dir for cli-movedir-0-1",
        "Caused by: java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.LogDirNotFoundException: "
        "The user-specified log directory is not found in the broker config.",
        "Caused by: org.apache.kafka.common.errors.LogDirNotFoundException: The user-specified log directory is not "
        "found in the broker config."]


def test_kafka_configs_broker_loggers(cli: Cli) -> None:
    """Loggers listed and set by level; their names differ (Kafka's are Java classes, fakekafka's Python
    loggers), so each line is checked for the level the root logger gave it."""
    logger = ("--entity-type", "broker-loggers", "--entity-name", "1")
    try:
        assert cli.out("kafka-configs", "--alter", *logger, "--add-config", "root=INFO") == \
            "Completed updating config for broker-logger 1."
        described = cli.out("kafka-configs", "--describe", *logger).splitlines()
        assert described[0] == "Dynamic configs for broker-logger 1 are:"
        assert "root=INFO sensitive=false synonyms={}" in described
        assert all(line.endswith("=INFO sensitive=false synonyms={}") for line in described[1:])
        assert split(cli.out("kafka-configs", "--alter", *logger, "--add-config", "root=LOUD", status=1))[1][1] == (
            "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidConfigurationException: "
            "Cannot set the log level of root to LOUD as it is not a supported log level. Valid log levels are DEBUG, "
            "ERROR, FATAL, INFO, TRACE, WARN")
        assert cli.out("kafka-configs", "--alter", *logger, "--add-config", "no.such.Logger=INFO", status=1) == \
            "[stderr]\nInvalid broker logger(s): no.such.Logger"
        assert split(cli.out("kafka-configs", "--alter", *logger, "--delete-config", "root", status=1))[1][1] == (
            "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: "
            "Removing the log level of the root logger is not allowed")
        assert cli.out("kafka-configs", "--describe", "--entity-type", "broker-loggers", "--entity-name", "7") == \
            "The broker-logger '7' doesn't exist and doesn't have dynamic config."
    finally:  # the launcher's level (fakekafka also puts its loggers back when the cluster stops)
        cli.out("kafka-configs", "--alter", *logger, "--add-config", "root=WARN")


def test_kafka_client_metrics(cli: Cli) -> None:
    """KIP-714 subscriptions through kafka-client-metrics and kafka-configs --entity-type client-metrics."""
    assert cli.out("kafka-client-metrics", "--alter", "--name", "cli-cm", "--metrics",
                   "org.apache.kafka.producer.,org.apache.kafka.consumer.", "--interval", "1000", "--match",
                   "client_id=abc") == "Altered client metrics config for cli-cm."
    subscription = lines("""
        Client metrics configs for cli-cm are:
        interval.ms=1000
        match=client_id=abc
        metrics=org.apache.kafka.producer.,org.apache.kafka.consumer.""")
    assert cli.out("kafka-client-metrics", "--describe", "--name", "cli-cm") == subscription
    assert cli.out("kafka-client-metrics", "--list") == "cli-cm"
    assert cli.out("kafka-client-metrics", "--alter", "--name", "cli-cm", "--interval", "10", status=1) == \
        "Error while executing client metrics command : Invalid value 10 for interval.ms, interval must be between " \
        "100 and 3600000 (1 hour)"
    assert cli.out("kafka-client-metrics", "--alter", "--name", "cli-cm", "--match", "bogus=1", status=1) == \
        "Error while executing client metrics command : Illegal client matching pattern: bogus=1"
    entity = ("--entity-type", "client-metrics", "--entity-name", "cli-cm2")
    assert cli.out("kafka-configs", "--alter", *entity, "--add-config", "interval.ms=5000,metrics=[a.,b.]") == \
        "Completed updating config for client-metric cli-cm2."
    assert cli.out("kafka-configs", "--describe", *entity) == lines("""
        Dynamic configs for client-metric cli-cm2 are:
        interval.ms=5000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=5000}
        metrics=a.,b. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=a.,b.}""")
    assert split(cli.out("kafka-configs", "--alter", *entity, "--add-config", "nope=1", status=1))[1][1] == (
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.InvalidRequestException: "
        "Unknown client metrics configuration: nope")
    assert cli.out("kafka-client-metrics", "--delete", "--name", "cli-cm") == \
        "Deleted client metrics config for cli-cm."
    assert cli.out("kafka-client-metrics", "--list") == "cli-cm2"
    assert cli.out("kafka-configs", "--alter", *entity, "--delete-config", "interval.ms,metrics") == \
        "Completed updating config for client-metric cli-cm2."
    assert cli.out("kafka-client-metrics", "--list") == ""


def test_kafka_leader_election(cli: Cli) -> None:
    cli.create_topic("cli-elect", 2)
    for kind in ("preferred", "unclean"):
        assert cli.out("kafka-leader-election", "--election-type", kind, "--topic", "cli-elect", "--partition",
                       "0") == "Valid replica already elected for partitions cli-elect-0"
    # every partition: Kafka's controller leaves out those already led by their preferred replica
    assert cli.out("kafka-leader-election", "--election-type", "preferred", "--all-topic-partitions") == ""
    assert split(cli.out("kafka-leader-election", "--election-type", "preferred", "--topic", "nosuch", "--partition",
                         "0", status=1)) == (
        ["Error completing leader election (PREFERRED) for partition: nosuch-0: "
         "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such topic as nosuch"],
        ["1 replica(s) could not be elected",
         "org.apache.kafka.tools.AdminCommandFailedException: 1 replica(s) could not be elected",
         "\tSuppressed: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such topic as nosuch"])
    assert split(cli.out("kafka-leader-election", "--election-type", "preferred", "--topic", "cli-elect",
                         "--partition", "7", status=1))[0] == [
        "Error completing leader election (PREFERRED) for partition: cli-elect-7: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: No such partition as cli-elect-7"]


def test_kafka_reassign_partitions(cli: Cli, tmp_path: Path) -> None:
    cli.create_topic("cli-reassign", 2)
    move = tmp_path / "move.json"
    move.write_text(json.dumps({"topics": [{"topic": "cli-reassign"}], "version": 1}))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-reassign", "partition": 0, "replicas": [1], "log_dirs": ["any"]}]}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "cli-reassign", "partition": 0, "replicas": [7], "log_dirs": ["any"]}]}))
    log_dir = sub(r'"log_dirs":\["/[^"]*"\]', '"log_dirs":["<dir>"]')
    assert cli.out("kafka-reassign-partitions", "--generate", "--topics-to-move-json-file", str(move),
                   "--broker-list", "1", clean=log_dir) == lines("""
        Current partition replica assignment
        {"version":1,"partitions":[{"topic":"cli-reassign","partition":0,"replicas":[1],"log_dirs":["<dir>"]},{"topic":"cli-reassign","partition":1,"replicas":[1],"log_dirs":["<dir>"]}]}

        Proposed partition reassignment configuration
        {"version":1,"partitions":[{"topic":"cli-reassign","partition":0,"replicas":[1],"log_dirs":["any"]},{"topic":"cli-reassign","partition":1,"replicas":[1],"log_dirs":["any"]}]}""")  # noqa: E501
    assert cli.out("kafka-reassign-partitions", "--execute", "--reassignment-json-file", str(plan),
                   clean=log_dir) == lines("""
        Current partition replica assignment

        {"version":1,"partitions":[{"topic":"cli-reassign","partition":0,"replicas":[1],"log_dirs":["<dir>"]}]}

        Save this to use as the --reassignment-json-file option during rollback
        Successfully started partition reassignment for cli-reassign-0""")
    assert cli.out("kafka-reassign-partitions", "--verify", "--reassignment-json-file", str(plan)) == lines("""
        Status of partition reassignment:
        Reassignment of partition cli-reassign-0 is completed.

        Clearing broker-level throttles on broker 1
        Clearing topic-level throttles on topic cli-reassign""")
    assert cli.out("kafka-reassign-partitions", "--list") == "No partition reassignments found."
    assert cli.out("kafka-reassign-partitions", "--execute", "--reassignment-json-file", str(bad),
                   status=1).splitlines()[:2] == [
        "Error: Unknown broker id 7", "org.apache.kafka.tools.AdminCommandFailedException: Unknown broker id 7"]


VOLATILE_COLUMNS = {"ProducerId", "LastTimestamp", "CurrentTransactionStartTimeMs", "TransactionDurationMs"}
"""kafka-transactions columns each broker makes up: producer ids (Kafka's count from 0 in a fresh cluster, from
another test's use here; fakekafka's from 1000), and times."""


def table(text: str) -> list[dict[str, str]]:
    """kafka-transactions' tab-separated table as rows by column name, made-up values blanked."""
    header, *rows = text.splitlines()
    names = [n.strip() for n in header.split("\t")]
    return [{n: "<>" if n in VOLATILE_COLUMNS else v.strip() for n, v in zip(names, row.split("\t"), strict=True)}
            for row in rows]


def test_kafka_transactions(cli: Cli) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cli.create_topic("cli-txn", 1)
    tid = f"cli-txn-{uuid.uuid4().hex[:8]}"  # a transactional id outlives its topics: a fresh one starts at epoch 0
    producer = confluent_kafka.Producer({"bootstrap.servers": cli.bootstrap, "transactional.id": tid,
                                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    for v in (b"1", b"2"):
        producer.produce("cli-txn", v, partition=0)
    producer.flush(30)
    try:
        ongoing = {"TransactionalId": tid, "Coordinator": "1", "ProducerId": "<>",
                   "TransactionState": "Ongoing"}
        listed = table(cli.out("kafka-transactions", "list"))
        assert ongoing in listed
        assert table(cli.out("kafka-transactions", "describe", "--transactional-id", tid)) == [
            {"CoordinatorId": "1", "TransactionalId": tid, "ProducerId": "<>", "ProducerEpoch": "0",
             "TransactionState": "Ongoing", "TransactionTimeoutMs": "60000", "CurrentTransactionStartTimeMs": "<>",
             "TransactionDurationMs": "<>", "TopicPartitions": "cli-txn-0"}]
        producers = ("describe-producers", "--topic", "cli-txn", "--partition", "0")
        assert table(cli.out("kafka-transactions", *producers)) == [
            {"ProducerId": "<>", "ProducerEpoch": "0", "LatestCoordinatorEpoch": "-1", "LastSequence": "1",
             "LastTimestamp": "<>", "CurrentTransactionStartOffset": "0"}]
        hanging = ("Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\t"
                   "Duration(min)")
        # a transaction younger than transaction.max.timeout.ms is not hanging
        assert cli.out("kafka-transactions", "find-hanging", "--broker-id", "1") == hanging
        assert cli.out("kafka-transactions", "find-hanging", "--topic", "cli-txn") == hanging
        assert cli.out("kafka-transactions", "abort", "--topic", "cli-txn", "--partition", "0", "--start-offset",
                       "0") == ""
        # the abort marker went to the partition (offset 2); the coordinator, not told, still has it Ongoing
        assert table(cli.out("kafka-transactions", *producers)) == [
            {"ProducerId": "<>", "ProducerEpoch": "0", "LatestCoordinatorEpoch": "0", "LastSequence": "1",
             "LastTimestamp": "<>", "CurrentTransactionStartOffset": "None"}]
        assert cli.out("kafka-get-offsets", "--topic", "cli-txn") == "cli-txn:0:3"
        assert ongoing in table(cli.out("kafka-transactions", "list"))
        assert cli.out("kafka-transactions", "describe", "--transactional-id", "nosuch", status=1) == (
            "[stderr]\nFailed to describe transaction state of transactional-id `nosuch`: DescribeTransactions "
            "request for transactionalId `nosuch` failed because the ID could not be found. Enable debug logging for "
            "additional detail.")
        assert cli.out("kafka-transactions", "abort", "--topic", "cli-txn", "--partition", "0", "--start-offset", "7",
                       status=1) == \
            "[stderr]\nCould not find any open transactions starting at offset 7 on partition cli-txn-0"
    finally:
        producer.abort_transaction(30)


_TXN_PRODUCER = sub(r'"producerId":(\d+),"previousProducerId":\1,', '"producerId":<id>,"previousProducerId":<id>,')
_TXN_VOLATILE = sub(r'"(producerId|previousProducerId|transactionLastUpdateTimestampMs|'
                    r'transactionStartTimestampMs)":\d+', r'"\1":<n>')


def test_transaction_state_read_with_kafkas_formatter(cli: Cli) -> None:
    """What the transaction coordinator wrote to `__transaction_state` for one committed transaction, read back
    with Kafka's TransactionLogMessageFormatter."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from fakekafka.model.internal_topics import java_string_hash, kafka_abs
    cli.create_topic("cli-txnlog", 2)
    tid = f"cli-txnlog-{uuid.uuid4().hex[:8]}"
    partition = kafka_abs(java_string_hash(tid)) % 50

    def log_end() -> int:
        out = cli.out("kafka-get-offsets", "--topic-partitions", f"__transaction_state:{partition}")
        return int(out.rsplit(":", 1)[1])

    producer = confluent_kafka.Producer({"bootstrap.servers": cli.bootstrap, "transactional.id": tid,
                                         "transaction.timeout.ms": 60_000})
    producer.init_transactions(30)
    start = log_end() - 1  # InitProducerId wrote the id's Empty record
    producer.begin_transaction()
    for p in (0, 1):
        producer.produce("cli-txnlog", b"v", partition=p)
    producer.flush(30)
    producer.commit_transaction(30)
    # Kafka answers EndTxn once PrepareCommit is written and appends CompleteCommit after the markers: wait for it
    count = 4
    deadline = time.monotonic() + 30
    while log_end() - start < count and time.monotonic() < deadline:
        time.sleep(0.2)
    out = cli.out("kafka-console-consumer", "--topic", "__transaction_state", "--partition", str(partition),
                  "--offset", str(start), "--max-messages", str(count), "--timeout-ms", "10000",
                  "--command-property", "exclude.internal.topics=false",
                  "--formatter", "org.apache.kafka.tools.consumer.TransactionLogMessageFormatter",
                  clean=lambda s: _TXN_VOLATILE(_TXN_PRODUCER(s)))
    # Empty at InitProducerId, Ongoing with both partitions, PrepareCommit, CompleteCommit (no partitions left)
    key = f'{{"key":{{"type":0,"data":{{"transactionalId":"{tid}"}}}}'
    head = '"producerId":<id>,"previousProducerId":<id>,"producerEpoch":0,"transactionTimeoutMs":60000'
    both = '[{"topic":"cli-txnlog","partitionIds":[0,1]}]'
    assert out.replace('}{"key"', '}\n{"key"') == lines(f"""
        {key},"value":{{"version":1,"data":{{{head},"transactionStatus":0,"transactionPartitions":null,"transactionLastUpdateTimestampMs":<n>,"transactionStartTimestampMs":-1}}}}}}
        {key},"value":{{"version":1,"data":{{{head},"transactionStatus":1,"transactionPartitions":{both},"transactionLastUpdateTimestampMs":<n>,"transactionStartTimestampMs":<n>}}}}}}
        {key},"value":{{"version":1,"data":{{{head},"transactionStatus":2,"transactionPartitions":{both},"transactionLastUpdateTimestampMs":<n>,"transactionStartTimestampMs":<n>}}}}}}
        {key},"value":{{"version":1,"data":{{{head},"transactionStatus":4,"transactionPartitions":[],"transactionLastUpdateTimestampMs":<n>,"transactionStartTimestampMs":<n>}}}}}}
        [stderr]
        Processed a total of {count} messages""")  # noqa: E501


def test_kafka_producer_and_consumer_perf_test(cli: Cli) -> None:
    cli.create_topic("cli-perf", 1)
    rates = sub(r"[0-9]+(\.[0-9]+)?( ms| records/sec| MB/sec)", r"<n>\2")
    assert cli.out("kafka-producer-perf-test", "--topic", "cli-perf", "--num-records", "200", "--record-size", "100",
                   "--throughput", "-1", "--command-property", "acks=all", clean=rates) == (
        "200 records sent, <n> records/sec (<n> MB/sec), <n> ms avg latency, <n> ms max latency, <n> ms 50th, "
        "<n> ms 95th, <n> ms 99th, <n> ms 99.9th.")
    assert cli.out("kafka-get-offsets", "--topic", "cli-perf") == "cli-perf:0:200"
    header, values = cli.out("kafka-consumer-perf-test", "--topic", "cli-perf", "--num-records", "200",
                             "--timeout", "20000").splitlines()
    assert header == ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                      "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    row = dict(zip(header.split(", "), values.split(", "), strict=True))
    assert (row["data.consumed.in.MB"], row["data.consumed.in.nMsg"]) == ("0.0191", "200")  # 200 x 100 bytes
    out = cli.out("kafka-consumer-perf-test", "--topic", "cli-perf", "--num-records", "200", "--timeout", "20000",
                  "--group", "cli-perf-group", "--show-detailed-stats", "--reporting-interval", "600000")
    assert out == ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
                   "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    assert cli.out("kafka-consumer-groups", "--describe", "--group", "cli-perf-group", "--offsets") == lines(f"""
        {OFFSETS}
        cli-perf-group cli-perf 0 200 200 0 - - -
        [stderr]
        Consumer group 'cli-perf-group' has no active members.""")


def _offsets_partition(group: str) -> int:
    """The group's `__consumer_offsets` partition (Kafka's: the id's Java hashCode mod the 50 partitions)."""
    from fakekafka.model.internal_topics import java_string_hash, kafka_abs
    return kafka_abs(java_string_hash(group)) % 50


_STAMP = sub(r'"(commitTimestamp|currentStateTimestamp)":\d+', r'"\1":<time>')
_TOPIC_ID_JSON = sub(r'"topicId":"[A-Za-z0-9_-]{22}"', '"topicId":"<id>"')


def test_consumer_offsets_read_with_kafkas_formatters(cli: Cli) -> None:
    """What a group's coordinator wrote to `__consumer_offsets` (a classic consumer's rebalance and commit, an
    admin's offset reset, OffsetDelete, DeleteGroups), read back with Kafka's own formatters."""
    topic, group = "cli-offlog", "cli-offlog-g"
    partition = _offsets_partition(group)
    cli.create_topic(topic, 2)
    cli.produce(topic, ["a:1", "b:2", "c:3", "d:4"], "parse.key=true", "key.separator=:")  # 3 in p0, 1 in p1

    def log_end() -> int:
        out = cli.out("kafka-get-offsets", "--topic-partitions", f"__consumer_offsets:{partition}")
        return int(out.rsplit(":", 1)[1])

    assert cli.out("kafka-consumer-groups", "--describe", "--group", group) == lines(f"""
        Error: Executing consumer group command failed due to org.apache.kafka.common.errors.GroupIdNotFoundException: Group {group} not found.
        [stderr]
        java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.GroupIdNotFoundException: Group {group} not found.""")  # noqa: E501
    start = log_end()  # FindCoordinator made __consumer_offsets (on Kafka it is there from the start)
    out, _ = split(cli.out("kafka-console-consumer", "--topic", topic, "--from-beginning", "--max-messages", "4",
                           "--group", group, "--timeout-ms", "10000"))
    assert len(out) == 4
    assert cli.out("kafka-consumer-groups", "--reset-offsets", "--group", group, "--topic", f"{topic}:0",
                   "--to-offset", "1", "--execute") == lines(f"""
        {RESET}
        {group} {topic} 0 1""")
    assert cli.out("kafka-consumer-groups", "--delete-offsets", "--group", group, "--topic", f"{topic}:1") == \
        lines(f"""
        Request succeeded for deleting offsets from group {group}.

        TOPIC PARTITION STATUS
        {topic} 1 Successful""")
    assert cli.out("kafka-consumer-groups", "--delete", "--group", group) == \
        f"Deletion of requested consumer groups ('{group}') was successful."
    count = log_end() - start

    def formatted(formatter: str) -> str:
        return cli.out("kafka-console-consumer", "--topic", "__consumer_offsets", "--partition", str(partition),
                       "--offset", str(start), "--max-messages", str(count), "--timeout-ms", "10000",
                       "--command-property", "exclude.internal.topics=false",
                       "--formatter", f"org.apache.kafka.tools.consumer.{formatter}",
                       clean=lambda s: _TOPIC_ID_JSON(_STAMP(s)))

    # the formatters print one JSON object per record without a line break between them
    key, offset_key = f'{{"key":{{"type":2,"data":{{"group":"{group}"}}}}', f'"group":"{group}","topic":"{topic}"'
    assert formatted("OffsetsMessageFormatter").replace('}{"key"', '}\n{"key"') == lines(f"""
        {{"key":{{"type":1,"data":{{{offset_key},"partition":1}}}},"value":{{"version":4,"data":{{"offset":1,"leaderEpoch":0,"metadata":"","commitTimestamp":<time>,"topicId":"<id>"}}}}}}
        {{"key":{{"type":1,"data":{{{offset_key},"partition":0}}}},"value":{{"version":4,"data":{{"offset":3,"leaderEpoch":0,"metadata":"","commitTimestamp":<time>,"topicId":"<id>"}}}}}}
        {{"key":{{"type":1,"data":{{{offset_key},"partition":0}}}},"value":{{"version":4,"data":{{"offset":1,"leaderEpoch":-1,"metadata":"","commitTimestamp":<time>,"topicId":"<id>"}}}}}}
        {{"key":{{"type":1,"data":{{{offset_key},"partition":1}}}},"value":null}}
        {{"key":{{"type":1,"data":{{{offset_key},"partition":0}}}},"value":null}}
        [stderr]
        Processed a total of 9 messages""")  # noqa: E501
    member = ('{"memberId":"console-consumer-<member>","groupInstanceId":null,"clientId":"console-consumer",'
              '"clientHost":"<host>","rebalanceTimeout":300000,"sessionTimeout":45000,'
              '"subscription":"AAMAAAABAApjbGktb2ZmbG9n/////wAAAAD///////8=",'
              '"assignment":"AAMAAAABAApjbGktb2ZmbG9nAAAAAgAAAAAAAAAB/////w=="}')
    assert formatted("GroupMetadataMessageFormatter").replace('}{"key"', '}\n{"key"') == lines(f"""
        {key},"value":{{"version":3,"data":{{"protocolType":"","generation":0,"protocol":null,"leader":null,"currentStateTimestamp":<time>,"members":[]}}}}}}
        {key},"value":{{"version":3,"data":{{"protocolType":"consumer","generation":1,"protocol":"range","leader":"console-consumer-<member>","currentStateTimestamp":<time>,"members":[{member}]}}}}}}
        {key},"value":{{"version":3,"data":{{"protocolType":"consumer","generation":2,"protocol":null,"leader":null,"currentStateTimestamp":<time>,"members":[]}}}}}}
        {key},"value":null}}
        [stderr]
        Processed a total of 9 messages""")  # noqa: E501


_SHARE_VOLATILE = sub(r'"(createTimestamp|writeTimestamp|stateEpoch)":\d+', r'"\1":<n>')
"""Times, and the state epoch: the group's epoch at initialization, 2 on Kafka where fakekafka's group is at 1
(compat/KNOWN_DIFFERENCES.md, "Share groups": a new member's first heartbeat)."""


def test_share_group_state_read_with_kafkas_formatter(cli: Cli) -> None:
    """What the share coordinator wrote to `__share_group_state` for one share group's partition (records
    accepted, released and delivered again, rejected), read back with Kafka's ShareGroupStateMessageFormatter."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    from confluent_kafka import AcknowledgeType, ShareConsumer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    from fakekafka.model.internal_topics import java_string_hash, kafka_abs
    cli.create_topic("cli-sharestate", 1)
    group = f"cli-sharestate-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cli.bootstrap})
    # confluent-kafka prints a Uuid in standard base64; Kafka's Uuid.toString (hashed for the partition, printed by
    # the formatter) is URL-safe
    topic_id = str(admin.describe_topics(confluent_kafka.TopicCollection(["cli-sharestate"]))["cli-sharestate"]
                   .result(10).topic_id).replace("+", "-").replace("/", "_")
    partition = kafka_abs(java_string_hash(f"{group}:{topic_id}:0")) % 50
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": cli.bootstrap})
    for i in range(4):
        producer.produce("cli-sharestate", f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = ShareConsumer({"bootstrap.servers": cli.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe(["cli-sharestate"])
    seen: list[tuple[bytes, int]] = []
    kinds = {b"v0": AcknowledgeType.ACCEPT, b"v1": AcknowledgeType.RELEASE, b"v2": AcknowledgeType.REJECT,
             b"v3": AcknowledgeType.ACCEPT}
    deadline = time.monotonic() + 30
    try:
        while (b"v1", 2) not in seen and time.monotonic() < deadline:
            messages = consumer.poll(0.5)
            for m in messages:
                assert m.error() is None, m.error()
                seen.append((m.value(), m.delivery_count()))
                consumer.acknowledge(m, kinds[m.value()] if m.delivery_count() == 1 else AcknowledgeType.ACCEPT)
            if messages:
                consumer.commit_sync()
    finally:
        consumer.close()
    assert sorted(seen) == [(b"v0", 1), (b"v1", 1), (b"v1", 2), (b"v2", 1), (b"v3", 1)]
    # from the log start, not offset 0: both coordinators prune the topic (DeleteRecords before every key's last
    # snapshot; Kafka every share.coordinator.state.topic.prune.interval.ms, 5 min), so in a session whose earlier
    # tests used share groups offset 0 is gone (the --kafka-real child read nothing there)
    def offset(when: str) -> int:
        return int(cli.out("kafka-get-offsets", "--topic-partitions", f"__share_group_state:{partition}",
                           "--time", when).rsplit(":", 1)[1])
    start, end = offset("earliest"), offset("latest")
    out = cli.out("kafka-console-consumer", "--topic", "__share_group_state", "--partition", str(partition),
                  "--offset", "earliest", "--max-messages", str(end - start), "--timeout-ms", "10000",
                  "--command-property", "exclude.internal.topics=false",
                  "--formatter", "org.apache.kafka.tools.consumer.group.share.ShareGroupStateMessageFormatter",
                  clean=lambda s: _SHARE_VOLATILE(s.replace(topic_id, "<topic-id>")))
    ours = "\n".join(line for line in out.replace('}{"key"', '}\n{"key"').splitlines() if group in line)
    # the key initialized with no start offset yet; one update per acknowledging request, written before the
    # start offset moves past what it acknowledged
    key = f'"groupId":"{group}","topicId":"<topic-id>","partition":0}}}}'
    batch = '{{"firstOffset":{0},"lastOffset":{0},"deliveryState":{1},"deliveryCount":{2}}}'.format
    first = ",".join([batch(0, 2, 1), batch(1, 0, 1), batch(2, 4, 1), batch(3, 2, 1)])
    assert ours == lines(f"""
        {{"key":{{"type":0,"data":{{{key},"value":{{"version":0,"data":{{"snapshotEpoch":0,"stateEpoch":<n>,"leaderEpoch":0,"startOffset":-1,"createTimestamp":<n>,"writeTimestamp":<n>,"stateBatches":[]}}}}}}
        {{"key":{{"type":1,"data":{{{key},"value":{{"version":0,"data":{{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,"deliveryCompleteCount":3,"stateBatches":[{first}]}}}}}}
        {{"key":{{"type":1,"data":{{{key},"value":{{"version":0,"data":{{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":1,"deliveryCompleteCount":3,"stateBatches":[{batch(1, 2, 2)}]}}}}}}""")  # noqa: E501


def test_kafka_configs_client_quotas(cli: Cli) -> None:
    """Quotas of users and client ids through kafka-configs (AlterClientQuotas, DescribeClientQuotas). Each name is
    the test's own, and what it sets it removes (the kafka-real cluster is shared; Kafka's broker learns a change a
    moment after the tool's answer, so a describe waits for it)."""
    tag = uuid.uuid4().hex[:6]
    user, client = f"cli-user-{tag}", f"cli-client-{tag}"

    def configs(*args: str, status: int = 0) -> str:
        return cli.out("kafka-configs", *args, status=status)

    def described(args: tuple[str, ...], expected: str) -> None:
        deadline = time.monotonic() + 15
        while (text := configs("--describe", *args)) != expected and time.monotonic() < deadline:
            time.sleep(0.2)
        assert text == expected

    users, clients = ("--entity-type", "users", "--entity-name", user), ("--entity-type", "clients", "--entity-name",
                                                                          client)
    assert configs("--alter", *users, "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048") == \
        f"Completed updating config for user {user}."
    assert configs("--alter", *clients, "--add-config", "request_percentage=12.5") == \
        f"Completed updating config for client {client}."
    assert configs("--alter", *users, "--entity-type", "clients", "--entity-name", client,
                   "--add-config", "producer_byte_rate=512") == f"Completed updating config for user {user}."
    described(users, f"Quota configs for user-principal '{user}' are consumer_byte_rate=2048.0, "
                     "producer_byte_rate=1024.0")
    described(clients, f"Quota configs for client-id '{client}' are request_percentage=12.5")
    described((*users, "--entity-type", "clients", "--entity-name", client),
              f"Quota configs for user-principal '{user}', client-id '{client}' are producer_byte_rate=512.0")
    bad = configs("--alter", *users, "--add-config", "producer_byte_rate=1.5", status=1)
    assert split(bad)[1][1:2] == ["java.util.concurrent.ExecutionException: "
                                  "org.apache.kafka.common.errors.InvalidRequestException: "
                                  "producer_byte_rate cannot be a fractional value."]
    assert configs("--alter", *users, "--delete-config", "producer_byte_rate,consumer_byte_rate") == \
        f"Completed updating config for user {user}."
    assert configs("--alter", *clients, "--delete-config", "request_percentage") == \
        f"Completed updating config for client {client}."
    assert configs("--alter", *users, "--entity-type", "clients", "--entity-name", client,
                   "--delete-config", "producer_byte_rate") == f"Completed updating config for user {user}."
    described(clients, "")  # nothing left to describe: the tool prints nothing


def test_streams_group_records_in_consumer_offsets(cli: Cli) -> None:
    """The records a streams group's coordinator writes to `__consumer_offsets` (read through the handle and decoded
    with Kafka's schemas) as a member joins before its internal topic exists, gets its tasks, leaves, and the
    group is deleted with kafka-streams-groups: the same records, in the same batches' order, on both brokers."""
    group = f"cli-sgl-{uuid.uuid4().hex[:6]}"
    topic = f"{group}-in"
    partition = _offsets_partition(group)
    cli.create_topic(topic, 2)
    client = RawClient(cli.bootstrap)
    try:
        # run alone, no group has made `__consumer_offsets` yet (fakekafka makes it at the first heartbeat); the
        # records read are filtered by the group's id, so reading from 0 is as good
        before = len(cli.cluster.records("__consumer_offsets", partition)) \
            if "__consumer_offsets" in cli.cluster.topics() else 0
        join, _ = _streams_member(client, group, topic)
        left = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
            **join, "member_epoch": -1, "topology": None, "active_tasks": None, "standby_tasks": None,
            "warmup_tasks": None})
        assert left.error_code == 0
        assert cli.out("kafka-streams-groups", "--delete", "--group", group) == \
            f"Deletion of requested streams groups ('{group}') was successful."
        # the topics' ids on this broker (they go into the group's metadata hash) and partition counts
        md = client.request(ApiKey.METADATA, 12, {"topics": [{"name": n} for n in (topic, f"{group}-store-changelog")],
                                                  "allow_auto_topic_creation": False})
        hashes = {t.name: topic_hash(t.topic_id, t.name, [[] for _ in t.partitions]) for t in md.topics}
    finally:
        client.close()
    # Kafka's metadata hash of the topology's topics that exist (one broker, no racks): the source topic alone at
    # the join, then with the changelog once it is created
    alone, both = group_hash({topic: hashes[topic]}), group_hash(hashes)
    written = []
    for r in cli.cluster.records("__consumer_offsets", partition)[before:]:
        record_type, key, _, value = decode_record(r.key, r.value)
        if key.get("group_id") != group:
            continue
        fields = {} if value is None else {n: value[n] for n in ("epoch", "validated_topology_epoch", "member_epoch",
                                                                 "state", "assignment_epoch", "metadata_hash")
                                           if n in value}
        if value is not None and record_type == 22:  # the current assignment: its tasks and their assignment epochs
            fields["active"] = [(t.subtopology_id, list(t.partitions), list(t.get("assignment_epochs") or []))
                                for t in value.active_tasks]
        written.append((record_type, value is None, fields))
    assert written == [
        # the join: member, topology, group epoch 2 (topology not yet validated: its changelog is missing), the
        # member at epoch 1 with no tasks; no target while the initial rebalance delay runs
        (19, False, {}), (23, False, {"epoch": 0}),
        (17, False, {"epoch": 2, "validated_topology_epoch": -1, "metadata_hash": alone}),
        (22, False, {"member_epoch": 1, "state": 1, "active": []}),
        # the first assignment: group epoch 3, the target, the member at epoch 3 with its tasks
        (17, False, {"epoch": 3, "validated_topology_epoch": 0, "metadata_hash": both}), (21, False, {}),
        (20, False, {"assignment_epoch": 3}), (22, False, {"member_epoch": 3, "state": 1,
                                                                     "active": [("0", [0, 1], [3, 3])]}),
        # the member leaves: its records go, the group epoch moves, the empty target at it
        (22, True, {}), (21, True, {}), (19, True, {}),
        (17, False, {"epoch": 4, "validated_topology_epoch": 0, "metadata_hash": both}),
        (20, False, {"assignment_epoch": 4}),
        # kafka-streams-groups --delete
        (20, True, {}), (17, True, {}), (23, True, {})]
