"""The group coordinator's offset store (Kafka's ``GroupCoordinator`` offset commit/fetch path).

Which broker coordinates a group: Kafka hashes the group id onto a ``__consumer_offsets`` partition
(``abs(groupId.hashCode) % offsets.topic.num.partitions``) and uses its leader. kraftlog keeps no
internal offsets topic: the same Java hash picks a starting broker id, and the coordinator is the
first active (registered, unfenced, not shutting down) broker from there in id order, as every broker
computes it from its MetadataImage.

Committed offsets (with the leader epoch of the last consumed record, KIP-320) are kept per group and
written through the broker's Disk with an atomic, durable write on every commit. They are *not*
replicated: when the coordinator moves to another broker, that broker knows only what was committed
to it. (Kafka replicates them through ``__consumer_offsets``.)
"""

from __future__ import annotations

import json

from ..metadata.image import MetadataImage
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..storage.disk import Disk

OFFSETS_DIR = "__consumer_offsets"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit wrap), as Kafka uses for group ids."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def coordinator_for(group_id: str, image: MetadataImage) -> int:
    """The broker id coordinating ``group_id`` in ``image``, or -1 when no broker is active."""
    ids = sorted(image.brokers)
    if not ids:
        return -1
    start = abs(java_string_hash(group_id)) % len(ids)
    for i in range(len(ids)):
        b = ids[(start + i) % len(ids)]
        if image.is_active(b):
            return b
    return -1


class OffsetStore:
    """Committed offsets of the groups this broker coordinates, persisted at
    ``{log_dir}/__consumer_offsets/{group}`` as JSON ``{"topic-partition": [offset, leader_epoch, metadata]}``."""

    def __init__(self, disk: Disk, log_dir: str) -> None:
        self.disk = disk
        self.prefix = f"{log_dir}/{OFFSETS_DIR}/"
        self.groups: dict[str, dict[tuple[str, int], tuple[int, int, str | None]]] = {}
        for path in disk.list(self.prefix):
            raw = disk.read_value(path)
            try:
                data = json.loads(raw)
            except (TypeError, ValueError):
                continue
            offsets = {}
            for name, (offset, epoch, meta) in data.items():
                topic, _, idx = name.rpartition("-")
                offsets[(topic, int(idx))] = (int(offset), int(epoch), meta)
            self.groups[path[len(self.prefix):]] = offsets

    def commit(self, req: m.OffsetCommitRequest, now_ms: int) -> m.OffsetCommitResponse:
        """Store the offsets (a durable write) and answer NONE per partition."""
        offsets = self.groups.setdefault(req.group_id, {})
        for p in req.partitions:
            offsets[(p.topic, p.partition)] = (p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
        data = {f"{t}-{i}": list(v) for (t, i), v in sorted(offsets.items())}
        self.disk.write_atomic(self.prefix + req.group_id, json.dumps(data, sort_keys=True), now_ms)
        return m.OffsetCommitResponse(tuple(m.OffsetCommitPartitionResponse(p.topic, p.partition, Errors.NONE)
                                            for p in req.partitions))

    def fetch(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        """Committed (offset, leader epoch, metadata) per partition; -1 where nothing is committed."""
        offsets = self.groups.get(req.group_id, {})
        keys = sorted(offsets) if req.partitions is None else list(req.partitions)
        out = []
        for topic, index in keys:
            offset, epoch, meta = offsets.get((topic, index), (-1, -1, None))
            out.append(m.OffsetFetchPartition(topic, index, offset, epoch, meta))
        return m.OffsetFetchResponse(req.group_id, Errors.NONE, tuple(out))
