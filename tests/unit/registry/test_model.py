"""The registry's rules on an in-memory log: versions and global ids, deletes, configs, modes, references, and the
state rebuilt from the records alone (as a restart reads `_schemas`)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("avro")

from fakekafka.registry.errors import RegistryError  # noqa: E402
from fakekafka.registry.model import MemoryLog, Registry, list_schemas  # noqa: E402


def record(*fields: dict[str, object], name: str = "Order") -> dict[str, str]:
    return {"schema": json.dumps({"type": "record", "name": name, "fields": list(fields)})}


V1 = record({"name": "id", "type": "string"})
V2 = record({"name": "id", "type": "string"}, {"name": "qty", "type": "int", "default": 1})
BAD = record({"name": "id", "type": "string"}, {"name": "qty", "type": "int"})


def refused(fn, *args, **kwargs) -> RegistryError:  # type: ignore[no-untyped-def]
    with pytest.raises(RegistryError) as e:
        fn(*args, **kwargs)
    return e.value


def test_versions_and_global_ids() -> None:
    r = Registry(MemoryLog())
    assert r.register("orders-value", V1) == {"id": 1}
    assert r.register("orders-value", V1) == {"id": 1}  # the same schema: no new version
    assert r.register("orders-value", V2) == {"id": 2}
    assert r.register("returns-value", V1) == {"id": 1}  # the same schema under another subject: the same id
    assert r.list_versions("orders-value") == [1, 2]
    assert r.get_version("orders-value", "latest")["version"] == 2
    assert r.schema_versions(1) == [{"subject": "orders-value", "version": 1},
                                    {"subject": "returns-value", "version": 1}]
    assert r.lookup("orders-value", V1)["version"] == 1
    assert refused(r.lookup, "orders-value", record({"name": "x", "type": "int"})).error_code == 40403
    assert refused(r.lookup, "nobody", V1).error_code == 40401
    assert refused(r.get_version, "orders-value", 3).error_code == 40402
    assert refused(r.get_version, "orders-value", "0").error_code == 42202
    assert refused(r.schema_by_id, 99).error_code == 40403


def test_incompatible_schema_is_409_with_the_reasons() -> None:
    r = Registry(MemoryLog())
    r.register("s", V1)
    e = refused(r.register, "s", BAD)
    assert (e.status, e.error_code) == (409, 409)
    assert e.message.startswith('Schema being registered is incompatible with an earlier schema for subject "s", '
                                "details: [{errorType:'READER_FIELD_MISSING_DEFAULT_VALUE'")
    assert "{oldSchemaVersion: 1}" in e.message and "{compatibility: 'BACKWARD'}" in e.message
    r.set_config("s", {"compatibility": "NONE"})
    assert r.register("s", BAD) == {"id": 2}
    assert r.test_compatibility("s", "1", V1, verbose="true") == {"is_compatible": True, "messages": []}


def test_transitive_checks_every_live_version() -> None:
    r = Registry(MemoryLog())
    r.register("s", record({"name": "a", "type": "int"}))
    r.set_config("s", {"compatibility": "NONE"})
    r.register("s", record({"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}))
    r.register("s", record({"name": "b", "type": "int", "default": 0}))  # a dropped
    new = record({"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0})
    r.set_config("s", {"compatibility": "FORWARD"})
    assert r.test_compatibility("s", None, new)["is_compatible"]
    r.set_config("s", {"compatibility": "FORWARD_TRANSITIVE"})
    assert not r.test_compatibility("s", None, record({"name": "b", "type": "string", "default": ""}))["is_compatible"]


def test_soft_then_hard_delete() -> None:
    r = Registry(MemoryLog())
    r.register("s", V1)
    r.register("s", V2)
    assert refused(r.delete_version, "s", 1, permanent="true").error_code == 40407
    assert r.delete_version("s", 1) == 1
    assert r.list_versions("s") == [2]
    assert r.list_versions("s", deleted="true") == [1, 2]
    assert refused(r.get_version, "s", 1).error_code == 40402
    assert r.get_version("s", 1, deleted="true")["id"] == 1
    assert refused(r.delete_version, "s", 1).error_code == 40406
    assert r.delete_version("s", 1, permanent="true") == 1
    assert refused(r.delete_subject, "s", permanent="true").error_code == 40405
    assert r.delete_subject("s") == [2]
    assert refused(r.delete_subject, "s").error_code == 40404
    assert r.list_subjects() == [] and r.list_subjects(deleted="true") == ["s"]
    assert r.delete_subject("s", permanent="true") == [2]
    assert r.list_subjects(deleted="true") == []
    assert refused(r.schema_by_id, 1).error_code == 40403
    assert r.register("s", V1) == {"id": 3}  # ids are never handed out twice
    assert r.list_versions("s") == [1]


def test_configs_and_modes() -> None:
    r = Registry(MemoryLog())
    assert r.get_config() == {"compatibilityLevel": "BACKWARD"}
    assert refused(r.get_config, "s").error_code == 40408
    assert r.get_config("s", default_to_global="true") == {"compatibilityLevel": "BACKWARD"}
    assert refused(r.set_config, "s", {"compatibility": "SIDEWAYS"}).error_code == 42203
    assert r.set_config(None, {"compatibility": "full_transitive"}) == {"compatibility": "FULL_TRANSITIVE"}
    assert r.compatibility("s") == "FULL_TRANSITIVE"
    r.set_mode("s", {"mode": "READONLY"})
    e = refused(r.register, "s", V1)
    assert (e.error_code, e.message) == (42205, "Subject s is in read-only mode")
    assert r.register("t", V1) == {"id": 1}
    assert refused(r.set_mode, None, {"mode": "IMPORT"}).error_code == 42205  # subjects exist
    assert refused(r.set_mode, None, {"mode": "WRONG"}).error_code == 42204
    r.set_mode("u", {"mode": "IMPORT"})
    assert r.register("u", {**V2, "id": 42, "version": 7}) == {"id": 42}
    assert r.get_version("u", 7)["id"] == 42
    e = refused(r.register, "t", {**V2, "id": 43})
    assert e.error_code == 42205
    assert r.delete_mode("s") == {"mode": "READONLY"}
    assert refused(r.get_mode, "s").error_code == 40409


def test_references() -> None:
    r = Registry(MemoryLog())
    item = {"schema": json.dumps({"type": "record", "name": "Item", "namespace": "shop",
                                  "fields": [{"name": "sku", "type": "string"}]})}
    assert r.register("item", item) == {"id": 1}
    order = {"schema": json.dumps({"type": "record", "name": "Order", "namespace": "shop",
                                   "fields": [{"name": "items", "type": {"type": "array", "items": "shop.Item"}}]}),
             "references": [{"name": "shop.Item", "subject": "item", "version": 1}]}
    assert refused(r.register, "order", {"schema": order["schema"]}).error_code == 42201  # Item unknown without it
    assert r.register("order", order) == {"id": 2}
    assert r.get_version("order", 1)["references"] == [{"name": "shop.Item", "subject": "item", "version": 1}]
    assert r.referenced_by("item", 1) == [2]
    e = refused(r.delete_version, "item", 1)
    assert (e.error_code, e.message) == (42206, "One or more references exist to the schema "
                                                "{magic=1,keytype=SCHEMA,subject=item,version=1}.")


def test_json_schema_references() -> None:
    r = Registry(MemoryLog())
    r.register("address", {"schemaType": "JSON", "schema": json.dumps(
        {"type": "object", "properties": {"city": {"type": "string"}}})})
    customer = {"schemaType": "JSON", "references": [{"name": "address.json", "subject": "address", "version": 1}],
                "schema": json.dumps({"type": "object", "properties": {"home": {"$ref": "address.json"}}})}
    assert r.register("customer", customer) == {"id": 2}
    r.set_config("customer", {"compatibility": "BACKWARD"})
    narrower = {**customer, "schema": json.dumps({"type": "object", "properties": {"home": {"type": "string"}}})}
    assert not r.test_compatibility("customer", "latest", narrower)["is_compatible"]


def test_state_is_rebuilt_from_the_records() -> None:
    log = MemoryLog()
    r = Registry(log)
    r.register("s", V1)
    r.register("s", V2)
    r.delete_version("s", 1)
    r.set_config("s", {"compatibility": "FULL"})
    r.set_mode("t", {"mode": "READONLY"})
    again = Registry(log)
    assert again.list_versions("s", deleted="true") == [1, 2] and again.list_versions("s") == [2]
    assert again.get_config("s") == {"compatibilityLevel": "FULL"} and again.get_mode("t") == {"mode": "READONLY"}
    assert again.register("s", V2) == {"id": 2}
    keys = [json.loads(k) for k, _ in log.records]
    assert keys[0] == {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}
    assert {"keytype": "CONFIG", "subject": "s", "magic": 0} in keys
    log.records.append((b"not json", b"{"))  # a stranger's record on _schemas: skipped, as Confluent skips it
    again.sync()
    assert again.list_subjects() == ["s"]


def test_a_schema_id_is_found_whatever_subject_the_reader_names() -> None:
    """`GET /schemas/ids/{id}?subject=S`: the subject names a context, not an owner (a deserializer asks with its
    own topic's subject for an id another subject registered, e.g. a record written by another service)."""
    r = Registry(MemoryLog())
    schema_id = r.register("orders-value", record())["id"]
    assert r.schema_by_id(schema_id, "elsewhere-value") == r.schema_by_id(schema_id)
    assert refused(r.schema_by_id, schema_id + 1, "orders-value").error_code == 40403


def test_list_schemas_by_prefix_latest_only_and_deleted() -> None:
    """Confluent's `GET /schemas`: subjects in name order, each one's versions, soft-deleted ones only when asked."""
    r = Registry(MemoryLog())
    r.register("orders-value", V1)
    r.register("orders-value", V2)
    r.register("a-value", V1)
    r.delete_version("orders-value", "1")
    assert [(s["subject"], s["version"], s["id"]) for s in list_schemas(r)] == [
        ("a-value", 1, 1), ("orders-value", 2, 2)]
    assert [(s["subject"], s["version"]) for s in list_schemas(r, deleted="true")] == [
        ("a-value", 1), ("orders-value", 1), ("orders-value", 2)]
    assert [s["version"] for s in list_schemas(r, "orders", deleted="true", latest_only="true")] == [2]
    assert list_schemas(r, "nobody") == []
    assert list_schemas(r, "a-")[0]["schema"] == V1["schema"].replace(" ", "")


def test_compatibility_with_a_subject_without_versions() -> None:
    """Confluent checks "latest" of a subject with no live version against nothing (compatible); a numbered
    version that is not live is 40402 whether or not the subject exists."""
    r = Registry(MemoryLog())
    assert r.test_compatibility("nobody", "latest", V1) == {"is_compatible": True}
    assert r.test_compatibility("nobody", "latest", V1, verbose="true") == {"is_compatible": True, "messages": []}
    assert refused(r.test_compatibility, "nobody", "1", V1).error_code == 40402
    r.register("s", V1)
    r.delete_version("s", "1")
    assert r.test_compatibility("s", "latest", BAD) == {"is_compatible": True}
    assert refused(r.test_compatibility, "s", "1", V1).error_code == 40402


def test_delete_subject_config_answers_the_deleted_one() -> None:
    """Confluent's DELETE /config/{subject}: the subject's own config as it was; 40401 where it has none (even a
    subject with versions), so a second delete is refused."""
    r = Registry(MemoryLog())
    r.register("s", V1)
    assert refused(r.delete_config, "s").error_code == 40401
    r.set_config("s", {"compatibility": "NONE"})
    r.set_config(None, {"compatibility": "FULL"})
    assert r.delete_config("s") == {"compatibilityLevel": "NONE"}
    assert r.compatibility("s") == "FULL"
    assert refused(r.delete_config, "s").error_code == 40401
