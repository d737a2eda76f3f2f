"""Write `fakekafka/model/kafka_configs_<release>.py`: each older release's broker and topic configs, from its jars.

Run at development time only (`python tools/gen_release_configs.py [--lib 3.7=DIR ...] [--check]`); the output is
committed and the project never reads the jars at run time. For each release `--kafka-version` stands in for
(3.9.1, 3.7.2, 2.8.2: the patch releases of fakekafka/wire/releases.py) a small Java program, run with `java` on
that release's broker jars, reads by reflection what the release itself defines (the class names moved between
releases; the program finds each where that release has it):

- its broker ConfigDef (`kafka.server.KafkaConfig.configDef()`): each key's type, its default as DescribeConfigs
  prints it (`ConfigDef.convertToString`), its validator as data, importance, documentation, whether it is
  internal; from its `DynamicBrokerConfig`, whether it is dynamic (`AllDynamicConfigs`: read_only=False), how it
  can be updated (`dynamicConfigUpdateModes`), its synonyms (`brokerConfigSynonyms`), whether it is a keystore
  setting updated per listener only (`DynamicSecurityConfigs`) or a thread count (`DynamicThreadPool`);
- its topic ConfigDef (`LogConfig.configDefCopy()`, in kafka-storage from 3.6, core's `kafka.log.LogConfig`
  before) and each topic config's broker synonym (`LogConfig.serverConfigName`).

The jars: Kafka 3.9.1's broker is what the conformance tests run (`$FAKEKAFKA_KAFKA39_LIB`, which `.ci/install.sh`
resolves); the others are resolved here from Maven Central with the broker's pom (fakekafka/testing/kafka-pom.xml,
`-Dkafka.version=V`) into `~/.cache/fakekafka/kafka-broker-V/`, unless `--lib NAME=DIR` names a lib dir. Kafka 4.4's
own table is tools/gen_broker_configs.py's (its classes are Java, not these Scala objects).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_broker_configs import _validator  # noqa: E402  (one rendering of a validator for every table)

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "fakekafka" / "model"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "fakekafka"
POM = ROOT / "fakekafka" / "testing" / "kafka-pom.xml"
RELEASES = {"3.9": "3.9.1", "3.7": "3.7.2", "2.8": "2.8.2"}
"""The older releases (major.minor -> the patch release whose jars are read), as fakekafka/wire/releases.py's."""

