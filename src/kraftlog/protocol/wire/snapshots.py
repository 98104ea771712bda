"""A metadata snapshot's bytes: Kafka's ``.checkpoint`` file layout (``RecordsSnapshotWriter``), and back.

A snapshot is a sequence of v2 record batches, all in the snapshot's epoch, their offsets counting from 0:

1. a control batch holding one ``SnapshotHeaderRecord`` (``ControlRecordType`` 3; schema v0: ``Version`` 0 and
   ``LastContainedLogTimestamp``, the append time in ms of the last log record the snapshot contains);
2. at ``kraft.version`` 1 (KIP-853), a control batch holding the ``KRaftVersionRecord`` and the ``VotersRecord`` in
   force at the snapshot's end offset (Kafka's ``RecordsSnapshotWriter``: a replica that loads the snapshot learns
   the voter set the cleaned log no longer holds);
3. data batches of at most :data:`RECORDS_PER_BATCH` records, each value a metadata record as kraftlog's metadata
   log holds it (:func:`kraftlog.metadata.codec.encode_metadata_record`);
4. a control batch holding one ``SnapshotFooterRecord`` (type 4; v0: ``Version`` 0).

The key and value of a control record are Kafka's (``ControlRecordUtils``): key int16 version 0 and int16 type,
value the int16 schema version then the record (kio's entities of ``SnapshotHeaderRecord.json`` and
``SnapshotFooterRecord.json``). The same bytes are the snapshot file, what FetchSnapshot (API 59) serves in
chunks, and what a fetcher writes once it has them all.

:func:`decode_snapshot` raises :class:`~kraftlog.protocol.errors.WireError` for bytes that are not a whole
snapshot: a batch whose CRC-32C does not match or that does not frame, a missing or misplaced header or footer,
a data record that is not a metadata record: a snapshot is used whole or not at all.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

from kio.schema.snapshot_footer_record.v0 import data as footer_v0
from kio.schema.snapshot_header_record.v0 import data as header_v0
from kio.serial import entity_reader, entity_writer

from ...metadata.codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from ..errors import WireError
from ..records import ATTR_CONTROL, Record, RecordBatch, decode_batches, encode_batches
from .raft_batches import (  # Kafka's control record key and value prefix, no producer id
    _KEY,
    _NONE,
    _SHORT,
    KRAFT_VERSION,
    KRAFT_VOTERS,
    decode_control_record,
    encode_control_record,
)

__all__ = ["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER", "RECORDS_PER_BATCH", "encode_snapshot", "decode_snapshot",
           "decode_snapshot_with_control"]

#: Kafka's ``ControlRecordType`` ids of a snapshot's header and footer.
SNAPSHOT_HEADER = 3
SNAPSHOT_FOOTER = 4
#: Metadata records per data batch of a snapshot.
RECORDS_PER_BATCH = 1000


def _control(kind: int, entity: Any) -> Record:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return Record(-1, _KEY.pack(0, kind), _SHORT.pack(0) + out.getvalue())


def encode_snapshot(records: Sequence[object], epoch: int, last_contained_log_timestamp_ms: int,
                    control: Sequence[object] = ()) -> bytes:
    """The snapshot file of ``records`` (metadata records, in order) written in leader ``epoch`` (module
    docstring); every batch's timestamp is ``last_contained_log_timestamp_ms``; ``control``: the
    ``KRaftVersionRecord`` and ``VotersRecord`` of a kraft.version 1 quorum (one control batch after the header),
    none otherwise. Raises :class:`WireError` for a record that is not a metadata record."""
    ts = last_contained_log_timestamp_ms
    hv: Any = header_v0  # kio types its ints as its own primitives (i16, i64): plain ints here
    fv: Any = footer_v0
    header = hv.SnapshotHeaderRecord(version=0, last_contained_log_timestamp=ts)
    footer = fv.SnapshotFooterRecord(version=0)
    head = _control(SNAPSHOT_HEADER, header)
    batches = [RecordBatch(0, epoch, (Record(ts, head.key, head.value),), _NONE, _NONE, _NONE,
                           attributes=ATTR_CONTROL)]
    offset = 1
    if control:
        pairs = [encode_control_record(r) for r in control]
        batches.append(RecordBatch(offset, epoch, tuple(Record(ts, k, v) for k, v in pairs), _NONE, _NONE, _NONE,
                                   attributes=ATTR_CONTROL))
        offset += len(pairs)
    for start in range(0, len(records), RECORDS_PER_BATCH):
        chunk = records[start:start + RECORDS_PER_BATCH]
        try:
            values = tuple(Record(ts, None, encode_metadata_record(r)) for r in chunk)
        except MetadataRecordError as exc:
            raise WireError(f"snapshot record at {start}: {exc}") from exc
        batches.append(RecordBatch(offset, epoch, values, _NONE, _NONE, _NONE))
        offset += len(values)
    foot = _control(SNAPSHOT_FOOTER, footer)
    batches.append(RecordBatch(offset, epoch, (Record(ts, foot.key, foot.value),), _NONE, _NONE, _NONE,
                               attributes=ATTR_CONTROL))
    return encode_batches(batches)


def _control_kind(batch: RecordBatch) -> int:
    """The ``ControlRecordType`` of a header or footer batch (exactly one control record)."""
    if len(batch.records) != 1 or batch.records[0].key is None or len(batch.records[0].key or b"") < _KEY.size:
        raise WireError(f"snapshot control batch at offset {batch.base_offset}: not one control record")
    key = batch.records[0].key
    assert key is not None
    version, kind = _KEY.unpack_from(key)
    if version != 0:
        raise WireError(f"snapshot control record key version {version}")
    return int(kind)


def decode_snapshot(data: bytes) -> tuple[list[object], int]:
    """(the metadata records, the last contained log timestamp in ms) of a snapshot's bytes (inverse of
    :func:`encode_snapshot`, its control records dropped). Raises :class:`WireError` (module docstring)."""
    _control_records, records, ts = decode_snapshot_with_control(data)
    return records, ts


def decode_snapshot_with_control(data: bytes) -> tuple[list[object], list[object], int]:
    """(the KRaftVersionRecord and VotersRecord it holds, the metadata records, the last contained log timestamp
    in ms) of a snapshot's bytes. Raises :class:`WireError` (module docstring)."""
    try:
        batches = decode_batches(data)
    except WireError:
        raise
    except Exception as exc:  # the decoder's own errors on bytes that do not frame
        raise WireError(f"snapshot: {type(exc).__name__}: {exc}") from exc
    if len(batches) < 2:
        raise WireError(f"snapshot of {len(batches)} batch(es): a header and a footer are required")
    framed = sum(b.size_bytes for b in batches)
    if framed != len(data):
        raise WireError(f"snapshot: {len(data) - framed} trailing bytes after its last whole batch")
    expected, epoch = 0, batches[0].partition_leader_epoch
    for b in batches:  # the fields the CRC does not cover: offsets from 0 without gaps, one epoch
        if b.base_offset != expected or b.partition_leader_epoch != epoch:
            raise WireError(f"snapshot: a batch at offset {b.base_offset} in epoch {b.partition_leader_epoch} "
                            f"where offset {expected} in epoch {epoch} was expected")
        expected += b.record_count
    first, last = batches[0], batches[-1]
    if not first.attributes & ATTR_CONTROL or _control_kind(first) != SNAPSHOT_HEADER:
        raise WireError("snapshot: its first batch is not a SnapshotHeaderRecord")
    if not last.attributes & ATTR_CONTROL or _control_kind(last) != SNAPSHOT_FOOTER:
        raise WireError("snapshot: its last batch is not a SnapshotFooterRecord (an incomplete snapshot)")
    value = first.records[0].value or b""
    reader: Any = entity_reader(header_v0.SnapshotHeaderRecord)
    try:
        header, _ = reader(value, _SHORT.size)
    except Exception as exc:  # kio's reader raises its own errors on bytes that do not parse
        raise WireError(f"snapshot header: {type(exc).__name__}: {exc}") from exc
    records: list[object] = []
    control: list[object] = []
    for i, batch in enumerate(batches[1:-1]):
        if batch.attributes & ATTR_CONTROL and i == 0:
            for r in batch.records:  # KIP-853's voters, right after the header
                kind = _KEY.unpack_from(r.key)[1] if r.key is not None and len(r.key) >= _KEY.size else -1
                if kind not in (KRAFT_VERSION, KRAFT_VOTERS):
                    raise WireError(f"snapshot: control record type {kind} after the header (only the kraft.version"
                                    " and the voters belong there)")
                control.append(decode_control_record(r.key, r.value))
            continue
        if batch.attributes & ATTR_CONTROL:
            raise WireError(f"snapshot: a control batch at offset {batch.base_offset} between header and footer")
        for r in batch.records:
            if r.value is None:
                raise WireError(f"snapshot batch at offset {batch.base_offset}: a record without a value")
            try:
                records.append(decode_metadata_record(r.value))
            except MetadataRecordError as exc:
                raise WireError(f"snapshot batch at offset {batch.base_offset}: {exc}") from exc
    return control, records, int(header.last_contained_log_timestamp)
