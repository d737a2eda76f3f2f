"""Client telemetry (KIP-714) in the model, on a frozen clock: subscriptions from CLIENT_METRICS resources, Kafka's
subscription ids, and a push's checks in Kafka 4.4's order (fakekafka/model/client_telemetry.py)."""

from __future__ import annotations

import uuid

import pytest

from fakekafka.handlers import advertised_versions
from fakekafka.model.client_telemetry import ClientInfo, ClientTelemetry, subscription_id
from fakekafka.model.clock import ManualClock
from fakekafka.model.config import TELEMETRY_RECEIVER, BrokerConfig, InvalidConfig
from fakekafka.model.internal_topics import java_hash_set_order
from fakekafka.wire import ApiKey, ErrorCode
from fakekafka.wire.records import Compression, compress

ID = uuid.UUID(int=(0x0123456789ABCDEF << 64) | 0xFEDCBA9876543210)
PRODUCER = ClientInfo("orders-producer", "apache-kafka-java", "4.4.0", "127.0.0.1", "50000")
CONN = object()
try:
    import opentelemetry.proto.metrics.v1.metrics_pb2  # noqa: F401

    HAVE_OTLP = True
except ImportError:
    HAVE_OTLP = False
needs_otlp = pytest.mark.skipif(not HAVE_OTLP, reason="decoding pushes needs pip install 'fakekafka[telemetry]'")


def telemetry(subs: dict[str, dict[str, str]] | None = None, max_bytes: int = 1048576) -> ClientTelemetry:
    subscriptions = {} if subs is None else subs
    return ClientTelemetry(ManualClock(1_000_000), lambda: subscriptions, lambda: max_bytes, new_id=lambda: ID)


def otlp(*names: str) -> bytes:
    """MetricsData with one gauge per name (value 1.5) and a resource attribute."""
    if not HAVE_OTLP:
        pytest.skip("decoding pushes needs pip install 'fakekafka[telemetry]'")
    from opentelemetry.proto.metrics.v1 import metrics_pb2

    data = metrics_pb2.MetricsData()
    rm = data.resource_metrics.add()
    attr = rm.resource.attributes.add()
    attr.key, attr.value.string_value = "client_rack", "r1"
    sm = rm.scope_metrics.add()
    for name in names:
        m = sm.metrics.add()
        m.name = name
        p = m.gauge.data_points.add()
        p.as_double, p.time_unix_nano = 1.5, 7
        a = p.attributes.add()
        a.key, a.value.string_value = "topic", "orders"
    return data.SerializeToString()


def test_subscription_ids_and_metric_order_are_kafkas() -> None:
    """Golden values printed by Kafka 4.4's own classes (a HashSet printed, Crc32C, Uuid.hashCode) for the same
    sets, interval 1000 and instance id: the order (past a table resize too) and the id are Java's."""
    cases = [
        ([], "[]", 1788331976),
        (["*"], "[*]", 848016057),
        (["org.apache.kafka.producer.", "org.apache.kafka.consumer."],
         "[org.apache.kafka.producer., org.apache.kafka.consumer.]", 626919101),
        (["a", "b", "c", "org.apache.kafka.producer.record.queue.time.avg",
          "org.apache.kafka.consumer.fetch.manager.fetch.latency.avg", "x.y", "zzz", *(f"m{i}" for i in range(1, 8))],
         "[a, b, x.y, c, org.apache.kafka.consumer.fetch.manager.fetch.latency.avg, m1, m2, m3, "
         "org.apache.kafka.producer.record.queue.time.avg, m4, m5, m6, m7, zzz]", -171759324),
    ]
    for given, printed, sid in cases:
        order = java_hash_set_order(given)
        assert "[" + ", ".join(order) + "]" == printed
        assert subscription_id(order, 1000, ID) == sid


def test_no_subscription_answers_nothing_to_push_every_five_minutes() -> None:
    t = telemetry()
    got = t.get_subscriptions(1, None, PRODUCER, CONN)
    assert got.error == ErrorCode.NONE
    assert (got.client_instance_id, got.requested_metrics, got.push_interval_ms) == (ID, (), 300_000)
    assert got.subscription_id == subscription_id([], 300_000, ID)
    assert got.accepted_compression_types == (4, 3, 1, 2)  # zstd, lz4, gzip, snappy: Kafka's order
    assert (got.telemetry_max_bytes, got.delta_temporality) == (1048576, True)


