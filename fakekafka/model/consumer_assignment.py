"""Who gets which partitions in a KIP-848 consumer group: the target assignment and the way to it. Pure.

As in Kafka's group coordinator: the members' subscriptions (names and regular expressions) resolved against
the topics; the server-side assignors (`uniform`, `range`) computing the **target assignment**
(TargetAssignmentBuilder); and **reconciliation** (CurrentAssignmentBuilder), moving one member a step closer to
its target: partitions it must give up are revoked first, and partitions another member still owns are held
back until it releases them.
"""

from __future__ import annotations

import heapq
import itertools
import uuid
from collections.abc import Callable

from fakekafka.model.consumer_group_metadata import (
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    Subscription,
    TopicInfo,
    compile_regex,
)

__all__ = ["ASSIGNORS", "member_topics", "reconcile", "subscription_metadata", "target_assignment"]

# --- assignors ------------------------------------------------------------------------------------
AssignorInput = dict[str, tuple[str | None, frozenset[uuid.UUID]]]
"""member id -> (instance id, subscribed topic ids)."""


def _range_assign(members: AssignorInput, partitions: dict[uuid.UUID, int],
                  current: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's server-side `range`: per topic, its subscribers in order (static members by instance id
    first, then by member id) get consecutive ranges, the first ones one partition more."""
    order = sorted(members, key=lambda m: (members[m][0] is None, members[m][0] or m))
    out: dict[str, Assignment] = {m: {} for m in members}
    for topic_id in sorted(partitions, key=str):
        subs = [m for m in order if topic_id in members[m][1]]
        if not subs:
            continue
        n = partitions[topic_id]
        quota, extra = divmod(n, len(subs))
        start = 0
        for m in subs:
            count = quota + (1 if extra > 0 else 0)
            extra -= 1
            if count:
                out[m][topic_id] = frozenset(range(start, start + count))
            start += count
    return out


def _uniform_assign(members: AssignorInput, partitions: dict[uuid.UUID, int],
                    current: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's server-side `uniform`: its homogeneous way when every member subscribes to the same topics (a big
    group's usual case, where each join runs the assignor over every member), else the general way."""
    values = iter(members.values())
    first = next(values, (None, frozenset()))[1]
    if all(ids is first or ids == first for _, ids in values):
        topics = sorted((t for t in first if t in partitions), key=str)
        if topics:
            out = _uniform_homogeneous(sorted(members), topics, partitions, current)
            if out is not None:
                return out
    return _uniform_general(members, partitions, current)


