"""The group coordinator's storage: the ``__consumer_offsets`` partitions this broker leads, loaded into memory
(Kafka's ``CoordinatorRuntime`` with the ``OffsetMetadataManager`` state of ``GroupCoordinatorShard``), sans-I/O.

* **Which partition.** Group ``g`` lives in partition ``kafka_abs(java_string_hash(g)) % n`` of
  ``__consumer_offsets`` (``group_metadata.offsets_partition_for``), ``n`` the topic's partition count
  (``offsets.topic.num.partitions`` until it exists). Its coordinator is the partition's leader.
* **Load and unload** (``CoordinatorRuntime.scheduleLoadOperation`` / ``scheduleUnloadOperation``): a broker
  that becomes a partition's leader (or sees a new leader epoch) marks the shard *loading*; the next
  :meth:`CoordinatorRuntime.load_pending` reads the partition from its log start to its LEO and replays every
  record. The shard is loaded once its HWM reaches that LEO: until then the groups of that partition answer
  COORDINATOR_LOAD_IN_PROGRESS. (Kafka answers from a new leader at once, reading at its HWM, which can lag the
  previous leader's: an OffsetFetch could then miss a commit already acknowledged. kraftlog waits, as a new
  leader's HWM catches up as soon as its ISR fetches.) A broker that stops leading forgets the shard: its
  groups answer NOT_COORDINATOR and its pending writes fail NOT_COORDINATOR.
* **Writes** (``CoordinatorRuntime.scheduleWriteOperation``): records are appended as leader with acks=all
  through the :class:`PartitionWriter`; the write completes when the partition's HWM passes its last record.
  Append errors are answered as Kafka's ``GroupCoordinatorService`` maps them (:func:`coordinator_error`); a
  write the HWM does not reach within ``offsets.commit.timeout.ms`` fails REQUEST_TIMED_OUT (mapped to
  COORDINATOR_NOT_AVAILABLE). Its records stay in the log and count once committed, as in Kafka.
* **Two views** (Kafka's timeline snapshots at the committed offset): a shard keeps the state at its HWM
  (:attr:`CoordinatorShard.stable`: what OffsetFetch, DescribeGroups and a group's load read) and the records
  above it in order (:attr:`CoordinatorShard.pending`), moved into the stable view as the HWM passes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.records import RecordBatch
from .group_metadata import OFFSETS_TOPIC, offsets_partition_for
from .group_records import (
    GroupKey,
    GroupRecordError,
    GroupValue,
    OffsetKey,
    OffsetValue,
    UnknownRecord,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
)

__all__ = ["OFFSETS_TOPIC", "CoordinatorRuntime", "CoordinatorShard", "OffsetState", "PartitionWriter",
           "coordinator_error", "offset_record", "offset_tombstone", "group_record",
           "group_tombstone", "GroupRecord"]

#: A record the coordinator writes: (key bytes, value bytes or None for a tombstone).
GroupRecord = tuple[bytes, bytes | None]

#: Append errors as the group coordinator answers them (Kafka's ``GroupCoordinatorService`` /
#: ``CoordinatorRuntime`` error normalisation); others pass unchanged.
_ERROR_MAP: dict[int, int] = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
}


def coordinator_error(error: int) -> int:
    """The error a group request is answered with when its write failed with ``error`` (see module doc)."""
    return int(_ERROR_MAP.get(error, error))


def offset_record(group: str, topic: str, partition: int, value: OffsetValue) -> GroupRecord:
    """An OffsetCommitKey/OffsetCommitValue record."""
    return encode_key(OffsetKey(group, topic, partition)), encode_offset_value(value)


def offset_tombstone(group: str, topic: str, partition: int) -> GroupRecord:
    """The tombstone deleting a committed offset."""
    return encode_key(OffsetKey(group, topic, partition)), None


def group_record(group: str, value: GroupValue) -> GroupRecord:
    """A GroupMetadataKey/GroupMetadataValue record."""
    return encode_key(GroupKey(group)), encode_group_value(value)


def group_tombstone(group: str) -> GroupRecord:
    """The tombstone deleting a group's metadata."""
    return encode_key(GroupKey(group)), None


class PartitionWriter(Protocol):
    """What the runtime needs from the broker's replica manager (Kafka's ``CoordinatorPartitionWriter``)."""

    def coordinator_leaders(self) -> dict[int, int]:
        """The ``__consumer_offsets`` partitions this broker leads: index -> leader epoch."""

    def append_coordinator_records(self, now_ms: int, index: int, records: list[GroupRecord]) -> tuple[int, int]:
        """Append ``records`` as leader (acks=all, internal topic allowed): (error, the offset after the last)."""

    def coordinator_high_watermark(self, index: int) -> int:
        """The partition's HWM, -1 when this broker does not host it."""

    def coordinator_batches(self, index: int) -> Iterable[RecordBatch]:
        """The partition's batches from its log start to its LEO (raises OSError on a read error)."""


