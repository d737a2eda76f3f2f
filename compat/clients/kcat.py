"""kcat (its own librdkafka; Debian's kcat 1.7.1 bundles librdkafka 2.0.2), run as a subprocess per call.

What kcat cannot express is Unsupported: admin (creating topics), committed offsets, commits on demand,
seeking, producing with a timestamp. Producing reports no offsets (kcat prints no delivery reports), so
`reports_offsets` is False. Records are read with a length-prefixed -f format (%K/%S give -1 for null), so
binary keys and values survive; headers come back as kcat prints them (`k=v,k2=v2`, NULL for null), which
is unambiguous for the scenarios' header names and values. Errors are recognised by librdkafka's error
strings on stderr ("Broker: Message size too large"), mapped back to Kafka's error names.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading

from compat.clients.base import TP, Client, ClientError, HarnessError, Member, Rec, Timing, Unsupported

__all__ = ["KcatClient", "kcat_binary"]

FMT = "%p %o %T %K %S %k%s%h\\n"
"""Lengths first (-1 for null), so binary keys and values survive. Not -Z: kcat 1.7.1 then prints empty
keys and values as "NULL" too."""
DELIMITERS = [b"\x1e\x1d\x1e", b"\x1f\x1d\x1f", b"\x1e\x1c\x1e\x1c", b"\x1f\x1c\x1f\x1c"]
"""Candidates for -D and -K (kcat takes multi-byte delimiters): the first two absent from the data win."""


def _escape(b: bytes) -> str:
    return "".join(f"\\x{c:02x}" for c in b)


FAST = ["-X", "fetch.wait.max.ms=10", "-X", "log_level=3"]


def kcat_binary() -> str | None:
    return shutil.which("kcat") or shutil.which("kafkacat")


def _error_texts() -> dict[str, str]:
    """librdkafka's error string -> Kafka's error name, for the broker errors (and the local ones we map)."""
    texts = {"Local: Unknown topic": "UNKNOWN_TOPIC_OR_PARTITION", "Local: Unknown partition":
             "UNKNOWN_TOPIC_OR_PARTITION", "Local: Message timed out": "TIMEOUT", "Local: Timed out": "TIMEOUT",
             "Local: No offset stored": "NO_OFFSET_FOR_PARTITION"}
    try:
        from confluent_kafka import KafkaError

        from fakekafka.wire import ErrorCode
        for code in ErrorCode:
            if code > 0:
                texts.setdefault(KafkaError(int(code)).str(), code.name)
    except ImportError:  # without confluent-kafka: the few the scenarios meet
        texts.update({"Broker: Message size too large": "MESSAGE_TOO_LARGE",
                      "Broker: Unknown topic or partition": "UNKNOWN_TOPIC_OR_PARTITION",
                      "Broker: Offset out of range": "OFFSET_OUT_OF_RANGE"})
    return texts


_TEXTS: dict[str, str] | None = None


def error_from_text(text: str) -> ClientError | None:
    global _TEXTS
    if _TEXTS is None:
        _TEXTS = _error_texts()
    # longest first: "Broker: Unknown topic or partition" before "Local: Unknown topic"
    for phrase in sorted(_TEXTS, key=len, reverse=True):
        if phrase in text:
            return ClientError(_TEXTS[phrase], "kcat", text.strip()[-500:])
    return None


def _parse_records(out: bytes) -> list[Rec]:
    """Records printed with FMT: `p o ts keylen valuelen ` key value headers `\\n`."""
    recs = []
    pos = 0
    head = re.compile(rb"(-?\d+) (-?\d+) (-?\d+) (-?\d+) (-?\d+) ")
    while pos < len(out):
        m = head.match(out, pos)
        if m is None:
            raise HarnessError(f"cannot parse kcat output at byte {pos}: {out[pos:pos + 80]!r}")
        p, o, ts, klen, vlen = (int(x) for x in m.groups())
        pos = m.end()
        key = None if klen < 0 else out[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else out[pos:pos + vlen]
        pos += max(vlen, 0)
        end = out.index(b"\n", pos)
        headers: list[tuple[str, bytes | None]] = []
        for item in out[pos:end].split(b",") if end > pos else []:
            name, _, v = item.partition(b"=")
            headers.append((name.decode(), None if v == b"NULL" else v))
        pos = end + 1
        recs.append(Rec(key, value, headers, p, o, ts if ts >= 0 else None))
    return recs


class KcatClient(Client):
    name = "kcat"
    reports_offsets = False
    cannot = {"admin": "kcat has no admin API (it cannot create topics)",
              "commit": "kcat commits only on its own (enable.auto.commit), never on request",
              "timestamps": "kcat cannot set a record's timestamp when producing",
              "transactions": "kcat has no transactional producer",
              "broker_loss": "kcat prints a dead broker's refused connections as ERROR lines, which its adapter "
                             "cannot tell from a failed delivery"}

    def probe(self) -> None:
        result = self.run("-L", "-J", "-X", "log_level=3", timeout=self.timing.op_s)
        if result.returncode != 0:
            raise HarnessError(f"kcat cannot read metadata from {self.bootstrap}: "
                               f"{result.stderr.decode(errors='replace').strip()[-500:]}")

    def __init__(self, bootstrap: str, timing: Timing) -> None:
        super().__init__(bootstrap, timing)
        binary = kcat_binary()
        if binary is None:
            raise Unsupported("kcat is not installed (apt-get install kcat)")
        self.kcat = binary

    def run(self, *args: str, input: bytes = b"", timeout: float | None = None) -> subprocess.CompletedProcess[bytes]:
        try:
            return subprocess.run([self.kcat, "-b", self.bootstrap, *args], input=input, capture_output=True,
                                  timeout=timeout or self.timing.op_s + 10, check=False)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"kcat {' '.join(args)} did not finish: {e.stderr!r}") from None

    def _fail(self, result: subprocess.CompletedProcess[bytes], what: str) -> ClientError:
        text = result.stderr.decode(errors="replace")
        err = error_from_text(text)
        if err is None:
            raise HarnessError(f"kcat {what} exited {result.returncode}: {text[-1500:]}")
        return err

    def produce(self, topic: str, recs: list[Rec], *, codec: str = "none", one_batch: bool = False,
                max_request_bytes: int | None = None, acks: int | None = None,
                idempotent: bool | None = None) -> list[tuple[int, int]]:
        if any(r.timestamp is not None for r in recs):
            raise Unsupported("kcat cannot set a record's timestamp")
        common = ["-P", "-t", topic, "-z", codec, "-X", "retries=0",
                  "-X", f"message.timeout.ms={int(self.timing.op_s * 1000)}",
                  "-X", f"topic.metadata.propagation.max.ms={self.timing.metadata_ms}", "-X", "log_level=3"]
        if max_request_bytes:
            common += ["-X", f"message.max.bytes={max_request_bytes}"]
        if acks is not None:
            common += ["-X", f"acks={acks}"]
        if idempotent is not None:
            common += ["-X", f"enable.idempotence={str(idempotent).lower()}"]
            if idempotent:
                common.remove("retries=0")
                common.remove("-X")
        if one_batch:
            common += ["-X", "linger.ms=1000", "-X", f"batch.num.messages={len(recs)}"]
        with tempfile.TemporaryDirectory() as tmp:
            for group in self._groups(recs, one_batch):
                args = list(common)
                if group[0].partition is not None:
                    args += ["-p", str(group[0].partition)]
                for name, v in group[0].headers:
                    if v is not None and (b"," in v or b"=" in v):
                        raise Unsupported("kcat -H cannot carry ',' or '=' in a header value")
                    args += ["-H", name if v is None else f"{name}={v.decode()}"]
                args, data = self._input(args, group, tmp)
                result = self.run(*args, input=data)
                if result.returncode != 0 or b"ERROR" in result.stderr or b"Delivery failed" in result.stderr:
                    raise self._fail(result, "produce")
        return [(r.partition or 0, -1) for r in recs]

    @staticmethod
    def _groups(recs: list[Rec], one_batch: bool) -> list[list[Rec]]:
        """Records kcat can send in one run: the same partition and headers (-H applies to every message)."""
        groups: list[list[Rec]] = []
        for r in recs:
            if groups and (r.partition, r.headers) == (groups[-1][0].partition, groups[-1][0].headers):
                groups[-1].append(r)
            else:
                groups.append([r])
        if one_batch and len(groups) > 1:
            raise Unsupported("kcat sends one batch only for records with the same headers and partition")
        return groups

    @staticmethod
    def _input(args: list[str], group: list[Rec], tmp: str) -> tuple[list[str], bytes]:
        """Line mode (-K/-D with delimiters absent from the data, -Z when empty means null), else one file
        per message (-k for its key)."""
        blobs = [b for r in group for b in (r.key, r.value) if b is not None]
        nulls = any(b is None for r in group for b in (r.key, r.value))
        empties = any(b == b"" for b in blobs)
        free = [d for d in DELIMITERS if not any(d in b for b in blobs)]
        if len(free) >= 2 and not (nulls and empties):
            delim, kdelim = free[0], free[1]
            data = b"".join((r.key or b"") + kdelim + (r.value or b"") + delim for r in group)
            return args + ["-D", _escape(delim), "-K", _escape(kdelim)] + (["-Z"] if nulls else []), data
        if len(group) > 1:
            raise Unsupported("kcat cannot send these records together (delimiters or both null and empty)")
        r = group[0]
        if r.key is not None and (b"\x00" in r.key or r.key == b""):
            raise Unsupported("kcat -k cannot carry this key")
        path = os.path.join(tmp, "m")
        with open(path, "wb") as f:
            f.write(r.value or b"")
        extra = (["-k", r.key.decode("latin-1")] if r.key is not None else []) + (["-Z"] if r.value is None else [])
        return args + extra + [path], b""

    def fetch(self, topic: str, partition: int, offset: int, count: int, reset: str = "earliest",
              isolation: str | None = None) -> list[Rec]:
        extra = ["-X", f"isolation.level={isolation}"] if isolation else []
        reset = {"none": "error"}.get(reset, reset)  # librdkafka's name for Kafka's "none"
        result = self.run("-C", "-t", topic, "-p", str(partition), "-o", str(offset), "-c", str(count), "-e",
                          "-X", f"auto.offset.reset={reset}", *extra, "-f", FMT, *FAST,
                          timeout=self.timing.fetch_s + 10)
        if result.returncode != 0:
            raise self._fail(result, "consume")
        return _parse_records(result.stdout)

    def list_offsets(self, topic: str, partition: int, spec: str | int, isolation: str | None = None) -> int | None:
        if spec == "max_timestamp":
            raise Unsupported("kcat -Q looks offsets up by time only (no max-timestamp spec)")
        ts = {"earliest": -2, "latest": -1}.get(spec, spec)  # type: ignore[arg-type]
        extra = ["-X", f"isolation.level={isolation}"] if isolation else []
        result = self.run("-Q", "-J", "-t", f"{topic}:{partition}:{ts}", "-X", "log_level=3", *extra)
        if result.returncode != 0:
            raise self._fail(result, "query")
        found = json.loads(result.stdout)[topic][str(partition)]
        if "error" in found:
            raise error_from_text(found["error"]) or HarnessError(found["error"])
        return None if found["offset"] < 0 else found["offset"]

    def partition_count(self, topic: str) -> int:
        result = self.run("-L", "-J", "-t", topic, "-X", "log_level=3")
        if result.returncode != 0:
            raise self._fail(result, "metadata")
        [t] = json.loads(result.stdout)["topics"]
        if t.get("error"):
            raise error_from_text(t["error"]) or HarnessError(t["error"])
        return len(t["partitions"])

    def member(self, group: str, topic: str, *, assign: list[int] | None = None, offset_reset: str = "earliest",
               own_process: bool = False, instance_id: str | None = None,
               session_timeout_ms: int | None = None, group_protocol: str = "classic") -> Member:
        self.refuse_group_protocol(group_protocol)
        return KcatMember(self, group, topic, assign, offset_reset, instance_id,
                          session_timeout_ms or self.timing.session_timeout_ms)


class KcatMember(Member):
    """A kcat process consuming until stopped: -G for a group member (assignments read from its
    "% Group ... rebalanced" lines), or the simple consumer on one partition (-o stored) otherwise."""

    def __init__(self, client: KcatClient, group: str, topic: str, assign: list[int] | None,
                 offset_reset: str, instance_id: str | None = None, session_timeout_ms: int = 6000) -> None:
        reset = {"none": "error"}.get(offset_reset, offset_reset)
        heartbeat = min(client.timing.heartbeat_ms, max(1, session_timeout_ms // 3))
        common = ["-u", "-f", FMT, "-X", f"auto.offset.reset={reset}", "-X", "enable.auto.commit=false",
                  "-X", f"session.timeout.ms={session_timeout_ms}",
                  "-X", f"heartbeat.interval.ms={heartbeat}", *FAST]
        if instance_id is not None:
            common += ["-X", f"group.instance.id={instance_id}"]
        if assign is None:
            args = ["-G", group, *common, topic]
            self._assigned: set[TP] = set()
        else:
            if len(assign) != 1:
                raise Unsupported("kcat's simple consumer reads one partition")
            args = ["-C", "-t", topic, "-p", str(assign[0]), "-o", "stored", "-X", f"group.id={group}", *common]
            self._assigned = {(topic, assign[0])}
        self.proc = subprocess.Popen([client.kcat, "-b", client.bootstrap, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        self.topic = topic
        self._lock = threading.Lock()
        self._out = bytearray()
        self._errors: list[ClientError] = []
        self._positions: dict[TP, int] = {}
        self._stderr: list[str] = []
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_out(self) -> None:
        while chunk := self.proc.stdout.read1(65536):  # type: ignore[union-attr]
            with self._lock:
                self._out += chunk

    def _read_err(self) -> None:
        rebalance = re.compile(r"rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)")
        eof = re.compile(r"Reached end of topic (\S+) \[(\d+)\] at offset (\d+)")
        for raw in self.proc.stderr:  # type: ignore[union-attr]
            line = raw.decode(errors="replace").strip()
            with self._lock:
                self._stderr.append(line)
                if m := rebalance.search(line):
                    tps = {(t, int(p)) for t, p in re.findall(r"(\S+) \[(\d+)\]", m.group(2))}
                    self._assigned = self._assigned | tps if m.group(1) == "assigned" else self._assigned - tps
                elif m := eof.search(line):
                    self._positions[(m.group(1), int(m.group(2)))] = int(m.group(3))
                elif "ERROR" in line:
                    err = error_from_text(line)
                    self._errors.append(err or ClientError("CLIENT:kcat", "kcat", line))

    def assignment(self) -> list[TP]:
        with self._lock:
            return sorted(self._assigned)

    def take(self) -> list[Rec]:
        with self._lock:
            end = self._out.rfind(b"\n")
            # a record is complete once its line ends (values here never contain a newline when read so)
            data, self._out = bytes(self._out[:end + 1]), self._out[end + 1:]
        return _parse_records(data)

    def errors(self) -> list[ClientError]:
        with self._lock:
            out, self._errors = self._errors, []
        return out

    def commit(self, offsets: dict[TP, tuple[int, str | None]]) -> None:
        raise Unsupported("kcat commits only on its own (enable.auto.commit)")

    def position(self, tp: TP) -> int | None:
        with self._lock:
            return self._positions.get(tp)

    def seek(self, tp: TP, offset: int) -> None:
        raise Unsupported("kcat cannot seek a running consumer")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # kcat closes its consumer: LeaveGroup
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