def _uniform_homogeneous(order: list[str], topics: list[uuid.UUID], partitions: dict[uuid.UUID, int],
                         current: dict[str, Assignment]) -> dict[str, Assignment] | None:
    """Kafka 4.4's homogeneous uniform assignment (UniformHomogeneousAssignmentBuilder): P partitions over N
    members give each a quota of P // N, one more for the first P % N members (in member-id order here, in its
    members map's order there); a member keeps its current partitions up to its quota (its lowest first) and gives
    up the rest; members under their quota take the partitions nobody holds, then those given up, in order. So a
    member either keeps, gives up or takes partitions, never gives up some and takes others, and when members keep
    their places in the order a join moves only what the new member needs. Members whose partitions do not change
    keep their current target object. None when the current target holds a partition twice (the general way
    decides that)."""
    quota, extra = divmod(sum(partitions[t] for t in topics), len(order))
    one = topics[0] if len(topics) == 1 else None
    index = {t: i for i, t in enumerate(topics)}
    sizes = [partitions[t] for t in topics]
    held: list[list[frozenset[int]]] = [[] for _ in topics]
    given_up: list[tuple[int, int]] = []
    keeps: dict[str, dict[int, frozenset[int]]] = {}
    """Members whose target changes: what they keep of it, by topic index (the others keep theirs as it is)."""
    unfilled: list[tuple[str, int]] = []
    out: dict[str, Assignment] = {}
    for k, m in enumerate(order):
        room = quota + 1 if k < extra else quota
        a = current.get(m)
        if a is None:
            out[m] = {}
            if room:
                keeps[m] = {}
                unfilled.append((m, room))
            continue
        out[m] = a
        if len(a) == 1:  # the usual case, one topic: a step per member
            [(t, ps)] = a.items()
            i = 0 if t is one else index.get(t)  # (`is` first: a topic id's hash is a Python-level function)
            if i is not None and ps:
                held[i].append(ps)
                if len(ps) == room:
                    continue
                if len(ps) < room:
                    keeps[m] = {i: ps}
                    unfilled.append((m, room - len(ps)))
                    continue
                ordered = sorted(ps)  # over its quota: keeps its lowest, gives up the rest
                given_up.extend((i, p) for p in ordered[room:])
                keeps[m] = {i: frozenset(ordered[:room])} if room else {}
                continue
        kept: dict[int, frozenset[int]] = {}  # several topics, or one no longer subscribed: in topic id order
        for t, ps in sorted(a.items(), key=lambda kv: str(kv[0])):
            i = index.get(t)
            if i is None or not ps:
                continue
            held[i].append(ps)
            if len(ps) > room:
                ordered = sorted(ps)
                given_up.extend((i, p) for p in ordered[room:])
                ps = frozenset(ordered[:room])
            room -= len(ps)
            if ps:
                kept[i] = ps
        if room:
            unfilled.append((m, room))
        if room or len(kept) != len(a) or any(a[topics[i]] is not ps for i, ps in kept.items()):
            keeps[m] = kept
    free: list[tuple[int, int]] = []
    for i, sets in enumerate(held):
        claimed = set().union(*sets)
        if len(claimed) != sum(map(len, sets)):
            return None
        if claimed and max(claimed) >= sizes[i]:  # a topic shrank: its current targets without what is gone
            size = sizes[i]
            return _uniform_homogeneous(order, topics, partitions, {
                m: {t: ps if index.get(t) != i else frozenset(p for p in ps if p < size) for t, ps in a.items()}
                if any(index.get(t) == i and max(ps, default=0) >= size for t, ps in a.items()) else a
                for m, a in current.items()})
        if len(claimed) < sizes[i]:  # (every partition held, as after most joins: none is free)
            free.extend((i, p) for p in range(sizes[i]) if p not in claimed)
    take = iter(free + given_up)
    for m, room in unfilled:
        kept = keeps[m]
        for i, p in itertools.islice(take, room):
            got = kept.get(i)
            kept[i] = frozenset([p]) if got is None else got | {p}
    for m, kept in keeps.items():
        out[m] = {topics[i]: ps for i, ps in sorted(kept.items())}
    return out


