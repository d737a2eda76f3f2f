"""Committed offsets, the half of each group coordinator Kafka keeps in its OffsetMetadataManager. Pure state.

OffsetCommit, TxnOffsetCommit (staged per producer until its transaction ends), OffsetFetch, OffsetDelete and
DeleteGroups, for classic groups (`ClassicGroupOffsets`) and KIP-848 consumer groups (`ConsumerGroupOffsets`),
and the expiry of an empty classic group's offsets. Each is a mixin of its coordinator
(`fakekafka.model.group.GroupCoordinator`, `fakekafka.model.consumer_group.ConsumerGroupCoordinator`): it reads
the coordinator's clock, configuration and groups, and reports what changed to its `records`.
"""

from __future__ import annotations

from collections.abc import Callable

from fakekafka.model.clock import Clock
from fakekafka.model.consumer_group_metadata import ConsumerGroup, ConsumerGroupConfig
from fakekafka.model.group_metadata import (
    Group,
    GroupConfig,
    GroupState,
    OffsetAndMetadata,
    RecordSink,
    commit_offsets,
    complete_staged_offsets,
    stage_txn_offsets,
    staged_now,
)
from fakekafka.wire import ErrorCode

__all__ = ["ClassicGroupOffsets", "ConsumerGroupOffsets"]