@dataclass(slots=True)
class OffsetState:
    """Committed offsets and stored group metadata as the replayed records leave them:
    ``offsets[group][(topic, partition)]`` and ``groups[group]``."""

    offsets: dict[str, dict[tuple[str, int], OffsetValue]] = field(default_factory=dict)
    groups: dict[str, GroupValue] = field(default_factory=dict)
    #: records that could not be read (skipped; see :mod:`kraftlog.broker.group_records`)
    unreadable: int = 0

    def replay(self, key: bytes | None, value: bytes | None) -> None:
        """Apply one record (Kafka's ``GroupCoordinatorShard.replay``): a value sets, a tombstone deletes."""
        try:
            k = decode_key(key)
            if isinstance(k, UnknownRecord):
                self.unreadable += 1
            elif isinstance(k, OffsetKey):
                if value is None:
                    group = self.offsets.get(k.group)
                    if group is not None:
                        group.pop((k.topic, k.partition), None)
                        if not group:
                            del self.offsets[k.group]
                else:
                    self.offsets.setdefault(k.group, {})[(k.topic, k.partition)] = decode_offset_value(value)
            elif value is None:
                self.groups.pop(k.group, None)
            else:
                self.groups[k.group] = decode_group_value(value)
        except GroupRecordError:
            self.unreadable += 1


@dataclass(slots=True)
class _Write:
    end_offset: int
    deadline_ms: int
    on_done: Callable[[int, int], None]


class CoordinatorShard:
    """One loaded (or loading) ``__consumer_offsets`` partition: ``index``, the ``leader_epoch`` it was loaded
    in, ``loaded`` once replayed; :attr:`stable` the state at the HWM, :attr:`pending` the records above it as
    ``(end offset, records)`` in log order, :attr:`writes` the writes waiting for the HWM."""

    def __init__(self, index: int, leader_epoch: int, since_ms: int = 0) -> None:
        self.index = index
        self.leader_epoch = leader_epoch
        self.since_ms = since_ms  # when it became led here (it loads at the next tick)
        self.replayed = False  # its log was read (load_pending)
        self.load_end = 0  # the LEO when it was read: loaded once the HWM reaches it
        self.loaded = False
        self.stable = OffsetState()
        self.pending: list[tuple[int, list[GroupRecord]]] = []
        self.writes: list[_Write] = []
        self.high_watermark = 0

    def offset_keys(self) -> dict[str, set[tuple[str, int]]]:
        """Each group's committed (topic, partition): the stable view's and those of the offset records above the
        HWM (tombstones included: a deletion tombstones them again, harmlessly)."""
        keys = {group: set(offsets) for group, offsets in self.stable.offsets.items()}
        for _, records in self.pending:
            for key, _ in records:
                try:
                    k = decode_key(key)
                except GroupRecordError:
                    continue
                if isinstance(k, OffsetKey):
                    keys.setdefault(k.group, set()).add((k.topic, k.partition))
        return keys

    def advance(self, hwm: int) -> None:
        """Move the records below ``hwm`` into :attr:`stable`."""
        self.high_watermark = max(self.high_watermark, hwm)
        while self.pending and self.pending[0][0] <= hwm:
            for key, value in self.pending.pop(0)[1]:
                self.stable.replay(key, value)