def test_matching_subscriptions_union_their_metrics_and_take_the_shortest_interval() -> None:
    subs = {"producers": {"metrics": "org.apache.kafka.producer.", "interval.ms": "2000",
                          "match": "client_software_name=apache-kafka-java,client_id=orders-.*"},
            "fast": {"metrics": "org.apache.kafka.consumer.", "interval.ms": "1000"},
            "other": {"metrics": "*", "interval.ms": "100", "match": "client_id=billing"}}
    got = telemetry(subs).get_subscriptions(1, None, PRODUCER, CONN)
    assert set(got.requested_metrics) == {"org.apache.kafka.producer.", "org.apache.kafka.consumer."}
    assert got.push_interval_ms == 1000
    subs["all"] = {"metrics": "*"}
    assert telemetry(subs).get_subscriptions(1, None, PRODUCER, CONN).requested_metrics == ("*",)


def test_a_push_too_early_is_throttled_but_a_terminating_one_is_taken() -> None:
    t = telemetry({"s": {"metrics": "*", "interval.ms": "1000"}})
    got = t.get_subscriptions(1, None, PRODUCER, CONN)
    sid = got.subscription_id
    assert t.push(1, ID, sid, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.NONE  # right after the get: taken
    assert t.push(1, ID, sid, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert t.get_subscriptions(1, ID, PRODUCER, CONN).error == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    t.clock.advance(1000)
    assert t.push(1, ID, sid, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.NONE
    assert t.push(1, ID, sid, True, 0, b"", PRODUCER, CONN)[0] == ErrorCode.NONE  # early, but terminating
    t.clock.advance(5000)
    error, message = t.push(1, ID, sid, False, 0, b"", PRODUCER, CONN)
    assert error == ErrorCode.INVALID_REQUEST and "terminating" in (message or "")


def test_a_changed_subscription_makes_the_old_id_unknown_and_the_next_get_is_not_throttled() -> None:
    subs = {"s": {"metrics": "org.apache.kafka.producer.", "interval.ms": "60000"}}
    t = telemetry(subs)
    old = t.get_subscriptions(1, None, PRODUCER, CONN).subscription_id
    subs["s"] = {"metrics": "org.apache.kafka.consumer.", "interval.ms": "60000"}
    t.subscriptions_changed()
    assert t.push(1, ID, old, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.UNKNOWN_SUBSCRIPTION_ID
    new = t.get_subscriptions(1, ID, PRODUCER, CONN)  # at once: the last push failed on its subscription id
    assert new.error == ErrorCode.NONE and new.subscription_id != old
    assert new.requested_metrics == ("org.apache.kafka.consumer.",)
    # that get did not count as one (Kafka lets it through without stamping it), so the refused push's time holds
    assert t.push(1, ID, new.subscription_id, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    t.clock.advance(60_000)
    assert t.push(1, ID, new.subscription_id, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.NONE


@needs_otlp
def test_refusals_in_kafkas_order() -> None:
    t = telemetry({"s": {"metrics": "*", "interval.ms": "100"}}, max_bytes=64)
    sid = t.get_subscriptions(1, None, PRODUCER, CONN).subscription_id
    assert t.push(1, uuid.UUID(int=0), sid, False, 0, b"", PRODUCER, CONN)[0] == ErrorCode.INVALID_REQUEST
    assert t.push(1, ID, sid, False, 9, b"", PRODUCER, CONN)[0] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    assert t.get_subscriptions(1, ID, PRODUCER, CONN).error == ErrorCode.NONE  # allowed again after that error
    t.clock.advance(100)
    assert t.push(1, ID, sid, False, 0, b"x" * 65, PRODUCER, CONN)[0] == ErrorCode.TELEMETRY_TOO_LARGE
    t.clock.advance(100)
    assert t.push(1, ID, sid, False, 0, b"\xff\xff not protobuf", PRODUCER, CONN)[0] == ErrorCode.INVALID_RECORD


@pytest.mark.parametrize("codec", list(Compression))
def test_pushed_metrics_are_decoded_whatever_the_compression(codec: Compression) -> None:
    t = telemetry({"s": {"metrics": "*", "interval.ms": "100"}})
    sid = t.get_subscriptions(1, None, PRODUCER, CONN).subscription_id
    payload = compress(codec, otlp("org.apache.kafka.producer.record.queue.time.avg", "org.apache.kafka.x"))
    assert t.push(1, ID, sid, False, int(codec), payload, PRODUCER, CONN)[0] == ErrorCode.NONE
    [push] = t.pushes
    assert push.client_id == "orders-producer" and push.compression == codec.name.lower()
    assert push.resource == {"client_rack": "r1"}
    assert push.names() == {"org.apache.kafka.producer.record.queue.time.avg", "org.apache.kafka.x"}
    assert push.value("org.apache.kafka.x") == 1.5
    assert push.metrics[0].attributes == {"topic": "orders"} and push.metrics[0].kind == "gauge"


def test_with_client_telemetry_off_pushes_are_answered_and_decompressed_but_not_kept() -> None:
    """As Kafka 4.4 without a reporter: the APIs are not advertised, but answered; a push's metrics are decompressed
    (INVALID_RECORD when they do not) and nothing decodes them."""
    t = telemetry({"s": {"metrics": "*", "interval.ms": "100"}})
    t.receiving = lambda _: False
    sid = t.get_subscriptions(1, None, PRODUCER, CONN).subscription_id
    assert t.push(1, ID, sid, False, 0, b"not protobuf", PRODUCER, CONN)[0] == ErrorCode.NONE
    t.clock.advance(100)
    assert t.push(1, ID, sid, False, int(Compression.GZIP), b"not gzip", PRODUCER, CONN)[0] == ErrorCode.INVALID_RECORD
    assert list(t.pushes) == []


def test_an_instance_is_forgotten_when_its_connection_closes_or_it_expires() -> None:
    t = telemetry({"s": {"metrics": "*", "interval.ms": "30000"}})
    t.get_subscriptions(1, None, PRODUCER, CONN)
    assert t.get_subscriptions(1, ID, PRODUCER, CONN).error == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    t.connection_closed(1, CONN)
    assert t.get_subscriptions(1, ID, PRODUCER, CONN).error == ErrorCode.NONE  # a new instance: not throttled
    t.clock.advance(90_000)  # max(60 s, 3 x 30 s) without a request
    assert t.instance_ids() == []


@needs_otlp
def test_switched_on_by_the_config_or_by_metric_reporters() -> None:
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in advertised_versions(None, BrokerConfig())
    on = BrokerConfig(client_telemetry=True)
    assert advertised_versions(None, on)[ApiKey.PUSH_TELEMETRY] == (0, 0)
    assert on.overrides["metric.reporters"] == f"org.apache.kafka.common.metrics.JmxReporter,{TELEMETRY_RECEIVER}"
    assert BrokerConfig.from_properties({"metric.reporters": TELEMETRY_RECEIVER}).client_telemetry
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in advertised_versions(None)  # no config: Kafka's default
    later = BrokerConfig()  # metric.reporters set cluster-wide at run time (IncrementalAlterConfigs)
    later.dynamic_defaults["metric.reporters"] = f"org.apache.kafka.common.metrics.JmxReporter, {TELEMETRY_RECEIVER}"
    assert ApiKey.PUSH_TELEMETRY in advertised_versions(None, later, 1)  # broker 1 takes the receiver
    del later.dynamic_defaults["metric.reporters"]  # removed again: Kafka keeps the receiver it added
    assert later.client_telemetry_on(1)


@needs_otlp
def test_metric_reporters_is_read_per_broker() -> None:
    """Each broker reads its own `metric.reporters` (its dynamic per-broker value, else the cluster-wide one), as
    Kafka reconfigures each broker's reporters: only the brokers that took the receiver advertise the APIs."""
    config = BrokerConfig()
    config.dynamic_brokers[1] = {"metric.reporters": f"org.apache.kafka.common.metrics.JmxReporter,"
                                                     f"{TELEMETRY_RECEIVER}"}
    assert ApiKey.PUSH_TELEMETRY in advertised_versions(None, config, 1)
    assert ApiKey.PUSH_TELEMETRY not in advertised_versions(None, config, 2)
    assert config.client_telemetry_on()  # on at some broker
    del config.dynamic_brokers[1]  # deleted again: broker 1 keeps its receiver
    assert config.client_telemetry_on(1) and not config.client_telemetry_on(2)
    config.dynamic_defaults["metric.reporters"] = TELEMETRY_RECEIVER  # cluster-wide: every broker without its own
    config.dynamic_brokers[3] = {"metric.reporters": "org.apache.kafka.common.metrics.JmxReporter"}
    assert config.client_telemetry_on(2) and not config.client_telemetry_on(3)


def test_without_opentelemetry_proto_switching_it_on_is_refused_in_words(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.proto.metrics.v1", None)  # as if not installed
    with pytest.raises(InvalidConfig, match=r"pip install 'fakekafka\[telemetry\]'"):
        BrokerConfig(client_telemetry=True)