DUMP_JAVA = r"""
import java.lang.reflect.*;
import java.util.*;
import org.apache.kafka.common.config.ConfigDef;

public class ReleaseConfigDump {
    static Object field(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                continue;
            } catch (IllegalAccessException e) {
                return null;
            }
        }
        return null;
    }
    static Object module(String cls) throws Exception {
        return Class.forName(cls + "$").getField("MODULE$").get(null);
    }
    static Object call(Object o, String name, Object... args) throws Exception {
        for (Method m : o.getClass().getMethods())
            if (m.getName().equals(name) && m.getParameterCount() == args.length) {
                m.setAccessible(true);
                return m.invoke(o, args);
            }
        throw new NoSuchMethodException(name);
    }
    static Object callStatic(Class<?> c, String name, Object... args) throws Exception {
        for (Method m : c.getMethods())
            if (m.getName().equals(name) && m.getParameterCount() == args.length
                    && Modifier.isStatic(m.getModifiers())) return m.invoke(null, args);
        throw new NoSuchMethodException(name);
    }
    static boolean scalaContains(Object set, String v) throws Exception { return (Boolean) call(set, "contains", v); }
    static List<String> scalaList(Object seq) throws Exception {
        String s = (String) call(seq, "mkString", "\u0001");
        return s.isEmpty() ? new ArrayList<>() : Arrays.asList(s.split("\u0001"));
    }
    static String optional(Object o) throws Exception {  // java Optional or scala Option
        if (o instanceof Optional) return (String) ((Optional<?>) o).orElse(null);
        return (Boolean) call(o, "isDefined") ? (String) call(o, "get") : null;
    }
    static String q(Object s) {
        if (s == null) return "null";
        if (s instanceof Boolean || s instanceof Number) return s.toString();
        StringBuilder b = new StringBuilder("\"");
        for (char ch : s.toString().toCharArray()) {
            if (ch == '"' || ch == '\\') b.append('\\').append(ch);
            else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
            else b.append(ch);
        }
        return b.append('"').toString();
    }
    static String list(Collection<?> c) {
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (Object o : c) j.add(q(o));
        return j.toString();
    }
    static String validator(Object v) throws Exception {
        if (v == null) return "null";
        String kind = v.getClass().getSimpleName();
        StringBuilder b = new StringBuilder("{\"kind\":" + q(kind) + ",\"text\":" + q(v.toString()));
        if (kind.equals("Range")) b.append(",\"min\":" + q(field(v, "min")) + ",\"max\":" + q(field(v, "max")));
        else if (kind.equals("ValidString") || kind.equals("CaseInsensitiveValidString")) {
            Object s = field(v, "validStrings");
            if (s != null) b.append(",\"strings\":" + list((Collection<?>) s));
        } else if (kind.equals("ValidList")) {
            Object vs = field(v, "validString");
            Object s = vs == null ? null : field(vs, "validStrings");
            if (s != null) b.append(",\"strings\":" + list((Collection<?>) s));
            Object e = field(v, "isEmptyAllowed");
            if (e != null)
                b.append(",\"empty_allowed\":" + e + ",\"null_allowed\":" + field(v, "isNullAllowed"));
        }
        return b.append("}").toString();
    }
    static String key(ConfigDef.ConfigKey k, String extra) throws Exception {
        boolean required = k.defaultValue == ConfigDef.NO_DEFAULT_VALUE;
        String def = required || k.defaultValue == null ? null
            : ConfigDef.convertToString(k.defaultValue, k.type);
        return "{\"name\":" + q(k.name) + ",\"type\":" + q(k.type.name()) + ",\"default\":" + q(def)
            + ",\"required\":" + required
            + ",\"importance\":" + q(k.importance == null ? null : k.importance.name())
            + ",\"internal\":" + k.internalConfig
            + ",\"validator\":" + validator(k.validator) + ",\"documentation\":" + q(k.documentation) + extra + "}";
    }
    public static void main(String[] args) throws Exception {
        Object kc = module("kafka.server.KafkaConfig");
        ConfigDef def = (ConfigDef) call(kc, "configDef");
        Object dyn = module("kafka.server.DynamicBrokerConfig");
        Object all = call(dyn, "AllDynamicConfigs"), sec = call(dyn, "DynamicSecurityConfigs");
        @SuppressWarnings("unchecked")
        Map<String, String> modes = (Map<String, String>) call(dyn, "dynamicConfigUpdateModes");
        Object threads = call(module("kafka.server.DynamicThreadPool"), "ReconfigurableConfigs");
        StringJoiner brokers = new StringJoiner(",\n", "[", "]");
        for (ConfigDef.ConfigKey k : new TreeMap<>(def.configKeys()).values()) {
            String extra = ",\"dynamic\":" + scalaContains(all, k.name)
                + ",\"update_mode\":" + q(modes.getOrDefault(k.name, "read-only"))
                + ",\"synonyms\":" + list(scalaList(call(dyn, "brokerConfigSynonyms", k.name, true)))
                + ",\"security\":" + scalaContains(sec, k.name)
                + ",\"thread_count\":" + (scalaContains(threads, k.name) || k.name.equals("num.network.threads"));
            brokers.add(key(k, extra));
        }
        Class<?> lc; Object lcTarget;
        try {  // kafka-storage's Java class from 3.6, core's Scala object before
            lc = Class.forName("org.apache.kafka.storage.internals.log.LogConfig");
            lcTarget = null;
        } catch (ClassNotFoundException e) {
            lc = Class.forName("kafka.log.LogConfig$");
            lcTarget = lc.getField("MODULE$").get(null);
        }
        ConfigDef topicDef = (ConfigDef)
            (lcTarget == null ? callStatic(lc, "configDefCopy") : call(lcTarget, "configDefCopy"));
        StringJoiner topics = new StringJoiner(",\n", "[", "]");
        for (ConfigDef.ConfigKey k : new TreeMap<>(topicDef.configKeys()).values()) {
            Object syn = lcTarget == null ? callStatic(lc, "serverConfigName", k.name)
                : call(lcTarget, "serverConfigName", k.name);
            topics.add(key(k, ",\"broker_synonym\":" + q(optional(syn))));
        }
        System.out.println("{\"broker\":" + brokers + ",\n\"topic\":" + topics + "}");
    }
}
"""


def out_path(name: str) -> Path:
    return OUT_DIR / f"kafka_configs_{name.replace('.', '_')}.py"


