"""Streams groups over raw requests, as Kafka 4.4.0 answers them (kafka_real: the same test runs on both
brokers): a member whose source topic is missing, and the other group APIs on a streams group's id
(ListGroups, DescribeGroups, ConsumerGroupDescribe, ConsumerGroupHeartbeat, DeleteGroups before and after the
member leaves)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from fakekafka.testing.handle import ClusterHandle
from fakekafka.wire import ApiKey, ErrorCode
from tests.rawclient import RawClient, eventually

pytestmark = pytest.mark.kafka_real


def _join(group: str, member: str, source: str) -> dict[str, Any]:
    return {"group_id": group, "member_id": member, "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 30000,
            "topology": {"epoch": 0, "subtopologies": [
                {"subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
                 "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
                 "copartition_groups": []}]},
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p1", "user_endpoint": None,
            "client_tags": None, "task_offsets": None, "task_end_offsets": None, "shutdown_application": False}


def test_streams_group_beside_the_other_group_apis(kafka: ClusterHandle) -> None:
    group = f"sg-{uuid.uuid4().hex[:8]}"
    missing = f"{group}-no-such-topic"
    client = RawClient(kafka.bootstrap_servers)
    try:
        # a fresh Kafka answers FindCoordinator, then NOT_COORDINATOR until the group's partition is loaded
        eventually("the group coordinator", lambda: client.request(ApiKey.FIND_COORDINATOR, 4, {
            "key_type": 0, "coordinator_keys": [group]}).coordinators[0].error_code == ErrorCode.NONE or None)
        eventually("the group coordinator loaded", lambda: client.request(ApiKey.DESCRIBE_GROUPS, 5, {
            "groups": [group], "include_authorized_operations": False}).groups[0].error_code == ErrorCode.NONE or None)
        r = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, _join(group, "m1", missing))
        assert r.error_code == ErrorCode.NONE
        assert r.member_epoch > 0 and r.active_tasks == []
        assert {"status_code": 1, "status_detail": f"Source topics {missing} are missing."} in \
               [{"status_code": s.status_code, "status_detail": s.status_detail} for s in r.status]
        view = kafka.streams_group(group)  # the handle's snapshot, the same on both brokers but for member states
        assert view is not None
        assert (view.state, view.group_epoch, view.topology_epoch, view.subtopologies) == \
            ("NotReady", r.member_epoch + 1, 0, {"0": [missing]})  # the new group's first assignment is pending
        assert [(m.member_id, m.member_epoch, m.process_id, m.tasks, m.target_tasks) for m in view.members] == \
            [("m1", r.member_epoch, "p1", {"active": {}, "standby": {}, "warmup": {}},
              {"active": {}, "standby": {}, "warmup": {}})]
        assert group in kafka.groups() and f"{group}: NotReady (streams protocol)" in kafka.describe()
        listed = client.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["streams"]})
        mine = [g for g in listed.groups if g.group_id == group]
        assert [(g.protocol_type, g.group_state, g.group_type) for g in mine] == [("streams", "NotReady", "streams")]
        d5 = client.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})
        assert (d5.groups[0].error_code, d5.groups[0].group_state) == (ErrorCode.NONE, "Dead")
        d6 = client.request(ApiKey.DESCRIBE_GROUPS, 6, {"groups": [group], "include_authorized_operations": False})
        assert (d6.groups[0].error_code, d6.groups[0].error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                         f"Group {group} is not a classic group.")
        cd = client.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                                "include_authorized_operations": False})
        assert (cd.groups[0].error_code, cd.groups[0].error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                         f"Group {group} is not a consumer group.")
        ch = client.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": group, "member_id": "c" * 22, "member_epoch": 0, "rebalance_timeout_ms": 1000,
            "subscribed_topic_names": [missing], "topic_partitions": []})
        assert (ch.error_code, ch.error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                     f"Group {group} is not a consumer group.")
        deleted = client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
        assert deleted.results[0].error_code == ErrorCode.NON_EMPTY_GROUP
        left = client.request(ApiKey.STREAMS_GROUP_HEARTBEAT, 1, {
            **_join(group, "m1", missing), "member_epoch": -1, "topology": None, "active_tasks": None,
            "standby_tasks": None, "warmup_tasks": None})
        assert (left.error_code, left.member_epoch) == (ErrorCode.NONE, -1)
        described = client.request(ApiKey.STREAMS_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                                      "include_authorized_operations": False})
        assert (described.groups[0].group_state, described.groups[0].members) == ("Empty", [])
        deleted = client.request(ApiKey.DELETE_GROUPS, 2, {"groups_names": [group]})
        assert deleted.results[0].error_code == ErrorCode.NONE
        gone = client.request(ApiKey.STREAMS_GROUP_DESCRIBE, 1, {"group_ids": [group],
                                                                 "include_authorized_operations": False})
        assert (gone.groups[0].error_code, gone.groups[0].error_message) == (ErrorCode.GROUP_ID_NOT_FOUND,
                                                                             f"Group {group} not found.")
        assert kafka.streams_group(group) is None
    finally:
        client.close()
