"""`fakekafka proxy`: the proxy from the command line, with a control port for `fakekafka ctl`."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import os
import signal
import ssl
import struct
import sys
from typing import TYPE_CHECKING

from fakekafka.ops.chaos_args import chaos_done, chaos_from_args
from fakekafka.ops.proxy_control import PROXY_COMMANDS, unknown_proxy_command
from fakekafka.proxy import Proxy
from fakekafka.proxy.server import PROXY_CONFIGS, proxy_config

if TYPE_CHECKING:
    from fakekafka.proxy.registry import RegistryProxy

__all__ = ["run_proxy"]

log = logging.getLogger("fakekafka.proxy")


def _client_ssl(args: argparse.Namespace) -> ssl.SSLContext | None:
    from fakekafka.net.security import make_test_pki, server_ssl_context
    if args.ssl_keystore_location:
        return server_ssl_context(args.ssl_keystore_location, None, "none")
    if args.ssl_dir:
        host = args.advertised_host or args.listen.rpartition(":")[0]
        pki = make_test_pki(args.ssl_dir, hosts=(host, "localhost", "127.0.0.1"))
        print(f"fakekafka proxy ssl: ca={pki.ca_file}", flush=True)
        return server_ssl_context(str(pki.server_keystore), None, "none")
    return None


def _upstream_ssl(args: argparse.Namespace) -> ssl.SSLContext | None:
    if not (args.upstream_ssl or args.upstream_ca or args.upstream_cert):
        return None
    ctx = ssl.create_default_context(cafile=args.upstream_ca)
    if args.upstream_cert:
        ctx.load_cert_chain(args.upstream_cert, args.upstream_key)
    return ctx


def _upstream_words(e: BaseException) -> str:
    return getattr(e, "strerror", None) or str(e) or type(e).__name__


_PROBE = struct.pack(">hhih", 18, 0, 1, 15) + b"fakekafka-proxy"
"""ApiVersions v0, correlation id 1: what every Kafka broker answers before authentication."""
PROBE_TIMEOUT_S = 5.0


async def probe_upstream(host: str, port: int, upstream_ssl: ssl.SSLContext | None,
                         timeout: float = PROBE_TIMEOUT_S) -> str | None:
    """None when a Kafka broker answers ApiVersions at host:port, else why not, in words: a proxy that says it is
    ready in front of nothing leaves its clients to time out on their own."""
    try:
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(host, port, ssl=upstream_ssl,
                                                           server_hostname=host if upstream_ssl else None)
            try:
                writer.write(struct.pack(">i", len(_PROBE)) + _PROBE)
                await writer.drain()
                size, correlation_id = struct.unpack(">ii", await reader.readexactly(8))
            finally:
                writer.close()
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except asyncio.IncompleteReadError:
        return "it closed the connection without answering ApiVersions (not a Kafka broker, or TLS expected?)"
    except ssl.SSLError as e:
        return f"TLS failed: {e.reason or e}"
    except OSError as e:
        return os.strerror(e.errno).lower() if e.errno else _upstream_words(e)
    if correlation_id != 1 or size < 4:
        return "it answered, but not as a Kafka broker answers ApiVersions"
    return None


async def _check_upstreams(proxy: Proxy, upstream_ssl: ssl.SSLContext | None) -> bool:
    """Every upstream address probed; those that fail are named. True when at least one answers (the bootstrap
    listener uses the first that does)."""
    upstreams = proxy.server.upstreams
    failures = await asyncio.gather(*(probe_upstream(u.host, u.port, upstream_ssl) for u in upstreams))
    failed = [f"{u}: {why}" for u, why in zip(upstreams, failures, strict=True) if why is not None]
    if len(failed) == len(upstreams):
        print(f"fakekafka proxy: the upstream does not answer: {'; '.join(failed)} (check --upstream)",
              file=sys.stderr)
        return False
    for line in failed:
        print(f"fakekafka proxy: upstream {line}; going on with the others", file=sys.stderr)
    return True


def _limits(args: argparse.Namespace) -> dict[str, str] | str:
    """The proxy's connection limits by Kafka's names, from the flags then --config, or what is wrong."""
    props: dict[str, str] = {}
    for name in PROXY_CONFIGS:
        value = getattr(args, name.replace(".", "_"), None)
        if value is not None:
            props[name] = str(value)
    for item in args.config:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            return f"--config {item}: expected KEY=VALUE"
        props[name.strip()] = value.strip()
    try:
        proxy_config(props)
    except ValueError as e:
        return str(e)
    return props


def _start_registry_proxy(args: argparse.Namespace, proxy: Proxy) -> RegistryProxy | str | None:
    """The forwarded Schema Registry of --schema-registry-upstream, started (drawing chaos with the proxy's run,
    steered by `fakekafka ctl` as `proxy.schema_registry`); or why it cannot be; or None."""
    if not args.schema_registry_upstream:
        return None
    from fakekafka.proxy.registry import RegistryProxy
    host, _, port = args.schema_registry_listen.rpartition(":")
    try:
        registry = RegistryProxy(args.schema_registry_upstream, host=host, port=int(port),
                                 chaos=proxy if proxy.chaos is not None else None).start()
        return registry
    except ValueError as e:
        return f"--schema-registry-upstream: {e}"
    except OSError as e:
        why = "the address is already in use" if e.errno == errno.EADDRINUSE else str(e)
        return f"cannot listen on {args.schema_registry_listen}: {why} (choose another with --schema-registry-listen)"


async def run_proxy(args: argparse.Namespace) -> int:
    host, _, port = args.listen.rpartition(":")
    limits = _limits(args)
    if isinstance(limits, str):
        print(f"fakekafka proxy: {limits}", file=sys.stderr)
        return 2
    chaos = chaos_from_args(args)
    if isinstance(chaos, str):
        print(f"fakekafka proxy: {chaos}", file=sys.stderr)
        return 2
    try:
        proxy = Proxy(args.upstream, host=host, port=int(port), advertised_host=args.advertised_host,
                      record=args.record, record_frames=args.record_frames, summary=args.summary,
                      client_ssl=_client_ssl(args), upstream_ssl=_upstream_ssl(args), config=limits,
                      max_brokers=args.max_brokers, chaos=chaos)
    except (ValueError, OSError, ssl.SSLError) as e:
        print(f"fakekafka proxy: {_upstream_words(e)}", file=sys.stderr)
        return 2
    except ImportError as e:
        print(f"fakekafka proxy: {e}", file=sys.stderr)
        return 2
    if not await _check_upstreams(proxy, proxy.server.upstream_ssl):
        return 1
    try:
        await proxy.server.start()
    except OSError as e:
        why = "the address is already in use" if e.errno == errno.EADDRINUSE else _upstream_words(e)
        print(f"fakekafka proxy: cannot listen on {args.listen}: {why} (choose another with --listen)",
              file=sys.stderr)
        return 1
    registry = _start_registry_proxy(args, proxy)
    if isinstance(registry, str):
        print(f"fakekafka proxy: {registry}", file=sys.stderr)
        await proxy.server.stop()
        return 1
    proxy.schema_registry = registry
    from fakekafka.ops.control import control_binding, serve_commands
    try:
        control_host, token, told = control_binding(args.control_host, host, args.control_token_file)
    except (ValueError, OSError) as e:
        print(f"fakekafka proxy: --control-token-file: {e}", file=sys.stderr)
        await proxy.server.stop()
        if registry is not None:
            registry.stop()
        return 2
    if told:
        print(f"fakekafka proxy: {told}", file=sys.stderr)
    try:
        control = await serve_commands(proxy, PROXY_COMMANDS, lambda: proxy.server.events, control_host,
                                       args.control_port or 0, unknown=unknown_proxy_command, token=token)
    except OSError as e:
        print(f"fakekafka proxy: cannot listen on control port {control_host}:{args.control_port}: "
              f"{_upstream_words(e)}", file=sys.stderr)
        await proxy.server.stop()
        if registry is not None:
            registry.stop()
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    control_address = "{}:{}".format(*control.sockets[0].getsockname()[:2])
    upstream = ",".join(map(str, proxy.server.upstreams))
    if registry is not None:
        print(f"fakekafka proxy schema registry: url={registry.url} upstream={registry.upstream}", flush=True)
    print(f"fakekafka proxy ready: bootstrap.servers={proxy.bootstrap_servers} upstream={upstream} "
          f"control={control_address}", flush=True)
    await stop.wait()
    log.info("shutting down")
    control.close()
    await proxy.server.stop()
    if registry is not None:
        await asyncio.to_thread(registry.stop)
    if proxy.chaos is not None:
        chaos_done(args, proxy.chaos.applied(), "fakekafka.proxy")
    if proxy.frame_recorder is not None:
        await asyncio.to_thread(proxy.frame_recorder.close)
    if proxy.recorder is not None:
        await asyncio.to_thread(proxy.recorder.close)
        log.info("recorded %d requests under %s", proxy.recorder.records_written, args.record)
    if proxy.summary is not None:
        print(proxy.summary.table(), flush=True)
    return 0
