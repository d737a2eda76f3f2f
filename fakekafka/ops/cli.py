"""The `fakekafka` command: `serve` starts an in-memory cluster and prints its address (`--record DIR` keeps
every request as Parquet); `ctl` steers a running one (kill a broker, inject an error...) through its
control port; `analyze` turns a recording into a traffic report with a PySpark job."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import errno
import gc
import json
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, NoReturn

from fakekafka import __version__
from fakekafka.model.config import BROKER_CONFIGS, BrokerConfig, InvalidConfig
from fakekafka.model.releases import UnknownKafkaVersion, kafka_release, known_versions
from fakekafka.net.loop_thread import new_event_loop
from fakekafka.ops.chaos_args import add_chaos_options, chaos_done, chaos_from_args
from fakekafka.ops.control import COMMANDS, TOKEN_ENV, control_binding, control_token, send_command, serve_control
from fakekafka.ops.describe import status_line
from fakekafka.storage.datadir import DataDirError
from fakekafka.testing.apache_kafka import KAFKA_VERSION
from fakekafka.testing.embedded import Cluster

__all__ = ["main"]

USERS_ENV = "FAKEKAFKA_USERS"
"""The environment variable `serve` reads SASL users from, NAME=PASSWORD a line (passwords kept out of `ps`)."""


# ctl commands: positional arguments, then options
_CTL_ARGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kill-broker": (("broker",), ()), "stop-broker": (("broker",), ()), "restart-broker": (("broker",), ()),
    "isolate-broker": (("broker",), ()), "heal-broker": (("broker",), ()),
    "pause-replication": (("broker",), ("topic", "partition")),
    "resume-replication": (("broker",), ("topic", "partition")),
    "move-leader": (("topic", "partition", "broker"), ()),
    "shrink-isr": (("topic", "partition", "broker"), ()), "expand-isr": (("topic", "partition", "broker"), ()),
    "elect-preferred-leaders": ((), ()),
    "inject-error": (("api", "error"), ("count", "broker", "topic", "partition", "client_id", "after")),
    "inject-latency": (("ms",), ("api", "count", "broker")),
    "drop-connection": (("api",), ("when", "count", "broker")),
    "throttle": (("ms",), ("api", "count")), "clear-faults": ((), ()), "advance-clock": (("ms",), ()),
    "force-compaction": (("topic",), ()),
    "partition-state": (("topic", "partition"), ()), "events": ((), ()), "describe": ((), ()),
    "client-metrics": ((), ("client_id",)),
    "abort-transaction": (("transactional_id",), ()), "expire-transactional-id": (("transactional_id",), ()),
    "registry-inject-error": ((), ("path", "method", "status", "error_code", "message", "count")),
    "registry-inject-latency": (("ms",), ("path", "method", "count")),
    "registry-unknown-schema-id": ((), ("id", "count")),
}
_CTL_INTS = {"broker", "partition", "ms", "count", "status", "error_code", "id"}
_CTL_FLAGS = {"after"}
MAX_PORT = 65535


def _port(text: str, *, zero: bool = True) -> int:
    """A TCP port argument: 1..65535, or 0 (a free one) where `zero`."""
    low = 0 if zero else 1
    try:
        port = int(text)
    except ValueError:
        port = None
    if port is None or not low <= port <= MAX_PORT:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port: give a number from 1 to {MAX_PORT}"
                                         + (" (0 picks a free one)" if zero else ""))
    return port


def _address(text: str) -> str:
    """HOST:PORT, as the ready line prints the control address."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (the ready line of `fakekafka serve` prints "
                                         f"control=HOST:PORT)")
    _port(port, zero=False)
    return text


def _listen_address(text: str) -> str:
    """HOST:PORT to listen on; port 0 picks a free one."""
    host, sep, port = text.rpartition(":")
    if not sep or not host:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:19092")
    _port(port)
    return text


def _reason(e: OSError) -> str:
    if e.errno == errno.EADDRINUSE:
        return "the address is already in use"
    return e.strerror or str(e)


