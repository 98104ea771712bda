"""The wire edge: core messages <-> kio entities <-> Kafka bytes.

Every core message type of :mod:`kraftlog.protocol.messages` maps to the kio entity of the Kafka API
version its request class names (``VERSION``; a response uses its request's version), and from there to
the bytes of a Kafka request or response frame. The simulator's *wire switch* calls :func:`roundtrip`
on every message it delivers, so a mapping bug surfaces in simulation; the TCP driver uses
:func:`decode_request` / :func:`encode_response` (broker side) and :func:`encode_request` /
:func:`decode_response` (client side).

Layers, each usable on its own:

* :func:`to_kio` / :func:`from_kio` -- core message <-> kio entity (kio's frozen dataclasses).
* :func:`encode_request` / :func:`decode_request`, :func:`encode_response` / :func:`decode_response` --
  header + body bytes (kio's ``entity_writer`` / ``entity_reader``), without the 4-byte size prefix;
  :func:`frame` adds it.
* :func:`encode_batches` / :func:`decode_batches` -- v2 record batches (magic 2, CRC-32C).
* :func:`encode_metadata_record` / :func:`decode_metadata_record` -- the compact JSON form a KRaft
  metadata record takes as a record value inside a metadata-log batch.

Kafka nests partitions by topic; the core flattens them (each partition names its topic). Encoding
groups partitions by topic in order of first appearance, as Kafka builds these lists, and decoding
flattens topic by topic: a message whose partitions of one topic are contiguous (the normal case)
round-trips to an equal message; one that interleaves topics comes back grouped by topic.
OffsetFetch v8 nests one level more (a list of groups): the core's one group is a one-element
``Groups`` list, and bytes naming any other number of groups are a :class:`WireError`.

Conversions: error codes are ``Errors`` ints in the core and kio ``ErrorCode`` members on the kio side;
durations are int ms in the core and timedeltas in kio; ``None`` for an absent nested struct in the
core (``diverging_epoch``, ``current_leader``) is kio's all-default (-1, -1) struct; the zero UUID on the
wire is ``None`` in kio.
"""

from __future__ import annotations

import datetime
import io
import json
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from crc32c import crc32c
from kio.schema.alter_partition.v3 import request as ap_req
from kio.schema.alter_partition.v3 import response as ap_resp
from kio.schema.broker_heartbeat.v1 import request as bh_req
from kio.schema.broker_heartbeat.v1 import response as bh_resp
from kio.schema.broker_registration.v4 import request as br_req
from kio.schema.broker_registration.v4 import response as br_resp
from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.create_topics.v7 import response as ct_resp
from kio.schema.describe_topic_partitions.v0 import request as dtp_req
from kio.schema.describe_topic_partitions.v0 import response as dtp_resp
from kio.schema.elect_leaders.v2 import request as el_req
from kio.schema.elect_leaders.v2 import response as el_resp
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v15 import request as f_req
from kio.schema.fetch.v15 import response as f_resp
from kio.schema.types import ProducerId
from kio.schema.init_producer_id.v4 import request as ipi_req
from kio.schema.init_producer_id.v4 import response as ipi_resp
from kio.schema.find_coordinator.v4 import request as fc_req
from kio.schema.find_coordinator.v4 import response as fc_resp
from kio.schema.incremental_alter_configs.v1 import request as iac_req
from kio.schema.incremental_alter_configs.v1 import response as iac_resp
from kio.schema.list_offsets.v7 import request as lo_req
from kio.schema.list_offsets.v7 import response as lo_resp
from kio.schema.metadata.v12 import request as md_req
from kio.schema.metadata.v12 import response as md_resp
from kio.schema.offset_commit.v8 import request as oc_req
from kio.schema.offset_commit.v8 import response as oc_resp
from kio.schema.offset_fetch.v8 import request as of_req
from kio.schema.offset_fetch.v8 import response as of_resp
from kio.schema.offset_for_leader_epoch.v4 import request as ofle_req
from kio.schema.offset_for_leader_epoch.v4 import response as ofle_resp
from kio.schema.produce.v9 import request as p_req
from kio.schema.produce.v9 import response as p_resp
from kio.schema.types import BrokerId, GroupId, TopicName
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import read_signed_varint, read_signed_varlong
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

from ..metadata import records as mdr
from . import messages as m
from .errors import Errors
from .records import Record, RecordBatch

__all__ = [
    "WireError", "UnsupportedVersionError", "CorruptRecordError",
    "to_kio", "from_kio",
    "encode_request", "decode_request", "encode_response", "decode_response",
    "peek_request_header", "frame", "roundtrip", "response_type_for", "RESPONSE_TYPES",
    "encode_batches", "decode_batches",
    "encode_metadata_record", "decode_metadata_record",
]


# ------------------------------------------------------------------------------------- errors
class WireError(ValueError):
    """Bytes or a message that cannot cross the wire; ``error_code`` is the Kafka error it maps to."""

    error_code: int = Errors.INVALID_REQUEST


class UnsupportedVersionError(WireError):
    """The message needs an API version kio has no schema for (e.g. ElectLeaders v3, KIP-966), or the
    bytes name an API key/version this module does not map (Kafka's UNSUPPORTED_VERSION, 35)."""

    error_code: int = Errors.UNSUPPORTED_VERSION


class CorruptRecordError(WireError):
    """A record batch that fails the v2 format checks: CRC-32C mismatch, wrong magic, bad lengths,
    unsupported compression (Kafka's CORRUPT_MESSAGE, 2)."""

    error_code: int = Errors.CORRUPT_MESSAGE