class ClassicGroupOffsets:
    """The classic coordinator's offsets: commits checked against the group's generation and member."""

    clock: Clock
    config: GroupConfig
    groups: dict[str, Group]
    records: RecordSink

    def commit(self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None,
               offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> dict[tuple[str, int], ErrorCode]:
        """offsets: (topic, partition) -> (offset, leader epoch, metadata)."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return {tp: code for tp in offsets}

        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id, empty_since=self.clock.now_ms())
        if group.state == GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_fenced(member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if not (generation_id < 0 and group.state == GroupState.EMPTY):
            member = group.members.get(member_id)
            if member is None:
                return all_(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation_id != group.generation_id:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            if group.state == GroupState.COMPLETING_REBALANCE:
                return all_(ErrorCode.REBALANCE_IN_PROGRESS)
            member.touch(self.clock.now_ms())
        out, stored = commit_offsets(group.offsets, offsets, self.config.offset_metadata_max_bytes, self.clock.now_ms())
        self.records.offsets(group_id, stored)
        return out

    def txn_commit(self, group_id: str, producer_id: int, generation_id: int, member_id: str,
                   group_instance_id: str | None, offsets: dict[tuple[str, int], tuple[int, int, str | None]],
                   producer_epoch: int = -1) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit: offsets staged for the producer's transaction, visible once it commits. A producer
        that names no member (v0-2, or a generation of -1) commits without group checks, as Kafka's."""
        def all_(code: ErrorCode) -> dict[tuple[str, int], ErrorCode]:
            return dict.fromkeys(offsets, code)

        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return all_(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id, empty_since=self.clock.now_ms())
        if group.state == GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if member_id or generation_id >= 0 or group_instance_id is not None:
            if group.is_fenced(member_id, group_instance_id):
                return all_(ErrorCode.FENCED_INSTANCE_ID)
            if member_id not in group.members:
                return all_(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation_id != group.generation_id:
                return all_(ErrorCode.ILLEGAL_GENERATION)
        out = stage_txn_offsets(group.pending_txn_offsets, producer_id, offsets, self.config.offset_metadata_max_bytes,
                                self.clock.now_ms())
        self.records.offsets(group_id, staged_now(group.pending_txn_offsets, producer_id, out), producer_id,
                             producer_epoch)
        return out

    def complete_txn_offsets(self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]) -> None:
        """A transaction marker reached a `__consumer_offsets` partition: the producer's staged offsets of the
        groups that partition holds are committed or dropped."""
        for group in list(self.groups.values()):
            if producer_id not in group.pending_txn_offsets or not in_partition(group.group_id):
                continue
            complete_staged_offsets(group.pending_txn_offsets, group.offsets, producer_id, commit, self.clock.now_ms())
            self._maybe_remove_dead(group)

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        group = self.groups.get(group_id)
        return group is not None and any(tp in staged for staged in group.pending_txn_offsets.values())

    def fetch_offsets(self, group_id: str, partitions: list[tuple[str, int]] | None
                      ) -> dict[tuple[str, int], OffsetAndMetadata | None]:
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return dict(sorted(stored.items()))
        return {tp: stored.get(tp) for tp in partitions}

    def delete_offsets(self, group_id: str, partitions: list[tuple[str, int]]
                       ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        group = self.groups.get(group_id)
        if group is None or group.state == GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        if group.state != GroupState.EMPTY and group.protocol_type != "consumer":
            return ErrorCode.NON_EMPTY_GROUP, {}
        subscribed = group.subscribed_topics() if group.state != GroupState.EMPTY else set()
        out = {}
        for tp in partitions:
            if subscribed is None or tp[0] in subscribed:
                out[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                group.offsets.pop(tp, None)
                out[tp] = ErrorCode.NONE
        self.records.offsets(group_id, {tp: None for tp, code in out.items() if code == ErrorCode.NONE})
        self._maybe_remove_dead(group)
        return ErrorCode.NONE, out

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None or group.state == GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state != GroupState.EMPTY:
            return ErrorCode.NON_EMPTY_GROUP
        group.transition_to(GroupState.DEAD, self.clock.now_ms())
        del self.groups[group_id]
        self.records.group_removed(group_id, group.offsets)
        return ErrorCode.NONE

    def take_empty_group(self, group_id: str) -> Group | None:
        """Removes and returns an Empty group (a KIP-848 consumer group takes its id and offsets over)."""
        group = self.groups.get(group_id)
        if group is None or group.members or group.pending_members or group.state != GroupState.EMPTY:
            return None
        group.transition_to(GroupState.DEAD, self.clock.now_ms())
        self.records.group_removed(group_id, ())  # its offsets stay: the consumer group takes them over
        return self.groups.pop(group_id)

    def remove_partitions(self, topic: str) -> None:
        """A deleted topic takes its committed offsets with it."""
        for group in list(self.groups.values()):
            gone = [tp for tp in group.offsets if tp[0] == topic]
            for tp in gone:
                del group.offsets[tp]
            if gone:
                self.records.offsets(group.group_id, dict.fromkeys(gone))
            self._maybe_remove_dead(group)

    def _maybe_remove_dead(self, group: Group) -> None:
        if group.state == GroupState.EMPTY and not group.offsets and not group.members \
                and not group.pending_members and not group.pending_txn_offsets:
            group.transition_to(GroupState.DEAD, self.clock.now_ms())
            self.groups.pop(group.group_id, None)
            self.records.group_removed(group.group_id, ())

    def _expire(self, group: Group, now: int) -> None:
        """An Empty group's offsets expire after `offsets.retention.minutes`; the group goes once it has none."""
        if group.state == GroupState.EMPTY and group.empty_since is not None and group.offsets \
                and now - group.empty_since >= self.config.offsets_retention_ms:
            self.records.offsets(group.group_id, dict.fromkeys(group.offsets))
            group.offsets.clear()
        if group.state == GroupState.EMPTY and group.empty_since is not None \
                and now - group.empty_since >= self.config.offsets_retention_check_interval_ms:
            self._maybe_remove_dead(group)

    def _expiry_deadlines(self, group: Group) -> list[int]:
        if group.state == GroupState.EMPTY and group.empty_since is not None:
            return [group.empty_since + (self.config.offsets_retention_ms if group.offsets
                                         else self.config.offsets_retention_check_interval_ms)]
        return []


class ConsumerGroupOffsets:
    """The consumer group coordinator's offsets: commits checked against the member's epoch."""

    clock: Clock
    config: ConsumerGroupConfig
    groups: dict[str, ConsumerGroup]
    records: RecordSink

    def validate_commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int,
                        transactional: bool = False) -> ErrorCode:
        if member_epoch < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and version < 9 and member.classic is None:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:  # a classic member's generation is its member epoch
            return ErrorCode.STALE_MEMBER_EPOCH if member.classic is None else ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def commit(self, group: ConsumerGroup, member_id: str, member_epoch: int, version: int,
               offsets: dict[tuple[str, int], tuple[int, int, str | None]]) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit to a consumer group: from its members at their current epoch (v9+), or with epoch -1
        while it has no members."""
        code = self.validate_commit(group, member_id, member_epoch, version)
        if code != ErrorCode.NONE:
            return dict.fromkeys(offsets, code)
        out, stored = commit_offsets(group.offsets, offsets, self.config.offset_metadata_max_bytes, self.clock.now_ms())
        self.records.offsets(group.group_id, stored)
        return out

    def txn_commit(self, group: ConsumerGroup, producer_id: int, member_id: str, member_epoch: int,
                   offsets: dict[tuple[str, int], tuple[int, int, str | None]], producer_epoch: int = -1
                   ) -> dict[tuple[str, int], ErrorCode]:
        """TxnOffsetCommit to a consumer group: staged for the producer's transaction, visible once it commits.
        A producer naming no member (epoch -1) commits without member checks, as Kafka's; else the member and
        its epoch are checked: ILLEGAL_GENERATION for another epoch (not OffsetCommit's STALE_MEMBER_EPOCH), as
        Kafka 4.4 answers."""
        if member_id or member_epoch >= 0:
            member = group.members.get(member_id)
            if member is None:
                return dict.fromkeys(offsets, ErrorCode.UNKNOWN_MEMBER_ID)
            if member_epoch != member.member_epoch:  # Kafka 4.4 answers a transactional commit so (the sweep)
                return dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION)
        out = stage_txn_offsets(group.pending_txn_offsets, producer_id, offsets, self.config.offset_metadata_max_bytes,
                                self.clock.now_ms())
        self.records.offsets(group.group_id, staged_now(group.pending_txn_offsets, producer_id, out), producer_id,
                             producer_epoch)
        return out

    def complete_txn_offsets(self, producer_id: int, commit: bool, in_partition: Callable[[str], bool]) -> None:
        """A transaction marker reached a `__consumer_offsets` partition: the producer's staged offsets of the
        consumer groups it holds are committed or dropped."""
        for group in self.groups.values():
            if producer_id in group.pending_txn_offsets and in_partition(group.group_id):
                complete_staged_offsets(group.pending_txn_offsets, group.offsets, producer_id, commit,
                                        self.clock.now_ms())

    def has_pending_txn_offset(self, group_id: str, tp: tuple[str, int]) -> bool:
        group = self.groups.get(group_id)
        return group is not None and any(tp in staged for staged in group.pending_txn_offsets.values())

    def subscribed_topics(self, group: ConsumerGroup) -> set[str]:
        return set(group.subscription_metadata)

    def validate_fetch(self, group: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        if member_id is None and member_epoch < 0:
            return ErrorCode.NONE
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH if member.classic is None else ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def delete_group(self, group_id: str) -> ErrorCode:
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        del self.groups[group_id]
        self.records.offsets(group_id, dict.fromkeys(group.offsets))
        self.records.consumer_group(None, group_id)
        return ErrorCode.NONE

    def remove_partitions(self, topic: str) -> None:
        for group in list(self.groups.values()):
            gone = [tp for tp in group.offsets if tp[0] == topic]
            for tp in gone:
                del group.offsets[tp]
            if gone:
                self.records.offsets(group.group_id, dict.fromkeys(gone))
