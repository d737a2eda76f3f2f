"""Write `fakekafka/model/kafka_broker_configs.py`: every broker config Apache Kafka defines, from its jars.

Run at development time only (`python tools/gen_broker_configs.py [--lib DIR] [--check]`); the output is
committed and the project never reads the jars at run time. A small Java program (run with `java` from the
broker's lib dir, default `$FAKEKAFKA_KAFKA_LIB`, which `.ci/install.sh` resolves) reads the broker's
ConfigDef (`AbstractKafkaConfig.CONFIG_DEF`, what `KafkaConfig` parses server.properties with) and prints
each key as JSON: its type, its default as DescribeConfigs prints it (`ConfigDef.convertToString`), its
validator as data (Range bounds, valid strings), importance, documentation (`KafkaConfig.documentationOf`),
whether it is internal, whether a dynamic update of it needs a listener prefix (`DYNAMIC_SECURITY_CONFIGS`)
or may at most halve or double it (the thread pools' RECONFIGURABLE_CONFIGS), how it can be updated
(`DynamicBrokerConfig.dynamicConfigUpdateModes`: read-only, per-broker, cluster-wide; DescribeConfigs says
read_only for names outside `ALL_DYNAMIC_CONFIGS`) and its synonyms (`DynamicBrokerConfig.brokerConfigSynonyms`).
Hand-typing ~380 configs would drift from Kafka; this keeps fakekafka's table Kafka's by construction.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "fakekafka" / "model" / "kafka_broker_configs.py"
DEFAULT_LIB_DIR = Path.home() / ".cache" / "fakekafka" / "kafka-4.4.0" / "lib"

DUMP_JAVA = """
import com.fasterxml.jackson.databind.ObjectMapper;
import java.lang.reflect.Field;
import java.util.*;
import kafka.server.KafkaConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.DynamicThreadPool;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;

