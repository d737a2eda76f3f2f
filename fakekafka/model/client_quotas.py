"""Client quotas, pure: what AlterClientQuotas stores and DescribeClientQuotas lists (Kafka's controller's
ClientQuotaControlManager and its image's describe), and their effect as Kafka's broker applies them (its
ClientQuotaManager with the default quota callback): a windowed rate per quota type and sensor, the most specific
quota of the user/client-id combinations winning, and the throttle time a request over its quota earns.

Entities are tuples of (entity type, name) pairs in the order Kafka lists them (`sort_entity`), a name of None
being the type's default (`--entity-default`). Times come from the cluster's clock, so the arithmetic is
deterministic under a `ManualClock`."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from fakekafka.wire import ErrorCode

__all__ = ["CLIENT_ID", "IP", "USER", "ClientQuotaError", "ClientQuotas", "QuotaEntity", "QuotaType",
           "WindowedRate", "entity_text", "sort_entity"]

USER, CLIENT_ID, IP = "user", "client-id", "ip"

QuotaEntity = tuple[tuple[str, "str | None"], ...]
"""An entity: its (type, name) pairs in Kafka's order (`sort_entity`); a name of None is the type's default."""

_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1

USER_AND_CLIENT_KEYS = {"producer_byte_rate": "LONG", "consumer_byte_rate": "LONG",
                        "request_percentage": "DOUBLE", "controller_mutation_rate": "DOUBLE"}
"""The keys a user or client-id entity takes, and their types (Kafka's QuotaConfig.userAndClientQuotaConfigs)."""
IP_KEYS = {"connection_creation_rate": "INT"}
"""The keys an ip entity takes (QuotaConfig.ipConfigs)."""

MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


class QuotaType:
    """The quota keys the broker enforces, one rate each (Kafka's ClientQuotaType)."""
    PRODUCE = "producer_byte_rate"
    FETCH = "consumer_byte_rate"
    REQUEST = "request_percentage"
    CONTROLLER_MUTATION = "controller_mutation_rate"
    CONNECTION_CREATION = "connection_creation_rate"


class ClientQuotaError(Exception):
    """A DescribeClientQuotas filter Kafka refuses: its error code and message."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


_HASH_ORDER = {CLIENT_ID: 0, USER: 1, IP: 3}
"""Where each entity type falls in a Java HashMap of up to three entries (its bucket in a table of four): the
order Kafka lists an entity's types in."""


def _order(pair: tuple[str, str | None]) -> tuple[int, str]:
    return _HASH_ORDER.get(pair[0], 4), pair[0]


def sort_entity(pairs: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """An entity's pairs in the order Kafka lists them."""
    return tuple(sorted(pairs, key=_order))


def entity_text(entity: Iterable[tuple[str, str | None]]) -> str:
    """An entity as Kafka's ClientQuotaEntity prints it in messages."""
    text = ", ".join(f"{t}={'null' if n is None else n}" for t, n in sort_entity(entity))
    return "ClientQuotaEntity(entries={" + text + "})"


def _ip_valid(name: str | None) -> bool:
    """An IP literal (or the default). Kafka also takes a host name it can resolve; the model does no lookups."""
    if name is None:
        return True
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _entity_error(pairs: list[tuple[str, str | None]]) -> str | None:
    """Kafka's validateEntity and configKeysForEntityType, in their order: the message refusing the entity."""
    if not pairs:
        return "Invalid empty client quota entity"
    seen: dict[str, str | None] = {}
    for kind, name in pairs:
        if kind in seen:
            return f"Invalid client quota entity, duplicate entity entry {kind}"
        if kind not in (USER, CLIENT_ID, IP):
            return f"Unhandled client quota entity type: {kind}"
        seen[kind] = name
        if name is not None and name == "":
            return f"Empty {kind} not supported"
    if IP in seen:
        if USER in seen or CLIENT_ID in seen:
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
        if not _ip_valid(seen[IP]):
            return f"{seen[IP]} is not a valid IP or resolvable host."
    return None


def _value_error(keys: dict[str, str], key: str, value: float) -> str | None:
    """Kafka's validateQuotaKeyValue: the message refusing a quota value."""
    kind = keys.get(key)
    if kind is None:
        return f"Invalid configuration key {key}"
    if not value > 0.0:
        return f"Quota {key} must be greater than 0"
    if kind == "DOUBLE":
        return None
    limit, article = (_INT_MAX, "an INT") if kind == "INT" else (float(_LONG_MAX), "a LONG")
    if value > limit:
        return f"Proposed value for {key} is too large for {article}."
    if abs(math.fmod(value, 1.0)) > 1e-6:
        return f"{key} cannot be a fractional value."
    return None


@dataclass
class _Sample:
    start_ms: int
    value: float = 0.0


@dataclass
class WindowedRate:
    """Kafka's Rate over a SampledStat of `samples` windows of `window_ms` each: the sum of the values recorded in
    the windows not yet expired, per second of the window they span (at least `samples - 1` whole windows)."""

    samples: int
    window_ms: int
    _samples: list[_Sample] = field(default_factory=list)
    _current: int = 0
    last_used_ms: int = 0

    def _purge(self, now: int) -> None:
        expire = self.samples * self.window_ms
        for s in self._samples:
            if now - s.start_ms >= expire:
                s.start_ms, s.value = now, 0.0

    def record(self, value: float, now: int) -> None:
        self.last_used_ms = now
        if not self._samples:
            self._samples.append(_Sample(now))
        sample = self._samples[self._current]
        if now - sample.start_ms >= self.window_ms:  # the current window is complete: the next one begins
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._samples):
                self._samples.append(_Sample(now))
            else:
                self._samples[self._current] = _Sample(now)
            sample = self._samples[self._current]
        sample.value += value

    def window_size_ms(self, now: int) -> int:
        self._purge(now)
        oldest = min((s.start_ms for s in self._samples), default=now)
        elapsed = now - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now: int) -> float:
        """The rate per second at `now`."""
        size = self.window_size_ms(now)  # purges first
        return sum(s.value for s in self._samples) / (size / 1000.0)


