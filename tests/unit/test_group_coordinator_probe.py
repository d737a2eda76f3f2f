"""The probe group RemoteCluster.wait_for_topic_at_group_coordinator joins: in the waited-for group's own
__consumer_offsets partition (each of Kafka's coordinator shards learns of a new topic on its own)."""

from __future__ import annotations

import random

import pytest

from fakekafka.model.internal_topics import partition_for
from fakekafka.testing.client import probe_group


def test_a_probe_is_found_for_the_group_a_ci_run_had_none_for() -> None:
    cell = "compat-80d371-consumer_protocol_commit_resume-sarama"
    group, topic = f"{cell}-g", f"{cell}-t"
    probe = probe_group(group, topic, 50)
    assert probe.startswith("fakekafka-probe-") and topic in probe
    assert partition_for(probe, 50) == partition_for(group, 50)


@pytest.mark.parametrize("shards", [1, 3, 50, 150])
def test_every_group_gets_a_probe_in_its_partition(shards: int) -> None:
    rng = random.Random(shards)
    for _ in range(300):
        topic = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz-_0123456789") for _ in range(rng.randint(1, 60)))
        group = f"{topic}-{rng.choice(['g', 'group', 'compat'])}"
        probe = probe_group(group, topic, shards)
        assert partition_for(probe, shards) == partition_for(group, shards)
        assert probe == probe_group(group, topic, shards)  # the same name each time: one probe group per topic
