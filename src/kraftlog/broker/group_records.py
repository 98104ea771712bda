"""The records the group coordinator writes to ``__consumer_offsets`` (Kafka's ``GroupCoordinatorRecordSerde``
over ``CoordinatorRecordType``): a record's key and value are each an int16 version followed by that version
of the schema (:mod:`kraftlog.protocol.kio_extra.group_records.records`); a tombstone is a null value.

* key version 0 or 1: OffsetCommitKey (group, topic, partition) with an OffsetCommitValue (written as v3, with
  the committed leader epoch of KIP-320) or a tombstone (the offset deleted);
* key version 2: GroupMetadataKey (group) with a GroupMetadataValue (written as v3) or a tombstone (the group
  deleted).

Kafka's ``CoordinatorLoader`` fails a load on a key it cannot read; kraftlog's loader skips such a record and
counts it (:class:`UnknownRecord`), so that one corrupt record does not make a coordinator unloadable.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TypeAlias

from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32, i64

from ..protocol.kio_extra.group_records.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)
from ..protocol.wire.prescan import check_lengths

__all__ = ["OffsetKey", "GroupKey", "OffsetValue", "GroupValue", "GroupMember", "UnknownRecord", "decode_key",
           "encode_key", "encode_offset_value", "decode_offset_value", "encode_group_value", "decode_group_value",
           "GroupRecordError"]

_INT16 = 2
_OFFSET_KEY_VERSION = 1
_GROUP_KEY_VERSION = 2
_OFFSET_VALUE_VERSION = 3
_GROUP_VALUE_VERSION = 3

_write_offset_key = entity_writer(OffsetCommitKey)
_read_offset_key = entity_reader(OffsetCommitKey)
_write_group_key = entity_writer(GroupMetadataKey)
_read_group_key = entity_reader(GroupMetadataKey)
_write_offset_value = entity_writer(OffsetCommitValue)
_read_offset_value = entity_reader(OffsetCommitValue)
_write_group_value = entity_writer(GroupMetadataValue)
_read_group_value = entity_reader(GroupMetadataValue)


class GroupRecordError(ValueError):
    """A ``__consumer_offsets`` key or value kraftlog cannot read (truncated, an unknown version)."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """An offset commit's key: the group and the committed (topic, partition)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    """A group metadata record's key."""

    group: str


@dataclass(frozen=True, slots=True)
class UnknownRecord:
    """A key of a version kraftlog does not write (a transaction's, a KIP-848 group's) or cannot read."""

    version: int


RecordKey: TypeAlias = OffsetKey | GroupKey | UnknownRecord


@dataclass(frozen=True, slots=True)
class OffsetValue:
    """A committed offset: ``offset`` (the next record to consume), ``leader_epoch`` of the last consumed record
    (-1 unknown; KIP-320), ``metadata`` the client's string, ``commit_timestamp`` (ms)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int


@dataclass(frozen=True, slots=True)
class GroupMember:
    """One member of a classic group as GroupMetadataValue keeps it (times in ms)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    """A classic group's stored state: ``protocol_type`` ("" for a group used only to commit offsets),
    ``generation``, the chosen ``protocol`` and ``leader`` (None while Empty), ``current_state_timestamp`` (ms:
    when the group entered its current state; -1 unknown) and its members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMember, ...]


def _versioned(version: int, write, entity) -> bytes:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    buf.write(version.to_bytes(_INT16, "big", signed=True))
    write(buf, entity)
    return buf.getvalue()


def _read(data: bytes, reader, what: str, entity_type: type | None = None):  # type: ignore[no-untyped-def]
    body = memoryview(data)[_INT16:]
    try:
        if entity_type is not None:  # an array length the bytes cannot hold would make kio's reader abort
            check_lengths(entity_type, body, 0)
        value, size = reader(body, 0)
    except Exception as exc:  # kio raises struct/Unicode/Index errors on short or bad input
        raise GroupRecordError(f"malformed {what}: {exc}") from None
    if size != len(body):
        raise GroupRecordError(f"malformed {what}: {len(body) - size} bytes after it")
    return value