class _Parser(argparse.ArgumentParser):
    """argparse with the mistake first: one line naming it and where the usage is, rather than the whole usage
    block (26 lines for serve) with the one useful line at its end. Subcommands' parsers are of this class too
    (add_subparsers makes them of the parent's class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n({self.prog} --help lists the options)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="fakekafka", description="A Kafka-compatible broker for tests.")
    ap.add_argument("--version", action="version", version=f"fakekafka {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start an in-memory cluster")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=9092,
                       help="port of the first broker; the next brokers take the following ports (default 9092; "
                            "0 picks free ones)")
    serve.add_argument("--brokers", type=int, default=1, metavar="N", help="number of brokers (default 1)")
    serve.add_argument("--racks", help="comma-separated rack of each broker, e.g. a,b,c")
    serve.add_argument("--advertised-host", help="host clients are told to connect to (default: --host)")
    serve.add_argument("--advertised-port", type=lambda t: _port(t, zero=False),
                       help="port clients are told to connect to (one broker only)")
    serve.add_argument("--partitions", type=int, default=1, metavar="N",
                       help="num.partitions for auto-created topics (default 1)")
    serve.add_argument("--replication-factor", type=int, default=1, metavar="N",
                       help="default.replication.factor for new topics (default 1)")
    serve.add_argument("--no-auto-create-topics", action="store_true", help="turn auto.create.topics.enable off")
    serve.add_argument("--node-id", type=int, default=1, help="node id of the first broker (default 1)")
    serve.add_argument("--cluster-id", default="fakekafka-cluster-0001", help="the cluster id clients see")
    serve.add_argument("--clock", choices=["system", "frozen"], default="system",
                       help="frozen: time moves only with `fakekafka ctl advance-clock`")
    serve.add_argument("--group-initial-rebalance-delay-ms", type=int, default=0,
                       help="group.initial.rebalance.delay.ms (default 0; Kafka's is 3000)")
    serve.add_argument("--replication-lag-ms", type=int, default=0,
                       help="how long followers take to copy a batch (default 0)")
    for name, what in _LIMITS.items():
        serve.add_argument("--" + name.replace(".", "-"), type=int, metavar="N", help=what)
    serve.add_argument("--kafka-version", metavar="X.Y",
                       help="stand in for an older Kafka release: " + known_versions() + "; ApiVersions capped to "
                            "its ranges, its features (no KIP-848 consumer groups, share groups or transaction.version "
                            "before 4.0)")
    serve.add_argument("--client-telemetry", action="store_true",
                       help="KIP-714 client telemetry: advertise and serve GetTelemetrySubscriptions/PushTelemetry "
                            "(as Kafka with a telemetry reporter in metric.reporters; same as --config "
                            "metric.reporters=fakekafka.ClientTelemetryReceiver); `ctl client-metrics` reads what "
                            "clients push")
    serve.add_argument("--feature", action="append", default=[], metavar="NAME=LEVEL",
                       help="a feature level, as `kafka-storage format --feature`: transaction.version=0..2 "
                            "(default 2, as a new Kafka 4.x cluster; 1 for transactions version 1)")
    serve.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="a broker config by Kafka's name, e.g. group.min.session.timeout.ms=1000 (repeatable; "
                            "wins over --config-file and over the flags that set the same config)")
    serve.add_argument("--config-file", metavar="PATH",
                       help="broker configs from a Java properties file, as Kafka's server.properties")
    serve.add_argument("--max-connections-per-ip-overrides", metavar="HOST:N,...",
                       help="per-address exceptions to --max-connections-per-ip (Kafka's format)")
    serve.add_argument("--listeners", metavar="NAME://HOST:PORT,...",
                       help="Kafka's listeners, e.g. PLAINTEXT://127.0.0.1:9092,SASL_SSL://127.0.0.1:9093 (default: "
                            "one PLAINTEXT listener on --host/--port); an SSL listener without "
                            "--ssl-keystore-location gets a throwaway CA and certificates, their paths printed")
    serve.add_argument("--advertised-listeners", metavar="NAME://HOST:PORT,...",
                       help="what Metadata tells each listener's clients (Kafka's advertised.listeners)")
    serve.add_argument("--listener-security-protocol-map", metavar="NAME:PROTOCOL,...",
                       help="listener name -> PLAINTEXT/SSL/SASL_PLAINTEXT/SASL_SSL (Kafka's default if omitted)")
    serve.add_argument("--sasl-enabled-mechanisms", metavar="M,...",
                       help="of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (default: PLAIN,SCRAM-SHA-256,"
                            "SCRAM-SHA-512; Kafka's is GSSAPI, which fakekafka lacks). OAUTHBEARER is offered on a "
                            "listener only with --config listener.name.<listener>.oauthbearer.sasl.server.callback."
                            "handler.class=org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                            "OAuthBearerUnsecuredValidatorCallbackHandler: that validator takes unsigned tokens, "
                            "any client then logs in as any principal")
    serve.add_argument("--ssl-client-auth", choices=["none", "requested", "required"],
                       help="client certificates (mTLS) on SSL listeners (Kafka's ssl.client.auth; default none)")
    serve.add_argument("--ssl-keystore-location", metavar="PEM", help="the broker's key and certificate chain")
    serve.add_argument("--ssl-truststore-location", metavar="PEM", help="CAs client certificates must chain to")
    serve.add_argument("--ssl-dir", metavar="DIR",
                       help="where the throwaway CA and certificates go (default: a temporary directory)")
    serve.add_argument("--user", action="append", default=[], metavar="NAME=PASSWORD",
                       help="a SASL PLAIN/SCRAM user (repeatable; the process list shows its password: "
                            f"--users-file or ${USERS_ENV} do not)")
    serve.add_argument("--users-file", metavar="PATH",
                       help="SASL PLAIN/SCRAM users, one NAME=PASSWORD a line (# comments); "
                            f"${USERS_ENV} holds the same lines; --user wins over both, the variable over the file")
    serve.add_argument("--control-port", type=_port, default=None,
                       help="port for `fakekafka ctl`; it must be free (default: --port + 100, or a free one "
                            "when that is taken or --port is 0; the ready line prints it)")
    _control_options(serve, "--host")
    serve.add_argument("--status-every", type=float, metavar="SECONDS",
                       help="print a one-line status (brokers, topics, records, groups, connections, requests) "
                            "every SECONDS; SIGUSR1 prints one at any time")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                       help="debug logs one line per request")
    serve.add_argument("--data-dir", metavar="DIR",
                       help="keep the logs and metadata in DIR so that they survive a restart (default: memory only)")
    serve.add_argument("--schema-registry", type=_port, nargs="?", const=8081, default=None, metavar="PORT",
                       help="serve a Confluent-compatible Schema Registry on PORT (default 8081, Confluent's; 0: a "
                            "free one), kept in the _schemas topic; the line before the ready line prints its URL")
    add_chaos_options(serve, "errors, latency, dropped connections, broker kills, leader moves...")
    serve.add_argument("--record", metavar="DIR",
                       help="record every request as Parquet files under DIR (hour=.../part-*.parquet; needs "
                            "pyarrow); read them with `fakekafka analyze DIR`")
    proxy = sub.add_parser("proxy", help="a protocol-aware proxy in front of any Kafka: see, steer and record "
                                          "the traffic")
    proxy.add_argument("--upstream", required=True, metavar="HOST:PORT[,HOST:PORT]",
                       help="bootstrap address(es) of the cluster behind the proxy")
    proxy.add_argument("--listen", type=_listen_address, default="127.0.0.1:19092",
                       help="the bootstrap listener clients connect to (default 127.0.0.1:19092; port 0 picks a "
                            "free one); broker N gets port +1+N when free")
    proxy.add_argument("--advertised-host", help="host clients are told to connect to (default: --listen's)")
    proxy.add_argument("--record", metavar="DIR", help="record every request as `serve --record` does (Parquet; "
                                                       "`fakekafka analyze DIR` reads it)")
    proxy.add_argument("--record-frames", action="store_true",
                       help="with --record: keep every exchange's raw frames too, for `fakekafka replay`")
    proxy.add_argument("--summary", action="store_true",
                       help="print per-API counts, latencies and errors at exit")
    proxy.add_argument("--ssl-dir", metavar="DIR",
                       help="TLS towards clients with a throwaway CA and certificate written to DIR (ca.pem: what "
                            "clients trust)")
    proxy.add_argument("--ssl-keystore-location", metavar="PEM",
                       help="TLS towards clients with this key and certificate chain")
    proxy.add_argument("--upstream-ssl", action="store_true", help="TLS to the upstream brokers")
    proxy.add_argument("--upstream-ca", metavar="PEM", help="CAs the upstream's certificates must chain to "
                                                           "(default: the system's)")
    proxy.add_argument("--upstream-cert", metavar="PEM", help="a client certificate (and key, or --upstream-key) "
                                                             "for an upstream that wants mTLS")
    proxy.add_argument("--upstream-key", metavar="PEM", help="the key of --upstream-cert")
    for name in ("max.connections", "max.connections.per.ip", "connections.max.idle.ms", "socket.request.max.bytes"):
        proxy.add_argument("--" + name.replace(".", "-"), metavar="N",
                           help=f"{name}, the broker's config, for the proxy's own client connections (all its "
                                "listeners together): " + _PROXY_LIMITS[name])
    proxy.add_argument("--max-connections-per-ip-overrides", metavar="HOST:N,...",
                       help="per-address exceptions to --max-connections-per-ip (Kafka's format)")
    proxy.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                       help="one of those limits by Kafka's name, e.g. max.connections=100 (repeatable; wins over "
                            "the flags)")
    proxy.add_argument("--schema-registry-upstream", metavar="URL",
                       help="a Schema Registry (Confluent's REST API) to forward too: served at "
                            "--schema-registry-listen, with the registry's faults from the Python API")
    proxy.add_argument("--schema-registry-listen", type=_listen_address, default="127.0.0.1:18081",
                       help="where the forwarded registry listens (default 127.0.0.1:18081; port 0 picks a free one)")
    proxy.add_argument("--max-brokers", type=int, default=1000, metavar="N",
                       help="upstream brokers the proxy binds a listener for (default 1000); answers naming more "
                            "get BROKER_NOT_AVAILABLE")
    add_chaos_options(proxy, "errors answered by the proxy or after forwarding, latency, connections dropped "
                             "before or after forwarding")
    proxy.add_argument("--control-port", type=_port, default=None,
                       help="port for `fakekafka ctl` (default: a free one; the ready line prints it)")
    _control_options(proxy, "--listen's host")
    proxy.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    replay = sub.add_parser("replay", help="resend a recorded client session to a broker and report where the "
                                           "answers differ")
    replay.add_argument("recording", help="a directory recorded with `fakekafka proxy --record DIR --record-frames`")
    replay.add_argument("--to", required=True, type=_address, metavar="HOST:PORT",
                        help="the broker (fakekafka, tansu, Kafka) to resend to")
    replay.add_argument("--connection", action="append", default=[], metavar="PEER",
                        help="replay only this recorded connection (repeatable; default: all)")
    replay.add_argument("--show", type=int, default=20, metavar="N", help="differences to print (default 20)")
    analyze = sub.add_parser("analyze", help="a traffic report (Markdown or HTML with plots) from a recording, "
                                             "computed with PySpark")
    analyze.add_argument("directory", metavar="DIR", help="the recording (`fakekafka serve --record DIR`)")
    analyze.add_argument("--out", help="report file; its plots go next to it (default: fakekafka-report.md, "
                                       "or .html with --format html)")
    analyze.add_argument("--master", help="Spark master URL (default: local[*], Spark on this machine)")
    analyze.add_argument("--format", choices=["md", "html"], default=None,
                         help="md (default) or html; inferred from --out's suffix when not given")
    kafka = sub.add_parser("kafka", help="real Apache Kafka for --kafka-real and fakekafka.testing.apache_kafka")
    kafka_sub = kafka.add_subparsers(dest="kafka_command", required=True)
    install = kafka_sub.add_parser(
        "install", help="resolve Apache Kafka's jars from Maven Central with Maven (mvn on PATH) into "
                        "~/.cache/fakekafka/kafka-VERSION/lib ($XDG_CACHE_HOME if set), where --kafka-real looks")
    install.add_argument("--version", default=KAFKA_VERSION,
                         help=f"the Apache Kafka version (default {KAFKA_VERSION}, the one --kafka-real runs)")
    install.add_argument("--lib", metavar="DIR", help="install into DIR instead (then FAKEKAFKA_KAFKA_LIB=DIR)")
    install.add_argument("--force", action="store_true", help="resolve again even if the jars are there")
    ctl = sub.add_parser("ctl", help="steer a running `fakekafka serve` or `fakekafka proxy`")
    ctl.add_argument("--control", type=_address, default="127.0.0.1:9192",
                     help="its control address (printed by serve; default 127.0.0.1:9192)")
    ctl.add_argument("--token-file", metavar="PATH",
                     help=f"the control port's token (needed from another host; default: ${TOKEN_ENV})")
    ctl_sub = ctl.add_subparsers(dest="ctl_command", required=True)
    for name, (help_text, _) in COMMANDS.items():
        p = ctl_sub.add_parser(name, help=help_text)
        positional, options = _CTL_ARGS[name]
        for arg in positional:
            p.add_argument(arg, type=int if arg in _CTL_INTS else str)
        for opt in options:
            if opt in _CTL_FLAGS:
                p.add_argument("--" + opt.replace("_", "-"), dest=opt, action="store_true", default=None)
            else:
                p.add_argument("--" + opt.replace("_", "-"), dest=opt, type=int if opt in _CTL_INTS else str)
    return ap


def _control_options(parser: argparse.ArgumentParser, default_host: str) -> None:
    parser.add_argument("--control-host", metavar="HOST",
                        help=f"address the control port listens on (default: {default_host} when it is a loopback "
                             "address, else 127.0.0.1). The control port steers everything and sees through ACLs: "
                             "off loopback, commands from other hosts need its token")
    parser.add_argument("--control-token-file", metavar="PATH",
                        help=f"the control port's token, first line (made, 0600, when missing; default: "
                             f"${TOKEN_ENV}, else a new one printed on stderr when the port is off loopback)")


_LIMITS = {
    "socket.request.max.bytes": "a request larger than this closes its connection (Kafka's default 104857600)",
    "queued.max.request.bytes": "bytes of requests read but not yet answered, per broker; reading pauses past "
                                "it (default -1: no limit)",
    "connections.max.idle.ms": "close a connection idle this long (default 600000)",
    "max.connections": "connections per broker; more wait unread (default 2147483647)",
    "max.connections.per.ip": "connections per broker from one address; more are closed (default 2147483647)",
    "fetch.max.bytes": "the most a Fetch response carries (default 57671680)",
    "max.partitions": "partitions the cluster may hold, internal topics aside; more are refused with "
                      "POLICY_VIOLATION (fakekafka's own, KIP-578's name; default 2147483647)",
}
"""Broker limits `serve` takes by Kafka's names (--max-connections sets max.connections)."""
_PROXY_LIMITS = {
    "max.connections": "more wait unread until one closes (default 2147483647)",
    "max.connections.per.ip": "more from one address are closed at once (default 2147483647)",
    "connections.max.idle.ms": "a connection idle this long is closed (default 600000)",
    "socket.request.max.bytes": "a larger request closes its connection (default 104857600)",
}


