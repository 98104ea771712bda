"""The KRaft log's batches on the wire: a :class:`~kraftlog.protocol.raft_records.RaftBatch` is one Kafka v2
record batch (:class:`~kraftlog.protocol.records.RecordBatch`), and back. See :mod:`kraftlog.protocol.wire`.

A batch's header carries the RaftBatch's ``base_offset`` and, as its partition leader epoch, its ``epoch``
(Kafka's KRaft log writes the leader epoch there); every record's timestamp is the batch's ``append_time_ms``;
producer id, epoch and base sequence are Kafka's none (-1). A data batch's records carry kraftlog's metadata
records as their values (:func:`kraftlog.metadata.codec.encode_metadata_record`, as a MetadataFetch response's
``records`` do), without keys. A control batch has the control attribute (bit 5, Kafka's
``isControlBatch``) and its records carry KRaft's control records as Kafka writes them
(``ControlRecordUtils``): the key is Kafka's ``ControlRecordType`` key, int16 version 0 and int16 type
(LEADER_CHANGE 2, KRAFT_VERSION 5, KRAFT_VOTERS 6); the value is the record's int16 schema version
followed by the record in Kafka's serialization at that version (``MessageUtil.toVersionPrefixedBytes``,
with kio's entities of ``LeaderChangeMessage.json``, ``KRaftVersionRecord.json`` and ``VotersRecord.json``).
kraftlog writes schema version 0 of each, as Kafka 4 does, and reads LeaderChangeMessage v0-v1 (v1's voter
directory ids are not kept: the core's LeaderChangeMessage names voters by id).

Decoding raises :class:`~kraftlog.protocol.errors.WireError`: a CRC mismatch or a record that does not frame
(:class:`~kraftlog.protocol.records.CorruptRecordError`, raised when the batch is read), a control key of
another type (ABORT, COMMIT, the snapshot's header and footer) or an unknown one, a schema version kraftlog
does not read, a value that does not parse, a data record that is not a metadata record.
"""

from __future__ import annotations

import io
import struct
from typing import Any

from kio.schema.k_raft_version_record.v0 import data as kraft_version_v0
from kio.schema.leader_change_message.v0 import data as leader_change_v0
from kio.schema.leader_change_message.v1 import data as leader_change_v1
from kio.schema.voters_record.v0 import data as voters_v0
from kio.serial import entity_reader, entity_writer

from ...metadata.codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from ..errors import WireError
from ..raft_records import (
    ControlRecord,
    KRaftVersionRecord,
    LeaderChangeMessage,
    RaftBatch,
    RaftEndpoint,
    Voter,
    VotersRecord,
)
from ..records import ATTR_CONTROL, Record, RecordBatch
from .prescan import check_lengths

__all__ = ["LEADER_CHANGE", "KRAFT_VERSION", "KRAFT_VOTERS", "encode_control_record", "decode_control_record",
           "to_record_batch", "from_record_batch"]

#: Kafka's ``ControlRecordType`` ids of KRaft's control records.
LEADER_CHANGE = 2
KRAFT_VERSION = 5
KRAFT_VOTERS = 6
#: Kafka's ``ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION``.
_KEY_VERSION = 0
_KEY = struct.Struct(">hh")
_SHORT = struct.Struct(">h")
#: Kafka's ``RecordBatch.NO_PRODUCER_ID`` and friends: KRaft's batches are not idempotent.
_NONE = -1


def _write(entity: Any) -> bytes:
    out = io.BytesIO()
    entity_writer(type(entity))(out, entity)
    return out.getvalue()


def encode_control_record(record: object) -> tuple[bytes, bytes]:
    """(key, value) of one KRaft control record as Kafka writes it (module docstring): the key is int16 0 and
    the ``ControlRecordType`` id, the value the int16 schema version 0 and the record. Raises
    :class:`WireError` for anything else."""
    entity: Any
    # kio's entities type their ints as its own primitives (i16, i32, BrokerId, u16): plain ints here
    lc: Any = leader_change_v0
    vr: Any = voters_v0
    kv: Any = kraft_version_v0
    if isinstance(record, LeaderChangeMessage):
        kind = LEADER_CHANGE
        entity = lc.LeaderChangeMessage(
            version=0, leader_id=record.leader_id, voters=tuple(lc.Voter(voter_id=v) for v in record.voters),
            granting_voters=tuple(lc.Voter(voter_id=v) for v in record.granting_voters))
    elif isinstance(record, KRaftVersionRecord):
        kind = KRAFT_VERSION
        entity = kv.KRaftVersionRecord(version=0, k_raft_version=record.kraft_version)
    elif isinstance(record, VotersRecord):
        kind = KRAFT_VOTERS
        entity = vr.VotersRecord(version=0, voters=tuple(
            vr.Voter(voter_id=v.voter_id, voter_directory_id=v.voter_directory_id,
                     endpoints=tuple(vr.Endpoint(name=e.name, host=e.host, port=e.port) for e in v.endpoints),
                     k_raft_version_feature=vr.KRaftVersionFeature(min_supported_version=v.min_supported_version,
                                                                   max_supported_version=v.max_supported_version))
            for v in record.voters))
    else:
        raise WireError(f"{type(record).__name__} is not a KRaft control record")
    return _KEY.pack(_KEY_VERSION, kind), _SHORT.pack(0) + _write(entity)