def _version(data: bytes | None, what: str) -> int:
    if data is None or len(data) < _INT16:
        raise GroupRecordError(f"{what} shorter than its version")
    return int.from_bytes(data[:_INT16], "big", signed=True)


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    """The record key bytes: OffsetCommitKey v1 or GroupMetadataKey v2 after its version."""
    if isinstance(key, OffsetKey):
        return _versioned(_OFFSET_KEY_VERSION, _write_offset_key,
                          OffsetCommitKey(group=key.group, topic=key.topic, partition=i32(key.partition)))
    return _versioned(_GROUP_KEY_VERSION, _write_group_key, GroupMetadataKey(group=key.group))


def decode_key(data: bytes | None) -> RecordKey:
    """The key of a ``__consumer_offsets`` record; :class:`UnknownRecord` for another version. Raises
    :class:`GroupRecordError` for a key that is too short or malformed."""
    version = _version(data, "record key")
    assert data is not None
    if version in (0, 1):
        k = _read(data, _read_offset_key, "OffsetCommitKey")
        return OffsetKey(k.group, k.topic, int(k.partition))
    if version == _GROUP_KEY_VERSION:
        return GroupKey(_read(data, _read_group_key, "GroupMetadataKey").group)
    return UnknownRecord(version)


def encode_offset_value(value: OffsetValue) -> bytes:
    """OffsetCommitValue v3 after its version."""
    return _versioned(_OFFSET_VALUE_VERSION, _write_offset_value, OffsetCommitValue(
        offset=i64(value.offset), leader_epoch=i32(value.leader_epoch), metadata=value.metadata,
        commit_timestamp=i64(value.commit_timestamp)))


def decode_offset_value(data: bytes) -> OffsetValue:
    """An OffsetCommitValue (v3 as kraftlog writes; v0/v2 without a leader epoch read as -1). Raises
    :class:`GroupRecordError` for another version or malformed bytes."""
    version = _version(data, "OffsetCommitValue")
    if version != _OFFSET_VALUE_VERSION:
        raise GroupRecordError(f"OffsetCommitValue version {version} is not read by kraftlog (it writes v3)")
    v = _read(data, _read_offset_value, "OffsetCommitValue")
    return OffsetValue(int(v.offset), int(v.leader_epoch), v.metadata, int(v.commit_timestamp))


def encode_group_value(value: GroupValue) -> bytes:
    """GroupMetadataValue v3 after its version."""
    members = tuple(MemberMetadata(
        member_id=mb.member_id, group_instance_id=mb.group_instance_id, client_id=mb.client_id,
        client_host=mb.client_host, rebalance_timeout=i32(mb.rebalance_timeout_ms),
        session_timeout=i32(mb.session_timeout_ms), subscription=mb.subscription, assignment=mb.assignment)
        for mb in value.members)
    return _versioned(_GROUP_VALUE_VERSION, _write_group_value, GroupMetadataValue(
        protocol_type=value.protocol_type, generation=i32(value.generation), protocol=value.protocol,
        leader=value.leader, current_state_timestamp=i64(value.current_state_timestamp), members=members))


def decode_group_value(data: bytes) -> GroupValue:
    """A GroupMetadataValue v3. Raises :class:`GroupRecordError` for another version or malformed bytes."""
    version = _version(data, "GroupMetadataValue")
    if version != _GROUP_VALUE_VERSION:
        raise GroupRecordError(f"GroupMetadataValue version {version} is not read by kraftlog (it writes v3)")
    v = _read(data, _read_group_value, "GroupMetadataValue", GroupMetadataValue)
    return GroupValue(v.protocol_type, int(v.generation), v.protocol, v.leader, int(v.current_state_timestamp),
                      tuple(GroupMember(mb.member_id, mb.group_instance_id, mb.client_id, mb.client_host,
                                        int(mb.rebalance_timeout), int(mb.session_timeout), bytes(mb.subscription),
                                        bytes(mb.assignment)) for mb in v.members))
