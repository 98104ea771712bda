"""
ElectLeaders v3 response (API key 43, KIP-966 part 2), written in kio's generated style.

kio 0.6.5 (like Kafka trunk) stops at ElectLeaders v2. KIP-966 bumps ElectLeaders to v3 for the
request's new election types and DesiredLeaders and changes nothing in the response, so this is
kio's ``kio.schema.elect_leaders.v2.response`` at version 3 (a response is read at its request's
version). kio's ``entity_reader`` / ``entity_writer`` read and write it like any generated entity;
:mod:`kraftlog.protocol.kio_extra` indexes it by (API key, version).
"""

from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i16, i32, i32Timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionResult:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(43)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    partition_id: i32 = field(metadata={"kafka_type": "int32"})
    """The partition id."""
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The result error, or zero if there was no error. An int16 like Kafka's JSON ``ErrorCode`` field (the
    same bytes as kio's ``error_code``), not kio's ``ErrorCode`` enum: v3 may carry KIP-966's
    REQUEST_LIMIT_REACHED, a code Kafka never assigned (``kraftlog.protocol.errors``)."""
    error_message: str | None = field(metadata={"kafka_type": "string"})
    """The result message, or null if there was no error."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicaElectionResult:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(43)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    topic: TopicName = field(metadata={"kafka_type": "string"})
    """The topic name."""
    partition_result: tuple[PartitionResult, ...]
    """The results for each partition."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(43)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled due to a quota violation, or zero if the
    request did not violate any quota."""
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    """The top level response error code."""
    replica_election_results: tuple[ReplicaElectionResult, ...]
    """The election results, or an empty array if the requester did not have permission and the request asks for
    all partitions."""
