"""The Python side of the agent protocol (compat/clients/agent.py's docstring): `python -m compat.clients.serve
CLIENT BOOTSTRAP TIMING_JSON` serves one in-process Python client over JSON lines on stdin/stdout, for a member
that must be killable alone (LibraryClient's own_process) and for the old clients' virtualenv. Apart from
agent.py, which starts such processes: the adapters it serves start agents themselves."""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any

from compat.clients.agent import CLIENT_OPS
from compat.clients.base import (
    Client,
    ClientError,
    Member,
    Timing,
    TxnProducer,
    Unsupported,
    rec_from_json,
    rec_to_json,
)
from compat.clients.in_process import python_client

__all__ = ["main", "serve"]


def serve(client: Client, inp: Any = None, out: Any = None) -> None:
    """Answer requests from `inp` with `client` until "quit" or end of input."""
    inp = inp or sys.stdin
    out = out or sys.stdout
    members: dict[str, Member] = {}
    txns: dict[str, TxnProducer] = {}

    def handle(req: dict[str, Any]) -> Any:
        op = req.pop("op")
        req.pop("id", None)
        if op.startswith("txn_"):
            return handle_txn(op, req)
        if op == "produce":
            req["recs"] = [rec_from_json(r) for r in req["recs"]]
            return [list(x) for x in client.produce(req.pop("topic"), req.pop("recs"), **req)]
        if op == "fetch":  # for this fetch only: other ops' timeouts (aiokafka's) count the usual wait
            saved = client.timing.fetch_s
            client.timing.fetch_s = req.pop("wait_s", saved)
            try:
                return [rec_to_json(r) for r in client.fetch(**req)]
            finally:
                client.timing.fetch_s = saved
        if op in CLIENT_OPS:
            return getattr(client, op)(**req)
        if op == "committed":
            return {str(p): list(v) for p, v in client.committed(**req).items()}
        if op == "member_open":
            mid = f"m{len(members) + 1}"
            members[mid] = client.member(**req)
            return mid
        m = members[req.pop("m")]
        if op == "member_assignment":
            return [list(tp) for tp in m.assignment()]
        if op == "member_take":
            return [rec_to_json(r) for r in m.take()]
        if op == "member_errors":
            return [{"code": e.code, "type": e.type, "message": e.message} for e in m.errors()]
        if op == "member_commit":
            return m.commit({(t, p): (o, meta) for t, p, o, meta in req["offsets"]})
        if op == "member_position":
            return m.position((req["topic"], req["partition"]))
        if op == "member_seek":
            return m.seek((req["topic"], req["partition"]), req["offset"])
        if op in ("member_pause", "member_resume"):
            return getattr(m, op[len("member_"):])([(t, p) for t, p in req["tps"]])
        if op == "member_close":
            return m.close()
        raise ValueError(f"unknown op {op!r}")

    def handle_txn(op: str, req: dict[str, Any]) -> Any:
        if op == "txn_open":
            xid = f"x{len(txns) + 1}"
            txns[xid] = client.transactional(req["transactional_id"], timeout_ms=req.get("timeout_ms"))
            return xid
        x = txns[req.pop("x")]
        if op == "txn_send":
            return [list(a) for a in x.send(req["topic"], [rec_from_json(r) for r in req["recs"]])]
        if op == "txn_send_offsets":
            return x.send_offsets(req["group"], {(t, p): o for t, p, o in req["offsets"]})
        if op in ("txn_begin", "txn_commit", "txn_abort", "txn_close"):
            return getattr(x, op[len("txn_"):])()
        raise ValueError(f"unknown op {op!r}")

    for line in inp:
        req = json.loads(line)
        rid = req.get("id")
        if req.get("op") == "quit":
            for m in [*members.values(), *txns.values()]:
                try:
                    m.close()
                except Exception:  # noqa: BLE001, S110 - closing on the way out
                    pass
            out.write(json.dumps({"id": rid, "ok": True, "result": None}) + "\n")
            out.flush()
            return
        try:
            answer = {"id": rid, "ok": True, "result": handle(req)}
        except ClientError as e:
            answer = {"id": rid, "ok": False, "error": {"code": e.code, "type": e.type, "message": e.message}}
        except Unsupported as e:
            answer = {"id": rid, "ok": False, "unsupported": str(e)}
        except Exception as e:  # noqa: BLE001
            answer = {"id": rid, "ok": False, "harness": "".join(traceback.format_exception(e))[-4000:]}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def main(argv: list[str]) -> None:
    name, bootstrap, timing = argv
    client = python_client(name, bootstrap, Timing(**json.loads(timing)))
    real_out = sys.stdout
    sys.stdout = sys.stderr  # client libraries that print must not corrupt the protocol
    try:
        serve(client, sys.stdin, real_out)
    finally:
        client.close()


if __name__ == "__main__":
    main(sys.argv[1:])