def default_lib(version: str) -> Path:
    """Where the release's broker jars are by default: Kafka 3.9.1's installed broker, else the generator's cache."""
    if version == "3.9.1":
        return Path(os.environ.get("FAKEKAFKA_KAFKA39_LIB", CACHE / "kafka-3.9.1" / "lib"))
    return CACHE / f"kafka-broker-{version}"


def lib_dir(name: str, version: str, given: dict[str, str]) -> Path:
    """The release's broker lib dir: given, Kafka 3.9.1's installed broker, or resolved from Maven Central."""
    if name in given:
        return Path(given[name])
    dest = default_lib(version)
    if version != "3.9.1" and not any(dest.glob("kafka_2.*.jar")):
        tmp = dest.with_name(dest.name + ".tmp")
        subprocess.run(
            [
                "mvn",
                "-q",
                "-B",
                "-f",
                str(POM),
                f"-Dkafka.version={version}",
                "dependency:copy-dependencies",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={tmp}",
            ],
            check=True,
        )
        tmp.rename(dest)
    return dest


def dump(lib: Path) -> dict[str, list[dict]]:
    """{"broker": [...], "topic": [...]} as the Java program prints them."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "ReleaseConfigDump.java"
        src.write_text(DUMP_JAVA)
        proc = subprocess.run(["java", "-cp", str(lib / "*"), str(src)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"gen_release_configs: reading the ConfigDefs from {lib} failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def render(name: str, version: str, data: dict[str, list[dict]]) -> str:
    out = [
        f"# Generated by tools/gen_release_configs.py from Apache Kafka {version}'s jars. Do not edit.",
        f'"""Kafka {version}\'s broker and topic configs, as that release defines them (its KafkaConfig and',
        "LogConfig ConfigDefs, its DynamicBrokerConfig): what fakekafka describes, validates and defaults to with",
        f"`--kafka-version {name}` (model/config.py's `config_catalog`). Fields as model/kafka_broker_configs.py's;",
        '`broker_synonym`: the broker config a topic config falls back to (None: none)."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import NamedTuple",
        "",
        "from fakekafka.model.kafka_broker_configs import BrokerConfigDef, Validator",
        "",
        f"KAFKA_VERSION = {version!r}",
        "",
        "",
        "class TopicConfigDef(NamedTuple):",
        "    name: str",
        "    type: str",
        "    default: str | None",
        "    broker_synonym: str | None",
        "    internal: bool",
        "    validator: Validator | None",
        "    documentation: str | None",
        "",
        "",
        "BROKER_CONFIG_DEFS: dict[str, BrokerConfigDef] = {d.name: d for d in (",
    ]
    for r in data["broker"]:
        out.append(
            f"    BrokerConfigDef({r['name']!r}, {r['type']!r}, {r['default']!r}, {r['required']!r}, "
            f"{r['importance']!r}, {r['internal']!r}, {r['dynamic']!r}, {r['update_mode']!r}, "
            f"{tuple(r['synonyms'])!r}, {r['security']!r}, {r['thread_count']!r}, {_validator(r['validator'])},\n"
            f"                    {r['documentation']!r}),"
        )
    out += [")}", "", "TOPIC_CONFIG_DEFS: dict[str, TopicConfigDef] = {d.name: d for d in ("]
    for r in data["topic"]:
        out.append(
            f"    TopicConfigDef({r['name']!r}, {r['type']!r}, {r['default']!r}, {r['broker_synonym']!r}, "
            f"{r['internal']!r}, {_validator(r['validator'])},\n"
            f"                   {r['documentation']!r}),"
        )
    out.append(")}")
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--lib",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="a release's broker lib dir (e.g. 3.7=/path/lib); default: see the module's docstring",
    )
    ap.add_argument("--release", action="append", choices=sorted(RELEASES), help="only these (default: all)")
    ap.add_argument("--check", action="store_true", help="fail if the committed output differs")
    args = ap.parse_args()
    given = dict(entry.split("=", 1) for entry in args.lib)
    stale = []
    for name in args.release or RELEASES:
        version = RELEASES[name]
        text = render(name, version, dump(lib_dir(name, version, given)))
        path = out_path(name)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path)
            continue
        path.write_text(text)
        print(f"wrote {path}")
    for path in stale:
        print(f"{path} is out of date: run tools/gen_release_configs.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