def _limits(args: argparse.Namespace) -> dict[str, int | str] | str:
    """BrokerConfig fields for the limits given on the command line, or what is wrong with one."""
    out: dict[str, int | str] = {}
    for name in _LIMITS:
        value = getattr(args, name.replace(".", "_"))
        if value is None:
            continue
        spec = BROKER_CONFIGS.get(name)
        try:
            if spec is not None:
                spec.validate(str(value))
            elif value < 0:
                raise InvalidConfig(f"Invalid value {value} for configuration {name}: Value must be at least 0")
        except InvalidConfig as e:
            return f"--{name.replace('.', '-')}: {e}"
        out[name.replace(".", "_")] = value
    if args.max_connections_per_ip_overrides:
        try:
            BrokerConfig(max_connections_per_ip_overrides=args.max_connections_per_ip_overrides)
        except InvalidConfig as e:
            return f"--max-connections-per-ip-overrides: {e}"
        out["max_connections_per_ip_overrides"] = args.max_connections_per_ip_overrides
    return out


def _properties_file(path: str) -> dict[str, str] | str:
    """A Java properties file's entries (key=value, key:value or key value; # and ! comments; a trailing
    backslash continues a line), or what is wrong with reading it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return f"--config-file: cannot read {path}: {e.strerror or e}"
    out: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, _, value = _split_property(logical)
        out[key] = value
        logical = ""
    if logical:
        key, _, value = _split_property(logical)
        out[key] = value
    return out


def _split_property(line: str) -> tuple[str, str, str]:
    for i, ch in enumerate(line):
        if ch in "=: \t":
            rest = line[i:].lstrip(" \t")
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t")
            return line[:i], ch, rest
    return line, "", ""


def _broker_properties(args: argparse.Namespace) -> dict[str, str] | str:
    """--config-file's entries, then --config's, checked by Kafka's names and rules, or what is wrong."""
    props: dict[str, str] = {}
    if args.config_file:
        read = _properties_file(args.config_file)
        if isinstance(read, str):
            return read
        props.update(read)
    for item in args.config:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            return f"--config {item}: expected KEY=VALUE"
        props[name.strip()] = value.strip()
    try:  # by the names of the release --kafka-version names (zookeeper.connect is 2.8's, not 4.4's)
        BrokerConfig.from_properties(props, kafka_version=getattr(args, "kafka_version", None))
    except InvalidConfig as e:
        return str(e)
    return props