@dataclass
class TokenBucket:
    """Kafka's TokenBucket stat (the controller mutation quota): `quota` tokens a second flow in, up to a burst of
    quota x samples x window seconds; a mutation takes one token a partition. A new bucket is full (Kafka's first
    refill spans the whole epoch)."""

    samples: int
    window_ms: int
    tokens: float | None = None
    last_ms: int = 0
    last_used_ms: int = 0

    def measure(self, quota: float, now: int) -> float:
        burst = self.samples * self.window_ms / 1000.0 * quota
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + quota * (now - self.last_ms) / 1000.0)
        self.last_ms = self.last_used_ms = now
        return self.tokens

    def record(self, quota: float, permits: float, now: int) -> float:
        """Takes `permits` tokens: the tokens left (below 0: the quota is violated)."""
        self.tokens = self.measure(quota, now) - permits
        return self.tokens


SENSOR_EXPIRY_MS = 3_600_000
"""A sensor unused this long is dropped (Kafka's quota sensors expire after an hour of inactivity)."""


class ClientQuotas:
    """The quotas set (entity -> key -> value) and the broker's rates for them (see the module's docstring)."""

    def __init__(self, window_settings: Callable[[], tuple[int, int]],
                 controller_window_settings: Callable[[], tuple[int, int]] | None = None) -> None:
        self.entries: dict[QuotaEntity, dict[str, float]] = {}
        self._window_settings = window_settings
        """() -> (quota.window.num, quota.window.size.seconds)."""
        self._controller_window_settings = controller_window_settings or (lambda: (11, 1))
        """() -> (controller.quota.window.num, controller.quota.window.size.seconds)."""
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self._sensors: dict[tuple[str, str, str], WindowedRate] = {}
        self.changes = 0
        """Bumped by every alteration that changed a value (what a data dir's metadata write looks at)."""

    # --- the admin side ---------------------------------------------------------------------------------------
    def alter(self, requested: list[tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]],
              validate_only: bool = False) -> list[tuple[list[tuple[str, str | None]], str | None]]:
        """AlterClientQuotas' entries ((entity pairs, ops of (key, value, remove))): per entry its pairs and the
        message refusing it (None: applied, or would be with `validate_only`), as Kafka's controller decides
        them; the changes apply together, after every entry is decided."""
        results: dict[frozenset[tuple[str, str | None]], str | None] = {}
        order: list[tuple[frozenset[tuple[str, str | None]], list[tuple[str, str | None]]]] = []
        changes: list[tuple[QuotaEntity, str, float | None]] = []
        for pairs, ops in requested:
            key_set = frozenset(pairs)
            if key_set not in results:
                order.append((key_set, pairs))
            text = entity_text(pairs)
            alterations: dict[str, float | None] = {}
            duplicate_key = False
            for key, value, remove in ops:
                if key in alterations:
                    duplicate_key = True  # Kafka notes "Duplicate quota key", then overwrites it with:
                else:
                    alterations[key] = None if remove else value
            if key_set in results or duplicate_key:
                results[key_set] = f"Ignoring duplicate entity {text}"
                continue
            results[key_set] = self._decide(pairs, alterations, changes)
        if not validate_only:
            for entity, key, value in changes:
                self._apply(entity, key, value)
        return [(pairs, results[key_set]) for key_set, pairs in order]

    def _decide(self, pairs: list[tuple[str, str | None]], alterations: dict[str, float | None],
                changes: list[tuple[QuotaEntity, str, float | None]]) -> str | None:
        error = _entity_error(pairs)
        if error is not None:
            return error
        entity: QuotaEntity = sort_entity(pairs)
        keys = IP_KEYS if any(t == IP for t, _ in entity) else USER_AND_CLIENT_KEYS
        current = self.entries.get(entity, {})
        mine: list[tuple[QuotaEntity, str, float | None]] = []
        for key, value in alterations.items():
            if value is None:
                if key in current:
                    mine.append((entity, key, None))
                continue
            error = _value_error(keys, key, value)
            if error is not None:
                return error
            if current.get(key) != value:
                mine.append((entity, key, value))
        changes.extend(mine)
        return None

    def _apply(self, entity: QuotaEntity, key: str, value: float | None) -> None:
        values = self.entries.setdefault(entity, {})
        if value is None:
            values.pop(key, None)
            if not values:
                del self.entries[entity]
        else:
            values[key] = value
        self.changes += 1

    def restore(self, entity: QuotaEntity, values: dict[str, float]) -> None:
        """A saved entity's quotas (a data dir's metadata, at start-up)."""
        self.entries[sort_entity(entity)] = dict(values)

    def describe(self, components: list[tuple[str, int, str | None]], strict: bool
                 ) -> list[tuple[QuotaEntity, dict[str, float]]]:
        """DescribeClientQuotas' filter ((entity type, match type, match) components): the matching entities,
        or ClientQuotaError with Kafka's words for a filter it refuses."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for kind, match_type, match in components:
            if not kind:
                raise ClientQuotaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type.")
            if kind in exact or kind in typed:
                raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                       f"Entity type {kind} cannot appear more than once in the filter.")
            if kind not in (USER, CLIENT_ID, IP):
                raise ClientQuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {kind}")
            if match_type == MATCH_EXACT:
                if match is None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                           "Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[kind] = match
            elif match_type == MATCH_DEFAULT:
                if match is not None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                           "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[kind] = None
            elif match_type == MATCH_SPECIFIED:
                if match is not None:
                    raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                           "Request specified MATCH_TYPE_SPECIFIED, but also specified a match "
                                           "string.")
                typed.add(kind)
            else:
                raise ClientQuotaError(ErrorCode.INVALID_REQUEST, f"Unknown match type {match_type}")
        named = set(exact) | typed
        if IP in named and (USER in named or CLIENT_ID in named):
            raise ClientQuotaError(ErrorCode.INVALID_REQUEST,
                                   "Invalid entity filter component combination. IP filter component should not be "
                                   "used with user or clientId filter component.")
        found = []
        for entity, values in self.entries.items():
            names = dict(entity)
            if strict and len(names) != len(named):
                continue
            if all(k in names and names[k] == v for k, v in exact.items()) and all(k in names for k in typed):
                found.append((entity, dict(values)))
        return found

    # --- the broker side --------------------------------------------------------------------------------------
    def enabled(self, quota_type: str) -> bool:
        """Whether any user or client-id entity has a quota of this type (Kafka records rates only then)."""
        return any(quota_type in values for values in self.entries.values())

    def _has(self, quota_type: str, *pairs: tuple[str, str | None]) -> bool:
        values = self.entries.get(sort_entity(pairs))
        return values is not None and quota_type in values

    def _get(self, quota_type: str, *pairs: tuple[str, str | None]) -> float | None:
        values = self.entries.get(sort_entity(pairs))
        return None if values is None else values.get(quota_type)

    def sensor_tags(self, quota_type: str, user: str, client_id: str) -> tuple[str, str]:
        """The (user, client-id) tags of the sensor a client's requests count in, as Kafka's default quota
        callback picks them: the most specific of the eight user/client-id levels with a quota of this type."""
        u, c = (USER, user), (CLIENT_ID, client_id)
        du, dc = (USER, None), (CLIENT_ID, None)
        for level, tags in (((u, c), (user, client_id)), ((u, dc), (user, client_id)), ((u,), (user, "")),
                            ((du, c), (user, client_id)), ((du, dc), (user, client_id)), ((du,), (user, ""))):
            if self._has(quota_type, *level):
                return tags
        return ("", client_id)

    def limit(self, quota_type: str, tags: tuple[str, str]) -> float | None:
        """The quota a sensor's tags get (Kafka's DefaultQuotaCallback.quotaLimit); None: unlimited."""
        user, client_id = tags
        u, c, du, dc = (USER, user), (CLIENT_ID, client_id), (USER, None), (CLIENT_ID, None)
        if user and client_id:
            levels: tuple[tuple[tuple[str, str | None], ...], ...] = ((u, c), (u, dc), (du, c), (du, dc))
        elif user:
            levels = ((u,), (du,))
        elif client_id:
            levels = ((c,), (dc,))
        else:
            return None
        for level in levels:
            value = self._get(quota_type, *level)
            if value is not None:
                return value
        return None

    def _sensor(self, quota_type: str, tags: tuple[str, str], now: int) -> WindowedRate:
        key = (quota_type, *tags)
        sensor = self._sensors.get(key)
        samples, seconds = self._window_settings()
        if sensor is None or (sensor.samples, sensor.window_ms) != (samples, seconds * 1000):
            if len(self._sensors) >= 1000:
                for old in [k for k, s in self._sensors.items() if now - s.last_used_ms >= SENSOR_EXPIRY_MS]:
                    del self._sensors[old]
            sensor = self._sensors[key] = WindowedRate(samples, seconds * 1000, last_used_ms=now)
        return sensor

    def record(self, quota_type: str, user: str, client_id: str, value: float, now: int) -> int:
        """Counts `value` (bytes, or request-thread percentage) for the client and answers the throttle time in
        ms it has earned (0: within its quota), as Kafka's ClientQuotaManager.recordAndGetThrottleTimeMs:
        (rate - quota) / quota of the window the rate spans, at most the windows kept (one window for
        request_percentage)."""
        if not self.enabled(quota_type):
            return 0
        tags = self.sensor_tags(quota_type, user, client_id)
        sensor = self._sensor(quota_type, tags, now)
        sensor.record(value, now)
        bound = self.limit(quota_type, tags)
        if bound is None:
            return 0
        rate = sensor.measure(now)
        if rate <= bound:
            return 0
        ms = int(round((rate - bound) / bound * sensor.window_size_ms(now)))
        # bounded, as Kafka 4.4 bounds it: the request quota by one window, the byte rates by the whole span
        # (Kafka 4.4.0 measured: never more than quota.window.num x quota.window.size.seconds)
        cap = sensor.window_ms if quota_type == QuotaType.REQUEST else sensor.samples * sensor.window_ms
        return min(ms, cap)

    def unrecord(self, quota_type: str, user: str, client_id: str, value: float, now: int) -> None:
        """Takes back a value recorded for a request answered empty because throttled (Kafka's
        unrecordQuotaSensor, for Fetch)."""
        if self.enabled(quota_type):
            self._sensor(quota_type, self.sensor_tags(quota_type, user, client_id), now).record(-value, now)

    def max_value_in_window(self, quota_type: str, user: str, client_id: str) -> float | None:
        """The most one request may take without being throttled whatever came before (Kafka caps a Fetch's
        max_bytes with it): quota x (samples - 1) x window seconds; None: no quota."""
        if not self.enabled(quota_type):
            return None
        bound = self.limit(quota_type, self.sensor_tags(quota_type, user, client_id))
        if bound is None:
            return None
        samples, seconds = self._window_settings()
        return bound * (samples - 1) * seconds

    def record_mutation(self, user: str, client_id: str, permits: int, now: int, *, strict: bool
                        ) -> tuple[bool, int]:
        """A controller mutation of `permits` partitions (topics created or deleted, partitions added), as Kafka's
        Strict/PermissiveControllerMutationQuota: (admitted, throttle ms). Strict (CreateTopics v6+, DeleteTopics
        v5+, CreatePartitions v3+): refused while the bucket is below zero, with the time it takes to refill to
        zero; the mutation that takes it below zero is admitted. Permissive (older versions): always admitted,
        with that time when it took the bucket below zero. Unlimited without a `controller_mutation_rate`."""
        kind = QuotaType.CONTROLLER_MUTATION
        if not self.enabled(kind):
            return True, 0
        tags = self.sensor_tags(kind, user, client_id)
        bound = self.limit(kind, tags)
        if bound is None:
            return True, 0
        samples, seconds = self._controller_window_settings()
        bucket = self._buckets.get(tags)
        if bucket is None or (bucket.samples, bucket.window_ms) != (samples, seconds * 1000):
            if len(self._buckets) >= 1000:
                for old in [k for k, b in self._buckets.items() if now - b.last_used_ms >= SENSOR_EXPIRY_MS]:
                    del self._buckets[old]
            bucket = self._buckets[tags] = TokenBucket(samples, seconds * 1000)
        def wait(tokens: float) -> int:
            return int(round(-tokens / bound * 1000)) if tokens < 0 else 0

        if strict and bucket.measure(bound, now) < 0:
            return False, wait(bucket.measure(bound, now))
        left = bucket.record(bound, permits, now)
        return True, 0 if strict else wait(left)

    def record_connection(self, ip: str, now: int) -> int:
        """A new connection from `ip`, counted against its `connection_creation_rate` (the address's own, else the
        ip default), as Kafka's ConnectionQuotas.recordIpConnectionMaybeThrottle: the throttle time in ms it earns
        (0: admitted). Kafka's windowed rate over quota.window.num windows; a throttle is at most one window. The
        connection is counted even when throttled, as Kafka's sensor counts it."""
        bound = self._get(QuotaType.CONNECTION_CREATION, (IP, ip))
        if bound is None:
            bound = self._get(QuotaType.CONNECTION_CREATION, (IP, None))
        if bound is None:
            return 0
        sensor = self._sensor(QuotaType.CONNECTION_CREATION, (ip, ""), now)
        sensor.record(1.0, now)
        rate = sensor.measure(now)
        if rate <= bound:
            return 0
        return min(int(round((rate - bound) / bound * sensor.window_size_ms(now))), sensor.window_ms)
