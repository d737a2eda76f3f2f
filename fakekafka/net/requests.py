"""One request's way through the broker once its frame is read: header decoded, checked (a known API and
version, SASL gating), body decoded within its element budget, dispatched to its handler, parked while it waits
(`Purgatory`), the data dir's metadata saved when the request may have changed it, the answer encoded.

A malformed request, an unknown API key or version, or an answer that does not encode raises `CloseConnection`
with a log line: that connection alone is closed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from typing import Any

from fakekafka.handlers import NO_RESPONSE, DropConnection, Park, RequestContext, dispatch, handler_for
from fakekafka.handlers.api_versions import unsupported_version_response
from fakekafka.handlers.connection import ConnectionState
from fakekafka.handlers.registry import error_response
from fakekafka.handlers.throttling import record_request_time
from fakekafka.model.clock import ManualClock
from fakekafka.model.cluster import ClusterState
from fakekafka.model.log import StorageError
from fakekafka.model.metadata import Broker
from fakekafka.net.authentication import SaslGate, sasl_gate
from fakekafka.observe.records import error_codes_in
from fakekafka.wire import ApiKey, DecodeError, ErrorCode, Request, UnknownApiKey, decode_request_header
from fakekafka.wire.messages import API_MODULES
from fakekafka.wire.primitives import element_budget
from fakekafka.wire.protocol import encode_response_chunks, parse_body, request_struct

__all__ = ["MAX_REQUEST_ELEMENTS", "METADATA_APIS", "CloseConnection", "Purgatory", "RequestHandler"]

log = logging.getLogger("fakekafka.server")
MAX_REQUEST_ELEMENTS = 250_000
"""Array elements one request may hold (topics, partitions, names...). A request of one-byte elements becomes
about 200 bytes of Python objects per element, and its answer more: 0.9 MB of Metadata topic names took 170 MB
and 3.5 s. Past it the connection is closed as for a malformed request (fakekafka's own; Kafka has none)."""

METADATA_APIS = frozenset({
    ApiKey.METADATA,  # topics created on demand
    ApiKey.FIND_COORDINATOR,  # the internal topics
    ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.DELETE_RECORDS,
    ApiKey.INIT_PRODUCER_ID,  # the producer id block
    ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS, ApiKey.ALTER_CONFIGS, ApiKey.ALTER_REPLICA_LOG_DIRS,
    ApiKey.CREATE_PARTITIONS,
    ApiKey.ELECT_LEADERS, ApiKey.INCREMENTAL_ALTER_CONFIGS, ApiKey.ALTER_PARTITION_REASSIGNMENTS,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS, ApiKey.ALTER_CLIENT_QUOTAS,
})
"""Requests that may change what a data dir's metadata file holds: it is written (if changed) before they are
answered."""
_CREATE_ONLY_APIS = frozenset({ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS,
                               ApiKey.CREATE_PARTITIONS})
"""Of those, the ones whose only changes are topics made, deleted or grown, which the model writes to the data dir
itself, topic by topic, as it makes them (a change costs what it changes): nothing more is written for them, so a
request does not serialise every partition's metadata to find nothing else changed."""


LARGE_ANSWER = 2000
"""An answer with a list this long at its top (topics, say) is encoded in a worker thread: 100,000 topics of
Metadata take seconds to encode, which the event loop would otherwise spend on nothing else (the answer is the
request's own, so the thread shares nothing with the model)."""


def _large(result: Any) -> bool:
    return isinstance(result, dict) and any(isinstance(v, list) and len(v) > LARGE_ANSWER for v in result.values())


class CloseConnection(Exception):
    """The request's connection is closed instead of answered (the reason is logged where it is raised)."""


Handled = tuple[Request, "list[Any] | None", set[int], Any]
"""(the request, its answer's buffers (None: no answer), the answer's error codes, the decoded answer)."""


class Purgatory:
    """Requests parked until the model changes one of their keys or their time is up (Kafka's delayed
    operations: long-poll Fetches, JoinGroups, acks=all Produces)."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self.waiters: dict[int, set[asyncio.Future[None]]] = defaultdict(set)
        """Futures of parked requests by the id of the key they wait on."""

    async def wait(self, park: Park) -> Any:
        """The parked request's answer, once `park.resume` gives one. A Park of 0 ms on nothing (a large request
        between its turns, `handlers.registry.in_turns`) is resumed after one turn of the event loop."""
        if park.wait_ms == 0 and not park.keys and park.clock_deadline is None:
            await asyncio.sleep(0)
            return park.resume(True)
        loop = asyncio.get_running_loop()
        clock = self.cluster.clock
        frozen = isinstance(clock, ManualClock)
        deadline = None if park.wait_ms is None else loop.time() + park.wait_ms / 1000
        while True:
            remaining = None if deadline is None else deadline - loop.time()
            if park.clock_deadline is not None:
                model_left = (park.clock_deadline - clock.now_ms()) / 1000
                if model_left <= 0:
                    return park.resume(True)
                if not frozen:
                    remaining = model_left if remaining is None else min(remaining, model_left)
            if remaining is not None and remaining <= 0:
                return park.resume(True)
            fut: asyncio.Future[None] = loop.create_future()
            keys = [id(k) for k in park.keys] + ([id(clock)] if park.clock_deadline is not None else [])
            for k in keys:
                self.waiters[k].add(fut)
            try:
                await asyncio.wait_for(fut, remaining)
                timed_out = False
            except TimeoutError:
                timed_out = True
            finally:
                for k in keys:
                    waiters = self.waiters.get(k)
                    if waiters is not None:
                        waiters.discard(fut)
                        if not waiters:
                            del self.waiters[k]
            result = park.resume(timed_out)
            if not isinstance(result, Park):
                return result
            park = result  # still waiting: same deadline, possibly other keys

    def on_change(self, obj: object) -> None:
        """The model's change listener: wakes the requests parked on `obj`."""
        for fut in self.waiters.get(id(obj), ()):
            if not fut.done():
                fut.set_result(None)