def _uniform_general(members: AssignorInput, partitions: dict[uuid.UUID, int],
                     current: dict[str, Assignment]) -> dict[str, Assignment]:
    """Kafka's server-side `uniform`: partitions spread so that two members subscribed to a topic hold as
    many partitions as each other, give or take one, each keeping as many of its current target
    partitions as it can (sticky), so a rebalance moves few partitions.

    It runs at every group epoch (each join or leave), so it costs O(partitions + members) with small constants:
    the current targets taken over with set operations (no step per partition in Python), the balance passes
    looking only at the members over their share instead of sorting every partition, and the members it did not
    move handed their current target object back."""
    order = sorted(members)
    topic_ids = sorted(partitions, key=str)
    index = {t: i for i, t in enumerate(topic_ids)}
    """Topics by their place in name order, inside: a topic id's hash is a Python-level function, which would be
    called for each member at each step."""
    sizes = [partitions[t] for t in topic_ids]
    by_subscription: dict[int, frozenset[int]] = {}  # members share their subscription's frozenset
    subscribed: dict[str, frozenset[int]] = {}
    sharing: dict[frozenset[int], list[str]] = {}
    """Members (in order) by the topics they subscribe to: a group's members mostly share one subscription, so
    what is per subscriber set below is built once per set, not once per member."""
    for m in order:
        ids = members[m][1]
        mine = by_subscription.get(id(ids))
        if mine is None:
            mine = by_subscription[id(ids)] = frozenset(index[t] for t in ids if t in index)
        subscribed[m] = mine
        same = sharing.get(mine)
        if same is None:
            sharing[mine] = [m]
        else:
            same.append(m)
    # a topic's subscribers: the members of the subscriptions that name it (one subscription: its own list)
    named_by: list[list[frozenset[int]]] = [[] for _ in topic_ids]
    for sub in sharing:
        for i in sub:
            named_by[i].append(sub)
    naming = [tuple(subs) for subs in named_by]
    subscribers = [sharing[subs[0]] if len(subs) == 1 else [m for m in order if i in subscribed[m]]
                   for i, subs in enumerate(naming)]
    counts = dict.fromkeys(order, 0)
    held: dict[str, dict[int, set[int]]] = {m: {} for m in order}
    claimed: list[set[int]] = [set() for _ in topic_ids]
    changed = {m for m in order if m not in current}
    """Members whose partitions may differ from their current target: the others keep that target object."""
    # sticky: a partition stays with its current owner while that member is subscribed to its topic, so a
    # member leaving moves only its own partitions and one joining only what it needs (the balance below); set
    # operations per member and topic rather than a step per partition, since this runs at every group epoch
    for m, a in current.items():
        if m not in members:
            continue
        mine_topics = subscribed[m]
        for t, ps in a.items():
            i = index.get(t)
            if not ps or i is None or i not in mine_topics:
                changed.add(m)
                continue
            mine = set(ps)
            n = sizes[i]
            if max(mine) >= n:  # the topic shrank (or a partition was never there): those are dropped
                mine = {p for p in mine if p < n}
                changed.add(m)
                if not mine:
                    continue
            taken = claimed[i]
            if not taken.isdisjoint(mine):  # claimed twice: the last claim holds it
                for was in order:
                    lost = held[was].get(i)
                    if was != m and lost and not lost.isdisjoint(mine):
                        counts[was] -= len(lost & mine)
                        lost -= mine
                        changed.add(was)
            taken |= mine
            held[m][i] = mine
            counts[m] += len(mine)
    # the least loaded subscriber of a topic, (count, member id) first, from a heap per set of subscribers (topics
    # usually share theirs): entries whose count is stale are dropped as they surface, so each pick is O(log n)
    # (topics with the same subscriptions naming them have the same subscribers, so share a heap)
    heaps: dict[tuple[frozenset[int], ...], list[tuple[int, str]]] = {}
    heap_of: list[list[tuple[int, str]]] = []
    for key, subs in zip(naming, subscribers, strict=True):
        heap = heaps.get(key)
        if heap is None:
            heap = heaps[key] = [(counts[m], m) for m in subs]
            heapq.heapify(heap)
        heap_of.append(heap)
    sub_heaps = {sub: list({id(heap_of[i]): heap_of[i] for i in sub}.values()) for sub in sharing}
    """The heaps a member of each subscription is in (one per distinct set of subscribers of its topics: few)."""

    def least(i: int) -> str:
        heap = heap_of[i]
        while heap[0][0] != counts[heap[0][1]]:
            heapq.heappop(heap)
        return heap[0][1]

    def count(m: str, delta: int) -> None:
        counts[m] += delta
        for heap in sub_heaps[subscribed[m]]:
            heapq.heappush(heap, (counts[m], m))

    for i, subs in enumerate(subscribers):  # the others (new partitions, a departed member's) to the least loaded
        if not subs:
            continue
        for p in sorted(set(range(sizes[i])) - claimed[i]):
            m = least(i)
            held[m].setdefault(i, set()).add(p)
            changed.add(m)
            count(m, 1)
    moved = True
    while moved:  # balance: no subscriber of a topic holds two more partitions than another
        moved = False
        # members in order, each over its share giving up its highest partitions first (what Kafka 4.4 did in
        # the scenarios: members joining a 6-partition topic one by one end with 0,1 / 3,4 / 2,5). A pass
        # considers what each member held when it began; only the member itself gives its partitions away, and
        # a failed check stays failed until that member moves one, so a topic's remaining partitions are skipped
        gained: dict[str, set[tuple[int, int]]] = {}
        for m in order:
            a = held[m]
            for i in sorted(a) if len(a) > 1 else list(a):
                if counts[m] - counts[least(i)] < 2:
                    continue
                got = gained.get(m, ())
                for p in sorted((p for p in a[i] if (i, p) not in got), reverse=True):
                    low = least(i)
                    if counts[m] - counts[low] < 2:
                        break
                    a[i].discard(p)
                    held[low].setdefault(i, set()).add(p)
                    gained.setdefault(low, set()).add((i, p))
                    count(m, -1)
                    count(low, 1)
                    changed.update((m, low))
                    moved = True
    return {m: _kept(current.get(m), {topic_ids[i]: ps for i, ps in a.items()}) if m in changed else current[m]
            for m, a in held.items()}


