"""Clients in another process, driven over JSON lines: the Java, Go, Node and Rust clients (one driver process
per run) and members that a scenario needs to crash (kill -9: no LeaveGroup, the group notices only when the
session times out).

The protocol, one JSON object per line each way; the agent answers requests in order:

    -> {"id": 1, "op": "produce", "topic": "t", "recs": [REC...], "codec": "zstd", "one_batch": false,
        "max_request_bytes": null}
    <- {"id": 1, "ok": true, "result": [[0, 0], [0, 1]]}
    <- {"id": 1, "ok": false, "error": {"code": "TOPIC_ALREADY_EXISTS", "type": "TopicExistsException",
                                        "message": "..."}}          a ClientError
    <- {"id": 1, "ok": false, "unsupported": "why"}                 Unsupported
    <- {"id": 1, "ok": false, "harness": "stack trace"}             anything else

REC is {"k": hex|null, "v": hex|null, "h": [[name, hex|null]...], "p": partition|null, "o": offset,
"ts": ms|null}. The ops are the methods of `Client` (produce, fetch, committed, member_open and those in
CLIENT_OPS: list_offsets, create_topic, partition_count, delete_topic, create_partitions, describe_configs,
alter_configs, delete_records, describe_group, list_groups, delete_group, delete_offsets) and of `Member`
(member_assignment, member_take, member_errors, member_commit, member_position, member_seek, member_pause,
member_resume, member_close), each with the method's arguments by name and "m" naming the member; and of
`TxnProducer`: txn_open (transactional_id, timeout_ms; answers its name) then txn_begin, txn_send (topic,
recs), txn_send_offsets (group, offsets: [[topic, partition, offset]...]), txn_commit, txn_abort, txn_close,
each with "x" naming the producer. fetch and list_offsets carry "isolation" only when one is asked for, and
member_open carries "group_protocol" ("consumer": KIP-848) only for a client that can speak it
(compat.clients.catalog.CONSUMER_PROTOCOL_CLIENTS; the others are refused here, with the reason). Then "quit".
compat/clients/java/CompatDriver.java speaks the same, and so do the Go drivers (the protocol in
compat/clients/go/agent, one main package per client), the Node drivers (compat/clients/node/agent.js) and
the Rust driver (compat/clients/rust/src/agent.rs). The Go, Node and Rust drivers answer an op they do not
know as unsupported (kafka-go has no transactional producer: its driver has no txn_ ops), so a new op is a new
Client method here plus one entry in each driver's op table; the drivers that lack it say so.

`python -m compat.clients.serve CLIENT BOOTSTRAP TIMING_JSON` serves one Python client this way (serve.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import weakref
from typing import Any

from compat.clients.base import (
    TP,
    Client,
    ClientError,
    HarnessError,
    Member,
    Rec,
    Timing,
    TxnProducer,
    Unsupported,
    rec_from_json,
    rec_to_json,
)

__all__ = ["CLIENT_OPS", "ROOT", "AgentClient", "kill_live_agents", "log_between"]

CLIENT_OPS = ("list_offsets", "create_topic", "partition_count", "delete_topic", "create_partitions",
              "describe_configs", "alter_configs", "delete_records", "describe_group", "list_groups", "delete_group",
              "delete_offsets")
"""Client methods the protocol carries as they are: arguments by name, a JSON-able result."""

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


_LIVE_AGENTS: weakref.WeakSet[subprocess.Popen[str]] = weakref.WeakSet()


def kill_live_agents() -> None:
    """SIGKILL to every agent process still running (each is a session of its own: see stop_live_targets)."""
    for proc in list(_LIVE_AGENTS):
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def log_between(f: Any, mark: int, n: int, head: int = 0) -> str:
    """What a log file holds from `mark` on: its last `n` bytes, and with `head` its first `head` bytes too when
    they are not among those (a cell that then waited a long time: what happened first is what tells why)."""
    end = f.seek(0, os.SEEK_END)
    start = max(mark, end - n)
    first = ""
    if head and start > mark:
        f.seek(mark)
        taken = f.read(min(head, start - mark))
        left_out = start - mark - len(taken)
        first = taken.decode(errors="replace") + (f"\n... {left_out} bytes left out ...\n" if left_out else "")
    f.seek(start)
    return first + f.read().decode(errors="replace")


class AgentClient(Client):
    """A Client whose calls go to an agent process."""

    def __init__(self, name: str, bootstrap: str, timing: Timing, cmd: list[str], *, own_member: bool = False,
                 cwd: str | None = None) -> None:
        super().__init__(bootstrap, timing)
        self.name = name
        self.cmd = cmd
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
                                     cwd=cwd, start_new_session=True, text=True, bufsize=1)
        _LIVE_AGENTS.add(self.proc)
        self._next = 0
        self._lock = threading.Lock()
        self.own_member = own_member

    @classmethod
    def python(cls, name: str, bootstrap: str, timing: Timing) -> AgentClient:
        env_cmd = [sys.executable, "-m", "compat.clients.serve", name, bootstrap,
                   json.dumps(dataclasses.asdict(timing))]
        return cls(name, bootstrap, timing, env_cmd, cwd=ROOT)

    def stderr_tail(self, n: int = 3000) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")[-n:]

    def log_mark(self) -> int:
        return self._stderr.seek(0, os.SEEK_END)

    def log_since(self, mark: int, n: int = 4000, head: int = 0) -> str:
        return log_between(self._stderr, mark, n, head)

    def request(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        with self._lock:
            if self.proc.poll() is not None:
                raise HarnessError(f"{self.name} agent exited ({self.proc.returncode}): {self.stderr_tail()}")
            self._next += 1
            rid = self._next
            try:
                self.proc.stdin.write(json.dumps({"id": rid, "op": op, **args}) + "\n")  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
            except OSError as e:
                raise HarnessError(f"{self.name} agent: {e}: {self.stderr_tail()}") from None
            line = self._readline(timeout or (self.timing.op_s + self.timing.fetch_s + 30))
        answer = json.loads(line)
        if answer.get("id") != rid:
            raise HarnessError(f"{self.name} agent answered {answer.get('id')} to request {rid}")
        if answer.get("ok"):
            return answer.get("result")
        if "error" in answer:
            e = answer["error"]
            raise ClientError(e["code"], e.get("type", ""), e.get("message", ""))
        if "unsupported" in answer:
            raise Unsupported(answer["unsupported"])
        raise HarnessError(f"{self.name} agent, {op}: {answer.get('harness')}")

    def _readline(self, timeout: float) -> str:
        result: list[str] = []
        t = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout)
        if t.is_alive():
            self.kill()
            raise HarnessError(f"{self.name} agent did not answer in {timeout:.0f}s; killed. {self.stderr_tail()}")
        if not result or not result[0]:
            raise HarnessError(f"{self.name} agent closed its output: {self.stderr_tail()}")
        return result[0]

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request("quit", timeout=20)
            except (HarnessError, OSError, ValueError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()

    # --- Client -------------------------------------------------------------------------------------
    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        out = self.request("produce", topic=topic, recs=[rec_to_json(r) for r in recs], codec=codec,
                           one_batch=one_batch, max_request_bytes=max_request_bytes, acks=acks,
                           idempotent=idempotent)
        return [tuple(x) for x in out]  # type: ignore[misc]

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        extra = {"isolation": isolation} if isolation else {}
        # wait_s: the wait as it is now (a scenario shortens it for a fetch meant to come back empty); the agent
        # took the harness's timing once, at its start
        return [rec_from_json(r) for r in self.request("fetch", topic=topic, partition=partition, offset=offset,
                                                      count=count, reset=reset, wait_s=self.timing.fetch_s,
                                                      **extra)]

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        extra = {"isolation": isolation} if isolation else {}
        return self.request("list_offsets", topic=topic, partition=partition, spec=spec, **extra)

    def transactional(self, transactional_id: str, *, timeout_ms: int | None = None) -> TxnProducer:
        return AgentTxn(self, self.request("txn_open", transactional_id=transactional_id, timeout_ms=timeout_ms))

    def create_topic(self, topic: str, partitions: int, replication_factor: int = 1,
                     configs: dict[str, str] | None = None, *, validate_only: bool = False) -> None:
        self.request("create_topic", topic=topic, partitions=partitions, replication_factor=replication_factor,
                     configs=configs or {}, validate_only=validate_only)

    def delete_topic(self, topic: str) -> None:
        self.request("delete_topic", topic=topic)

    def create_partitions(self, topic: str, count: int, *, validate_only: bool = False) -> None:
        self.request("create_partitions", topic=topic, count=count, validate_only=validate_only)

    def describe_configs(self, resource: str, name: str, keys: list[str]) -> dict[str, dict[str, Any]]:
        return self.request("describe_configs", resource=resource, name=name, keys=keys)

    def alter_configs(self, resource: str, name: str, configs: dict[str, str]) -> None:
        self.request("alter_configs", resource=resource, name=name, configs=configs)

    def delete_records(self, topic: str, partition: int, before: int) -> int:
        return self.request("delete_records", topic=topic, partition=partition, before=before)

    def describe_group(self, group: str) -> dict[str, Any]:
        d = self.request("describe_group", group=group)
        d["members"] = sorted(d["members"], key=lambda m: (m["assignment"], str(m["instance_id"])))
        return d

    def list_groups(self) -> dict[str, dict[str, Any]]:
        return self.request("list_groups")

    def delete_group(self, group: str) -> None:
        self.request("delete_group", group=group)

    def delete_offsets(self, group: str, topic: str, partitions: list[int]) -> None:
        self.request("delete_offsets", group=group, topic=topic, partitions=partitions)

    def partition_count(self, topic: str) -> int:
        return self.request("partition_count", topic=topic)

    def committed(self, group: str, topic: str, partitions: int) -> dict[int, tuple[int, str | None]]:
        out = self.request("committed", group=group, topic=topic, partitions=partitions)
        return {int(p): (o, m) for p, (o, m) in out.items()}

    def member(self, group: str, topic: str, *, assign: list[int] | None = None, offset_reset: str = "earliest",
               own_process: bool = False, own: bool = False, instance_id: str | None = None,
               session_timeout_ms: int | None = None, group_protocol: str = "classic") -> Member:
        self.refuse_group_protocol(group_protocol)
        if own_process:
            return self.spawn().member(group, topic, assign=assign, offset_reset=offset_reset, own=True,
                                       instance_id=instance_id, session_timeout_ms=session_timeout_ms,
                                       group_protocol=group_protocol)
        # group_protocol only when it is not the classic one: every driver knows the classic member
        protocol = {} if group_protocol == "classic" else {"group_protocol": group_protocol}
        mid = self.request("member_open", timeout=self.timing.op_s + 30, group=group, topic=topic, assign=assign,
                           offset_reset=offset_reset, instance_id=instance_id,
                           session_timeout_ms=session_timeout_ms or self.timing.session_timeout_ms, **protocol)
        return AgentMember(self, mid, owns_agent=own)

    def spawn(self) -> AgentClient:
        """Another agent like this one, for a member that must die alone."""
        return AgentClient(self.name, self.bootstrap, self.timing, self.cmd,
                           cwd=ROOT if "compat.clients.serve" in self.cmd else None)


class AgentTxn(TxnProducer):
    """A transactional producer living in the agent, named by the agent's id for it."""

    def __init__(self, agent: AgentClient, xid: str) -> None:
        self.agent = agent
        self.xid = xid

    def _r(self, op: str, **args: Any) -> Any:
        return self.agent.request(op, x=self.xid, **args)

    def begin(self) -> None:
        self._r("txn_begin")

    def send(self, topic: str, recs: list[Rec]) -> list[tuple[int, int]]:
        return [tuple(x) for x in self._r("txn_send", topic=topic, recs=[rec_to_json(r) for r in recs])]  # type: ignore[misc]

    def send_offsets(self, group: str, offsets: dict[TP, int]) -> None:
        self._r("txn_send_offsets", group=group, offsets=[[t, p, o] for (t, p), o in offsets.items()])

    def commit(self) -> None:
        self._r("txn_commit")

    def abort(self) -> None:
        self._r("txn_abort")

    def close(self) -> None:
        if self.agent.proc.poll() is None:
            self._r("txn_close")


