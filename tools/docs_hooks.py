"""mkdocs hooks (mkdocs.yml `hooks:`): the parts of the documentation site generated from the code at build time.

A page asks for a generated part with an HTML comment on a line of its own, `<!-- gen: NAME [ARG] -->`:

- `cli`: `fakekafka --help` and every subcommand's help (`serve`, `ctl` and each ctl command, `proxy`,
  `replay`, `analyze`), from the argparse parsers' own `format_help`.
- `marker`: the `@pytest.mark.fakekafka(...)` settings: names from the plugin's `_SETTINGS`, types from
  `Cluster.__init__`'s annotations, defaults from the plugin's `_start` (its `settings.get(name, default)`
  calls) or else `Cluster.__init__`'s; the words below in `MARKER_WORDS` (a setting without words, or words for a
  setting the code no longer has, fails the build).
- `fixtures`: the plugin's fixtures, their docstrings and what they give (their return annotations).
- `pytest-options`: the command-line options the plugin adds (`pytest_addoption`).
- `frozen-clock`: where a frozen clock starts, from `ManualClock.__init__`.
- `compat-scenarios`, `compat-clients`: the compatibility suite's scenarios and clients (`python -m compat --list`,
  `--list-clients`).
- `compat-table`: the table of the last `python -m compat` run when `build/compat.md` exists.
- `registry-compat-table`: the schema registry's compatibility verdicts, from `tests/unit/registry/
  test_compatibility.py`'s table (each row one of its tests).
- `kafka-versions`: per API, the versions advertised as each release `--kafka-version` knows.
- `include PATH`: a file of the repository (compat/KNOWN_DIFFERENCES.md, bench/README.md, CONTRIBUTING.md), its
  first heading dropped and the others moved one level down.

Every page is also checked for issue numbers ("issue 16"): user-facing text does not cite them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
import logging
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
log = logging.getLogger("mkdocs.plugins.fakekafka")

MARKER_WORDS = {
    "partitions": "Partitions of a topic created automatically or with `create_topic` without a count "
                  "(Kafka's `num.partitions`).",
    "auto_create_topics": "Topics come into being when a client first asks for them "
                          "(Kafka's `auto.create.topics.enable`).",
    "clock": "`\"frozen\"` (a `ManualClock`: time moves only with `advance_clock`), a `Clock` object, or `None` "
             "for the system clock.",
    "topics": "Topics made before the test starts, `{name: partitions}`.",
    "brokers": "How many brokers the cluster has (node ids 1, 2, ...).",
    "racks": "One rack name per broker (`broker.rack`), for rack-aware clients and assignors.",
    "config": "Broker configs by Kafka's names, e.g. `{\"log.retention.check.interval.ms\": \"1000\"}`; checked "
              "as `fakekafka serve --config` checks them.",
    "group_initial_rebalance_delay_ms": "Kafka's `group.initial.rebalance.delay.ms` (Kafka's default is 3000; "
                                        "fakekafka's 0 forms groups at once).",
    "record": "A directory: every request is recorded there as Parquet (read by `fakekafka analyze`).",
    "data_dir": "A directory: logs and metadata are kept there and come back on a cluster made on it again.",
    "schema_registry": "True (or a port): a Confluent-compatible Schema Registry beside the cluster, at "
                       "`kafka.schema_registry_url`, kept in its `_schemas` topic.",
    "chaos": "`True` (seeds from `--chaos-seeds`), `fakekafka.Chaos(seed=..., profile=..., invariants=...)` or a "
             "`fakekafka.Schedule` to replay: faults drawn at request points, invariants checked after the test, "
             "a failing schedule shrunk ([Chaos you can replay](cookbook/chaos.md)).",
    "listeners": "Kafka's `listeners`, e.g. `\"PLAINTEXT://:0,SASL_SSL://:0\"`.",
    "advertised_listeners": "Kafka's `advertised.listeners`.",
    "listener_security_protocol_map": "Kafka's `listener.security.protocol.map`.",
    "sasl_enabled_mechanisms": "Kafka's `sasl.enabled.mechanisms`, e.g. `\"PLAIN,SCRAM-SHA-256\"`.",
    "ssl_client_auth": "Kafka's `ssl.client.auth`: `\"required\"` for mTLS.",
    "users": "SASL users, `{name: password}` (PLAIN and SCRAM).",
    "kafka_version": "An older Kafka release to stand in for, `\"3.9\"`, `\"3.7\"` or `\"2.8\"`: ApiVersions capped "
                     "to its ranges, its features ([Older Kafka versions](cookbook/older-kafka.md)); under "
                     "`--kafka-real`, `\"3.9\"` runs on Apache Kafka 3.9.1 (the others are skipped).",
    "client_telemetry": "True: KIP-714 client telemetry on (GetTelemetrySubscriptions/PushTelemetry advertised, as "
                        "Kafka with a telemetry reporter in `metric.reporters`); the metrics clients push are read "
                        "with `kafka.client_metrics()` "
                        "([Client telemetry](cookbook/faults-and-clock.md#client-telemetry-kip-714)).",
}


# ---------------------------------------------------------------------------------------------- generators

def _code(text: str, lang: str = "text") -> str:
    return f"```{lang}\n{text.rstrip()}\n```\n"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # noqa: SLF001 - argparse keeps its subcommands only here
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            return dict(action.choices)
    return {}


def gen_cli() -> str:
    from fakekafka.ops.cli import _parser
    os.environ["COLUMNS"] = "110"  # argparse wraps help to the terminal's width: the same page on every machine
    top = _parser()
    out = ["## fakekafka\n", _code(top.format_help())]
    for name, parser in _subparsers(top).items():
        out += [f"## fakekafka {name}\n", _code(parser.format_help())]
        for sub, subparser in _subparsers(parser).items():
            out += [f"### fakekafka {name} {sub}\n", _code(subparser.format_help())]
    return "\n".join(out)


def _start_defaults() -> dict[str, Any]:
    """`settings.get("name", default)` calls in the plugin's `_start`: the marker's own defaults."""
    from fakekafka.testing import pytest_plugin
    tree = ast.parse(textwrap.dedent(inspect.getsource(pytest_plugin._start)))  # noqa: SLF001
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "settings"
                and node.args and isinstance(node.args[0], ast.Constant)):
            found[node.args[0].value] = ast.literal_eval(node.args[1]) if len(node.args) > 1 else None
    return found


def gen_marker() -> str:
    from fakekafka.testing import pytest_plugin
    from fakekafka.testing.embedded import Cluster
    settings = pytest_plugin._SETTINGS  # noqa: SLF001
    fake_only = set(pytest_plugin._FAKE_SETTINGS)  # noqa: SLF001
    missing = sorted(set(settings) - set(MARKER_WORDS))
    stale = sorted(set(MARKER_WORDS) - set(settings))
    if missing or stale:
        raise ValueError(f"tools/docs_hooks.py MARKER_WORDS is out of date: no words for {missing}; words for "
                         f"settings the plugin no longer has: {stale}")
    params = inspect.signature(Cluster.__init__).parameters
    defaults = _start_defaults()
    rows = ["| argument | type | default | in-process only | what it does |", "|---|---|---|---|---|"]
    for name in MARKER_WORDS:  # the words' order: the most used first
        param = params.get(name)
        kind = param.annotation if param is not None else "?"
        if name in defaults:
            default = defaults[name]
        else:
            default = param.default if param is not None and param.default is not inspect.Parameter.empty else None
        only = "yes" if name in fake_only else ""
        rows.append(f"| `{name}` | `{kind}` | `{default!r}` | {only} | {MARKER_WORDS[name]} |")
    return "\n".join(rows) + "\n"


def _is_fixture(obj: Any) -> bool:
    return type(obj).__name__ == "FixtureFunctionDefinition" or hasattr(obj, "_pytestfixturefunction")


def gen_fixtures() -> str:
    from fakekafka.testing import pytest_plugin
    rows = ["| fixture | gives | what it is |", "|---|---|---|"]
    for name in pytest_plugin.__all__:
        obj = getattr(pytest_plugin, name)
        if not _is_fixture(obj):
            continue
        fn = obj._get_wrapped_function() if hasattr(obj, "_get_wrapped_function") else obj  # noqa: SLF001
        gives = str(inspect.signature(fn).return_annotation)
        gives = re.sub(r"^Iterator\[(.*)\]$", r"\1", gives)
        doc = " ".join((inspect.getdoc(fn) or "").split())
        rows.append(f"| `{name}` | `{gives}` | {doc} |")
    return "\n".join(rows) + "\n"


class _OptionRecorder:
    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def getgroup(self, *args: Any, **kwargs: Any) -> _OptionRecorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))

    def addini(self, *args: Any, **kwargs: Any) -> None:
        pass


def gen_pytest_options() -> str:
    from fakekafka.testing import pytest_plugin
    recorder = _OptionRecorder()
    registered: list[Any] = []

    class Plugins:  # the plugin registers its chaos options' plugin: their options are listed after its own
        def register(self, plugin: Any, name: str | None = None) -> None:
            registered.append(plugin)
    pytest_plugin.pytest_addoption(recorder, Plugins())  # type: ignore[arg-type]
    for plugin in registered:
        plugin.pytest_addoption(recorder)
    rows = ["| option | what it does |", "|---|---|"]
    for names, kwargs in recorder.options:
        metavar = f"={kwargs['metavar']}" if kwargs.get("metavar") else ""
        rows.append(f"| `{' '.join(names)}{metavar}` | {' '.join(kwargs.get('help', '').split())} |")
    return "\n".join(rows) + "\n"


def gen_frozen_clock() -> str:
    import datetime

    from fakekafka.model.clock import ManualClock
    default = inspect.signature(ManualClock.__init__).parameters["start_ms"].default
    if isinstance(default, int):
        when = datetime.datetime.fromtimestamp(default / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return (f"A frozen clock starts at **{default:,} ms** ({when}), a fixed time in the past, and moves only "
                f"when told to. `ManualClock(start_ms=...)` starts it elsewhere.\n")
    return ("A frozen clock starts at **the wall-clock time of the cluster's creation** and from then on moves only "
            "when told to. `ManualClock(start_ms=...)` starts it at a time of your choice.\n")


def gen_compat_scenarios() -> str:
    sys.path.insert(0, str(ROOT))
    from compat.scenarios import SCENARIOS
    rows = ["| family | scenario | what it checks |", "|---|---|---|"]
    for s in sorted(SCENARIOS.values(), key=lambda s: (s.run.__module__, s.name)):
        family = s.run.__module__.rsplit(".", 1)[-1]
        rows.append(f"| {family} | `{s.name}` | {' '.join((s.doc or '').split())} |")
    return f"{len(SCENARIOS)} scenarios.\n\n" + "\n".join(rows) + "\n"


def gen_compat_clients() -> str:
    sys.path.insert(0, str(ROOT))
    from compat.clients.catalog import CLIENT_DOCS, CLIENTS
    rows = ["| client | how it runs |", "|---|---|"]
    rows += [f"| `{name}` | {CLIENT_DOCS[name]} |" for name in CLIENTS]
    return "\n".join(rows) + "\n"


def gen_compat_table() -> str:
    path = ROOT / "build" / "compat.md"
    if not path.exists():
        return ("*No `python -m compat` run in this build (`build/compat.md` is absent): the figures below are "
                "from the last recorded run.*\n")
    return "### From this build's run (`build/compat.md`)\n\n" + _shift(path.read_text(), keep_first=True)


def _shift(text: str, *, keep_first: bool = False) -> str:
    """Drops the first level-1 heading and moves every other heading one level down, outside code fences."""
    out, fence, dropped = [], False, keep_first
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and line.startswith("#"):
            if line.startswith("# ") and not dropped:
                dropped = True
                continue
            line = "#" + line
        out.append(line)
    return "\n".join(out) + "\n"


def gen_registry_compat_table() -> str:
    """The schema registry's compatibility verdicts, from the table its tests run."""
    from tests.unit.registry.test_compatibility import markdown
    return markdown() + "\n"


