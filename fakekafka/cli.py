"""The `fakekafka` command: `fakekafka serve` starts an in-memory broker and prints its address."""

from __future__ import annotations

import argparse
import asyncio
import errno
import logging
import signal
import sys

from fakekafka.model.cluster import Broker, ClusterState
from fakekafka.model.config import BrokerConfig
from fakekafka.server import Server

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="fakekafka", description="A Kafka-compatible broker for tests.")
    sub = ap.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="start an in-memory broker")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=9092, help="port to listen on (default 9092; 0 picks one)")
    serve.add_argument("--advertised-host", help="host clients are told to connect to (default: --host)")
    serve.add_argument("--advertised-port", type=int, help="port clients are told to connect to (default: --port)")
    serve.add_argument("--partitions", type=int, default=1, metavar="N",
                       help="num.partitions for auto-created topics (default 1)")
    serve.add_argument("--no-auto-create-topics", action="store_true", help="turn auto.create.topics.enable off")
    serve.add_argument("--node-id", type=int, default=1, help="the broker's node id (default 1)")
    serve.add_argument("--cluster-id", default="fakekafka-cluster-0001", help="the cluster id clients see")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                       help="debug logs one line per request")
    return ap


async def _serve(args: argparse.Namespace) -> int:
    if args.partitions < 1:
        print("fakekafka: --partitions must be at least 1", file=sys.stderr)
        return 2
    config = BrokerConfig(num_partitions=args.partitions, auto_create_topics=not args.no_auto_create_topics,
                          cluster_id=args.cluster_id)
    broker = Broker(args.node_id, args.host, args.port)
    cluster = ClusterState(config, brokers=[broker])
    server = Server(cluster, args.host, advertised_host=args.advertised_host)
    try:
        await server.start()
    except OSError as e:
        reason = "the address is already in use (is another broker running?)" if e.errno == errno.EADDRINUSE \
            else e.strerror or str(e)
        print(f"fakekafka: cannot listen on {args.host}:{args.port}: {reason}", file=sys.stderr)
        return 1
    if args.advertised_port:
        broker.port = args.advertised_port
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    print(f"fakekafka ready: bootstrap.servers={server.bootstrap_servers}", flush=True)
    await stop.wait()
    logging.getLogger("fakekafka").info("shutting down")
    await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        return asyncio.run(_serve(args))
    return 2