class AgentMember(Member):
    def __init__(self, agent: AgentClient, mid: str, owns_agent: bool) -> None:
        self.agent = agent
        self.mid = mid
        self.owns_agent = owns_agent
        self.closed = False

    def _r(self, op: str, **args: Any) -> Any:
        return self.agent.request(op, m=self.mid, **args)

    def assignment(self) -> list[TP]:
        return sorted((t, p) for t, p in self._r("member_assignment"))

    def take(self) -> list[Rec]:
        return [rec_from_json(r) for r in self._r("member_take")]

    def errors(self) -> list[ClientError]:
        return [ClientError(e["code"], e.get("type", ""), e.get("message", "")) for e in self._r("member_errors")]

    def commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        self._r("member_commit", offsets=[[t, p, o, m] for (t, p), (o, m) in offsets.items()])

    def position(self, tp: TP) -> int | None:
        return self._r("member_position", topic=tp[0], partition=tp[1])

    def seek(self, tp: TP, offset: int) -> None:
        self._r("member_seek", topic=tp[0], partition=tp[1], offset=offset)

    def pause(self, tps: list[TP]) -> None:
        self._r("member_pause", tps=[list(tp) for tp in tps])

    def resume(self, tps: list[TP]) -> None:
        self._r("member_resume", tps=[list(tp) for tp in tps])

    def close(self) -> None:
        if self.closed or self.agent.proc.poll() is not None:
            return
        self.closed = True
        self.agent.request("member_close", timeout=self.agent.timing.op_s + 30, m=self.mid)
        if self.owns_agent:
            self.agent.close()

    def kill(self) -> None:
        if not self.owns_agent:
            raise Unsupported("this member shares its process with others; open it with own_process=True")
        self.agent.kill()
        self.agent.close()