#: (control type, schema version) -> kio's entity class of the record.
_SCHEMAS: dict[tuple[int, int], type[Any]] = {
    (LEADER_CHANGE, 0): leader_change_v0.LeaderChangeMessage,
    (LEADER_CHANGE, 1): leader_change_v1.LeaderChangeMessage,
    (KRAFT_VERSION, 0): kraft_version_v0.KRaftVersionRecord,
    (KRAFT_VOTERS, 0): voters_v0.VotersRecord,
}
_READERS: dict[type[Any], Any] = {}


def decode_control_record(key: bytes | None, value: bytes | None) -> ControlRecord:
    """The KRaft control record of one control batch record's key and value (inverse of
    :func:`encode_control_record`). Raises :class:`WireError` for a key or value kraftlog does not read."""
    if key is None or len(key) < _KEY.size:
        raise WireError(f"control record key {key!r}: shorter than Kafka's (int16 version, int16 type)")
    key_version, kind = _KEY.unpack_from(key)
    if key_version < 0:
        raise WireError(f"control record key version {key_version}")
    if value is None or len(value) < _SHORT.size:
        raise WireError(f"control record of type {kind} without a value")
    (version,) = _SHORT.unpack_from(value)
    cls = _SCHEMAS.get((kind, version))
    if cls is None:
        known = kind in {k for k, _ in _SCHEMAS}
        raise WireError(f"control record type {kind} version {version}: " + (
            "a version kraftlog does not read" if known else "not a KRaft control record kraftlog reads"))
    reader = _READERS.get(cls)
    if reader is None:
        reader = _READERS[cls] = entity_reader(cls)
    # a value from the network (a Fetch response's control batch): array lengths checked before kio
    # allocates from them (.prescan)
    check_lengths(cls, value, _SHORT.size)
    try:
        entity, _ = reader(value, _SHORT.size)
    except Exception as exc:  # kio's reader raises its own errors on bytes that do not parse
        raise WireError(f"control record type {kind}: {type(exc).__name__}: {exc}") from exc
    if kind == LEADER_CHANGE:
        return LeaderChangeMessage(entity.leader_id, tuple(v.voter_id for v in entity.voters),
                                   tuple(v.voter_id for v in entity.granting_voters))
    if kind == KRAFT_VERSION:
        return KRaftVersionRecord(entity.k_raft_version)
    return VotersRecord(tuple(
        Voter(v.voter_id, v.voter_directory_id, tuple(RaftEndpoint(e.name, e.host, e.port) for e in v.endpoints),
              v.k_raft_version_feature.min_supported_version, v.k_raft_version_feature.max_supported_version)
        for v in entity.voters))


def to_record_batch(batch: RaftBatch) -> RecordBatch:
    """The Kafka record batch of one KRaft batch (module docstring). Raises :class:`WireError` for a batch
    whose epoch is negative (a KRaft batch is always written in a leader epoch, >= 0) or whose records are
    not metadata records (data) or control records (control)."""
    if batch.epoch < 0:
        raise WireError(f"KRaft batch at offset {batch.base_offset}: leader epoch {batch.epoch} (must be >= 0)")
    ts = batch.append_time_ms
    records: list[Record] = []
    if batch.control:
        for rec in batch.records:
            key, value = encode_control_record(rec)
            records.append(Record(ts, key, value))
    else:
        try:
            records = [Record(ts, None, encode_metadata_record(rec)) for rec in batch.records]
        except MetadataRecordError as exc:
            raise WireError(f"KRaft data batch at offset {batch.base_offset}: {exc}") from exc
    return RecordBatch(batch.base_offset, batch.epoch, tuple(records), _NONE, _NONE, _NONE,
                       attributes=ATTR_CONTROL if batch.control else 0)


def from_record_batch(batch: RecordBatch) -> RaftBatch:
    """The KRaft batch of one Kafka record batch (inverse of :func:`to_record_batch`): its records decoded
    (CRC and framing checked: :class:`~kraftlog.protocol.records.CorruptRecordError`), control records or
    metadata records by the batch's control attribute. Raises :class:`WireError` as the module docstring
    says."""
    records = batch.records
    control = bool(batch.attributes & ATTR_CONTROL)
    out: tuple[object, ...]
    if control:
        out = tuple(decode_control_record(r.key, r.value) for r in records)
    else:
        try:
            out = tuple(decode_metadata_record(_value(r)) for r in records)
        except MetadataRecordError as exc:
            raise WireError(f"KRaft data batch at offset {batch.base_offset}: {exc}") from exc
    append_time_ms = records[0].timestamp if records else batch.max_timestamp
    return RaftBatch(batch.base_offset, batch.partition_leader_epoch, out, control, append_time_ms)


def _value(record: Record) -> bytes:
    if record.value is None:
        raise MetadataRecordError("a record without a value")
    return record.value
