"""
ElectLeaders v3 request (API key 43, KIP-966 part 2), written in kio's generated style.

kio 0.6.5 (like Kafka trunk) stops at ElectLeaders v2; this module is kio's
``kio.schema.elect_leaders.v2.request`` plus what KIP-966's JSON for ``ElectLeadersRequest`` adds in
v3 ("validVersions": "0-3", "flexibleVersions": "2+"): election types 2..4 and, in each topic entry
after ``Partitions``, ``DesiredLeaders`` ([]int32, versions 3+, nullable 3+), whose entries match the
entries of ``Partitions`` by index. kio's ``entity_reader`` / ``entity_writer`` read and write it like
any generated entity; :mod:`kraftlog.protocol.kio_extra` indexes it by (API key, version).

Election types, as kraftlog numbers them (``kraftlog.protocol.messages``): 0 PREFERRED, 1 UNCLEAN,
2 LONGEST_LOG_BALANCED, 3 LONGEST_LOG_AGGRESSIVE, 4 DESIGNATION (with DesiredLeaders). The KIP's
``about`` text for ElectionType in this revision still numbers them differently ('1' desired
replicas, '2' longest log among the last known ELR, '3' longest log among the replicas that reply in
time) and leaves UNCLEAN out; the wire carries the int8 either way. The KIP gives DesiredLeaders no
default: like Kafka's generated Java (an empty list), this one defaults to ().
"""

import datetime
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.types import TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(43)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    topic: TopicName = field(metadata={"kafka_type": "string"})
    """The name of a topic."""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions of this topic whose leader should be elected."""
    desired_leaders: tuple[i32, ...] | None = field(metadata={"kafka_type": "int32"}, default=())
    """The desired leaders. The entry should match with the entry in Partitions by the index."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ElectLeadersRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(3)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(43)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    election_type: i8 = field(metadata={"kafka_type": "int8"})
    """Type of elections to conduct for the partition. A value of '0' elects the preferred replica. A value of
    '1' elects the first live replica if there are no in-sync replica. A value of '2' elects the replica with the
    longest log among the last known ELR. A value of '3' elects the replica with the longest log among the
    replicas that reply within a fixed time. A value of '4' elects the desired replicas."""
    topic_partitions: tuple[TopicPartitions, ...] | None
    """The topic partitions to elect leaders."""
    timeout: i32Timedelta = field(
        metadata={"kafka_type": "timedelta_i32"},
        default=i32Timedelta.parse(datetime.timedelta(milliseconds=60000)),
    )
    """The time in ms to wait for the election to complete."""