public class BrokerConfigDump {
    static Object field(Object o, String name) throws Exception {
        Class<?> c = o.getClass();
        while (c != null) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                c = c.getSuperclass();
            }
        }
        return null;
    }

    static Map<String, Object> validator(ConfigDef.Validator v) throws Exception {
        if (v == null) return null;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("kind", v.getClass().getSimpleName());
        out.put("text", v.toString());
        if (v instanceof ConfigDef.Range) {
            out.put("min", field(v, "min"));
            out.put("max", field(v, "max"));
        } else if (v instanceof ConfigDef.ValidString) {
            out.put("strings", field(v, "validStrings"));
        } else if (v instanceof ConfigDef.CaseInsensitiveValidString) {
            out.put("strings", new ArrayList<>((Collection<?>) field(v, "validStrings")));
        } else if (v instanceof ConfigDef.ValidList) {
            Object vs = field(v, "validString");
            out.put("strings", vs == null ? null : field(vs, "validStrings"));
            out.put("empty_allowed", field(v, "isEmptyAllowed"));
            out.put("null_allowed", field(v, "isNullAllowed"));
        }
        return out;
    }

    public static void main(String[] args) throws Exception {
        ConfigDef def = AbstractKafkaConfig.CONFIG_DEF;
        Map<String, String> modes = DynamicBrokerConfig.dynamicConfigUpdateModes();
        List<Map<String, Object>> rows = new ArrayList<>();
        for (ConfigDef.ConfigKey k : new TreeMap<>(def.configKeys()).values()) {
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("name", k.name);
            row.put("type", k.type.name());
            boolean required = k.defaultValue == ConfigDef.NO_DEFAULT_VALUE;
            row.put("default", required || k.defaultValue == null ? null
                    : ConfigDef.convertToString(k.defaultValue, k.type));
            row.put("required", required);
            row.put("importance", k.importance == null ? null : k.importance.name());
            row.put("internal", k.internalConfig);
            row.put("dynamic", DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS.contains(k.name));
            row.put("update_mode", modes.getOrDefault(k.name, "read-only"));
            row.put("synonyms", DynamicBrokerConfig.brokerConfigSynonyms(k.name, true));
            row.put("security", DynamicBrokerConfig.DYNAMIC_SECURITY_CONFIGS.contains(k.name));
            // the broker's thread pools, and the network threads (which its DataPlaneAcceptor checks alike)
            row.put("thread_count", DynamicThreadPool.RECONFIGURABLE_CONFIGS.contains(k.name)
                    || k.name.equals("num.network.threads"));
            row.put("validator", validator(k.validator));
            row.put("documentation", KafkaConfig.configDef().configKeys().containsKey(k.name)
                    ? k.documentation : null);
            rows.add(row);
        }
        System.out.println(new ObjectMapper().writeValueAsString(rows));
    }
}
"""


def lib_dir() -> Path:
    env = os.environ.get("FAKEKAFKA_KAFKA_LIB")
    return Path(env) if env else DEFAULT_LIB_DIR


def dump(lib: Path) -> list[dict]:
    """Every broker config key as the Java program prints it."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "BrokerConfigDump.java"
        src.write_text(DUMP_JAVA)
        proc = subprocess.run(["java", "-cp", str(lib / "*"), str(src)], capture_output=True, text=True,
                              timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"gen_broker_configs: reading the ConfigDef from {lib} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _version(lib: Path) -> str:
    jars = sorted(lib.glob("kafka_2.13-*.jar"))
    return jars[0].name.removeprefix("kafka_2.13-").removesuffix(".jar") if jars else "?"


def _validator(v: dict | None) -> str:
    """The validator as a `Validator(...)` literal of the generated module."""
    if v is None:
        return "None"
    parts = [f"kind={v['kind']!r}", f"text={v['text']!r}"]
    for key in ("min", "max"):
        if v.get(key) is not None:
            parts.append(f"{key}={v[key]!r}")
    if v.get("strings") is not None:
        parts.append(f"strings={tuple(v['strings'])!r}")
    if v.get("empty_allowed") is not None:
        parts.append(f"empty_allowed={v['empty_allowed']!r}, null_allowed={v['null_allowed']!r}")
    return f"Validator({', '.join(parts)})"


def render(rows: list[dict], version: str) -> str:
    out = [
        f"# Generated by tools/gen_broker_configs.py from Apache Kafka {version}'s broker ConfigDef. Do not edit.",
        '"""Every broker config Kafka defines (`AbstractKafkaConfig.CONFIG_DEF`): the data model/config.py turns',
        'into the broker\'s config specs. `default` is the value DescribeConfigs prints for it (None: no default);',
        '`dynamic`: Kafka can change it without a restart (DescribeConfigs\' read_only=False); `update_mode` as',
        '`kafka-configs` reports it; `synonyms`: the names DescribeConfigs lists as its synonyms, in order;',
        '`security`: dynamically updatable only per listener (with its prefix); `thread_count`: a thread count',
        'that a dynamic update may at most halve or double."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        f"KAFKA_VERSION = {version!r}",
        "",
        "",
        "class Validator(NamedTuple):",
        '    """A ConfigDef validator: `kind` its class, `text` its description; Range bounds or valid strings."""',
        "",
        "    kind: str",
        "    text: str",
        "    min: int | float | None = None",
        "    max: int | float | None = None",
        "    strings: tuple[str, ...] | None = None",
        "    empty_allowed: bool | None = None",
        "    null_allowed: bool | None = None",
        "",
        "",
        "class BrokerConfigDef(NamedTuple):",
        "    name: str",
        "    type: str",
        "    default: str | None",
        "    required: bool",
        "    importance: str | None",
        "    internal: bool",
        "    dynamic: bool",
        "    update_mode: str",
        "    synonyms: tuple[str, ...]",
        "    security: bool",
        "    thread_count: bool",
        "    validator: Validator | None",
        "    documentation: str | None",
        "",
        "",
        "BROKER_CONFIG_DEFS: dict[str, BrokerConfigDef] = {d.name: d for d in (",
    ]
    for r in rows:
        out.append(
            f"    BrokerConfigDef({r['name']!r}, {r['type']!r}, {r['default']!r}, {r['required']!r}, "
            f"{r['importance']!r}, {r['internal']!r}, {r['dynamic']!r}, {r['update_mode']!r}, "
            f"{tuple(r['synonyms'])!r}, {r['security']!r}, {r['thread_count']!r}, {_validator(r['validator'])},\n"
            f"                    {r['documentation']!r}),")
    out.append(")}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=str(lib_dir()), help="Kafka's lib dir (default: $FAKEKAFKA_KAFKA_LIB)")
    ap.add_argument("--check", action="store_true", help="fail if the committed output differs")
    args = ap.parse_args()
    lib = Path(args.lib)
    text = render(dump(lib), _version(lib))
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT} is out of date: run tools/gen_broker_configs.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