class CoordinatorRuntime:
    """The ``__consumer_offsets`` shards of one broker (see the module doc).

    ``writer``: the replica manager's side (:class:`PartitionWriter`); ``num_partitions``: how many partitions
    ``__consumer_offsets`` has (a callable: the topic's count in the metadata image, else
    ``offsets.topic.num.partitions``); ``commit_timeout_ms``: ``offsets.commit.timeout.ms``;
    ``on_load(now_ms, index, groups)`` is called with a shard's stored groups once it is loaded,
    ``on_unload(now_ms, index)`` when it is forgotten."""

    def __init__(self, writer: PartitionWriter, num_partitions: Callable[[], int], commit_timeout_ms: int,
                 on_load: Callable[[int, int, dict[str, GroupValue]], None] | None = None,
                 on_unload: Callable[[int, int], None] | None = None) -> None:
        self.writer = writer
        self.num_partitions = num_partitions
        self.commit_timeout_ms = commit_timeout_ms
        self.on_load = on_load
        self.on_unload = on_unload
        self.shards: dict[int, CoordinatorShard] = {}

    # ------------------------------------------------------------------ which shard
    def partition_of(self, group_id: str) -> int:
        """The ``__consumer_offsets`` partition of ``group_id``."""
        return offsets_partition_for(group_id, self.num_partitions())

    def status(self, group_id: str) -> int:
        """NONE when this broker coordinates ``group_id`` (its shard is loaded), COORDINATOR_LOAD_IN_PROGRESS
        while it loads, NOT_COORDINATOR otherwise (Kafka's ``CoordinatorRuntime`` context states)."""
        shard = self.shards.get(self.partition_of(group_id))
        if shard is None:
            return Errors.NOT_COORDINATOR
        return Errors.NONE if shard.loaded else Errors.COORDINATOR_LOAD_IN_PROGRESS

    def shard_of(self, group_id: str) -> CoordinatorShard | None:
        """The loaded shard holding ``group_id``, None when this broker does not coordinate it."""
        shard = self.shards.get(self.partition_of(group_id))
        return shard if shard is not None and shard.loaded else None

    # ------------------------------------------------------------------ load / unload
    def sync(self, now_ms: int) -> bool:
        """Follow leadership (after a metadata change or a log-directory failure): a partition led in a new
        leader epoch is marked loading, one no longer led is unloaded. True when a shard waits to be loaded."""
        leaders = self.writer.coordinator_leaders()
        for index in sorted(self.shards):
            shard = self.shards[index]
            if leaders.get(index) != shard.leader_epoch:
                self._unload(now_ms, shard)
        for index in sorted(leaders):
            if index not in self.shards:
                self.shards[index] = CoordinatorShard(index, leaders[index], now_ms)
        return self.loading

    @property
    def loading(self) -> bool:
        """Whether a shard waits for :meth:`load_pending`."""
        return any(not s.replayed for s in self.shards.values())

    def load_pending(self, now_ms: int) -> list[int]:
        """Load every shard marked loading (``CoordinatorLoaderImpl.load``): replay the partition's records up
        to its HWM into the stable view and keep those above it pending. A read error (OSError) leaves the
        shard loading (it is raised to the caller, whose directory goes offline). The indexes loaded."""
        done = []
        for index in sorted(self.shards):
            shard = self.shards[index]
            if shard.replayed:
                continue
            hwm = self.writer.coordinator_high_watermark(index)
            pending: list[GroupRecord] = []
            pending_end = -1
            for batch in self.writer.coordinator_batches(index):
                if batch.attributes & 0x20:  # a control batch (none are written: no transactions)
                    continue
                for offset, rec in zip(batch.record_offsets(), batch.records, strict=True):
                    if offset < hwm:
                        shard.stable.replay(rec.key, rec.value)
                    else:
                        pending.append((rec.key or b"", rec.value))
                        pending_end = offset + 1
            shard.high_watermark = hwm
            if pending:
                shard.pending.append((pending_end, pending))
            shard.replayed = True
            shard.load_end = max(hwm, pending_end)
            self._maybe_loaded(now_ms, shard)
            done.append(index)
        return done

    def _maybe_loaded(self, now_ms: int, shard: CoordinatorShard) -> None:
        """The shard is loaded once its HWM reached the LEO it was read up to (see the module doc)."""
        if shard.loaded or not shard.replayed or shard.high_watermark < shard.load_end:
            return
        shard.loaded = True
        if self.on_load is not None:
            self.on_load(now_ms, shard.index, dict(shard.stable.groups))

    def _unload(self, now_ms: int, shard: CoordinatorShard) -> None:
        del self.shards[shard.index]
        for w in shard.writes:
            w.on_done(now_ms, Errors.NOT_COORDINATOR)
        shard.writes.clear()
        if self.on_unload is not None:
            self.on_unload(now_ms, shard.index)

    def groups_of(self, index: int, group_ids: Iterable[str]) -> list[str]:
        """The ids among ``group_ids`` that live in partition ``index``."""
        return [g for g in group_ids if self.partition_of(g) == index]

    # ------------------------------------------------------------------ writes
    def write(self, now_ms: int, group_id: str, records: list[GroupRecord],
              on_done: Callable[[int, int], None]) -> None:
        """Append ``records`` to ``group_id``'s partition; ``on_done(now_ms, error)`` once the HWM passes them (NONE)
        or the write failed (the mapped error, :func:`coordinator_error`). With no records, ``on_done(NONE)``
        at once. NOT_COORDINATOR when the shard is not loaded here."""
        shard = self.shard_of(group_id)
        if shard is None:
            on_done(now_ms, Errors.NOT_COORDINATOR)
            return
        if not records:
            on_done(now_ms, Errors.NONE)
            return
        error, end = self.writer.append_coordinator_records(now_ms, shard.index, records)
        if error != Errors.NONE:
            on_done(now_ms, coordinator_error(error))
            return
        shard.pending.append((end, list(records)))
        shard.writes.append(_Write(end, now_ms + self.commit_timeout_ms, on_done))
        self.on_high_watermark(now_ms)

    def on_high_watermark(self, now_ms: int) -> None:
        """The HWM of a partition may have moved: commit what it passed and complete the writes it reached
        (Kafka's ``HighWatermarkListener``)."""
        for shard in list(self.shards.values()):
            if not shard.replayed or (shard.loaded and not shard.pending):
                continue
            hwm = self.writer.coordinator_high_watermark(shard.index)
            if hwm <= shard.high_watermark and (not shard.pending or shard.pending[0][0] > hwm):
                continue
            shard.advance(hwm)
            self._maybe_loaded(now_ms, shard)
            if shard.writes and shard.writes[0].end_offset <= hwm:
                done = [w for w in shard.writes if w.end_offset <= hwm]
                shard.writes = [w for w in shard.writes if w.end_offset > hwm]
                for w in done:
                    w.on_done(now_ms, Errors.NONE)

    def next_deadline(self) -> int | None:
        """The earliest write timeout or pending load (ms), None without either."""
        deadlines = [w.deadline_ms for s in self.shards.values() for w in s.writes]
        deadlines += [s.since_ms for s in self.shards.values() if not s.replayed]
        return min(deadlines) if deadlines else None

    def tick(self, now_ms: int) -> None:
        """Fail the writes whose ``offsets.commit.timeout.ms`` passed (REQUEST_TIMED_OUT, answered as
        COORDINATOR_NOT_AVAILABLE)."""
        for shard in self.shards.values():
            late = [w for w in shard.writes if w.deadline_ms <= now_ms]
            if late:
                shard.writes = [w for w in shard.writes if w.deadline_ms > now_ms]
                for w in late:
                    w.on_done(now_ms, coordinator_error(Errors.REQUEST_TIMED_OUT))

    # ------------------------------------------------------------------ reads (the state at the HWM)
    def committed(self, group_id: str) -> dict[tuple[str, int], OffsetValue]:
        """``group_id``'s committed offsets at the HWM (empty when none or not coordinated here)."""
        shard = self.shard_of(group_id)
        return {} if shard is None else dict(shard.stable.offsets.get(group_id, {}))

    def stored_group(self, group_id: str) -> GroupValue | None:
        """``group_id``'s stored metadata at the HWM, None when none."""
        shard = self.shard_of(group_id)
        return None if shard is None else shard.stable.groups.get(group_id)

    def group_ids(self) -> list[str]:
        """Every group with committed offsets or stored metadata in a loaded shard, sorted."""
        ids: set[str] = set()
        for shard in self.shards.values():
            if shard.loaded:
                ids |= set(shard.stable.offsets) | set(shard.stable.groups)
        return sorted(ids)

    def known(self, group_id: str) -> bool:
        """Whether ``group_id`` has committed offsets or stored metadata here (at the HWM)."""
        shard = self.shard_of(group_id)
        return shard is not None and (group_id in shard.stable.offsets or group_id in shard.stable.groups)

    def fetch(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        """OffsetFetch at the HWM (``OffsetMetadataManager.fetchOffsets`` / ``fetchAllOffsets``): committed
        (offset, leader epoch, metadata) per partition asked (every committed one when ``partitions`` is None),
        -1 where nothing is committed."""
        offsets = self.committed(req.group_id)
        keys = sorted(offsets) if req.partitions is None else list(req.partitions)
        out = []
        for topic, index in keys:
            v = offsets.get((topic, index))
            out.append(m.OffsetFetchPartition(topic, index, -1, -1, None) if v is None else
                       m.OffsetFetchPartition(topic, index, v.offset, v.leader_epoch, v.metadata))
        return m.OffsetFetchResponse(req.group_id, Errors.NONE, tuple(out))

    def latest_offset_keys(self, group_id: str) -> set[tuple[str, int]]:
        """The (topic, partition) of every offset ``group_id`` has committed, the records above the HWM
        included (what a deletion must tombstone)."""
        shard = self.shard_of(group_id)
        return set() if shard is None else shard.offset_keys().get(group_id, set())

    def all_offset_keys(self) -> dict[str, set[tuple[str, int]]]:
        """Every loaded group's committed (topic, partition), records above the HWM included, by group id in
        sorted order."""
        out: dict[str, set[tuple[str, int]]] = {}
        for index in sorted(self.shards):
            shard = self.shards[index]
            if shard.loaded:
                out.update(shard.offset_keys())
        return dict(sorted(out.items()))
