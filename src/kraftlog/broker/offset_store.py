"""The committed offsets of the groups a broker coordinates (Kafka's offsets store over
``__consumer_offsets``).

Committed offsets (with the leader epoch of the last consumed record, KIP-320) are kept per group and
written through the broker's Disk with an atomic, durable write on every commit. They are *not*
replicated: when the coordinator moves to another broker, that broker knows only what was committed
to it. (Kafka replicates them through ``__consumer_offsets``.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from urllib.parse import quote

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..storage.disk import Disk

OFFSETS_DIR = "__consumer_offsets"


#: The longest file name the store writes (bytes; Linux allows 255).
MAX_FILE_NAME = 200


def file_of_group(group_id: str) -> str:
    """The file name holding ``group_id``'s offsets: the id percent-encoded (dots too), so that any group
    id a client sends (``..``, ``a/b``, ``x.tmp``, "") is one plain file name; an id whose encoding would
    be longer than MAX_FILE_NAME is named by its SHA-256 (the file itself names the group)."""
    name = quote(group_id, safe="").replace(".", "%2E") or "%"
    if len(name) > MAX_FILE_NAME:
        name = "%H" + hashlib.sha256(group_id.encode("utf-8", "surrogatepass")).hexdigest()
    return name


class OffsetStore:
    """Committed offsets of the groups this broker coordinates, persisted at
    ``{log_dir}/__consumer_offsets/{file_of_group(group)}`` as JSON ``{"group_id": group, "offsets":
    {"topic-partition": [offset, leader_epoch, metadata]}}``."""

    def __init__(self, disk: Disk, log_dir: str) -> None:
        self.disk = disk
        self.prefix = f"{log_dir}/{OFFSETS_DIR}/"
        self.groups: dict[str, dict[tuple[str, int], tuple[int, int, str | None]]] = {}
        for path in disk.list(self.prefix):
            raw = disk.read_value(path)
            if not isinstance(raw, (str, bytes, bytearray)):
                continue  # not a file of ours (json.loads would raise TypeError)
            try:
                data = json.loads(raw)
            except (TypeError, ValueError):
                continue
            if not isinstance(data, dict) or not isinstance(data.get("group_id"), str):
                continue
            offsets = {}
            for name, (offset, epoch, meta) in data.get("offsets", {}).items():
                topic, _, idx = name.rpartition("-")
                offsets[(topic, int(idx))] = (int(offset), int(epoch), meta)
            self.groups[data["group_id"]] = offsets

    def commit(self, req: m.OffsetCommitRequest, now_ms: int) -> m.OffsetCommitResponse:
        """Store the offsets (a durable write) and answer NONE per partition."""
        offsets = self.groups.setdefault(req.group_id, {})
        for p in req.partitions:
            offsets[(p.topic, p.partition)] = (p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
        self._store(now_ms, req.group_id, offsets, keep_empty=True)
        return m.OffsetCommitResponse(tuple(m.OffsetCommitPartitionResponse(p.topic, p.partition, Errors.NONE)
                                            for p in req.partitions))

    def delete_topics(self, topics: Iterable[str], now_ms: int) -> None:
        """Forget every committed offset of the deleted ``topics`` (names), in every group: Kafka's
        ``GroupCoordinator.onPartitionsDeleted``, which ``BrokerMetadataPublisher`` calls with the deleted
        topics' partitions and ``OffsetMetadataManager.onPartitionsDeleted`` turns into one offset tombstone
        per committed partition. A group left with offsets is rewritten (a durable write); a group left with
        none loses its file (its offsets are all tombstoned; Kafka's periodic group cleanup drops such a group
        later)."""
        gone = set(topics)
        for group_id in sorted(self.groups):
            offsets = self.groups[group_id]
            if not any(t in gone for t, _ in offsets):
                continue
            self._store(now_ms, group_id, {k: v for k, v in offsets.items() if k[0] not in gone})

    def delete_group(self, now_ms: int, group_id: str) -> None:
        """Forget every committed offset of ``group_id`` (DeleteGroups) and its file."""
        if self.groups.pop(group_id, None) is not None:
            self.disk.delete(self.prefix + file_of_group(group_id), now_ms)

    def delete_offsets(self, now_ms: int, group_id: str, keys: Iterable[tuple[str, int]]) -> None:
        """Forget ``group_id``'s committed offsets of the (topic, partition) ``keys`` (OffsetDelete, KIP-496):
        the group's file is rewritten (a durable write), or deleted when nothing is left."""
        offsets = self.groups.get(group_id)
        gone = set(keys)
        if not offsets or not gone & set(offsets):
            return
        self._store(now_ms, group_id, {k: v for k, v in offsets.items() if k not in gone})

    def _store(self, now_ms: int, group_id: str, offsets: dict[tuple[str, int], tuple[int, int, str | None]],
               keep_empty: bool = False) -> None:
        """Make ``offsets`` the group's committed offsets: its file rewritten atomically (a durable write), or
        deleted with the group when there are none (unless ``keep_empty``: a commit of no partition still
        writes the group's file, as before)."""
        path = self.prefix + file_of_group(group_id)
        if offsets or keep_empty:
            self.groups[group_id] = offsets
            data = {"group_id": group_id, "offsets": {f"{t}-{i}": list(v) for (t, i), v in sorted(offsets.items())}}
            self.disk.write_atomic(path, json.dumps(data, sort_keys=True), now_ms)
        else:
            del self.groups[group_id]
            self.disk.delete(path, now_ms)

    def fetch(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        """Committed (offset, leader epoch, metadata) per partition; -1 where nothing is committed."""
        offsets = self.groups.get(req.group_id, {})
        keys = sorted(offsets) if req.partitions is None else list(req.partitions)
        out = []
        for topic, index in keys:
            offset, epoch, meta = offsets.get((topic, index), (-1, -1, None))
            out.append(m.OffsetFetchPartition(topic, index, offset, epoch, meta))
        return m.OffsetFetchResponse(req.group_id, Errors.NONE, tuple(out))
