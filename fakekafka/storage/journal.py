"""The data dir's metadata as a snapshot and a journal of changes since it, so that a change costs what it changes.

`fakekafka-metadata.json` is a whole snapshot (replaced atomically: write, then rename); `fakekafka-metadata.log`
holds, one JSON line each, the changes made since: `{"set": {section: value}}` for the cluster-wide sections
(configs, ACLs, SCRAM users, the producer id block...), `{"topic": {...}}` for a topic made or changed (its whole
record), `{"drop": name}` for a topic deleted. Its first line names the snapshot it follows (`{"generation": G}`,
the snapshot's `"journal"`): a compaction writes a new snapshot with the next generation, then starts the journal
afresh, so a crash between the two leaves a journal of the old generation, which the next start ignores (its
changes are in the snapshot). Kafka keeps its metadata the same way: a log of records and snapshots of it
(`__cluster_metadata`).

Each change is one os.write of whole lines (into the page cache, as the segments: a killed process loses nothing
written); a write cut short (a full disk) is taken back off the file, so the journal always ends at a whole line.
At start a last line without its newline (a write the process did not finish) is dropped with a warning; a
malformed line before the last is refused in words.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fakekafka.model.metadata import Topic
from fakekafka.storage.checkpoints import write_atomically

if TYPE_CHECKING:
    from fakekafka.model.cluster import ClusterState

__all__ = ["COMPACT_AFTER", "FORMAT_VERSION", "JOURNAL_FILE", "METADATA_FILE", "MetadataFiles", "MetadataJournal",
           "replay"]

log = logging.getLogger("fakekafka.storage")

FORMAT_VERSION = 1
METADATA_FILE = "fakekafka-metadata.json"
JOURNAL_FILE = "fakekafka-metadata.log"
COMPACT_AFTER = 1 << 20
"""Journal bytes past which the next change writes a whole snapshot instead (at least the snapshot's own size:
so a change costs amortised what it changes, whatever the metadata's size)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _line(record: dict[str, Any]) -> bytes:
    return _dumps(record).encode() + b"\n"


def replay(snapshot: dict[str, Any], path: Path) -> tuple[dict[str, Any], int]:
    """The snapshot with the journal at `path` applied (when it follows this snapshot), and how many changes
    that was. Raises ValueError in words for a journal that cannot be read."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return snapshot, 0
    lines = data.split(b"\n")
    if lines[-1]:  # the last write did not finish: its change was never acknowledged
        log.warning("%s ends in a line cut short (%d bytes, a write the process did not finish): dropped", path,
                    len(lines[-1]))
    lines = lines[:-1]
    if not lines:
        return snapshot, 0
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as e:
        raise ValueError(f"{path} is damaged ({e}); move it aside to start from {path.with_suffix('.json').name} "
                         "alone (the changes after that snapshot are then lost)") from None
    head = records[0]
    if not isinstance(head, dict) or head.get("generation") != snapshot.get("journal", 0):
        return snapshot, 0  # from before the snapshot (a compaction cut short after its rename): in it already
    topics = {t["name"]: t for t in snapshot.get("topics", [])}
    for record in records[1:]:
        if "set" in record:
            snapshot.update(record["set"])
        elif "topic" in record:
            topics.pop(record["topic"]["name"], None)  # a topic made again goes last, as in the cluster's dict
            topics[record["topic"]["name"]] = record["topic"]
        elif "drop" in record:
            topics.pop(record["drop"], None)
        else:
            raise ValueError(f"{path} holds a change fakekafka does not know: {str(record)[:200]}")
    snapshot["topics"] = list(topics.values())
    return snapshot, len(records) - 1


class MetadataJournal:
    """The journal file, appended to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = -1
        self.size = 0
        self.generation = 0

    def reset(self, generation: int) -> None:
        """Starts the journal of the snapshot just written (its generation); raises OSError."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, _line({"generation": generation}))
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.size = os.fstat(self.fd).st_size
        self.generation = generation

    def append(self, records: list[dict[str, Any]]) -> None:
        """The changes, as whole lines in one write; a write cut short is taken back off the file before the
        OSError is raised."""
        data = b"".join(_line(r) for r in records)
        before = self.size
        try:
            view = memoryview(data)
            while view:
                n = os.write(self.fd, view)
                self.size += n
                view = view[n:]
        except OSError:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, before)
            self.size = before
            raise

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1



class MetadataFiles:
    """DataDir's metadata half: the snapshot and the journal written as the cluster's metadata changes."""

    if TYPE_CHECKING:  # what DataDir provides
        root: Path
        cluster_id: str
        broker_ids: list[int]
        journal: MetadataJournal
        state: ClusterState
        _section_texts: dict[str, str]
        _topic_texts: dict[str, str]
        _snapshot_size: int
        _model_saved: int
        _last_save: float
        writing: Callable[[str | os.PathLike[str]], contextlib.AbstractContextManager[None]]
        _refresh_flush: Callable[..., None]

    def _sections(self) -> dict[str, Any]:
        """The cluster-wide parts of the metadata, each written whole when it changes. The producer id block is
        saved 1000 ids ahead, as Kafka's controller hands out blocks, so an InitProducerId writes once per
        thousand."""
        state = self.state
        c = state.config
        acls = [[a.resource_type.name, a.resource_name, a.pattern_type.name, a.principal, a.host, a.operation.name,
                 a.permission_type.name] for a in state.authorizer.acls] if state.authorizer is not None else []
        scram = [[user, mechanism, base64.b64encode(cr.salt).decode(), base64.b64encode(cr.stored_key).decode(),
                  base64.b64encode(cr.server_key).decode(), cr.iterations]
                 for (user, mechanism), cr in state.scram.items()]
        return {"producer_id_block": (state.producer_ids.next_id // 1000 + 1) * 1000,
                "placement": state.topic_registry.placement, "dynamic_defaults": c.dynamic_defaults,
                "dynamic_brokers": {str(k): v for k, v in c.dynamic_brokers.items()},
                "group_configs": state.group_configs, "acls": acls, "scram": scram,
                "client_quotas": [[[list(p) for p in entity], values]
                                  for entity, values in state.client_quotas.entries.items()]}

    @staticmethod
    def _topic(t: Topic) -> dict[str, Any]:
        return {"name": t.name, "id": str(t.topic_id), "internal": t.is_internal, "configs": t.configs,
                "partitions": [{"replicas": p.replicas, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                                "dirs": {str(r): log.log_dir for r, log in p.logs.items()},
                                "isr": p.isr, "adding": p.adding, "removing": p.removing,
                                "reassigned_from": p.reassigned_from} for p in t.partitions]}

    def snapshot(self) -> dict[str, Any]:
        """The whole metadata, as the snapshot file holds it."""
        return {"format": FORMAT_VERSION, "cluster_id": self.cluster_id, "brokers": self.broker_ids,
                **self._sections(), "topics": [self._topic(t) for t in self.state.topics.values()]}

    def save(self, *, force: bool = False, topics: Iterable[str] | None = None) -> bool:
        """Writes what changed in the metadata since the last write; returns whether it wrote. `topics`: only
        those topics can have changed (made, deleted, grown: the model's own saves), so only they are looked at;
        else every topic is. The changes are appended to the journal (a line per changed topic, one for the
        changed sections); a whole snapshot is written instead when `force` or when the journal has grown past
        the snapshot's size (atomically: a new file renamed over the old, then a new journal)."""
        sections = self._sections()
        texts = {k: _dumps(v) for k, v in sections.items()}
        changed = {k: sections[k] for k, text in texts.items() if self._section_texts.get(k) != text}
        state = self.state
        names = state.topics.keys() | self._topic_texts.keys() if topics is None else topics
        records: list[dict[str, Any]] = []
        topic_texts: dict[str, str | None] = {}
        for name in names:
            topic = state.topics.get(name)
            if topic is None:
                if name in self._topic_texts:
                    records.append({"drop": name})
                    topic_texts[name] = None
                continue
            record = self._topic(topic)
            text = _dumps(record)
            if self._topic_texts.get(name) != text:
                records.append({"topic": record})
                topic_texts[name] = text
        self._last_save = time.monotonic()
        if not force and not changed and not records:
            self._model_saved += topics is not None
            return False
        if force or self.journal.fd < 0 or self.journal.size > max(COMPACT_AFTER, self._snapshot_size):
            self._compact(sections, texts)
        else:
            with self.writing(self.root / JOURNAL_FILE):
                self.journal.append(([{"set": changed}] if changed else []) + records)
            self._section_texts.update((k, texts[k]) for k in changed)
            for name, text in topic_texts.items():
                if text is None:
                    del self._topic_texts[name]
                else:
                    self._topic_texts[name] = text
        if topics is None or "dynamic_defaults" in changed or "dynamic_brokers" in changed:
            self._refresh_flush()
        else:
            self._refresh_flush(topics)
        self._model_saved += topics is not None
        return True

    def _compact(self, sections: dict[str, Any], texts: dict[str, str]) -> None:
        """A whole snapshot of the next generation, then a new journal that follows it."""
        generation = self.journal.generation + 1
        topics = [self._topic(t) for t in self.state.topics.values()]
        topic_texts = {t["name"]: _dumps(t) for t in topics}
        snap = {"format": FORMAT_VERSION, "cluster_id": self.cluster_id, "brokers": self.broker_ids,
                "journal": generation, **sections, "topics": topics}
        text = _dumps(snap)
        with self.writing(self.root / METADATA_FILE):
            write_atomically(self.root / METADATA_FILE, text)
        self.journal.close()  # until the new journal is there, every save is a snapshot
        self.journal.generation = generation
        self._section_texts, self._topic_texts, self._snapshot_size = dict(texts), topic_texts, len(text)
        with self.writing(self.root / JOURNAL_FILE):
            self.journal.reset(generation)
