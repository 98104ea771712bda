"""Metadata snapshots (KRaft): the image written as records, an image loaded from them, and when to write one.

* :func:`image_records`: a :class:`~.image.MetadataImage` as the metadata records that rebuild it (Kafka's
  ``MetadataImage.write(ImageWriter)``: the brokers' registrations, each topic with its partitions' full state,
  the configs). Replaying them into an empty image gives back the same image (:func:`image_from_snapshot`);
  the property test in ``tests/test_metadata_snapshot.py`` checks that an image rebuilt from any snapshot plus
  the log after it equals the image replayed from offset 0.
* :class:`SnapshotId`: Kafka's ``OffsetAndEpoch`` of a snapshot: its end offset (the offset after the last
  record it contains, exclusive) and the epoch of that last record.
* :class:`SnapshotGenerator`: Kafka's ``SnapshotGenerator`` (``org.apache.kafka.image.publisher``) policy: a
  snapshot once at least ``metadata.log.max.record.bytes.between.snapshots`` bytes of records were replayed
  since the last one, or, when records were replayed, once ``metadata.log.max.snapshot.interval.ms`` passed
  (0 disables the time rule); never while disabled (Kafka disables it after a metadata fault, so that a record
  the image could not apply is not compacted away).
* :func:`metadata_record_bytes`: the bytes a metadata record takes in a metadata log file (one record batch), the
  measure the generator and the log's retention count in.

Sans-I/O: times are ms ints passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .codec import encode_metadata_record
from .image import MetadataDelta, MetadataImage
from .records import (
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

__all__ = ["SnapshotId", "SnapshotGenerator", "image_records", "image_from_snapshot", "metadata_record_bytes",
           "records_bytes", "RECORD_BATCH_OVERHEAD"]

#: Kafka's ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD``: a v2 batch's header, in bytes.
RECORD_BATCH_OVERHEAD = 61


@dataclass(frozen=True, order=True, slots=True)
class SnapshotId:
    """Kafka's ``OffsetAndEpoch`` naming a snapshot: ``end_offset`` is exclusive (the snapshot holds the image at
    metadata offset ``end_offset - 1``), ``epoch`` is the leader epoch of that last record (kraftlog's single
    controller writes epoch 0). Ordered by end offset, then epoch, as Kafka's snapshots are."""

    end_offset: int
    epoch: int

    def file_name(self) -> str:
        """Kafka's snapshot file name (``Snapshots.filenameFromSnapshotId``): ``<end offset, 20 digits>-<epoch, 10
        digits>.checkpoint``."""
        return f"{self.end_offset:020d}-{self.epoch:010d}.checkpoint"

    @staticmethod
    def from_file_name(name: str) -> SnapshotId | None:
        """The id a ``.checkpoint`` file name names, None for any other name (a ``.part`` or ``.deleted`` file,
        a stray file)."""
        stem, dot, suffix = name.rpartition(".")
        if not dot or suffix != "checkpoint":
            return None
        offset, dash, epoch = stem.partition("-")
        if (not dash or len(offset) != 20 or len(epoch) != 10 or not offset.isdigit() or not epoch.isdigit()):
            return None
        return SnapshotId(int(offset), int(epoch))


def _varint_len(n: int) -> int:
    """Bytes of ``n`` as a zig-zag varint (Kafka's ``ByteUtils.sizeOfVarint``)."""
    z = (n << 1) ^ (n >> 63)
    size = 1
    while z >= 0x80:
        z >>= 7
        size += 1
    return size


#: id(record) -> (record, its bytes), at most ``_SIZES_KEPT`` (cleared when full)
_SIZES: dict[int, tuple[object, int]] = {}
_SIZES_KEPT = 8192


def metadata_record_bytes(record: object) -> int:
    """The bytes ``record`` takes in a metadata log file: one v2 record batch holding one record whose value is
    the record's JSON (:func:`~.codec.encode_metadata_record`), no key, no headers (``net/segment.py``'s
    ``encode_item``). Raises :class:`~.codec.MetadataRecordError` for a type that is not a metadata record.

    Records are immutable and the simulator hands the same record object to the controller and every broker, so
    the size of the latest records is kept by identity (the record is held with it, so its id is not reused)."""
    key = id(record)
    hit = _SIZES.get(key)
    if hit is not None and hit[0] is record:
        return hit[1]
    value = len(encode_metadata_record(record))
    # attributes, timestamp delta 0, offset delta 0, key length -1, value length, value, header count 0
    body = 1 + 1 + 1 + 1 + _varint_len(value) + value + 1
    size = RECORD_BATCH_OVERHEAD + _varint_len(body) + body
    if len(_SIZES) >= _SIZES_KEPT:
        _SIZES.clear()
    _SIZES[key] = (record, size)
    return size


