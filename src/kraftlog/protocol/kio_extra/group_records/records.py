"""
The four ``__consumer_offsets`` record schemas kraftlog writes, by hand from Kafka's
``OffsetCommitKey.json`` (versions 0-1, same fields), ``OffsetCommitValue.json`` (v3: ``leaderEpoch`` added
for KIP-320; ``expireTimestamp`` only in v1), ``GroupMetadataKey.json`` (v2) and ``GroupMetadataValue.json``
(v3: ``currentStateTimestamp`` from v2, ``groupInstanceId`` from v3), in the shape of kio's generated ``data``
entities so that ``kio.serial.entity_reader`` / ``entity_writer`` read and write them. None of these versions
is flexible (Kafka's first flexible version of each value is 4).
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i64


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = False
    group: str = field(metadata={"kafka_type": "string"})
    topic: str = field(metadata={"kafka_type": "string"})
    partition: i32 = field(metadata={"kafka_type": "int32"})


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    offset: i64 = field(metadata={"kafka_type": "int64"})
    leader_epoch: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-1))
    metadata: str = field(metadata={"kafka_type": "string"})
    commit_timestamp: i64 = field(metadata={"kafka_type": "int64"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(2)
    __flexible__: ClassVar[bool] = False
    group: str = field(metadata={"kafka_type": "string"})


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberMetadata:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    member_id: str = field(metadata={"kafka_type": "string"})
    group_instance_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    client_id: str = field(metadata={"kafka_type": "string"})
    client_host: str = field(metadata={"kafka_type": "string"})
    rebalance_timeout: i32 = field(metadata={"kafka_type": "int32"})
    session_timeout: i32 = field(metadata={"kafka_type": "int32"})
    subscription: bytes = field(metadata={"kafka_type": "bytes"})
    assignment: bytes = field(metadata={"kafka_type": "bytes"})


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    __type__: ClassVar = EntityType.data
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = False
    protocol_type: str = field(metadata={"kafka_type": "string"})
    generation: i32 = field(metadata={"kafka_type": "int32"})
    protocol: str | None = field(metadata={"kafka_type": "string"})
    leader: str | None = field(metadata={"kafka_type": "string"})
    current_state_timestamp: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    members: tuple[MemberMetadata, ...]