def _kept(before: Assignment | None, held: dict[uuid.UUID, set[int]]) -> Assignment:
    """A member's new target: the one it had, the same object, when it holds the same partitions (a join into a
    big group moves a few members' partitions; the others' target records are then known unchanged by identity
    rather than compared partition by partition), else a new one."""
    if before is not None and len(before) == sum(1 for ps in held.values() if ps) \
            and all(before.get(t) == ps for t, ps in held.items() if ps):
        return before
    return {t: frozenset(ps) for t, ps in held.items() if ps}


ASSIGNORS: dict[str, Callable[[AssignorInput, dict[uuid.UUID, int], dict[str, Assignment]],
                              dict[str, Assignment]]] = {"uniform": _uniform_assign, "range": _range_assign}

# --- subscriptions and the target assignment --------------------------------------------------------
def member_topics(group: ConsumerGroup, member: ConsumerMember, topics: dict[str, TopicInfo]) -> frozenset[str]:
    """The topic names a member subscribes to: by name, and those its regular expression matches (internal
    topics never; with an authorizer, only those the member that last heartbeated with it may DESCRIBE)."""
    return subscription_topics(group, (member.subscribed_topic_names, member.subscribed_topic_regex), topics)


def subscription_topics(group: ConsumerGroup, subscription: Subscription, topics: dict[str, TopicInfo]
                        ) -> frozenset[str]:
    """`member_topics` for a subscription (topic names, regular expression) that members share."""
    names, regex = subscription
    found = set(names)
    if regex:
        pattern = compile_regex(regex)
        describable = group.regex_describable.get(regex, lambda _: True)
        found |= {n for n in topics if not n.startswith("__") and pattern.fullmatch(n) and describable(n)}
    return frozenset(found)


def subscription_metadata(group: ConsumerGroup, topics: dict[str, TopicInfo]
                          ) -> dict[str, tuple[uuid.UUID, int] | None]:
    """What a group epoch depends on: each subscribed topic -> (id, partitions), None if it does not exist."""
    wanted: set[str] = set()
    for subscription in group.members.subscriptions:  # (members mostly share theirs: one or a few)
        wanted |= subscription_topics(group, subscription, topics)
    return {n: (topics[n].topic_id, topics[n].partitions) if n in topics else None for n in sorted(wanted)}