def image_records(image: MetadataImage) -> list[MetadataRecord]:
    """The records that rebuild ``image`` from an empty one (Kafka's ``MetadataImage.write``): one
    RegisterBrokerRecord per broker (its registration as it is now: fencing, controlled shutdown, online log
    directories), per topic a TopicRecord and one PartitionRecord per partition (its full state: ISR, ELR, last
    known ELR and leader, epochs, leader recovery state), one ConfigRecord per config entry, one
    UserScramCredentialRecord per SCRAM credential. Sorted (brokers by id, topics by name, configs by resource and
    name, credentials by user and mechanism), so the same image always gives the same records."""
    out: list[MetadataRecord] = []
    for broker_id, b in sorted(image.brokers.items()):
        out.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=b.incarnation_id, broker_epoch=b.broker_epoch, rack=b.rack,
            fenced=b.fenced, in_controlled_shutdown=b.in_controlled_shutdown,
            previous_broker_epoch=b.previous_broker_epoch, listeners=b.listeners, log_dirs=b.log_dirs))
    for name, topic in sorted(image.topics.items()):
        out.append(TopicRecord(name, topic.topic_id))
        for index in range(topic.partition_count):
            p = image.partitions.get((name, index))
            if p is None:
                continue
            out.append(PartitionRecord(
                partition_id=index, topic_id=topic.topic_id, replicas=p.replicas, isr=p.isr, leader=p.leader,
                leader_epoch=p.leader_epoch, partition_epoch=p.partition_epoch,
                leader_recovery_state=p.leader_recovery_state, eligible_leader_replicas=p.elr,
                last_known_elr=p.last_known_elr, last_known_leader=p.last_known_leader))
    for (resource_type, resource_name), entries in sorted(image.configs.items()):
        for config_name, value in sorted(entries.items()):
            out.append(ConfigRecord(resource_type, resource_name, config_name, value))
    out.extend(credential for _, credential in sorted(image.scram_credentials.items()))
    return out


def image_from_snapshot(records: Iterable[object], snapshot_id: SnapshotId) -> tuple[MetadataImage, MetadataDelta]:
    """The image a snapshot's ``records`` hold, at metadata offset ``snapshot_id.end_offset - 1`` (Kafka's
    ``MetadataLoader`` loading a snapshot into an empty delta), and the delta from an empty image (every broker,
    topic, partition and config it names; ``deleted_topics`` empty: a snapshot holds no deletion)."""
    image, delta = MetadataImage().replay(records, 0)
    return replace(image, offset=snapshot_id.end_offset - 1), delta


class SnapshotGenerator:
    """When to write a metadata snapshot (Kafka's ``SnapshotGenerator``). ``max_bytes_since_last_snapshot``:
    ``metadata.log.max.record.bytes.between.snapshots`` (bytes, >= 1); ``max_time_since_last_snapshot_ms``:
    ``metadata.log.max.snapshot.interval.ms`` (ms, 0: no time rule). The clock of the time rule starts at
    ``now_ms`` and again at every snapshot written or loaded."""

    def __init__(self, max_bytes_since_last_snapshot: int, max_time_since_last_snapshot_ms: int, now_ms: int) -> None:
        self.max_bytes_since_last_snapshot = max_bytes_since_last_snapshot
        self.max_time_since_last_snapshot_ms = max_time_since_last_snapshot_ms
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time_ms = now_ms
        #: why snapshots are disabled, None while they are not (Kafka's ``disabledReason``)
        self.disabled_reason: str | None = None

    def publish_log_delta(self, num_bytes: int, now_ms: int) -> str | None:
        """Records of ``num_bytes`` bytes were replayed (Kafka's ``publishLogDelta``): why a snapshot of the new
        image is due now, or None. When one is due the counters restart (Kafka's ``scheduleEmit`` then
        ``resetSnapshotCounters``), even while disabled (nothing is written then: Kafka logs that it skips)."""
        self.bytes_since_last_snapshot += num_bytes
        if self.bytes_since_last_snapshot >= self.max_bytes_since_last_snapshot:
            reason = f"we have replayed at least {self.max_bytes_since_last_snapshot} bytes"
        elif (self.max_time_since_last_snapshot_ms != 0
              and now_ms - self.last_snapshot_time_ms >= self.max_time_since_last_snapshot_ms):
            reason = f"we have waited at least {self.max_time_since_last_snapshot_ms} ms"
        else:
            return None
        self.reset(now_ms)
        return None if self.disabled_reason is not None else reason

    def publish_snapshot(self, now_ms: int) -> None:
        """A snapshot was loaded (Kafka's ``publishSnapshot``): the counters restart."""
        self.reset(now_ms)

    def reset(self, now_ms: int) -> None:
        """Kafka's ``resetSnapshotCounters``."""
        self.bytes_since_last_snapshot = 0
        self.last_snapshot_time_ms = now_ms

    def disable(self, reason: str) -> None:
        """No snapshot from now on (Kafka's ``SnapshotGenerator.disable``, on a metadata fault)."""
        if self.disabled_reason is None:
            self.disabled_reason = reason


def records_bytes(records: Sequence[object]) -> int:
    """The bytes ``records`` take in a metadata log file (:func:`metadata_record_bytes` summed)."""
    return sum(metadata_record_bytes(r) for r in records)