def gen_include(path: str) -> str:
    return _shift((ROOT / path).read_text())


def gen_kafka_versions() -> str:
    """Per API, the versions fakekafka advertises as each release it stands in for (`--kafka-version`), from
    `advertised_versions` with that release's ranges (fakekafka.wire.releases, generated from its schemas)."""
    from fakekafka.handlers import advertised_versions
    from fakekafka.model.releases import CURRENT, KNOWN_VERSIONS, kafka_release
    from fakekafka.wire import ApiKey
    columns = {v: advertised_versions(kafka_release(v)) for v in KNOWN_VERSIONS}
    out = ["| API | " + " | ".join(f"{v}{' (default)' if v == CURRENT else ''}" for v in columns) + " |",
           "|---|" + "---|" * len(columns)]
    for key in sorted(set().union(*columns.values())):
        row = []
        for c in columns.values():
            lo, hi = c.get(key, (None, None))
            row.append("—" if lo is None else (str(lo) if lo == hi else f"{lo}-{hi}"))
        out.append(f"| {ApiKey(key).name} | " + " | ".join(row) + " |")
    return "\n".join(out) + "\n"


GENERATORS = {
    "cli": gen_cli, "marker": gen_marker, "fixtures": gen_fixtures, "pytest-options": gen_pytest_options,
    "frozen-clock": gen_frozen_clock, "compat-scenarios": gen_compat_scenarios,
    "compat-clients": gen_compat_clients, "compat-table": gen_compat_table, "include": gen_include,
    "registry-compat-table": gen_registry_compat_table,
    "kafka-versions": gen_kafka_versions,
}

DIRECTIVE = re.compile(r"^<!-- gen: ([\w-]+)(?: (\S+))? -->$", re.MULTILINE)
ISSUE = re.compile(r"\bissues? #?\d+|(?<![\w&])#\d{1,3}\b(?![\w-])", re.IGNORECASE)


def expand(markdown: str) -> str:
    def one(m: re.Match[str]) -> str:
        name, arg = m.group(1), m.group(2)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated part {name!r}; known: {', '.join(GENERATORS)}")
        with contextlib.redirect_stdout(io.StringIO()):
            return GENERATORS[name](arg) if arg else GENERATORS[name]()  # type: ignore[operator]
    return DIRECTIVE.sub(one, markdown)


# ------------------------------------------------------------------------------------------------- hooks

def on_config(config: Any) -> Any:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = expand(markdown)
    fence = False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = ISSUE.search(line)
        if m and not fence:
            log.warning("%s cites an issue number (%r): user-facing text does not", page.file.src_uri, m.group(0))
    return markdown