# ---------------------------------------------------------------------------- small converters
_ONE_MS = datetime.timedelta(milliseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_UUID = uuid.UUID(int=0)


def _td32(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def _ms(td: datetime.timedelta) -> int:
    return td // _ONE_MS


def _ec(code: int) -> ErrorCode:
    return ErrorCode(int(code))


def _code(ec: int) -> int:
    return Errors(int(ec))


def _uuid_out(value: uuid.UUID | None) -> uuid.UUID:
    """kio reads the zero UUID as None; the core's non-optional ids keep Kafka's ZERO_UUID."""
    return _ZERO_UUID if value is None else value


K = TypeVar("K")
T = TypeVar("T")


def _group(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """Group by key in order of first appearance, keeping item order within a group."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


# ------------------------------------------------------------------------- v2 record batches
_BATCH_HEAD = struct.Struct(">qiibI")  # base offset, batch length, partition leader epoch, magic, crc
_BATCH_BODY = struct.Struct(">hiqqqhii")  # attributes .. records count
_BATCH_HEAD_SIZE = _BATCH_HEAD.size  # 21
_BATCH_OVERHEAD = _BATCH_HEAD.size + _BATCH_BODY.size  # 61
_LOG_OVERHEAD = 12  # base offset + batch length
_COMPRESSION_MASK = 0x07
_MAGIC = 2


def _put_uvarint(buf: bytearray, value: int) -> None:
    while value > 0x7F:
        buf.append((value & 0x7F) | 0x80)
        value >>= 7
    buf.append(value)


def _put_varint(buf: bytearray, value: int) -> None:
    """Signed (zig-zag) varint / varlong, as in Kafka's ByteUtils.writeVarint/writeVarlong."""
    _put_uvarint(buf, (value << 1) ^ (value >> 63))


def _put_bytes(buf: bytearray, value: bytes | None) -> None:
    if value is None:
        buf.append(1)  # zig-zag(-1)
    else:
        _put_varint(buf, len(value))
        buf += value


def _encode_batch(out: bytearray, batch: RecordBatch) -> None:
    if batch.attributes & _COMPRESSION_MASK:
        raise CorruptRecordError(
            f"record batch attributes {batch.attributes:#x} ask for compression, which kraftlog's "
            "codec does not implement"
        )
    records = batch.records
    if records:
        base_ts = records[0].timestamp
        max_ts = max(r.timestamp for r in records)
    else:
        base_ts = max_ts = -1
    body = bytearray(
        _BATCH_BODY.pack(
            batch.attributes, len(records) - 1, base_ts, max_ts,
            batch.producer_id, batch.producer_epoch, batch.base_sequence, len(records),
        )
    )
    for delta, record in enumerate(records):
        rec = bytearray(b"\x00")  # record attributes (unused in v2)
        _put_varint(rec, record.timestamp - base_ts)
        _put_varint(rec, delta)
        _put_bytes(rec, record.key)
        _put_bytes(rec, record.value)
        rec.append(0)  # no headers
        _put_varint(body, len(rec))
        body += rec
    out += _BATCH_HEAD.pack(
        batch.base_offset, len(body) + 9, batch.partition_leader_epoch, _MAGIC, crc32c(body)
    )
    out += body


def encode_batches(batches: Iterable[RecordBatch]) -> bytes:
    """Encode record batches as Kafka v2 batches (magic 2, CRC-32C over attributes..end), concatenated.

    Shape: Kafka's ``DefaultRecordBatch`` (61-byte header, zig-zag varint records without headers).
    The batch ``baseTimestamp`` is the first record's timestamp, ``maxTimestamp`` the largest; record
    ``i`` gets offset delta ``i``; timestamps are ms since the epoch, written exactly (-1 = none).
    Raises :class:`CorruptRecordError` when ``attributes`` asks for compression (not implemented).
    An empty tuple encodes to ``b""`` (Kafka's empty MemoryRecords)."""
    out = bytearray()
    for batch in batches:
        _encode_batch(out, batch)
    return bytes(out)


def _read_bytes(view: memoryview, pos: int) -> tuple[bytes | None, int]:
    length, size = read_signed_varint(view, pos)
    pos += size
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(view):
        raise CorruptRecordError("record key/value runs past the end of the batch")
    return bytes(view[pos:end]), end


def _decode_batch(view: memoryview, pos: int, end: int) -> RecordBatch:
    base_offset, _length, leader_epoch, magic, crc = _BATCH_HEAD.unpack_from(view, pos)
    if magic != _MAGIC:
        raise CorruptRecordError(f"record batch magic {magic}, expected 2")
    if end - pos < _BATCH_OVERHEAD:
        raise CorruptRecordError("record batch shorter than the v2 header")
    if crc32c(view[pos + _BATCH_HEAD_SIZE : end]) != crc:
        raise CorruptRecordError(f"record batch at offset {base_offset}: CRC-32C mismatch")
    (attributes, _last_delta, base_ts, _max_ts, producer_id, producer_epoch, base_sequence,
     count) = _BATCH_BODY.unpack_from(view, pos + _BATCH_HEAD_SIZE)
    if attributes & _COMPRESSION_MASK:
        raise CorruptRecordError(
            f"record batch compression type {attributes & _COMPRESSION_MASK} is not supported"
        )
    records = []
    p = pos + _BATCH_OVERHEAD
    for i in range(count):
        length, size = read_signed_varint(view, p)
        p += size
        rec_end = p + length
        if rec_end > end:
            raise CorruptRecordError("record runs past the end of its batch")
        p += 1  # record attributes
        ts_delta, size = read_signed_varlong(view, p)
        p += size
        offset_delta, size = read_signed_varint(view, p)
        p += size
        if offset_delta != i:
            raise CorruptRecordError(
                f"record offset delta {offset_delta} at position {i}: kraftlog batches are dense"
            )
        key, p = _read_bytes(view, p)
        value, p = _read_bytes(view, p)
        n_headers, size = read_signed_varint(view, p)
        p += size
        for _ in range(n_headers):  # headers are not part of the core's Record: skipped
            _, p = _read_bytes(view, p)
            _, p = _read_bytes(view, p)
        if p != rec_end:
            raise CorruptRecordError("record length does not match its contents")
        records.append(Record(base_ts + ts_delta, key, value))
    if p != end:
        raise CorruptRecordError("record batch length does not match its records")
    return RecordBatch(
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        records=tuple(records),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        attributes=attributes,
    )


def decode_batches(data: bytes | memoryview | None) -> tuple[RecordBatch, ...]:
    """Decode concatenated v2 record batches, validating magic, lengths and each batch's CRC-32C.

    ``None`` or ``b""`` decode to ``()``. A trailing partial batch (a fetch response cut at
    ``max_bytes``) is ignored, as Kafka's consumers do. Record headers are dropped (the core's
    :class:`Record` has none). Raises :class:`CorruptRecordError` on a corrupt or compressed batch."""
    if not data:
        return ()
    view = memoryview(data)
    batches = []
    pos = 0
    total = len(view)
    while total - pos >= _LOG_OVERHEAD:
        _, length = struct.unpack_from(">qi", view, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < 0:
            raise CorruptRecordError(f"negative record batch length {length}")
        if end > total:
            break
        batches.append(_decode_batch(view, pos, end))
        pos = end
    return tuple(batches)


# ------------------------------------------------------------------------ metadata records
_METADATA_TYPES: dict[str, type] = {cls.__name__: cls for cls in mdr.METADATA_RECORD_TYPES}


def _field_kinds(cls: type) -> tuple[tuple[str, str], ...]:
    """(field name, kind) with kind "uuid", "tuple" or "" from the (string) annotations."""
    kinds = []
    for f in fields(cls):
        ann = str(f.type)
        kind = "uuid" if "UUID" in ann else "tuple" if ann.startswith("tuple") else ""
        kinds.append((f.name, kind))
    return tuple(kinds)


_METADATA_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    cls: _field_kinds(cls) for cls in mdr.METADATA_RECORD_TYPES
}


def encode_metadata_record(rec: object) -> bytes:
    """A metadata record (``kraftlog.metadata.records``) as compact UTF-8 JSON:
    ``{"type": "<ClassName>", "<field>": value, ...}`` in field order; UUIDs as strings, tuples as
    lists, None as null. Raises :class:`WireError` for a type that is not a metadata record."""
    kinds = _METADATA_FIELDS.get(type(rec))
    if kinds is None:
        raise WireError(f"{type(rec).__name__} is not a metadata record type")
    doc: dict[str, Any] = {"type": type(rec).__name__}
    for name, kind in kinds:
        value = getattr(rec, name)
        if kind == "uuid" and value is not None:
            value = str(value)
        doc[name] = value
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_metadata_record(data: bytes) -> object:
    """Inverse of :func:`encode_metadata_record`. Raises :class:`WireError` on malformed JSON or an
    unknown ``type``."""
    try:
        doc = json.loads(data)
        cls = _METADATA_TYPES[doc.pop("type")]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise WireError(f"not a kraftlog metadata record: {data[:80]!r}") from exc
    kwargs = {}
    for name, kind in _METADATA_FIELDS[cls]:
        if name not in doc:
            continue
        value = doc[name]
        if value is not None:
            if kind == "uuid":
                value = uuid.UUID(value)
            elif kind == "tuple":
                value = tuple(value)
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise WireError(f"bad {cls.__name__} metadata record: {exc}") from exc


# ===================================================================== per-API mappings
# ----------------------------------------------------------------------------- Fetch v15
def _fetch_request_to_kio(msg: m.FetchRequest) -> f_req.FetchRequest:
    topics = tuple(
        f_req.FetchTopic(
            topic_id=topic_id,
            partitions=tuple(
                f_req.FetchPartition(
                    partition=i32(p.partition),
                    current_leader_epoch=i32(p.current_leader_epoch),
                    fetch_offset=i64(p.fetch_offset),
                    last_fetched_epoch=i32(p.last_fetched_epoch),
                    log_start_offset=i64(p.log_start_offset),
                    partition_max_bytes=i32(p.partition_max_bytes),
                )
                for p in parts
            ),
        )
        for topic_id, parts in _group(msg.partitions, lambda p: p.topic_id).items()
    )
    return f_req.FetchRequest(
        cluster_id=None,
        replica_state=f_req.ReplicaState(
            replica_id=BrokerId(msg.replica_id), replica_epoch=i64(msg.replica_epoch)
        ),
        max_wait=_td32(msg.max_wait_ms),
        min_bytes=i32(msg.min_bytes),
        max_bytes=i32(msg.max_bytes),
        isolation_level=i8(msg.isolation_level),
        session_id=i32(0),
        session_epoch=i32(-1),
        topics=topics,
        forgotten_topics_data=(),
        rack_id="",
    )


def _fetch_request_from_kio(e: f_req.FetchRequest) -> m.FetchRequest:
    return m.FetchRequest(
        replica_id=e.replica_state.replica_id,
        replica_epoch=e.replica_state.replica_epoch,
        max_wait_ms=_ms(e.max_wait),
        min_bytes=e.min_bytes,
        partitions=tuple(
            m.FetchPartition(
                topic_id=_uuid_out(t.topic_id),
                partition=p.partition,
                current_leader_epoch=p.current_leader_epoch,
                fetch_offset=p.fetch_offset,
                last_fetched_epoch=p.last_fetched_epoch,
                log_start_offset=p.log_start_offset,
                partition_max_bytes=p.partition_max_bytes,
            )
            for t in e.topics
            for p in t.partitions
        ),
        max_bytes=e.max_bytes,
        isolation_level=e.isolation_level,
    )


_NO_DIVERGING_EPOCH = f_resp.EpochEndOffset()
_NO_CURRENT_LEADER = f_resp.LeaderIdAndEpoch()


def _fetch_partition_to_kio(p: m.FetchPartitionResponse) -> f_resp.PartitionData:
    de = p.diverging_epoch
    cl = p.current_leader
    return f_resp.PartitionData(
        partition_index=i32(p.partition),
        error_code=_ec(p.error_code),
        high_watermark=i64(p.high_watermark),
        last_stable_offset=i64(p.last_stable_offset),
        log_start_offset=i64(p.log_start_offset),
        diverging_epoch=(
            _NO_DIVERGING_EPOCH if de is None
            else f_resp.EpochEndOffset(epoch=i32(de.epoch), end_offset=i64(de.end_offset))
        ),
        current_leader=(
            _NO_CURRENT_LEADER if cl is None
            else f_resp.LeaderIdAndEpoch(leader_id=BrokerId(cl[0]), leader_epoch=i32(cl[1]))
        ),
        snapshot_id=f_resp.SnapshotId(),
        aborted_transactions=None,
        preferred_read_replica=BrokerId(-1),
        records=encode_batches(p.records),
    )


def _fetch_response_to_kio(msg: m.FetchResponse) -> f_resp.FetchResponse:
    return f_resp.FetchResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        session_id=i32(msg.session_id),
        responses=tuple(
            f_resp.FetchableTopicResponse(
                topic_id=topic_id, partitions=tuple(_fetch_partition_to_kio(p) for p in parts)
            )
            for topic_id, parts in _group(msg.partitions, lambda p: p.topic_id).items()
        ),
    )


def _fetch_partition_from_kio(topic_id: uuid.UUID, p: f_resp.PartitionData) -> m.FetchPartitionResponse:
    de = p.diverging_epoch
    cl = p.current_leader
    return m.FetchPartitionResponse(
        topic_id=topic_id,
        partition=p.partition_index,
        error_code=_code(p.error_code),
        high_watermark=p.high_watermark,
        last_stable_offset=p.last_stable_offset,
        log_start_offset=p.log_start_offset,
        diverging_epoch=(
            None if de == _NO_DIVERGING_EPOCH else m.EpochEndOffset(de.epoch, de.end_offset)
        ),
        current_leader=None if cl == _NO_CURRENT_LEADER else (cl.leader_id, cl.leader_epoch),
        records=decode_batches(p.records),
    )


def _fetch_response_from_kio(e: f_resp.FetchResponse) -> m.FetchResponse:
    return m.FetchResponse(
        error_code=_code(e.error_code),
        partitions=tuple(
            _fetch_partition_from_kio(_uuid_out(t.topic_id), p)
            for t in e.responses
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
        session_id=e.session_id,
    )


# ------------------------------------------------------- metadata log fetch (Fetch v15)
_METADATA_MIN_BYTES = 1
_METADATA_PARTITION_MAX_BYTES = 1048576
#: Timestamp and partition leader epoch of the batch that carries metadata records: the core's
#: metadata log has neither, so the wire form fixes them.
_METADATA_BATCH_TIMESTAMP = 0
_METADATA_BATCH_LEADER_EPOCH = 0


def _metadata_fetch_request_to_kio(msg: m.MetadataFetchRequest) -> f_req.FetchRequest:
    return f_req.FetchRequest(
        cluster_id=None,
        replica_state=f_req.ReplicaState(
            replica_id=BrokerId(msg.replica_id), replica_epoch=i64(msg.replica_epoch)
        ),
        max_wait=_td32(msg.max_wait_ms),
        min_bytes=i32(_METADATA_MIN_BYTES),
        topics=(
            f_req.FetchTopic(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    f_req.FetchPartition(
                        partition=i32(0),
                        current_leader_epoch=i32(-1),
                        fetch_offset=i64(msg.fetch_offset),
                        last_fetched_epoch=i32(-1),
                        log_start_offset=i64(-1),
                        partition_max_bytes=i32(_METADATA_PARTITION_MAX_BYTES),
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _metadata_fetch_request_from_kio(e: f_req.FetchRequest) -> m.MetadataFetchRequest:
    parts = [p for t in e.topics if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if len(parts) != 1 or parts[0].partition != 0:
        raise WireError("a metadata fetch names exactly __cluster_metadata partition 0")
    return m.MetadataFetchRequest(
        replica_id=e.replica_state.replica_id,
        replica_epoch=e.replica_state.replica_epoch,
        fetch_offset=parts[0].fetch_offset,
        max_wait_ms=_ms(e.max_wait),
    )


def _is_metadata_fetch(topic_ids: list[uuid.UUID | None]) -> bool:
    return len(topic_ids) == 1 and topic_ids[0] == m.METADATA_TOPIC_ID


def _any_fetch_request_from_kio(e: f_req.FetchRequest) -> object:
    if _is_metadata_fetch([t.topic_id for t in e.topics]):
        return _metadata_fetch_request_from_kio(e)
    return _fetch_request_from_kio(e)


def _metadata_fetch_response_to_kio(msg: m.MetadataFetchResponse) -> f_resp.FetchResponse:
    if msg.records:
        batch = RecordBatch(
            base_offset=msg.base_offset,
            partition_leader_epoch=_METADATA_BATCH_LEADER_EPOCH,
            records=tuple(
                Record(_METADATA_BATCH_TIMESTAMP, None, encode_metadata_record(r))
                for r in msg.records
            ),
        )
        records = encode_batches((batch,))
        # The metadata log has no transactions: its LSO is its HWM.
        last_stable_offset = msg.high_watermark
    else:
        records = b""
        # No batch carries the base offset; the (otherwise unused) LSO does.
        last_stable_offset = msg.base_offset
    return f_resp.FetchResponse(
        throttle_time=_td32(0),
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=(
            f_resp.FetchableTopicResponse(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    f_resp.PartitionData(
                        partition_index=i32(0),
                        error_code=_ec(msg.error_code),
                        high_watermark=i64(msg.high_watermark),
                        last_stable_offset=i64(last_stable_offset),
                        log_start_offset=i64(0),
                        aborted_transactions=None,
                        records=records,
                    ),
                ),
            ),
        ),
    )


def _metadata_fetch_response_from_kio(e: f_resp.FetchResponse) -> m.MetadataFetchResponse:
    parts = [p for t in e.responses if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if not parts:
        return m.MetadataFetchResponse(
            error_code=_code(e.error_code), high_watermark=-1, base_offset=-1
        )
    if len(parts) != 1:
        raise WireError("a metadata fetch response holds exactly __cluster_metadata partition 0")
    p = parts[0]
    error_code = e.error_code if e.error_code != ErrorCode.none else p.error_code
    batches = decode_batches(p.records)
    records = tuple(
        decode_metadata_record(r.value) for b in batches for r in b.records  # type: ignore[arg-type]
    )
    base_offset = batches[0].base_offset if batches else p.last_stable_offset
    return m.MetadataFetchResponse(
        error_code=_code(error_code),
        high_watermark=p.high_watermark,
        base_offset=base_offset,
        records=records,
    )


def _any_fetch_response_from_kio(e: f_resp.FetchResponse) -> object:
    if _is_metadata_fetch([t.topic_id for t in e.responses]):
        return _metadata_fetch_response_from_kio(e)
    return _fetch_response_from_kio(e)


# ---------------------------------------------------------------------- AlterPartition v3
def _alter_partition_request_to_kio(msg: m.AlterPartitionRequest) -> ap_req.AlterPartitionRequest:
    return ap_req.AlterPartitionRequest(
        broker_id=BrokerId(msg.broker_id),
        broker_epoch=i64(msg.broker_epoch),
        topics=tuple(
            ap_req.TopicData(
                topic_id=topic_id,
                partitions=tuple(
                    ap_req.PartitionData(
                        partition_index=i32(p.partition),
                        leader_epoch=i32(p.leader_epoch),
                        new_isr_with_epochs=tuple(
                            ap_req.BrokerState(
                                broker_id=BrokerId(b.broker_id), broker_epoch=i64(b.broker_epoch)
                            )
                            for b in p.new_isr_with_epochs
                        ),
                        leader_recovery_state=i8(p.leader_recovery_state),
                        partition_epoch=i32(p.partition_epoch),
                    )
                    for p in parts
                ),
            )
            for topic_id, parts in _group(msg.partitions, lambda p: p.topic_id).items()
        ),
    )


def _alter_partition_request_from_kio(e: ap_req.AlterPartitionRequest) -> m.AlterPartitionRequest:
    return m.AlterPartitionRequest(
        broker_id=e.broker_id,
        broker_epoch=e.broker_epoch,
        partitions=tuple(
            m.AlterPartitionItem(
                topic_id=_uuid_out(t.topic_id),
                partition=p.partition_index,
                leader_epoch=p.leader_epoch,
                new_isr_with_epochs=tuple(
                    m.BrokerState(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs
                ),
                partition_epoch=p.partition_epoch,
                leader_recovery_state=p.leader_recovery_state,
            )
            for t in e.topics
            for p in t.partitions
        ),
    )


def _alter_partition_response_to_kio(msg: m.AlterPartitionResponse) -> ap_resp.AlterPartitionResponse:
    return ap_resp.AlterPartitionResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        topics=tuple(
            ap_resp.TopicData(
                topic_id=topic_id,
                partitions=tuple(
                    ap_resp.PartitionData(
                        partition_index=i32(p.partition),
                        error_code=_ec(p.error_code),
                        leader_id=BrokerId(p.leader_id),
                        leader_epoch=i32(p.leader_epoch),
                        isr=tuple(BrokerId(b) for b in p.isr),
                        leader_recovery_state=i8(p.leader_recovery_state),
                        partition_epoch=i32(p.partition_epoch),
                    )
                    for p in parts
                ),
            )
            for topic_id, parts in _group(msg.partitions, lambda p: p.topic_id).items()
        ),
    )


def _alter_partition_response_from_kio(e: ap_resp.AlterPartitionResponse) -> m.AlterPartitionResponse:
    return m.AlterPartitionResponse(
        error_code=_code(e.error_code),
        partitions=tuple(
            m.AlterPartitionResponseItem(
                topic_id=_uuid_out(t.topic_id),
                partition=p.partition_index,
                error_code=_code(p.error_code),
                leader_id=p.leader_id,
                leader_epoch=p.leader_epoch,
                isr=tuple(p.isr),
                leader_recovery_state=p.leader_recovery_state,
                partition_epoch=p.partition_epoch,
            )
            for t in e.topics
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------ BrokerRegistration v4
def _broker_registration_request_to_kio(
    msg: m.BrokerRegistrationRequest,
) -> br_req.BrokerRegistrationRequest:
    return br_req.BrokerRegistrationRequest(
        broker_id=BrokerId(msg.broker_id),
        cluster_id=msg.cluster_id,
        incarnation_id=msg.incarnation_id,
        listeners=(),
        features=(),
        rack=msg.rack,
        is_migrating_zk_broker=False,
        log_dirs=(),
        previous_broker_epoch=i64(msg.previous_broker_epoch),
    )


def _broker_registration_request_from_kio(
    e: br_req.BrokerRegistrationRequest,
) -> m.BrokerRegistrationRequest:
    return m.BrokerRegistrationRequest(
        broker_id=e.broker_id,
        cluster_id=e.cluster_id,
        incarnation_id=_uuid_out(e.incarnation_id),
        rack=e.rack,
        previous_broker_epoch=e.previous_broker_epoch,
    )


def _broker_registration_response_to_kio(
    msg: m.BrokerRegistrationResponse,
) -> br_resp.BrokerRegistrationResponse:
    return br_resp.BrokerRegistrationResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        broker_epoch=i64(msg.broker_epoch),
    )


def _broker_registration_response_from_kio(
    e: br_resp.BrokerRegistrationResponse,
) -> m.BrokerRegistrationResponse:
    return m.BrokerRegistrationResponse(
        error_code=_code(e.error_code),
        broker_epoch=e.broker_epoch,
        throttle_time_ms=_ms(e.throttle_time),
    )


# --------------------------------------------------------------------- BrokerHeartbeat v1
def _broker_heartbeat_request_to_kio(msg: m.BrokerHeartbeatRequest) -> bh_req.BrokerHeartbeatRequest:
    return bh_req.BrokerHeartbeatRequest(
        broker_id=BrokerId(msg.broker_id),
        broker_epoch=i64(msg.broker_epoch),
        current_metadata_offset=i64(msg.current_metadata_offset),
        want_fence=msg.want_fence,
        want_shut_down=msg.want_shut_down,
        offline_log_dirs=(),
    )


def _broker_heartbeat_request_from_kio(e: bh_req.BrokerHeartbeatRequest) -> m.BrokerHeartbeatRequest:
    return m.BrokerHeartbeatRequest(
        broker_id=e.broker_id,
        broker_epoch=e.broker_epoch,
        current_metadata_offset=e.current_metadata_offset,
        want_fence=e.want_fence,
        want_shut_down=e.want_shut_down,
    )


def _broker_heartbeat_response_to_kio(
    msg: m.BrokerHeartbeatResponse,
) -> bh_resp.BrokerHeartbeatResponse:
    return bh_resp.BrokerHeartbeatResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        is_caught_up=msg.is_caught_up,
        is_fenced=msg.is_fenced,
        should_shut_down=msg.should_shut_down,
    )


def _broker_heartbeat_response_from_kio(
    e: bh_resp.BrokerHeartbeatResponse,
) -> m.BrokerHeartbeatResponse:
    return m.BrokerHeartbeatResponse(
        error_code=_code(e.error_code),
        is_caught_up=e.is_caught_up,
        is_fenced=e.is_fenced,
        should_shut_down=e.should_shut_down,
        throttle_time_ms=_ms(e.throttle_time),
    )


# ----------------------------------------------------------------------------- Produce v9
def _produce_request_to_kio(msg: m.ProduceRequest) -> p_req.ProduceRequest:
    return p_req.ProduceRequest(
        transactional_id=msg.transactional_id,
        acks=i16(msg.acks),
        timeout=_td32(msg.timeout_ms),
        topic_data=tuple(
            p_req.TopicProduceData(
                name=TopicName(topic),
                partition_data=tuple(
                    p_req.PartitionProduceData(
                        index=i32(p.partition), records=encode_batches(p.records)
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _produce_request_from_kio(e: p_req.ProduceRequest) -> m.ProduceRequest:
    return m.ProduceRequest(
        acks=e.acks,
        timeout_ms=_ms(e.timeout),
        partitions=tuple(
            m.ProducePartition(
                topic=t.name, partition=p.index, records=decode_batches(p.records)
            )
            for t in e.topic_data
            for p in t.partition_data
        ),
        transactional_id=e.transactional_id,
    )


def _ms_to_datetime(ms: int) -> datetime.datetime | None:
    return None if ms == -1 else _EPOCH + datetime.timedelta(milliseconds=ms)


def _datetime_to_ms(dt: datetime.datetime | None) -> int:
    return -1 if dt is None else (dt - _EPOCH) // _ONE_MS


def _produce_response_to_kio(msg: m.ProduceResponse) -> p_resp.ProduceResponse:
    return p_resp.ProduceResponse(
        responses=tuple(
            p_resp.TopicProduceResponse(
                name=TopicName(topic),
                partition_responses=tuple(
                    p_resp.PartitionProduceResponse(
                        index=i32(p.partition),
                        error_code=_ec(p.error_code),
                        base_offset=i64(p.base_offset),
                        # kio's TZAware type admits whole seconds only; the field's writer
                        # takes any aware datetime and writes exact ms.
                        log_append_time=_ms_to_datetime(p.log_append_time_ms),  # type: ignore[arg-type]
                        log_start_offset=i64(p.log_start_offset),
                        record_errors=(),
                        error_message=None,
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
        throttle_time=_td32(msg.throttle_time_ms),
    )


def _produce_response_from_kio(e: p_resp.ProduceResponse) -> m.ProduceResponse:
    return m.ProduceResponse(
        partitions=tuple(
            m.ProducePartitionResponse(
                topic=t.name,
                partition=p.index,
                error_code=_code(p.error_code),
                base_offset=p.base_offset,
                log_append_time_ms=_datetime_to_ms(p.log_append_time),
                log_start_offset=p.log_start_offset,
            )
            for t in e.responses
            for p in t.partition_responses
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------------- ListOffsets v7
def _list_offsets_request_to_kio(msg: m.ListOffsetsRequest) -> lo_req.ListOffsetsRequest:
    return lo_req.ListOffsetsRequest(
        replica_id=BrokerId(msg.replica_id),
        isolation_level=i8(msg.isolation_level),
        topics=tuple(
            lo_req.ListOffsetsTopic(
                name=TopicName(topic),
                partitions=tuple(
                    lo_req.ListOffsetsPartition(
                        partition_index=i32(p.partition),
                        current_leader_epoch=i32(p.current_leader_epoch),
                        timestamp=i64(p.timestamp),
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _list_offsets_request_from_kio(e: lo_req.ListOffsetsRequest) -> m.ListOffsetsRequest:
    return m.ListOffsetsRequest(
        replica_id=e.replica_id,
        partitions=tuple(
            m.ListOffsetsPartition(
                topic=t.name,
                partition=p.partition_index,
                timestamp=p.timestamp,
                current_leader_epoch=p.current_leader_epoch,
            )
            for t in e.topics
            for p in t.partitions
        ),
        isolation_level=e.isolation_level,
    )


def _list_offsets_response_to_kio(msg: m.ListOffsetsResponse) -> lo_resp.ListOffsetsResponse:
    return lo_resp.ListOffsetsResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        topics=tuple(
            lo_resp.ListOffsetsTopicResponse(
                name=TopicName(topic),
                partitions=tuple(
                    lo_resp.ListOffsetsPartitionResponse(
                        partition_index=i32(p.partition),
                        error_code=_ec(p.error_code),
                        timestamp=i64(p.timestamp),
                        offset=i64(p.offset),
                        leader_epoch=i32(p.leader_epoch),
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _list_offsets_response_from_kio(e: lo_resp.ListOffsetsResponse) -> m.ListOffsetsResponse:
    return m.ListOffsetsResponse(
        partitions=tuple(
            m.ListOffsetsPartitionResponse(
                topic=t.name,
                partition=p.partition_index,
                error_code=_code(p.error_code),
                timestamp=p.timestamp,
                offset=p.offset,
                leader_epoch=p.leader_epoch,
            )
            for t in e.topics
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ---------------------------------------------------------------- OffsetForLeaderEpoch v4
def _ofle_request_to_kio(msg: m.OffsetForLeaderEpochRequest) -> ofle_req.OffsetForLeaderEpochRequest:
    return ofle_req.OffsetForLeaderEpochRequest(
        replica_id=BrokerId(msg.replica_id),
        topics=tuple(
            ofle_req.OffsetForLeaderTopic(
                topic=TopicName(topic),
                partitions=tuple(
                    ofle_req.OffsetForLeaderPartition(
                        partition=i32(p.partition),
                        current_leader_epoch=i32(p.current_leader_epoch),
                        leader_epoch=i32(p.leader_epoch),
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _ofle_request_from_kio(e: ofle_req.OffsetForLeaderEpochRequest) -> m.OffsetForLeaderEpochRequest:
    return m.OffsetForLeaderEpochRequest(
        replica_id=e.replica_id,
        partitions=tuple(
            m.OffsetForLeaderEpochPartition(
                topic=t.topic,
                partition=p.partition,
                current_leader_epoch=p.current_leader_epoch,
                leader_epoch=p.leader_epoch,
            )
            for t in e.topics
            for p in t.partitions
        ),
    )


def _ofle_response_to_kio(
    msg: m.OffsetForLeaderEpochResponse,
) -> ofle_resp.OffsetForLeaderEpochResponse:
    return ofle_resp.OffsetForLeaderEpochResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        topics=tuple(
            ofle_resp.OffsetForLeaderTopicResult(
                topic=TopicName(topic),
                partitions=tuple(
                    ofle_resp.EpochEndOffset(
                        error_code=_ec(p.error_code),
                        partition=i32(p.partition),
                        leader_epoch=i32(p.leader_epoch),
                        end_offset=i64(p.end_offset),
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _ofle_response_from_kio(
    e: ofle_resp.OffsetForLeaderEpochResponse,
) -> m.OffsetForLeaderEpochResponse:
    return m.OffsetForLeaderEpochResponse(
        partitions=tuple(
            m.OffsetForLeaderEpochPartitionResponse(
                topic=t.topic,
                partition=p.partition,
                error_code=_code(p.error_code),
                leader_epoch=p.leader_epoch,
                end_offset=p.end_offset,
            )
            for t in e.topics
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ---------------------------------------------------------------------------- Metadata v12
def _metadata_request_to_kio(msg: m.MetadataRequest) -> md_req.MetadataRequest:
    return md_req.MetadataRequest(
        topics=(
            None if msg.topics is None
            else tuple(
                md_req.MetadataRequestTopic(topic_id=None, name=TopicName(t)) for t in msg.topics
            )
        ),
        # kraftlog never auto-creates topics.
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def _metadata_request_from_kio(e: md_req.MetadataRequest) -> m.MetadataRequest:
    return m.MetadataRequest(
        topics=None if e.topics is None else tuple(t.name or "" for t in e.topics)
    )


def _metadata_response_to_kio(msg: m.MetadataResponse) -> md_resp.MetadataResponse:
    return md_resp.MetadataResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        brokers=tuple(
            md_resp.MetadataResponseBroker(
                node_id=BrokerId(b.node_id), host=b.host, port=i32(b.port), rack=b.rack
            )
            for b in msg.brokers
        ),
        cluster_id=msg.cluster_id,
        controller_id=BrokerId(msg.controller_id),
        topics=tuple(
            md_resp.MetadataResponseTopic(
                error_code=_ec(t.error_code),
                name=TopicName(t.name),
                topic_id=t.topic_id,
                is_internal=False,
                partitions=tuple(
                    md_resp.MetadataResponsePartition(
                        error_code=_ec(p.error_code),
                        partition_index=i32(p.partition_index),
                        leader_id=BrokerId(p.leader_id),
                        leader_epoch=i32(p.leader_epoch),
                        replica_nodes=tuple(BrokerId(r) for r in p.replica_nodes),
                        isr_nodes=tuple(BrokerId(r) for r in p.isr_nodes),
                        offline_replicas=tuple(BrokerId(r) for r in p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
            for t in msg.topics
        ),
    )


def _metadata_response_from_kio(e: md_resp.MetadataResponse) -> m.MetadataResponse:
    return m.MetadataResponse(
        brokers=tuple(m.MetadataBroker(b.node_id, b.host, b.port, b.rack) for b in e.brokers),
        controller_id=e.controller_id,
        topics=tuple(
            m.MetadataTopic(
                error_code=_code(t.error_code),
                name=t.name or "",
                topic_id=_uuid_out(t.topic_id),
                partitions=tuple(
                    m.MetadataPartition(
                        error_code=_code(p.error_code),
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=tuple(p.replica_nodes),
                        isr_nodes=tuple(p.isr_nodes),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
            for t in e.topics
        ),
        cluster_id=e.cluster_id,
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------------ CreateTopics v7
def _create_topics_request_to_kio(msg: m.CreateTopicsRequest) -> ct_req.CreateTopicsRequest:
    return ct_req.CreateTopicsRequest(
        topics=tuple(
            ct_req.CreatableTopic(
                name=TopicName(t.name),
                num_partitions=i32(t.num_partitions),
                replication_factor=i16(t.replication_factor),
                assignments=tuple(
                    ct_req.CreatableReplicaAssignment(
                        partition_index=i32(index),
                        broker_ids=tuple(BrokerId(b) for b in replicas),
                    )
                    for index, replicas in enumerate(t.assignment)
                ),
                configs=tuple(
                    ct_req.CreatableTopicConfig(name=name, value=value) for name, value in t.configs
                ),
            )
            for t in msg.topics
        ),
        timeout=_td32(msg.timeout_ms),
        validate_only=False,
    )


def _create_topics_request_from_kio(e: ct_req.CreateTopicsRequest) -> m.CreateTopicsRequest:
    topics = []
    for t in e.topics:
        assignment = sorted(t.assignments, key=lambda a: a.partition_index)
        if [a.partition_index for a in assignment] != list(range(len(assignment))):
            raise WireError(f"CreateTopics {t.name!r}: assignment partitions are not 0..n-1")
        topics.append(
            m.CreatableTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignment=tuple(tuple(a.broker_ids) for a in assignment),
                configs=tuple((c.name, c.value) for c in t.configs),
            )
        )
    return m.CreateTopicsRequest(topics=tuple(topics), timeout_ms=_ms(e.timeout))


def _create_topics_response_to_kio(msg: m.CreateTopicsResponse) -> ct_resp.CreateTopicsResponse:
    return ct_resp.CreateTopicsResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        topics=tuple(
            ct_resp.CreatableTopicResult(
                name=TopicName(t.name),
                topic_id=t.topic_id,
                error_code=_ec(t.error_code),
                error_message=t.error_message,
                num_partitions=i32(-1),
                replication_factor=i16(-1),
                configs=(),
            )
            for t in msg.topics
        ),
    )


def _create_topics_response_from_kio(e: ct_resp.CreateTopicsResponse) -> m.CreateTopicsResponse:
    return m.CreateTopicsResponse(
        topics=tuple(
            m.CreateTopicResult(
                name=t.name,
                error_code=_code(t.error_code),
                topic_id=t.topic_id,
                error_message=t.error_message,
            )
            for t in e.topics
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------- IncrementalAlterConfigs v1
def _iac_request_to_kio(
    msg: m.IncrementalAlterConfigsRequest,
) -> iac_req.IncrementalAlterConfigsRequest:
    return iac_req.IncrementalAlterConfigsRequest(
        resources=tuple(
            iac_req.AlterConfigsResource(
                resource_type=i8(r.resource_type),
                resource_name=r.resource_name,
                configs=tuple(
                    iac_req.AlterableConfig(
                        name=c.name, config_operation=i8(c.config_operation), value=c.value
                    )
                    for c in r.configs
                ),
            )
            for r in msg.resources
        ),
        validate_only=msg.validate_only,
    )


def _iac_request_from_kio(
    e: iac_req.IncrementalAlterConfigsRequest,
) -> m.IncrementalAlterConfigsRequest:
    return m.IncrementalAlterConfigsRequest(
        resources=tuple(
            m.AlterConfigsResource(
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                configs=tuple(
                    m.AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs
                ),
            )
            for r in e.resources
        ),
        validate_only=e.validate_only,
    )


def _iac_response_to_kio(
    msg: m.IncrementalAlterConfigsResponse,
) -> iac_resp.IncrementalAlterConfigsResponse:
    return iac_resp.IncrementalAlterConfigsResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        responses=tuple(
            iac_resp.AlterConfigsResourceResponse(
                error_code=_ec(r.error_code),
                error_message=r.error_message,
                resource_type=i8(r.resource_type),
                resource_name=r.resource_name,
            )
            for r in msg.responses
        ),
    )


def _iac_response_from_kio(
    e: iac_resp.IncrementalAlterConfigsResponse,
) -> m.IncrementalAlterConfigsResponse:
    return m.IncrementalAlterConfigsResponse(
        responses=tuple(
            m.AlterConfigsResourceResponse(
                error_code=_code(r.error_code),
                resource_type=r.resource_type,
                resource_name=r.resource_name,
                error_message=r.error_message,
            )
            for r in e.responses
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------------ ElectLeaders v2
def _elect_leaders_request_to_kio(msg: m.ElectLeadersRequest) -> el_req.ElectLeadersRequest:
    if msg.election_type not in (m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN):
        raise UnsupportedVersionError(
            f"ElectLeaders election_type {msg.election_type} needs ElectLeaders v3 (KIP-966), "
            "which kio has no schema for; v2 knows only 0 (PREFERRED) and 1 (UNCLEAN)"
        )
    if any(p.desired_leader != -1 for p in msg.partitions):
        raise UnsupportedVersionError(
            "ElectLeaders DesiredLeaders needs ElectLeaders v3 (KIP-966), which kio has no schema for"
        )
    return el_req.ElectLeadersRequest(
        election_type=i8(msg.election_type),
        topic_partitions=tuple(
            el_req.TopicPartitions(
                topic=TopicName(topic), partitions=tuple(i32(p.partition) for p in parts)
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
        timeout=_td32(msg.timeout_ms),
    )


def _elect_leaders_request_from_kio(e: el_req.ElectLeadersRequest) -> m.ElectLeadersRequest:
    # A null TopicPartitions ("every partition" in Kafka) has no core form: it decodes to ().
    return m.ElectLeadersRequest(
        election_type=e.election_type,
        partitions=tuple(
            m.ElectLeadersPartition(topic=t.topic, partition=p)
            for t in (e.topic_partitions or ())
            for p in t.partitions
        ),
        timeout_ms=_ms(e.timeout),
    )


def _elect_leaders_response_to_kio(msg: m.ElectLeadersResponse) -> el_resp.ElectLeadersResponse:
    return el_resp.ElectLeadersResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        replica_election_results=tuple(
            el_resp.ReplicaElectionResult(
                topic=TopicName(topic),
                partition_result=tuple(
                    el_resp.PartitionResult(
                        partition_id=i32(r.partition),
                        error_code=_ec(r.error_code),
                        error_message=r.error_message,
                    )
                    for r in results
                ),
            )
            for topic, results in _group(msg.results, lambda r: r.topic).items()
        ),
    )


def _elect_leaders_response_from_kio(e: el_resp.ElectLeadersResponse) -> m.ElectLeadersResponse:
    return m.ElectLeadersResponse(
        error_code=_code(e.error_code),
        results=tuple(
            m.ElectLeadersResult(
                topic=t.topic,
                partition=r.partition_id,
                error_code=_code(r.error_code),
                error_message=r.error_message,
            )
            for t in e.replica_election_results
            for r in t.partition_result
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------- DescribeTopicPartitions v0
# ELR and LastKnownELR are nullable in the v0 schema; kraftlog sends them as lists (empty when
# none), as Kafka's broker does, and reads a null as (). The topic's TopicAuthorizedOperations is
# left at the schema default (INT32_MIN, "not provided"): kraftlog has no ACLs.
def _dtp_request_to_kio(
    msg: m.DescribeTopicPartitionsRequest,
) -> dtp_req.DescribeTopicPartitionsRequest:
    return dtp_req.DescribeTopicPartitionsRequest(
        topics=tuple(dtp_req.TopicRequest(name=TopicName(t)) for t in msg.topics),
        response_partition_limit=i32(msg.response_partition_limit),
        cursor=(
            None if msg.cursor is None
            else dtp_req.Cursor(topic_name=TopicName(msg.cursor.topic_name),
                                partition_index=i32(msg.cursor.partition_index))
        ),
    )


def _dtp_request_from_kio(
    e: dtp_req.DescribeTopicPartitionsRequest,
) -> m.DescribeTopicPartitionsRequest:
    return m.DescribeTopicPartitionsRequest(
        topics=tuple(t.name for t in e.topics),
        response_partition_limit=e.response_partition_limit,
        cursor=(
            None if e.cursor is None
            else m.DescribeTopicPartitionsCursor(e.cursor.topic_name, e.cursor.partition_index)
        ),
    )


def _dtp_response_to_kio(
    msg: m.DescribeTopicPartitionsResponse,
) -> dtp_resp.DescribeTopicPartitionsResponse:
    return dtp_resp.DescribeTopicPartitionsResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        topics=tuple(
            dtp_resp.DescribeTopicPartitionsResponseTopic(
                error_code=_ec(t.error_code),
                name=TopicName(t.name),
                topic_id=t.topic_id,
                is_internal=t.is_internal,
                partitions=tuple(
                    dtp_resp.DescribeTopicPartitionsResponsePartition(
                        error_code=_ec(p.error_code),
                        partition_index=i32(p.partition_index),
                        leader_id=BrokerId(p.leader_id),
                        leader_epoch=i32(p.leader_epoch),
                        replica_nodes=tuple(BrokerId(r) for r in p.replica_nodes),
                        isr_nodes=tuple(BrokerId(r) for r in p.isr_nodes),
                        eligible_leader_replicas=tuple(BrokerId(r) for r in p.eligible_leader_replicas),
                        last_known_elr=tuple(BrokerId(r) for r in p.last_known_elr),
                        offline_replicas=tuple(BrokerId(r) for r in p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
            for t in msg.topics
        ),
        next_cursor=(
            None if msg.next_cursor is None
            else dtp_resp.Cursor(topic_name=TopicName(msg.next_cursor.topic_name),
                                 partition_index=i32(msg.next_cursor.partition_index))
        ),
    )


def _dtp_response_from_kio(
    e: dtp_resp.DescribeTopicPartitionsResponse,
) -> m.DescribeTopicPartitionsResponse:
    return m.DescribeTopicPartitionsResponse(
        topics=tuple(
            m.DescribeTopicPartitionsResponseTopic(
                error_code=_code(t.error_code),
                name=t.name or "",
                topic_id=_uuid_out(t.topic_id),
                is_internal=t.is_internal,
                partitions=tuple(
                    m.DescribeTopicPartitionsResponsePartition(
                        error_code=_code(p.error_code),
                        partition_index=p.partition_index,
                        leader_id=p.leader_id,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=tuple(p.replica_nodes),
                        isr_nodes=tuple(p.isr_nodes),
                        eligible_leader_replicas=tuple(p.eligible_leader_replicas or ()),
                        last_known_elr=tuple(p.last_known_elr or ()),
                        offline_replicas=tuple(p.offline_replicas),
                    )
                    for p in t.partitions
                ),
            )
            for t in e.topics
        ),
        next_cursor=(
            None if e.next_cursor is None
            else m.DescribeTopicPartitionsCursor(e.next_cursor.topic_name,
                                                 e.next_cursor.partition_index)
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# --------------------------------------------------------------------- InitProducerId v4
def _init_producer_id_request_to_kio(msg: m.InitProducerIdRequest) -> ipi_req.InitProducerIdRequest:
    return ipi_req.InitProducerIdRequest(
        transactional_id=msg.transactional_id,
        transaction_timeout=_td32(msg.transaction_timeout_ms),
        producer_id=ProducerId(msg.producer_id),
        producer_epoch=i16(msg.producer_epoch),
    )


def _init_producer_id_request_from_kio(e: ipi_req.InitProducerIdRequest) -> m.InitProducerIdRequest:
    return m.InitProducerIdRequest(
        transactional_id=e.transactional_id,
        transaction_timeout_ms=_ms(e.transaction_timeout),
        producer_id=e.producer_id,
        producer_epoch=e.producer_epoch,
    )


def _init_producer_id_response_to_kio(msg: m.InitProducerIdResponse) -> ipi_resp.InitProducerIdResponse:
    return ipi_resp.InitProducerIdResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        error_code=_ec(msg.error_code),
        producer_id=ProducerId(msg.producer_id),
        producer_epoch=i16(msg.producer_epoch),
    )


def _init_producer_id_response_from_kio(e: ipi_resp.InitProducerIdResponse) -> m.InitProducerIdResponse:
    return m.InitProducerIdResponse(
        error_code=_code(e.error_code),
        producer_id=e.producer_id,
        producer_epoch=e.producer_epoch,
        throttle_time_ms=_ms(e.throttle_time),
    )


# -------------------------------------------------------------------- FindCoordinator v4
def _find_coordinator_request_to_kio(
    msg: m.FindCoordinatorRequest,
) -> fc_req.FindCoordinatorRequest:
    return fc_req.FindCoordinatorRequest(
        key_type=i8(msg.key_type), coordinator_keys=tuple(msg.coordinator_keys)
    )


def _find_coordinator_request_from_kio(
    e: fc_req.FindCoordinatorRequest,
) -> m.FindCoordinatorRequest:
    return m.FindCoordinatorRequest(
        coordinator_keys=tuple(e.coordinator_keys), key_type=e.key_type
    )


def _find_coordinator_response_to_kio(
    msg: m.FindCoordinatorResponse,
) -> fc_resp.FindCoordinatorResponse:
    return fc_resp.FindCoordinatorResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        coordinators=tuple(
            fc_resp.Coordinator(
                key=c.key,
                node_id=BrokerId(c.node_id),
                host=c.host,
                port=i32(c.port),
                error_code=_ec(c.error_code),
                error_message=c.error_message,
            )
            for c in msg.coordinators
        ),
    )


def _find_coordinator_response_from_kio(
    e: fc_resp.FindCoordinatorResponse,
) -> m.FindCoordinatorResponse:
    return m.FindCoordinatorResponse(
        coordinators=tuple(
            m.Coordinator(
                key=c.key,
                node_id=c.node_id,
                host=c.host,
                port=c.port,
                error_code=_code(c.error_code),
                error_message=c.error_message,
            )
            for c in e.coordinators
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------------ OffsetCommit v8
def _offset_commit_request_to_kio(msg: m.OffsetCommitRequest) -> oc_req.OffsetCommitRequest:
    return oc_req.OffsetCommitRequest(
        group_id=GroupId(msg.group_id),
        generation_id_or_member_epoch=i32(msg.generation_id_or_member_epoch),
        member_id=msg.member_id,
        group_instance_id=msg.group_instance_id,
        topics=tuple(
            oc_req.OffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=tuple(
                    oc_req.OffsetCommitRequestPartition(
                        partition_index=i32(p.partition),
                        committed_offset=i64(p.committed_offset),
                        committed_leader_epoch=i32(p.committed_leader_epoch),
                        committed_metadata=p.committed_metadata,
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _offset_commit_request_from_kio(e: oc_req.OffsetCommitRequest) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        group_id=e.group_id,
        partitions=tuple(
            m.OffsetCommitPartition(
                topic=t.name,
                partition=p.partition_index,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                committed_metadata=p.committed_metadata,
            )
            for t in e.topics
            for p in t.partitions
        ),
        generation_id_or_member_epoch=e.generation_id_or_member_epoch,
        member_id=e.member_id,
        group_instance_id=e.group_instance_id,
    )


def _offset_commit_response_to_kio(msg: m.OffsetCommitResponse) -> oc_resp.OffsetCommitResponse:
    return oc_resp.OffsetCommitResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        topics=tuple(
            oc_resp.OffsetCommitResponseTopic(
                name=TopicName(topic),
                partitions=tuple(
                    oc_resp.OffsetCommitResponsePartition(
                        partition_index=i32(p.partition), error_code=_ec(p.error_code)
                    )
                    for p in parts
                ),
            )
            for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
        ),
    )


def _offset_commit_response_from_kio(e: oc_resp.OffsetCommitResponse) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(
        partitions=tuple(
            m.OffsetCommitPartitionResponse(
                topic=t.name, partition=p.partition_index, error_code=_code(p.error_code)
            )
            for t in e.topics
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ------------------------------------------------------------------------- OffsetFetch v8
# v8 is the multi-group form (KIP-709): ``Groups[]`` in the request and the response. The core
# message carries one group, which maps to a one-element ``Groups``; decoding bytes with any other
# number of groups raises WireError. The core request's ``partitions`` None ("every committed
# partition") is Kafka's null ``Topics``; an empty tuple is an empty (non-null) list. A request
# topic with no partition indexes has no flat core form and decodes to nothing.
def _one_group(groups: tuple[T, ...], what: str) -> T:
    if len(groups) != 1:
        raise WireError(f"{what} with {len(groups)} groups: kraftlog maps exactly one group")
    return groups[0]


def _offset_fetch_request_to_kio(msg: m.OffsetFetchRequest) -> of_req.OffsetFetchRequest:
    topics = (
        None if msg.partitions is None
        else tuple(
            of_req.OffsetFetchRequestTopics(
                name=TopicName(topic), partition_indexes=tuple(i32(p) for _, p in parts)
            )
            for topic, parts in _group(msg.partitions, lambda tp: tp[0]).items()
        )
    )
    return of_req.OffsetFetchRequest(
        groups=(of_req.OffsetFetchRequestGroup(group_id=GroupId(msg.group_id), topics=topics),),
        require_stable=msg.require_stable,
    )


def _offset_fetch_request_from_kio(e: of_req.OffsetFetchRequest) -> m.OffsetFetchRequest:
    g = _one_group(e.groups, "OffsetFetch request")
    return m.OffsetFetchRequest(
        group_id=g.group_id,
        partitions=(
            None if g.topics is None
            else tuple((t.name, p) for t in g.topics for p in t.partition_indexes)
        ),
        require_stable=e.require_stable,
    )


def _offset_fetch_response_to_kio(msg: m.OffsetFetchResponse) -> of_resp.OffsetFetchResponse:
    return of_resp.OffsetFetchResponse(
        throttle_time=_td32(msg.throttle_time_ms),
        groups=(
            of_resp.OffsetFetchResponseGroup(
                group_id=GroupId(msg.group_id),
                topics=tuple(
                    of_resp.OffsetFetchResponseTopics(
                        name=TopicName(topic),
                        partitions=tuple(
                            of_resp.OffsetFetchResponsePartitions(
                                partition_index=i32(p.partition),
                                committed_offset=i64(p.committed_offset),
                                committed_leader_epoch=i32(p.committed_leader_epoch),
                                metadata=p.metadata,
                                error_code=_ec(p.error_code),
                            )
                            for p in parts
                        ),
                    )
                    for topic, parts in _group(msg.partitions, lambda p: p.topic).items()
                ),
                error_code=_ec(msg.error_code),
            ),
        ),
    )


def _offset_fetch_response_from_kio(e: of_resp.OffsetFetchResponse) -> m.OffsetFetchResponse:
    g = _one_group(e.groups, "OffsetFetch response")
    return m.OffsetFetchResponse(
        group_id=g.group_id,
        error_code=_code(g.error_code),
        partitions=tuple(
            m.OffsetFetchPartition(
                topic=t.name,
                partition=p.partition_index,
                committed_offset=p.committed_offset,
                committed_leader_epoch=p.committed_leader_epoch,
                metadata=p.metadata,
                error_code=_code(p.error_code),
            )
            for t in g.topics
            for p in t.partitions
        ),
        throttle_time_ms=_ms(e.throttle_time),
    )


# ============================================================================ registry
@dataclass(frozen=True, slots=True)
class _Codec:
    core: type
    kio: type
    to_kio: Callable[[Any], Any]
    from_kio: Callable[[Any], Any]


_CODECS: tuple[_Codec, ...] = (
    _Codec(m.FetchRequest, f_req.FetchRequest, _fetch_request_to_kio, _fetch_request_from_kio),
    _Codec(m.FetchResponse, f_resp.FetchResponse, _fetch_response_to_kio, _fetch_response_from_kio),
    _Codec(m.MetadataFetchRequest, f_req.FetchRequest,
           _metadata_fetch_request_to_kio, _metadata_fetch_request_from_kio),
    _Codec(m.MetadataFetchResponse, f_resp.FetchResponse,
           _metadata_fetch_response_to_kio, _metadata_fetch_response_from_kio),
    _Codec(m.AlterPartitionRequest, ap_req.AlterPartitionRequest,
           _alter_partition_request_to_kio, _alter_partition_request_from_kio),
    _Codec(m.AlterPartitionResponse, ap_resp.AlterPartitionResponse,
           _alter_partition_response_to_kio, _alter_partition_response_from_kio),
    _Codec(m.BrokerRegistrationRequest, br_req.BrokerRegistrationRequest,
           _broker_registration_request_to_kio, _broker_registration_request_from_kio),
    _Codec(m.BrokerRegistrationResponse, br_resp.BrokerRegistrationResponse,
           _broker_registration_response_to_kio, _broker_registration_response_from_kio),
    _Codec(m.BrokerHeartbeatRequest, bh_req.BrokerHeartbeatRequest,
           _broker_heartbeat_request_to_kio, _broker_heartbeat_request_from_kio),
    _Codec(m.BrokerHeartbeatResponse, bh_resp.BrokerHeartbeatResponse,
           _broker_heartbeat_response_to_kio, _broker_heartbeat_response_from_kio),
    _Codec(m.ProduceRequest, p_req.ProduceRequest, _produce_request_to_kio, _produce_request_from_kio),
    _Codec(m.ProduceResponse, p_resp.ProduceResponse,
           _produce_response_to_kio, _produce_response_from_kio),
    _Codec(m.ListOffsetsRequest, lo_req.ListOffsetsRequest,
           _list_offsets_request_to_kio, _list_offsets_request_from_kio),
    _Codec(m.ListOffsetsResponse, lo_resp.ListOffsetsResponse,
           _list_offsets_response_to_kio, _list_offsets_response_from_kio),
    _Codec(m.OffsetForLeaderEpochRequest, ofle_req.OffsetForLeaderEpochRequest,
           _ofle_request_to_kio, _ofle_request_from_kio),
    _Codec(m.OffsetForLeaderEpochResponse, ofle_resp.OffsetForLeaderEpochResponse,
           _ofle_response_to_kio, _ofle_response_from_kio),
    _Codec(m.MetadataRequest, md_req.MetadataRequest, _metadata_request_to_kio, _metadata_request_from_kio),
    _Codec(m.MetadataResponse, md_resp.MetadataResponse,
           _metadata_response_to_kio, _metadata_response_from_kio),
    _Codec(m.CreateTopicsRequest, ct_req.CreateTopicsRequest,
           _create_topics_request_to_kio, _create_topics_request_from_kio),
    _Codec(m.CreateTopicsResponse, ct_resp.CreateTopicsResponse,
           _create_topics_response_to_kio, _create_topics_response_from_kio),
    _Codec(m.IncrementalAlterConfigsRequest, iac_req.IncrementalAlterConfigsRequest,
           _iac_request_to_kio, _iac_request_from_kio),
    _Codec(m.IncrementalAlterConfigsResponse, iac_resp.IncrementalAlterConfigsResponse,
           _iac_response_to_kio, _iac_response_from_kio),
    _Codec(m.ElectLeadersRequest, el_req.ElectLeadersRequest,
           _elect_leaders_request_to_kio, _elect_leaders_request_from_kio),
    _Codec(m.ElectLeadersResponse, el_resp.ElectLeadersResponse,
           _elect_leaders_response_to_kio, _elect_leaders_response_from_kio),
    _Codec(m.DescribeTopicPartitionsRequest, dtp_req.DescribeTopicPartitionsRequest,
           _dtp_request_to_kio, _dtp_request_from_kio),
    _Codec(m.DescribeTopicPartitionsResponse, dtp_resp.DescribeTopicPartitionsResponse,
           _dtp_response_to_kio, _dtp_response_from_kio),
    _Codec(m.InitProducerIdRequest, ipi_req.InitProducerIdRequest,
           _init_producer_id_request_to_kio, _init_producer_id_request_from_kio),
    _Codec(m.InitProducerIdResponse, ipi_resp.InitProducerIdResponse,
           _init_producer_id_response_to_kio, _init_producer_id_response_from_kio),
    _Codec(m.FindCoordinatorRequest, fc_req.FindCoordinatorRequest,
           _find_coordinator_request_to_kio, _find_coordinator_request_from_kio),
    _Codec(m.FindCoordinatorResponse, fc_resp.FindCoordinatorResponse,
           _find_coordinator_response_to_kio, _find_coordinator_response_from_kio),
    _Codec(m.OffsetCommitRequest, oc_req.OffsetCommitRequest,
           _offset_commit_request_to_kio, _offset_commit_request_from_kio),
    _Codec(m.OffsetCommitResponse, oc_resp.OffsetCommitResponse,
           _offset_commit_response_to_kio, _offset_commit_response_from_kio),
    _Codec(m.OffsetFetchRequest, of_req.OffsetFetchRequest,
           _offset_fetch_request_to_kio, _offset_fetch_request_from_kio),
    _Codec(m.OffsetFetchResponse, of_resp.OffsetFetchResponse,
           _offset_fetch_response_to_kio, _offset_fetch_response_from_kio),
)

_BY_CORE: dict[type, _Codec] = {c.core: c for c in _CODECS}

#: kio entity class -> default core decoder (Fetch picks the metadata-log form by topic id).
_FROM_KIO_DEFAULT: dict[type, Callable[[Any], Any]] = {c.kio: c.from_kio for c in _CODECS}
_FROM_KIO_DEFAULT[f_req.FetchRequest] = _any_fetch_request_from_kio
_FROM_KIO_DEFAULT[f_resp.FetchResponse] = _any_fetch_response_from_kio

#: API key -> kio request class (the one version this module maps per API).
_REQUEST_BY_KEY: dict[int, type] = {
    int(c.kio.__api_key__): c.kio for c in _CODECS if c.core in m.REQUEST_TYPES
}

#: Core request type -> core response type.
RESPONSE_TYPES: dict[type, type] = {
    req: getattr(m, req.__name__.removesuffix("Request") + "Response") for req in m.REQUEST_TYPES
}
_REQUEST_FOR_RESPONSE: dict[type, type] = {resp: req for req, resp in RESPONSE_TYPES.items()}


def response_type_for(request_type: type) -> type:
    """The core response class answering ``request_type`` (e.g. FetchRequest -> FetchResponse,
    MetadataFetchRequest -> MetadataFetchResponse). Raises KeyError for a non-request type."""
    return RESPONSE_TYPES[request_type]


def _codec(core_type: type) -> _Codec:
    try:
        return _BY_CORE[core_type]
    except KeyError:
        raise TypeError(f"{core_type.__name__} has no wire mapping in kraftlog.protocol.wire") from None


# ----------------------------------------------------------------------- building blocks
def to_kio(msg: object) -> Any:
    """The kio entity (request or response payload, Kafka's version named by the request class's
    ``VERSION``) for a core message. Raises TypeError for an unmapped type and
    :class:`UnsupportedVersionError` for what the mapped version cannot carry (ElectLeaders types
    2..4 and DesiredLeaders, KIP-966's v3)."""
    return _codec(type(msg)).to_kio(msg)


def from_kio(entity: Any, as_type: type | None = None) -> object:
    """The core message for a kio entity. ``as_type`` forces the core class; without it a Fetch
    request/response whose only topic is ``METADATA_TOPIC_ID`` becomes a MetadataFetchRequest /
    MetadataFetchResponse and every other entity maps to its one core class. Raises TypeError for an
    unmapped entity and :class:`WireError` for content the core cannot represent."""
    if as_type is not None:
        codec = _codec(as_type)
        if not isinstance(entity, codec.kio):
            raise TypeError(f"{type(entity).__name__} is not the kio entity of {as_type.__name__}")
        return codec.from_kio(entity)
    try:
        decode = _FROM_KIO_DEFAULT[type(entity)]
    except KeyError:
        raise TypeError(f"{type(entity).__module__}.{type(entity).__name__} has no core mapping") from None
    return decode(entity)


# --------------------------------------------------------------------------------- bytes
_HEADER_PEEK = struct.Struct(">hhi")


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` (a request or response without size) with Kafka's 4-byte big-endian size."""
    return struct.pack(">i", len(payload)) + payload


def _write(entity: Any, out: io.BytesIO) -> None:
    entity_writer(type(entity))(out, entity)


_READERS: dict[type, Any] = {}


def _read(entity_type: type, data: bytes | memoryview, offset: int) -> tuple[Any, int]:
    reader = _READERS.get(entity_type)
    if reader is None:
        reader = _READERS[entity_type] = entity_reader(entity_type)
    try:
        entity, size = reader(data, offset)
    except WireError:
        raise
    except Exception as exc:  # kio's native reader raises its own errors (underflow, bad values)
        raise WireError(f"cannot read {entity_type.__name__}: {exc}") from exc
    return entity, offset + size


def encode_request(msg: object, correlation_id: int, client_id: str = "kraftlog") -> bytes:
    """A Kafka request without the size prefix: the request header (kio's ``__header_schema__``,
    v2 for these flexible versions: API key, version, ``correlation_id``, ``client_id``) then the
    payload of :func:`to_kio`. Raises as :func:`to_kio`."""
    entity = to_kio(msg)
    header = entity.__header_schema__(
        request_api_key=i16(entity.__api_key__),
        request_api_version=i16(entity.__version__),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    out = io.BytesIO()
    _write(header, out)
    _write(entity, out)
    return out.getvalue()


def peek_request_header(data: bytes | memoryview) -> tuple[int, int, int]:
    """(API key, API version, correlation id) of a request without the size prefix -- the fields
    every request header version starts with, for routing before decoding."""
    if len(data) < _HEADER_PEEK.size:
        raise WireError("request shorter than a request header")
    return _HEADER_PEEK.unpack_from(data, 0)


def decode_request(data: bytes | memoryview) -> tuple[int, object]:
    """(correlation id, core message) of a request without the size prefix. Dispatches on the API key;
    a Fetch whose only topic is ``METADATA_TOPIC_ID`` decodes to MetadataFetchRequest. Raises
    :class:`UnsupportedVersionError` for an API key or version this module does not map, and
    :class:`WireError` for malformed or trailing bytes."""
    api_key, api_version, _ = peek_request_header(data)
    kio_type = _REQUEST_BY_KEY.get(api_key)
    if kio_type is None:
        raise UnsupportedVersionError(f"API key {api_key} is not mapped by kraftlog.protocol.wire")
    if api_version != kio_type.__version__:
        raise UnsupportedVersionError(
            f"API key {api_key} version {api_version}: kraftlog maps version {kio_type.__version__}"
        )
    header, offset = _read(kio_type.__header_schema__, data, 0)
    entity, offset = _read(kio_type, data, offset)
    if offset != len(data):
        raise WireError(f"{len(data) - offset} trailing bytes after {kio_type.__name__}")
    return header.correlation_id, _FROM_KIO_DEFAULT[kio_type](entity)


def encode_response(msg: object, correlation_id: int) -> bytes:
    """A Kafka response without the size prefix: the response header (kio's ``__header_schema__``,
    v1 for these flexible versions) then the payload of :func:`to_kio`. The response class fixes the
    API and version (its request's), so no API key is needed. Raises as :func:`to_kio`."""
    entity = to_kio(msg)
    out = io.BytesIO()
    _write(entity.__header_schema__(correlation_id=i32(correlation_id)), out)
    _write(entity, out)
    return out.getvalue()


def decode_response(data: bytes | memoryview, request_msg_type: type) -> tuple[int, object]:
    """(correlation id, core message) of a response without the size prefix. Responses do not carry
    their API key, so ``request_msg_type`` (the core request class it answers) picks the schema and
    the core class (MetadataFetchRequest -> MetadataFetchResponse). Raises :class:`WireError` for
    malformed or trailing bytes, KeyError for a non-request type."""
    codec = _codec(RESPONSE_TYPES[request_msg_type])
    header, offset = _read(codec.kio.__header_schema__, data, 0)
    entity, offset = _read(codec.kio, data, offset)
    if offset != len(data):
        raise WireError(f"{len(data) - offset} trailing bytes after {codec.kio.__name__}")
    return header.correlation_id, codec.from_kio(entity)


def roundtrip(msg: object, correlation_id: int = 1, as_response_to: type | None = None) -> object:
    """Send ``msg`` through the wire format and back: encode to bytes, decode, return the decoded core
    message (the simulator's wire switch). Requests go through :func:`decode_request`'s API-key
    dispatch; responses decode as the answer to ``as_response_to`` (default: the request class paired
    with the response's class). Equal (==) to ``msg`` for every mapped type, except that partitions
    of one topic come back contiguous (see the module docstring). Raises AssertionError if the
    correlation id does not survive, and what the encoders/decoders raise."""
    msg_type = type(msg)
    if msg_type in RESPONSE_TYPES:
        cid, out = decode_request(encode_request(msg, correlation_id))
    else:
        request_type = as_response_to or _REQUEST_FOR_RESPONSE.get(msg_type)
        if request_type is None:
            raise TypeError(f"{msg_type.__name__} has no wire mapping in kraftlog.protocol.wire")
        cid, out = decode_response(encode_response(msg, correlation_id), request_type)
    if cid != correlation_id:
        raise AssertionError(f"correlation id {correlation_id} came back as {cid}")
    return out