FEATURES = {"transaction.version": (0, 2)}
"""The features a cluster can be formatted with, and their levels."""


def _features(given: list[str]) -> dict[str, int] | str:
    """--feature NAME=LEVEL values as BrokerConfig fields, or what is wrong with one."""
    out = {}
    for item in given:
        name, sep, level = item.partition("=")
        if name not in FEATURES:
            return f"{item}: unknown feature {name!r}; known: {', '.join(FEATURES)}"
        lo, hi = FEATURES[name]
        if not sep or not level.strip().isdigit() or not lo <= int(level) <= hi:
            return f"{item}: {name} takes a level from {lo} to {hi}"
        out[name.replace(".", "_")] = int(level)
    return out


async def _serve(args: argparse.Namespace) -> int:
    for name in ("partitions", "brokers", "replication_factor"):
        if getattr(args, name) < 1:
            print(f"fakekafka: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    if args.replication_factor > args.brokers:
        print("fakekafka: --replication-factor cannot exceed --brokers", file=sys.stderr)
        return 2
    if args.port and args.port + args.brokers - 1 > MAX_PORT:
        print(f"fakekafka: --port {args.port} with --brokers {args.brokers} needs ports {args.port} to "
              f"{args.port + args.brokers - 1}; the highest is {MAX_PORT} (give a lower --port, or --port 0 for free "
              f"ones)", file=sys.stderr)
        return 2
    if args.advertised_port and args.brokers != 1:
        print("fakekafka: --advertised-port needs a single broker", file=sys.stderr)
        return 2
    if args.status_every is not None and args.status_every <= 0:
        print("fakekafka: --status-every takes a number of seconds above 0", file=sys.stderr)
        return 2
    limits = _limits(args)
    if isinstance(limits, str):
        print(f"fakekafka: {limits}", file=sys.stderr)
        return 2
    features = _features(args.feature)
    if isinstance(features, str):
        print(f"fakekafka: --feature {features}", file=sys.stderr)
        return 2
    try:
        release = kafka_release(args.kafka_version)
    except UnknownKafkaVersion as e:
        print(f"fakekafka: --kafka-version: {e}", file=sys.stderr)
        return 2
    if release is not None:
        if features:
            print(f"fakekafka: --feature: Kafka {release.name} finalizes no transaction.version (it is not "
                  f"production-ready before 4.0); leave --feature out with --kafka-version {release.name}",
                  file=sys.stderr)
            return 2
    limits.update(features)
    props = _broker_properties(args)
    if isinstance(props, str):
        print(f"fakekafka: {props}", file=sys.stderr)
        return 2
    try:
        config = BrokerConfig.from_properties(
            props, num_partitions=args.partitions, auto_create_topics=not args.no_auto_create_topics,
            default_replication_factor=args.replication_factor, cluster_id=args.cluster_id,
            group_initial_rebalance_delay_ms=args.group_initial_rebalance_delay_ms,
            replication_lag_ms=args.replication_lag_ms, kafka_version=None if release is None else release.name,
            client_telemetry=args.client_telemetry, **limits)
    except InvalidConfig as e:  # --client-telemetry without opentelemetry-proto installed
        print(f"fakekafka: {e}", file=sys.stderr)
        return 2
    security = {name: getattr(args, name) for name in (
        "listeners", "advertised_listeners", "listener_security_protocol_map", "sasl_enabled_mechanisms",
        "ssl_client_auth", "ssl_keystore_location", "ssl_truststore_location") if getattr(args, name)}
    users = _users(args)
    if isinstance(users, str):
        print(f"fakekafka: {users}", file=sys.stderr)
        return 2
    pki = None
    if args.listeners and args.ssl_dir and not args.ssl_keystore_location:
        from fakekafka.net.security import make_test_pki
        pki = make_test_pki(args.ssl_dir, tuple(dict.fromkeys([args.advertised_host or args.host, "localhost",
                                                                "127.0.0.1", "::1"])))
        security.update(ssl_keystore_location=str(pki.server_keystore), ssl_truststore_location=str(pki.ca_file))
    config = dataclasses.replace(config, **security)
    racks = args.racks.split(",") if args.racks else None
    if racks is not None and len(racks) != args.brokers:
        print(f"fakekafka: --racks names {len(racks)} racks for {args.brokers} brokers", file=sys.stderr)
        return 2
    chaos = chaos_from_args(args)
    if isinstance(chaos, str):
        print(f"fakekafka: {chaos}", file=sys.stderr)
        return 2
    try:
        cluster = Cluster(config=config, host=args.host, port=args.port, node_id=args.node_id, brokers=args.brokers,
                          clock="frozen" if args.clock == "frozen" else None, racks=racks, users=users,
                          data_dir=args.data_dir,
                          schema_registry=False if args.schema_registry is None else args.schema_registry,
                          chaos=chaos)
    except DataDirError as e:
        print(f"fakekafka: --data-dir: {e}", file=sys.stderr)
        return 2
    except (ValueError, OSError, ssl.SSLError) as e:
        print(f"fakekafka: {e}", file=sys.stderr)
        return 2
    if pki is not None:
        cluster.pki = pki  # the ready lines name its CA and client certificate
    cluster.server.advertised_host = args.advertised_host
    recorder = None
    if args.record:
        from fakekafka.observe.recording import record_cluster
        try:
            recorder = record_cluster(cluster, args.record)
        except ImportError as e:
            print(f"fakekafka: --record: {e}", file=sys.stderr)
            return 2
        except OSError as e:
            print(f"fakekafka: --record: cannot write to {args.record}: {e.strerror or e}", file=sys.stderr)
            return 1
    try:
        return await _run_cluster(args, cluster)
    finally:
        if cluster.chaos is not None:  # the loop has stopped: nothing changes the schedule any more
            chaos_done(args, cluster.chaos.applied(), "fakekafka")
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
            logging.getLogger("fakekafka").info("recorded %d requests in %d files under %s",
                                                recorder.records_written, len(recorder.files), args.record)


def _user_lines(text: str, where: str) -> dict[str, str] | str:
    users = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, eq, password = line.strip().partition("=")
        if not eq or not name.strip() or not password:
            return f"{where} line {n}: expected NAME=PASSWORD"
        users[name.strip()] = password
    return users


def _users(args: argparse.Namespace) -> dict[str, str] | str:
    """The SASL users: --users-file's, then $FAKEKAFKA_USERS's, then --user's (a later one of a name wins); an
    error in words for a malformed entry or an unreadable file."""
    users: dict[str, str] = {}
    sources: list[tuple[str, str]] = []
    if args.users_file:
        try:
            sources.append((Path(args.users_file).read_text(), f"--users-file {args.users_file}"))
        except OSError as e:
            return f"--users-file: cannot read {args.users_file}: {e.strerror or e}"
    if os.environ.get(USERS_ENV):
        sources.append((os.environ[USERS_ENV], f"${USERS_ENV}"))
    for text, where in sources:
        found = _user_lines(text, where)
        if isinstance(found, str):
            return found
        users.update(found)
    for u in args.user:
        name, eq, password = u.partition("=")
        if not eq or not name or not password:
            return "--user takes NAME=PASSWORD"
        users[name] = password
    return users


async def _open_control(args: argparse.Namespace, cluster: Cluster) -> asyncio.base_events.Server | None:
    """The control port `fakekafka ctl` talks to: --control-port if given (taken: an error naming it), else
    --port + 100, or a free port when that one is taken (said on stderr; the ready line prints it). It listens on
    --control-host, by default on loopback only (fakekafka/control.py: who may steer)."""
    try:
        host, token, told = control_binding(args.control_host, args.host, args.control_token_file)
    except (ValueError, OSError) as e:
        print(f"fakekafka: --control-token-file: {e}", file=sys.stderr)
        return None
    if told:
        print(f"fakekafka: {told}", file=sys.stderr)
    if args.control_port is not None:
        try:
            return await serve_control(cluster, host, args.control_port, token)
        except OSError as e:
            print(f"fakekafka: cannot listen on control port {host}:{args.control_port} (--control-port): "
                  f"{_reason(e)}", file=sys.stderr)
            return None
    wanted = args.port + 100 if args.port and args.port + 100 <= MAX_PORT else 0
    if wanted:
        try:
            return await serve_control(cluster, host, wanted, token)
        except OSError as e:
            taken = e
    try:
        control = await serve_control(cluster, host, 0, token)
    except OSError as e:
        print(f"fakekafka: cannot listen on a control port on {host}: {_reason(e)}", file=sys.stderr)
        return None
    if wanted:
        port = control.sockets[0].getsockname()[1]
        print(f"fakekafka: control port {wanted} (--port + 100) is not free ({_reason(taken)}); "
              f"using {port} instead: `fakekafka ctl --control {host}:{port} ...` (choose one with "
              f"--control-port)", file=sys.stderr)
    return control


class _Status:
    """`--status-every` and SIGUSR1: one line on stdout, with the request rate since the previous line."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.started = self.last_time = time.monotonic()
        self.last_requests = 0

    def print(self) -> None:
        now, served = time.monotonic(), self.cluster.server.requests_served
        line = status_line(self.cluster.state, uptime_s=now - self.started,
                           connections=self.cluster.server.connection_count, requests=served,
                           requests_before=self.last_requests, interval_s=now - self.last_time)
        self.last_time, self.last_requests = now, served
        print(line, flush=True)

    async def every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            self.print()


async def _run_cluster(args: argparse.Namespace, cluster: Cluster) -> int:
    try:
        await cluster.__aenter__()
    except OSError as e:
        hint = " (is another broker running?)" if e.errno == errno.EADDRINUSE else ""
        print(f"fakekafka: cannot listen on {e.filename or f'{args.host}:{args.port}'}: {_reason(e)}{hint}",
              file=sys.stderr)
        return 1
    control = await _open_control(args, cluster)
    if control is None:
        await cluster.__aexit__(None, None, None)
        return 1
    if args.advertised_port:
        cluster.state.brokers[args.node_id].port = args.advertised_port
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    status = _Status(cluster)
    loop.add_signal_handler(signal.SIGUSR1, status.print)
    ticker = loop.create_task(status.every(args.status_every)) if args.status_every else None
    control_address = "{}:{}".format(*control.sockets[0].getsockname()[:2])
    if cluster.config.listeners:
        for spec in cluster.server.listeners:
            print(f"fakekafka listener {spec.name} ({spec.protocol}): "
                  f"bootstrap.servers={cluster.bootstrap_servers_for(spec.name)}", flush=True)
    if cluster.pki is not None:
        print(f"fakekafka ssl: ca={cluster.pki.ca_file} client.cert={cluster.pki.client_cert} "
              f"client.key={cluster.pki.client_key}", flush=True)
    if cluster.schema_registry is not None:
        print(f"fakekafka schema registry: url={cluster.schema_registry_url}", flush=True)
    print(f"fakekafka ready: bootstrap.servers={cluster.bootstrap_servers} control={control_address}", flush=True)
    gc.freeze()  # what is alive now (modules, declarations) lives for good: full collections skip it
    # young collections every 20,000 allocations rather than 700: a request's objects mostly die before one, so
    # fewer reach the old generation, whose collections walk every live connection's objects (1,000 x 2 groups:
    # 9 % less broker CPU, 12 % less time in bench/group_scale.py's alternating runs)
    gc.set_threshold(20_000, 10, 10)
    await stop.wait()
    logging.getLogger("fakekafka").info("shutting down")
    if ticker is not None:
        ticker.cancel()
    control.close()
    await cluster.__aexit__(None, None, None)
    return 0


def _ctl(args: argparse.Namespace) -> int:
    positional, options = _CTL_ARGS[args.ctl_command]
    payload = {k: getattr(args, k) for k in (*positional, *options) if getattr(args, k) is not None}
    try:
        token = control_token(args.token_file)
    except ValueError as e:
        print(f"fakekafka ctl: --token-file: {e}", file=sys.stderr)
        return 2
    try:
        reply = send_command(args.control, args.ctl_command, payload, token=token)
    except OSError as e:
        print(f"fakekafka ctl: cannot reach {args.control}: {e.strerror or e} (is `fakekafka serve` or "
              "`fakekafka proxy` running? its ready line prints the control address)", file=sys.stderr)
        return 1
    if not reply.get("ok"):
        print(f"fakekafka ctl: {reply.get('error')}", file=sys.stderr)
        return 1
    result = reply.get("result")
    if isinstance(result, str):
        print(result)
    elif result is not None:
        print(json.dumps(result, indent=2, default=str))
    return 0


_REPORT_SUFFIXES = {"md": (".md", ".markdown"), "html": (".html", ".htm")}
_REPORT_NAMES = {"md": "Markdown", "html": "HTML"}


def _analyze(args: argparse.Namespace) -> int:
    fmt = args.format or ("html" if args.out and Path(args.out).suffix.lower() in (".html", ".htm") else "md")
    out = Path(args.out or f"fakekafka-report.{fmt}")
    if out.suffix.lower() not in _REPORT_SUFFIXES[fmt]:  # checked before Spark starts, so nothing is written
        wanted = " or ".join(_REPORT_SUFFIXES[fmt])
        other = "html" if fmt == "md" else "md"
        print(f"fakekafka analyze: --out {out}: the report is {_REPORT_NAMES[fmt]}, written to a {wanted} file "
              f"(--format {other} writes {_REPORT_NAMES[other]}: {' or '.join(_REPORT_SUFFIXES[other])})",
              file=sys.stderr)
        return 2
    try:
        from fakekafka.ops import analyze
        analyze.require_dependencies()
    except ImportError as e:
        print(f"fakekafka analyze: {e}", file=sys.stderr)
        return 2
    try:
        report: Any = analyze.run(args.directory, out, master=args.master, fmt=fmt)
    except FileNotFoundError as e:
        print(f"fakekafka analyze: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - Spark's errors (no Java, bad master URL) as one readable line
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print(f"fakekafka analyze: the Spark job failed: {first} (Spark needs Java 17+ on PATH or JAVA_HOME)",
              file=sys.stderr)
        return 1
    print(f"fakekafka analyze: wrote {out} and {len(report.images)} plots next to it")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "ctl":
        return _ctl(args)
    if args.command == "replay":
        from fakekafka.proxy.replay import replay_main
        return replay_main(args)
    if args.command == "proxy":
        if args.record_frames and not args.record:  # the Proxy's own words are the Python API's
            print("fakekafka proxy: error: --record-frames needs --record DIR", file=sys.stderr)
            return 2
        logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        from fakekafka.ops.proxy_cli import run_proxy
        return _run(run_proxy(args))
    if args.command == "kafka":
        from fakekafka.ops.kafka_install import install_main
        return install_main(args.version, args.lib, args.force)
    if args.command == "analyze":
        return _analyze(args)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return _run(_serve(args))


def _run(main: Coroutine[Any, Any, int]) -> int:
    """Runs the command on asyncio's own loop (`new_event_loop`), not the one an installed policy gives."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)