class RequestHandler:
    """Turns a request frame into its answer (see the module's docstring)."""

    def __init__(self, cluster: ClusterState, purgatory: Purgatory) -> None:
        self.cluster = cluster
        self.purgatory = purgatory

    def _answer(self, request: Request, body: Any) -> Handled:
        return (request, encode_response_chunks(request.api_key, request.api_version, request.correlation_id, body),
                error_codes_in(body, set()), body)

    async def handle(self, frame: bytes, broker: Broker, peer: str, state: ConnectionState) -> Handled:
        """The request's answer; raises `CloseConnection` when the connection is to close instead."""
        try:
            request, stream = decode_request_header(frame)
        except UnknownApiKey as e:
            log.warning("connection %s: %s; closing, as Kafka does", peer, e)
            raise CloseConnection from None
        except DecodeError as e:
            log.warning("connection %s: malformed request header: %s; closing", peer, e)
            raise CloseConnection from None
        key, version = request.api_key, request.api_version
        reg = handler_for(key)
        if reg is None:
            log.warning("connection %s: %s (key %d) is not supported by fakekafka; closing", peer, request.api_name,
                        key)
            raise CloseConnection
        release = self.cluster.config.release
        if key == ApiKey.API_VERSIONS and (version > reg.max_version or (
                release is not None and not release.allows(key, version))):
            body = unsupported_version_response(release)
            return request, encode_response_chunks(key, 0, request.correlation_id, body), \
                error_codes_in(body, set()), body
        if release is not None and not release.allows(key, version):
            # an API or version the older release does not have: its broker closes the connection (SocketServer's
            # "Received request api key ... which is not enabled")
            log.warning("connection %s: %s v%d is not enabled on Kafka %s; closing, as Kafka does", peer,
                        request.api_name, version, release.version)
            raise CloseConnection
        if version > API_MODULES[key][3]:
            log.warning("connection %s: %s v%d is newer than any Kafka defines; closing", peer, request.api_name,
                        version)
            raise CloseConnection
        try:
            with element_budget(MAX_REQUEST_ELEMENTS):
                request.body = parse_body(request_struct(key, version), stream,
                                          f"{request.api_name}RequestV{version}")
        except DecodeError as e:
            log.warning("connection %s: malformed request: %s; closing", peer, e)
            raise CloseConnection from None
        ctx = RequestContext(self.cluster, broker, request, peer, state, request_bytes=len(frame))
        gate = sasl_gate(state.sasl, key, int(time.time() * 1000)) if state.sasl is not None else SaslGate.PASS
        if gate is SaslGate.CLOSE:
            log.warning("connection %s: %s during SASL handshake; closing, as Kafka does", peer, request.api_name)
            raise CloseConnection
        if gate is SaslGate.ILLEGAL_STATE:
            body = error_response(ctx, request.body, ErrorCode.ILLEGAL_SASL_STATE)
            if body is None:
                raise CloseConnection
            state.close_after = f"{request.api_name} during SASL authentication"
            return self._answer(request, body)
        if gate is SaslGate.EXPIRED:
            log.info("connection %s: SASL session expired; closing, as Kafka does", peer)
            raise CloseConnection
        if not reg.min_version <= version <= reg.max_version:
            body = error_response(ctx, request.body, ErrorCode.UNSUPPORTED_VERSION)
            if body is None:
                log.warning("connection %s: %s v%d is not supported; closing", peer, request.api_name, version)
                raise CloseConnection
            return self._answer(request, body)
        try:
            started = time.perf_counter_ns()
            result = dispatch(ctx)
            handling_ns = time.perf_counter_ns() - started
            while isinstance(result, Park):
                result = await self.purgatory.wait(result)
            if key in METADATA_APIS and key not in _CREATE_ONLY_APIS and self.cluster.storage is not None:
                self.cluster.storage.save()  # before the answer, as Kafka's controller commits first
            if isinstance(result, DropConnection):
                if result.reason is not None:
                    log.info("connection %s: %s v%d: %s; closing, as Kafka does", peer, request.api_name, version,
                             result.reason)
                else:
                    log.info("connection %s: dropped %s applying %s v%d (a fault asked for)", peer,
                             "after" if result.applied else "before", request.api_name, version)
                raise CloseConnection
        except CloseConnection:
            raise
        except Exception as e:
            storage = isinstance(e, StorageError) or getattr(e, "code", None) == ErrorCode.KAFKA_STORAGE_ERROR
            if storage:  # the data dir said why, once; a failed log dir's answer, as Kafka's
                log.debug("connection %s: %s v%d: %s", peer, request.api_name, version, e)
            else:
                log.exception("connection %s: handler for %s v%d failed", peer, request.api_name, version)
            body = error_response(ctx, request.body,
                                  ErrorCode.KAFKA_STORAGE_ERROR if storage else ErrorCode.UNKNOWN_SERVER_ERROR)
            if body is None:
                raise CloseConnection from None
            result = body
        if result is NO_RESPONSE:
            return request, None, set(), None
        record_request_time(ctx, handling_ns, result)  # request_percentage: the handler's time, as Kafka's
        try:
            if _large(result):  # encoded off the event loop: other connections are served meanwhile
                chunks = await asyncio.get_running_loop().run_in_executor(
                    None, encode_response_chunks, key, version, request.correlation_id, result)
            else:
                chunks = encode_response_chunks(key, version, request.correlation_id, result)
        except Exception:  # a fakekafka bug: logged with its traceback; the connection closes, as Kafka's does
            log.exception("connection %s: the answer to %s v%d does not encode; closing", peer, request.api_name,
                          version)
            raise CloseConnection from None
        return request, chunks, error_codes_in(result, set()), result

