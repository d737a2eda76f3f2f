"""Giving freed log memory back to the OS, for a long-lived broker whose stored bytes fall (topics deleted,
DeleteRecords, retention, compaction).

Two things keep it otherwise: a deleted topic's partitions and logs refer to each other, so only the cycle
collector frees them, and its oldest generation runs rarely (stored batches are bytes, which do not count towards
its thresholds); and malloc keeps freed heap memory for reuse. So: a full collection, then malloc_trim off the
loop."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable

from fakekafka.model.cluster import ClusterState

__all__ = ["BATCH_OVERHEAD_BYTES", "TRIM_AFTER_FREED_BYTES", "FreedMemory"]

TRIM_AFTER_FREED_BYTES = 32 * 1024 * 1024
"""Stored log bytes freed since the last look that make the server ask malloc to return memory to the OS."""

BATCH_OVERHEAD_BYTES = 290
"""What a stored batch holds in memory besides its bytes (the bytes object's header, its offsets, timestamps and
epoch in the log's lists): counted with the batches' bytes, so many small batches freed are seen as what they held
(100,000 one-record batches of 170 bytes took 45 MB; only 17 MB of it their bytes)."""


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, where there is one (Linux with glibc); None elsewhere."""
    try:
        import ctypes  # inside the try: a Python built without ctypes has no malloc_trim to call
        import ctypes.util
        name = ctypes.util.find_library("c")
        if name is None:
            return None
        trim = ctypes.CDLL(name).malloc_trim
        trim.argtypes = [ctypes.c_size_t]
        trim.restype = ctypes.c_int
        return trim  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _malloc_trim()


class FreedMemory:
    """Watches a cluster's stored log bytes (looked at every tick, so a peak is seen however briefly it lasted)
    and returns memory to the OS once they fell well below their peak."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._peak_stored = 0
        self._trims_due = 0
        self._trimming = False
        self._changed = True
        """Whether the model changed since the last look (a partition appended to, or anything but the clock):
        an idle broker does not add up every partition's bytes ten times a second."""
        self._seen = (-1, -1)
        cluster.add_change_listener(self._on_change)

    def close(self) -> None:
        try:
            self.cluster.remove_change_listener(self._on_change)
        except ValueError:
            pass

    def _on_change(self, obj: object) -> None:
        if obj is not self.cluster.clock:
            self._changed = True

    def _stored_bytes(self) -> int:
        return sum(log.size_bytes + len(log.batches) * BATCH_OVERHEAD_BYTES for t in self.cluster.topics.values()
                   for p in t.partitions for log in p.logs.values())

    def look(self, *, look_again: bool) -> None:
        """Once stored bytes fell `TRIM_AFTER_FREED_BYTES` below their peak: a collection and a trim now and
        at the next two looks with `look_again` (what freed it may still be referenced now)."""
        observers = self.cluster.observers
        seen = (observers.metadata_changes, len(observers.events))  # topics deleted, retention, compaction
        if not self._changed and seen == self._seen and not self._trims_due:
            return
        self._changed, self._seen = False, seen
        stored = self._stored_bytes()
        if self._peak_stored - stored >= TRIM_AFTER_FREED_BYTES:
            self._peak_stored = stored
            self._trims_due = 3
        else:
            self._peak_stored = max(self._peak_stored, stored)
        if not self._trims_due or (not look_again and self._trims_due < 3):
            return  # the first collection at once, the two after it about a second apart
        self._trims_due -= 1
        asyncio.get_running_loop().call_soon(self._collect_and_trim)

    def _collect_and_trim(self) -> None:
        """From a fresh stack (nothing of the tick's frames in reach): collect, then trim off the loop."""
        gc.collect()
        if _MALLOC_TRIM is not None and not self._trimming:
            self._trimming = True
            future = asyncio.get_running_loop().run_in_executor(None, _MALLOC_TRIM, 0)
            future.add_done_callback(lambda _f: setattr(self, "_trimming", False))