def target_assignment(group: ConsumerGroup, topics: dict[str, TopicInfo], default_assignor: str
                      ) -> dict[str, Assignment]:
    """The group's next target assignment: member id -> its partitions, by the assignor most members prefer.
    Members that all share one subscription under `uniform` (a big group's usual case) go to its homogeneous way
    without a walk to gather each member's subscription."""
    if not group.members:
        return {}
    name = group.preferred_assignor(default_assignor)
    resolved = {subscription: frozenset(topics[n].topic_id for n in subscription_topics(group, subscription, topics)
                                        if n in topics) for subscription in group.members.subscriptions}
    wanted = frozenset().union(*resolved.values())
    partitions = {info.topic_id: info.partitions for info in topics.values() if info.topic_id in wanted}
    homogeneous = name == "uniform" and len(set(resolved.values())) == 1 and bool(wanted)
    if homogeneous:  # as `_uniform_assign` decides, from the subscriptions instead of each member's input
        out = _uniform_homogeneous(sorted(group.members), sorted(wanted, key=str), partitions, group.target)
        if out is not None:
            return out
    inputs: AssignorInput = {m.member_id: (m.instance_id, resolved[(m.subscribed_topic_names,
                                                                     m.subscribed_topic_regex)])
                             for m in group.members.values()}
    if homogeneous:  # a partition held twice: the general way, without `_uniform_assign` trying again
        return _uniform_general(inputs, partitions, group.target)
    return ASSIGNORS[name](inputs, partitions, group.target)


# --- reconciliation (CurrentAssignmentBuilder) ----------------------------------------------------
def reconcile(group: ConsumerGroup, member: ConsumerMember, owned: list[tuple[uuid.UUID, list[int]]] | None,
              now: int) -> ConsumerMember:
    """The member one step closer to its target assignment (Kafka's CurrentAssignmentBuilder): `owned` is
    what it reported (None: not reported); a new rebalance deadline when it must revoke partitions."""
    target_epoch = group.assignment_epoch
    if member.is_reconciled_to(target_epoch) or member.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return member
    target = group.target.get(member.member_id, {})

    def owns_any(revoking: Assignment) -> bool:
        if owned is None:
            return True
        return any(p in revoking.get(t, frozenset()) for t, ps in owned for p in ps)

    if member.state == MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        nxt = _next_state(group, member, member.member_epoch, target, target_epoch, owns_any)
    elif member.state == MemberState.UNREVOKED_PARTITIONS:
        if owns_any(member.pending_revocation):
            return member
        nxt = _next_state(group, member, member.member_epoch + 1, target, target_epoch, owns_any)
    else:
        nxt = _next_state(group, member, member.member_epoch, target, target_epoch, owns_any)
    if nxt.state == MemberState.UNREVOKED_PARTITIONS:
        if member.state != MemberState.UNREVOKED_PARTITIONS or member.member_epoch != nxt.member_epoch \
                or nxt.rebalance_deadline is None:
            nxt.rebalance_deadline = now + max(nxt.rebalance_timeout_ms, 0)
            nxt.rebalance_epoch = nxt.member_epoch
    else:
        nxt.rebalance_deadline = None
    return nxt


def _next_state(group: ConsumerGroup, member: ConsumerMember, epoch: int, target: Assignment, target_epoch: int,
                owns_any: Callable[[Assignment], bool]) -> ConsumerMember:
    unreleased = False
    assigned: Assignment = {}
    revoking: Assignment = {}
    pending: Assignment = {}
    for t in set(target) | set(member.assigned):
        want = target.get(t, frozenset())
        have = member.assigned.get(t, frozenset())
        keep = have & want
        gone = have - keep
        add = {p for p in want - keep if group.partition_owner_epoch(t, p, member.member_id) == -1}
        if len(add) < len(want - keep):
            unreleased = True
        if keep:
            assigned[t] = keep
        if gone:
            revoking[t] = gone
        if add:
            pending[t] = frozenset(add)
    if revoking and owns_any(revoking):
        return _with_epoch(member, epoch, MemberState.UNREVOKED_PARTITIONS, assigned, revoking)
    if pending:
        for t, ps in pending.items():
            assigned[t] = assigned.get(t, frozenset()) | ps
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with_epoch(member, target_epoch, state, assigned, {})


def _with_epoch(member: ConsumerMember, epoch: int, state: MemberState, assigned: Assignment,
                revoking: Assignment) -> ConsumerMember:
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_member_epoch
    return member.copy_with(member_epoch=epoch, previous_member_epoch=previous, state=state,
                   assigned=assigned, pending_revocation=revoking)
