"""The API table: one row per Kafka API (the core request/response pair, the versions mapped, the field
renames, the groupings by topic, the custom converters for shapes that really differ) and the lookups
over it (versions served per level, schemas, response types). See :mod:`kraftlog.protocol.wire`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode

from ...level import DEFAULT as DEFAULT_LEVEL
from ...level import Level
from .. import kio_extra
from .. import messages as m
from ..errors import Errors, WireError
from ..node import Message, Request
from ..records import (
    decode_produce_records,
    encode_batches,
)
from .mapper import (
    _ZERO_UUID,
    UnsupportedVersionError,
    _Api,
    _code,
    _Custom,
    _ec,
    _Group,
    _group,
    _has_default,
    _hints,
    _kio_default,
    _type_info,
    _value_from_kio,
    _value_to_kio,
)

# ========================================================================= the table
# Custom converters, each for a shape that really differs between the core and Kafka.

def _replica_state_to(msg: Any, kio_type: type) -> Any:
    # Fetch v15 (KIP-903) moved ReplicaId into a ReplicaState struct with the broker epoch; the core
    # keeps the two flat, as every older version has them.
    return kio_type(replica_id=msg.replica_id, replica_epoch=msg.replica_epoch)


def _replica_state_from(e: Any) -> dict[str, Any]:
    return {"replica_id": e.replica_state.replica_id, "replica_epoch": e.replica_state.replica_epoch}


_NO_LEADER = (-1, -1)


def _current_leader_to(p: Any, kio_type: type) -> Any:
    # The core's CurrentLeader is a (leader id, leader epoch) pair, None for kio's tagged default.
    cl = p.current_leader
    return kio_type() if cl is None else kio_type(leader_id=cl[0], leader_epoch=cl[1])


def _current_leader_from(p: Any) -> dict[str, Any]:
    cl = (p.current_leader.leader_id, p.current_leader.leader_epoch)
    return {"current_leader": None if cl == _NO_LEADER else cl}


def _names_to(field: str) -> Callable[[Any, type], Any]:
    # A list of topic names in the core is a list of one-field topic entities in Kafka.
    def to(msg: Any, kio_type: type) -> Any:
        names = getattr(msg, field)
        if names is None:
            return None
        fixed = {f.name: _kio_default(f, _type_info(f.type)) for f in dataclasses.fields(kio_type)
                 if f.name != "name" and not _has_default(f)}
        return tuple(kio_type(name=n, **fixed) for n in names)

    return to


def _names_from(field: str) -> Callable[[Any], dict[str, Any]]:
    def frm(e: Any) -> dict[str, Any]:
        entries = getattr(e, field)
        return {field: None if entries is None else tuple(t.name or "" for t in entries)}

    return frm


def _assignment_to(t: Any, kio_type: type) -> Any:
    # CreateTopics: the core's assignment is positional (index = partition index) unless it names its
    # indexes (assignment_partitions); Kafka's names each.
    indexes = t.assignment_partitions or range(len(t.assignment))
    return tuple(kio_type(partition_index=i, broker_ids=tuple(r)) for i, r in zip(indexes, t.assignment, strict=False))


def _assignment_from(t: Any) -> dict[str, Any]:
    # Indexes 0..n-1 in any order become the positional form; any others (duplicates, gaps) are kept for
    # the controller to answer INVALID_REPLICA_ASSIGNMENT, as Kafka's does.
    assignment = sorted(t.assignments, key=lambda a: a.partition_index)
    indexes = tuple(a.partition_index for a in assignment)
    return {"assignment": tuple(tuple(a.broker_ids) for a in assignment),
            "assignment_partitions": () if indexes == tuple(range(len(indexes))) else indexes}


def _configs_to(t: Any, kio_type: type) -> Any:
    # CreateTopics: the core's configs are (name, value) pairs.
    return tuple(kio_type(name=k, value=v) for k, v in t.configs)


def _configs_from(t: Any) -> dict[str, Any]:
    return {"configs": tuple((c.name, c.value) for c in t.configs)}


def _check_elect_leaders(msg: Any, version: int) -> None:
    # KIP-966's v3 (kio_extra) carries every election type and DesiredLeaders; older versions cannot.
    if version >= 3:
        return
    if msg.election_type not in (m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN):
        raise UnsupportedVersionError(
            f"ElectLeaders election_type {msg.election_type} needs ElectLeaders v3 (KIP-966); "
            f"v{version} knows only 0 (PREFERRED) and 1 (UNCLEAN)"
        )
    if version == 0 and msg.election_type != m.ELECTION_PREFERRED:
        raise UnsupportedVersionError("ElectLeaders v0 elects preferred leaders only")
    if any(p.desired_leader != -1 for p in msg.partitions):
        raise UnsupportedVersionError(
            f"ElectLeaders DesiredLeaders needs ElectLeaders v3 (KIP-966), not v{version}")


# LeaveGroup v0-v2 names one member at the top level (KIP-345 batched them in v3): the core's
# ``members`` is then a one-element tuple, and the response's per-member errors fold into the top-level
# error code as Kafka's LeaveGroupResponse does for those versions (the top-level error if set, else
# the first member error).
def _one_member_to(msg: m.LeaveGroupRequest, _kio_type: type) -> str:
    if len(msg.members) != 1:
        raise UnsupportedVersionError(
            f"LeaveGroup before v3 names exactly one member, not {len(msg.members)}")
    return msg.members[0].member_id


def _one_member_from(e: Any) -> dict[str, Any]:
    return {"members": (m.MemberIdentity(e.member_id),)}


def _folded_leave_error_to(msg: m.LeaveGroupResponse, _kio_type: type) -> ErrorCode:
    if msg.error_code == Errors.NONE:
        for member in msg.members:
            if member.error_code != Errors.NONE:
                return _ec(member.error_code)
    return _ec(msg.error_code)


# DeleteTopics v6 (KIP-516) lists {Name, TopicId} structs, each naming a topic by name or (Name null) by
# id; the core keeps the two kinds apart (``topic_names``, ``topic_ids``), as Kafka's
# ControllerApis.deleteTopics splits them. Before v6 the request has names only (generic mapping).
def _delete_topics_to(msg: m.DeleteTopicsRequest, kio_type: type[Any]) -> tuple[Any, ...]:
    by_name = tuple(kio_type(name=n, topic_id=None) for n in msg.topic_names)
    return by_name + tuple(kio_type(name=None, topic_id=t) for t in msg.topic_ids)


def _delete_topics_from(e: Any) -> dict[str, Any]:
    names = tuple(t.name for t in e.topics if t.name is not None)
    ids = tuple(t.topic_id if t.topic_id is not None else _ZERO_UUID for t in e.topics if t.name is None)
    return {"topic_names": names, "topic_ids": ids}


# KRaft's quorum APIs Vote, BeginQuorumEpoch, EndQuorumEpoch and DescribeQuorum (KIP-595) nest one topic and
# one partition, __cluster_metadata-0, as Topics[].Partitions[]; the core flattens them away (a core class's
# partition fields are its own). Encoding fills in the topic's name (METADATA_TOPIC) and partition 0.
# Decoding a request that names anything else -- another topic or partition, or not exactly one of each -- is
# a WireError, as a metadata fetch of another partition is: the bytes are refused as malformed (the TCP driver
# closes the connection) where Kafka's KafkaRaftClient answers INVALID_REQUEST (hasValidTopicPartition);
# kraftlog's voters never send one. A response without topics is Kafka's answer to a top-level error
# (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST, getErrorResponse): its partition fields decode as their none
# values (``empty``), and a response with a top-level error whose partition fields all hold them goes out so.
def _one_partition(owner: type, fields: tuple[tuple[str, str], ...],
                   empty: dict[str, Any] | None = None) -> _Custom:
    """The converter of ``owner``'s ``topics``: (core field, kio partition field) pairs; ``empty`` (responses):
    the core values of a response without topics, and of a field the version's partition lacks."""
    to_steps: dict[type, list[tuple[str, str, Callable[[Any], Any] | None]]] = {}
    from_steps: dict[type, list[tuple[str, str | None, Callable[[Any], Any] | None]]] = {}
    core = _hints(owner)
    api = owner.__name__.removesuffix("Request").removesuffix("Response")

    def to(msg: Any, topic_type: type) -> Any:
        if (empty is not None and msg.error_code != Errors.NONE
                and all(getattr(msg, name) == value for name, value in empty.items())):
            return ()
        part_type: Any = _hints(topic_type)["partitions"].inner  # kio's PartitionData of this version
        steps = to_steps.get(part_type)
        if steps is None:
            kio_fields = {f.name: f for f in dataclasses.fields(part_type)}
            steps = to_steps[part_type] = [(c, k, _value_to_kio(core[c], kio_fields[k], _API[owner]))
                                           for c, k in fields if k in kio_fields]
        values = {k: getattr(msg, c) if conv is None else conv(getattr(msg, c)) for c, k, conv in steps}
        fixed = {f.name: _kio_default(f, _type_info(f.type)) for f in dataclasses.fields(part_type)
                 if f.name not in values and f.name != "partition_index" and not _has_default(f)}
        return (topic_type(topic_name=m.METADATA_TOPIC,
                           partitions=(part_type(partition_index=0, **values, **fixed),)),)

    def frm(e: Any) -> dict[str, Any]:
        topics: tuple[Any, ...] = e.topics or ()
        if not topics and empty is not None:
            return dict(empty)
        parts = topics[0].partitions if len(topics) == 1 and topics[0].topic_name == m.METADATA_TOPIC else None
        if not parts or len(parts) != 1 or parts[0].partition_index != 0:
            raise WireError(f"{api} names exactly {m.METADATA_TOPIC} partition 0 (KRaft's one partition)")
        part = parts[0]
        steps = from_steps.get(type(part))
        if steps is None:
            kio_fields = {f.name: f for f in dataclasses.fields(part)}
            steps = from_steps[type(part)] = [
                (c, k, _value_from_kio(core[c], kio_fields[k], _API[owner])) if k in kio_fields else (c, None, None)
                for c, k in fields]
        out = {}
        for c, k, conv in steps:
            if k is None:  # a field this version's partition lacks
                assert empty is not None, f"{owner.__name__}.{c}: every version's partition has it"
                out[c] = empty[c]
            else:
                value = getattr(part, k)
                out[c] = value if conv is None else conv(value)
        return out

    return _Custom(owner, "topics", tuple(c for c, _ in fields), to, frm)


def _same(*names: str) -> tuple[tuple[str, str], ...]:
    return tuple((n, n) for n in names)


#: A response's error and leader: ``partition_error_code`` is the partition's ErrorCode.
_PARTITION_LEADER = (("partition_error_code", "error_code"), ("leader_id", "leader_id"),
                     ("leader_epoch", "leader_epoch"))
_NO_LEADER_EMPTY = {"partition_error_code": Errors.NONE, "leader_id": -1, "leader_epoch": -1}


def _kraft_version_to(msg: m.UpdateRaftVoterRequest, kio_type: type) -> Any:
    # UpdateRaftVoter's KRaftVersionFeature struct is the core's (kraft_version_min, kraft_version_max).
    return kio_type(min_supported_version=msg.kraft_version_min, max_supported_version=msg.kraft_version_max)


def _kraft_version_from(e: Any) -> dict[str, Any]:
    f = e.k_raft_version_feature
    return {"kraft_version_min": f.min_supported_version, "kraft_version_max": f.max_supported_version}


def _update_leader_to(msg: m.UpdateRaftVoterResponse, kio_type: type) -> Any:
    # UpdateRaftVoter's CurrentLeader (a tagged struct): the core keeps the leader's id and epoch; its host and
    # port go out as Kafka's defaults ("", 0): kraftlog's voters find each other by node id.
    return kio_type(leader_id=msg.current_leader_id, leader_epoch=msg.current_leader_epoch, host="", port=0)


def _update_leader_from(e: Any) -> dict[str, Any]:
    return {"current_leader_id": e.current_leader.leader_id, "current_leader_epoch": e.current_leader.leader_epoch}


def _by_topic(owner: type, core: str, kio: str, inner: str, key: tuple[str, str] = ("topic", "name"),
              scalar: str | None = None) -> _Group:
    return _Group(owner, core, kio, key, inner, scalar)


_BY_ID = ("topic_id", "topic_id")
_BY_NAME = ("topic", "topic")
#: Fetch names its topics before v13 and identifies them by topic id from v13 (KIP-516).
_FETCH_BY_NAME = range(4, 13)
_FETCH_BY_ID = range(13, 16)

#: The table: one row per API. ``versions``: what decode_request accepts and encode_response answers.
_APIS: tuple[_Api, ...] = (
    # Fetch v4+ (v4: isolation level and LSO; Kafka 4 dropped v0-v3). Partitions nest by topic name
    # before v13 (the core's ``topic``; ``topic_id`` decodes as the zero UUID) and by topic id from
    # v13 (``topic`` decodes as ""). Fetch sessions (v7+, KIP-227) are not kept: a request's
    # SessionId/SessionEpoch are ignored and go out as 0/-1 (a full fetch, no session); a response
    # carries the core's session_id, 0 (Kafka's INVALID_SESSION_ID: session declined), which makes
    # a client send full fetches. AbortedTransactions is an empty list, never null (kraftlog has no
    # transactions to abort; librdkafka and kafka-python read both); PreferredReadReplica (v11+) is
    # kio's default -1 (read from the leader).
    # v16-v18 are the metadata fetch's only (_WHOLE_VERSIONS): a data Fetch at v16+ is UNSUPPORTED_VERSION.
    _Api(m.FetchRequest, m.FetchResponse, range(4, 19),
         renames={"partition": "partition_index"},
         groups=(
             # FetchPartition keeps Kafka's name "partition"; the rename is for the response's.
             _Group(m.FetchRequest, "partitions", "topics", _BY_NAME, "partitions",
                    versions=_FETCH_BY_NAME),
             _Group(m.FetchRequest, "partitions", "topics", _BY_ID, "partitions",
                    versions=_FETCH_BY_ID),
             _Group(m.FetchResponse, "partitions", "responses", _BY_NAME, "partitions",
                    versions=_FETCH_BY_NAME),
             _Group(m.FetchResponse, "partitions", "responses", _BY_ID, "partitions",
                    versions=_FETCH_BY_ID),
         ),
         custom=(
             _Custom(m.FetchRequest, "replica_state", ("replica_id", "replica_epoch"),
                     _replica_state_to, _replica_state_from),
             _Custom(m.FetchPartitionResponse, "current_leader", ("current_leader",),
                     _current_leader_to, _current_leader_from),
         ),
         # ReplicaState's epoch is v15+, CurrentLeaderEpoch v9+, the top-level ErrorCode v7+.
         absent={"replica_epoch": -1, "topic_id": _ZERO_UUID, "current_leader_epoch": -1,
                 "error_code": Errors.NONE},
         kio_values={"aborted_transactions": ()}),
    # Inter-broker only (kraftlog to kraftlog): v3 (KIP-903's NewIsrWithEpochs) alone.
    _Api(m.AlterPartitionRequest, m.AlterPartitionResponse, range(3, 4),
         renames={"partition": "partition_index"},
         groups=(_Group(m.AlterPartitionRequest, "partitions", "topics", _BY_ID, "partitions"),
                 _Group(m.AlterPartitionResponse, "partitions", "topics", _BY_ID, "partitions"))),
    _Api(m.BrokerRegistrationRequest, m.BrokerRegistrationResponse, range(4, 5)),
    _Api(m.BrokerHeartbeatRequest, m.BrokerHeartbeatResponse, range(1, 2)),
    # A Produce partition's records are split leniently: bytes that do not frame as batches reach the
    # broker as MalformedRecords, which it answers per partition (CORRUPT_MESSAGE, INVALID_RECORD), as
    # Kafka parses them only when validating (ProduceRequest.validateRecords).
    _Api(m.ProduceRequest, m.ProduceResponse, range(3, 10),
         renames={"partition": "index"},
         groups=(_by_topic(m.ProduceRequest, "partitions", "topic_data", "partition_data"),
                 _by_topic(m.ProduceResponse, "partitions", "responses", "partition_responses")),
         custom=(_Custom(m.ProducePartition, "records", ("records",),
                         lambda p, _: encode_batches(p.records),
                         lambda e: {"records": decode_produce_records(e.records)}),
                 # KIP-467's RecordErrors, (batch index, message) pairs in the core
                 _Custom(m.ProducePartitionResponse, "record_errors", ("record_errors",),
                         lambda p, kio_type: tuple(kio_type(batch_index=i, batch_index_error_message=msg)
                                                   for i, msg in p.record_errors),
                         lambda e: {"record_errors": tuple((r.batch_index, r.batch_index_error_message)
                                                           for r in e.record_errors)},
                         versions=range(8, 10)))),
    _Api(m.ListOffsetsRequest, m.ListOffsetsResponse, range(1, 8),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.ListOffsetsRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.ListOffsetsResponse, "partitions", "topics", "partitions"))),
    # DeleteRecords: kafka-python and librdkafka's admin clients (deleteRecords) send v0-v2.
    _Api(m.DeleteRecordsRequest, m.DeleteRecordsResponse, range(0, 3),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.DeleteRecordsRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.DeleteRecordsResponse, "partitions", "topics", "partitions"))),
    _Api(m.OffsetForLeaderEpochRequest, m.OffsetForLeaderEpochResponse, range(2, 5),
         groups=(_by_topic(m.OffsetForLeaderEpochRequest, "partitions", "topics", "partitions",
                           key=("topic", "topic")),
                 _by_topic(m.OffsetForLeaderEpochResponse, "partitions", "topics", "partitions",
                           key=("topic", "topic"))),
         absent={"replica_id": -2}),  # before v3 only consumers sent it: Kafka's CONSUMER_REPLICA_ID
    # Topic ids are v10+ (older versions answer with names alone: the core's ZERO_UUID).
    # AllowAutoTopicCreation is v4+: Kafka's broker allows auto-creation for every older request.
    _Api(m.MetadataRequest, m.MetadataResponse, range(1, 13),
         absent={"topic_id": _ZERO_UUID, "leader_epoch": -1,  # leader epochs are v7+
                 "allow_auto_topic_creation": True},
         custom=(_Custom(m.MetadataRequest, "topics", ("topics",), _names_to("topics"),
                         _names_from("topics")),)),
    _Api(m.CreateTopicsRequest, m.CreateTopicsResponse, range(2, 8),
         custom=(_Custom(m.CreatableTopic, "assignments", ("assignment", "assignment_partitions"),
                         _assignment_to, _assignment_from),
                 _Custom(m.CreatableTopic, "configs", ("configs",), _configs_to, _configs_from))),
    _Api(m.IncrementalAlterConfigsRequest, m.IncrementalAlterConfigsResponse, range(0, 2)),
    # Kafka 4 serves CreatePartitions v0-v3 and AlterConfigs v0-v2 (kio has the same ranges); both are
    # one-for-one with the core.
    _Api(m.CreatePartitionsRequest, m.CreatePartitionsResponse, range(0, 4)),
    _Api(m.AlterConfigsRequest, m.AlterConfigsResponse, range(0, 3)),
    # KIP-554's SCRAM credential APIs (v0 only in Kafka): user names are one-field UserName entries in Kafka.
    _Api(m.DescribeUserScramCredentialsRequest, m.DescribeUserScramCredentialsResponse, range(0, 1),
         custom=(_Custom(m.DescribeUserScramCredentialsRequest, "users", ("users",), _names_to("users"),
                         _names_from("users")),)),
    _Api(m.AlterUserScramCredentialsRequest, m.AlterUserScramCredentialsResponse, range(0, 1)),
    # v3 is KIP-966's (kio_extra): election types 2..4 and DesiredLeaders beside Partitions, matched by
    # index. Mapped, not yet served or advertised (_NOT_ADVERTISED_UNTIL_URM).
    _Api(m.ElectLeadersRequest, m.ElectLeadersResponse, range(0, 4),
         renames={"partition": "partition_id"},
         groups=(_Group(m.ElectLeadersRequest, "partitions", "topic_partitions", _BY_NAME, "partitions",
                        scalar="partition", parallel=(("desired_leader", "desired_leaders"),)),
                 _by_topic(m.ElectLeadersResponse, "results", "replica_election_results",
                           "partition_result", key=("topic", "topic"))),
         # v0 elects preferred leaders and has no top-level error code.
         absent={"election_type": m.ELECTION_PREFERRED, "error_code": Errors.NONE},
         check=_check_elect_leaders),
    _Api(m.DescribeTopicPartitionsRequest, m.DescribeTopicPartitionsResponse, range(0, 1),
         custom=(_Custom(m.DescribeTopicPartitionsRequest, "topics", ("topics",), _names_to("topics"),
                         _names_from("topics")),)),
    _Api(m.FindCoordinatorRequest, m.FindCoordinatorResponse, range(0, 5),
         custom=(_Custom(m.FindCoordinatorRequest, "key", ("coordinator_keys",),
                         lambda msg, t: _one_key(msg, t), lambda e: {"coordinator_keys": (e.key,)}),),
         absent={"key_type": m.COORDINATOR_GROUP, "key": ""}),  # v0: groups only
    _Api(m.OffsetCommitRequest, m.OffsetCommitResponse, range(2, 9),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.OffsetCommitRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.OffsetCommitResponse, "partitions", "topics", "partitions"))),
    # v8 is mapped by hand (its Groups list, below); v1-v7 carry the one group at the top level.
    _Api(m.OffsetFetchRequest, m.OffsetFetchResponse, range(1, 9),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.OffsetFetchResponse, "partitions", "topics", "partitions"),),
         custom=(_Custom(m.OffsetFetchRequest, "topics", ("partitions",),
                         lambda msg, t: _pairs_to(msg, t), lambda e: _pairs_from(e)),),
         # Before v8 a response does not name its group; the top-level error code is v2+.
         absent={"group_id": "", "error_code": Errors.NONE}),
    _Api(m.InitProducerIdRequest, m.InitProducerIdResponse, range(0, 5)),
    # The classic group protocol. librdkafka (2.0.2 and 2.16) sends JoinGroup v5, SyncGroup v3,
    # Heartbeat v3, LeaveGroup v1; kafka-python 3.0.12 JoinGroup v7, SyncGroup v5, Heartbeat v4,
    # LeaveGroup v5. JoinGroup starts at v0: librdkafka with api.version.request=false (its 0.9.0
    # fallback table) and kafka-python with a pinned api_version send v0/v1.
    _Api(m.JoinGroupRequest, m.JoinGroupResponse, range(0, 10)),
    _Api(m.SyncGroupRequest, m.SyncGroupResponse, range(0, 6)),
    _Api(m.HeartbeatRequest, m.HeartbeatResponse, range(0, 5)),
    _Api(m.LeaveGroupRequest, m.LeaveGroupResponse, range(0, 6),
         custom=(_Custom(m.LeaveGroupRequest, "member_id", ("members",), _one_member_to,
                         _one_member_from),
                 _Custom(m.LeaveGroupResponse, "error_code", ("error_code",),
                         _folded_leave_error_to, lambda e: {"error_code": _code(e.error_code)},
                         versions=range(0, 3)))),
    # Group admin. librdkafka 2.x lists groups at ListGroups v4 (KIP-518's states filter) or v5 (KIP-848's
    # types filter), describes at DescribeGroups v4/v5 and deletes at DeleteGroups v1; kafka-python and
    # aiokafka use the older versions (their absent fields are the core's defaults: no filter, no state).
    _Api(m.ListGroupsRequest, m.ListGroupsResponse, range(0, 6)),
    _Api(m.DescribeGroupsRequest, m.DescribeGroupsResponse, range(0, 6)),
    _Api(m.DeleteGroupsRequest, m.DeleteGroupsResponse, range(0, 3)),
    _Api(m.OffsetDeleteRequest, m.OffsetDeleteResponse, range(0, 1),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.OffsetDeleteRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.OffsetDeleteResponse, "partitions", "topics", "partitions"))),
    # librdkafka asks at v3 (v0 if that fails); kafka-python at v4 first, then at the highest version
    # the v0-format UNSUPPORTED_VERSION answer (framing.api_versions_error_reply) lists. Every version's
    # response has response header v0 (KIP-511: a client must read it before it knows the version),
    # which kio's __header_schema__ gives. An error answer has a v0 body at every version: Kafka
    # answers UNSUPPORTED_VERSION so, kafka-python reads any error answer as v0 and librdkafka and
    # the Java client fall back to v0 when the requested version does not parse.
    _Api(m.ApiVersionsRequest, m.ApiVersionsResponse, range(0, 4), error_response_version=0),
    # librdkafka 2.0.2 sends v1 (2.16: v4), kafka-python v6; Kafka 4 and kio have no v0.
    _Api(m.DeleteTopicsRequest, m.DeleteTopicsResponse, range(1, 7),
         custom=(_Custom(m.DeleteTopicsRequest, "topics", ("topic_names", "topic_ids"), _delete_topics_to,
                         _delete_topics_from),)),
    # librdkafka sends v1, kafka-python v4; Kafka 4 and kio have no v0.
    _Api(m.DescribeConfigsRequest, m.DescribeConfigsResponse, range(1, 5)),
    # KIP-966 part 2, controller -> broker (kio_extra, from trunk's JSON): partitions by topic id; the
    # response's per-partition log info likewise. Mapped, not yet served or advertised.
    _Api(m.GetReplicaLogInfoRequest, m.GetReplicaLogInfoResponse, range(0, 1),
         groups=(_Group(m.GetReplicaLogInfoRequest, "partitions", "topic_partitions", _BY_ID, "partitions",
                        scalar="partition"),
                 _Group(m.GetReplicaLogInfoResponse, "partitions", "topic_partition_log_info_list", _BY_ID,
                        "partition_log_info"))),
    # KRaft's quorum (KIP-595, KIP-996's PreVote, KIP-853's directory ids and voter changes), controller to
    # controller, at the versions Kafka 4 sends; __cluster_metadata-0 flattened away (_one_partition).
    _Api(m.VoteRequest, m.VoteResponse, range(2, 3), custom=(
        _one_partition(m.VoteRequest, _same("voter_directory_id", "replica_id", "replica_epoch",
                                            "replica_directory_id", "last_offset_epoch", "last_offset", "pre_vote")),
        _one_partition(m.VoteResponse, (*_PARTITION_LEADER, ("vote_granted", "vote_granted")),
                       empty={**_NO_LEADER_EMPTY, "vote_granted": False}))),
    # The leader's endpoints (LeaderEndpoints, v1) go out empty: kraftlog's voters find each other by node id.
    _Api(m.BeginQuorumEpochRequest, m.BeginQuorumEpochResponse, range(1, 2), custom=(
        _one_partition(m.BeginQuorumEpochRequest, _same("voter_directory_id", "leader_id", "leader_epoch")),
        _one_partition(m.BeginQuorumEpochResponse, _PARTITION_LEADER, empty=_NO_LEADER_EMPTY))),
    _Api(m.EndQuorumEpochRequest, m.EndQuorumEpochResponse, range(1, 2), custom=(
        _one_partition(m.EndQuorumEpochRequest, _same("leader_id", "leader_epoch", "preferred_candidates")),
        _one_partition(m.EndQuorumEpochResponse, _PARTITION_LEADER, empty=_NO_LEADER_EMPTY))),
    # kafka-metadata-quorum.sh asks at v0-v2 (by Kafka release); v2 adds the error messages, directory ids and
    # Nodes (sent empty), v1 the replicas' timestamps (KIP-836).
    _Api(m.DescribeQuorumRequest, m.DescribeQuorumResponse, range(0, 3), custom=(
        _one_partition(m.DescribeQuorumRequest, ()),
        _one_partition(m.DescribeQuorumResponse, (
            *_PARTITION_LEADER, ("partition_error_message", "error_message"), ("high_watermark", "high_watermark"),
            ("current_voters", "current_voters"), ("observers", "observers")),
            empty={**_NO_LEADER_EMPTY, "partition_error_message": None, "high_watermark": -1,
                   "current_voters": (), "observers": ()})),
         absent={"error_message": None, "replica_directory_id": None}),
    # FetchSnapshot (KIP-630): mapped by hand (shapes.py), v0 and v1 (v1: the fetcher's directory id, KIP-853).
    _Api(m.FetchSnapshotRequest, m.FetchSnapshotResponse, range(0, 2)),
    _Api(m.AddRaftVoterRequest, m.AddRaftVoterResponse, range(0, 1)),
    _Api(m.RemoveRaftVoterRequest, m.RemoveRaftVoterResponse, range(0, 1)),
    _Api(m.UpdateRaftVoterRequest, m.UpdateRaftVoterResponse, range(0, 1), custom=(
        _Custom(m.UpdateRaftVoterRequest, "k_raft_version_feature", ("kraft_version_min", "kraft_version_max"),
                _kraft_version_to, _kraft_version_from),
        _Custom(m.UpdateRaftVoterResponse, "current_leader", ("current_leader_id", "current_leader_epoch"),
                _update_leader_to, _update_leader_from))),
)

#: Versions only level ``urm`` serves (KIP-966 part 2: ElectLeaders v3 and GetReplicaLogInfo v0), held
#: back from what a node below ``urm`` accepts and advertises (:func:`supported_versions`,
#: :func:`supported_api_versions`; DESIGN.md: advertise only what is implemented). Each is the top of its
#: row's range, so what remains served is a range.
_NOT_ADVERTISED_UNTIL_URM: dict[type[Request], range] = {
    m.ElectLeadersRequest: range(3, 4),
    m.GetReplicaLogInfoRequest: range(0, 1),
}


def _pairs_to(msg: m.OffsetFetchRequest, topic_type: type) -> Any:
    # The core request's partitions are (topic, partition) pairs, not dataclasses (v1-v8).
    if msg.partitions is None:
        return None
    return tuple(
        topic_type(name=topic, partition_indexes=tuple(p for _, p in parts))
        for topic, parts in _group(msg.partitions, lambda tp: tp[0]).items()
    )


def _pairs_from(e: Any) -> dict[str, Any]:
    topics = e.topics
    partitions = None if topics is None else tuple((t.name, p) for t in topics for p in t.partition_indexes)
    return {"partitions": partitions}


# FindCoordinator before v4 (KIP-699) asks for one key and answers with one coordinator at the top
# level of the response, without its key: the core's one Coordinator maps generically onto that
# top level, and the key comes back "" (the asker knows which key it sent).
def _one_key(msg: m.FindCoordinatorRequest, _kio_type: type) -> str:
    if len(msg.coordinator_keys) != 1:
        raise UnsupportedVersionError("FindCoordinator before v4 asks for exactly one key")
    return msg.coordinator_keys[0]


#: The metadata fetch's versions (mapped by hand, shapes.py): Fetch v15 (KIP-903's ReplicaState, what a broker
#: of the non-replicated controller sends), v16, v17 (KIP-853's ReplicaDirectoryId), v18 (HighWatermark).
_METADATA_FETCH_VERSIONS = range(15, 19)
#: Core types mapped at fewer versions than their row's: the metadata fetch at v15-v18, a data Fetch at v4-v15
#: (the row's v16-v18 are the metadata fetch's: Fetch v16's NodeEndpoints, KIP-951, are not served).
_WHOLE_VERSIONS: dict[type[Message], range] = {
    m.MetadataFetchRequest: _METADATA_FETCH_VERSIONS, m.MetadataFetchResponse: _METADATA_FETCH_VERSIONS,
    m.FetchRequest: range(4, 16), m.FetchResponse: range(4, 16),
}


# ============================================================================ registry
#: Core request or response type -> its table row (MetadataFetch* share Fetch's).
_API: dict[type[Message], _Api] = {}
for _row in _APIS:
    _API[_row.request] = _API[_row.response] = _row
_API[m.MetadataFetchRequest] = _API[m.MetadataFetchResponse] = _API[m.FetchRequest]
_BY_KEY: dict[int, _Api] = {row.request.API_KEY: row for row in _APIS}
_ALL_REQUEST_TYPES = m.REQUEST_TYPES
assert {row.request for row in _APIS} | {m.MetadataFetchRequest} == set(_ALL_REQUEST_TYPES)
assert all(held.stop == _API[t].versions.stop and held.start >= _API[t].versions.start
           for t, held in _NOT_ADVERTISED_UNTIL_URM.items())

#: Core request type -> core response type.
RESPONSE_TYPES: dict[type[Request], type[Message]] = {
    req: getattr(m, req.__name__.removesuffix("Request") + "Response") for req in _ALL_REQUEST_TYPES
}
_REQUEST_FOR_RESPONSE: dict[type[Message], type[Request]] = {resp: req for req, resp in RESPONSE_TYPES.items()}
_REQUEST_OF: dict[type[Message], type[Request]] = {t: t for t in RESPONSE_TYPES} | _REQUEST_FOR_RESPONSE


def response_type_for(request_type: type[Request]) -> type[Message]:
    """The core response class answering ``request_type`` (e.g. FetchRequest -> FetchResponse,
    MetadataFetchRequest -> MetadataFetchResponse). Raises KeyError for a non-request type."""
    return RESPONSE_TYPES[request_type]


def mapped_versions(request_type: type[Request]) -> range:
    """The API versions this module maps for ``request_type`` (a core request class): what
    :func:`decode_request` accepts and :func:`encode_request` / :func:`encode_response` write -- its
    table row's range, including versions no node serves yet (``_NOT_ADVERTISED_UNTIL_URM``)."""
    return _WHOLE_VERSIONS.get(request_type) or _row_of(request_type).versions


def supported_versions(request_type: type[Request], level: Level = DEFAULT_LEVEL) -> range:
    """The API versions a kraftlog node at ``level`` serves for ``request_type`` (a core request class):
    the mapped range (:func:`mapped_versions`); below level ``urm`` without the versions only ``urm``
    serves (ElectLeaders 0-2, not 3; no GetReplicaLogInfo)."""
    versions = mapped_versions(request_type)
    held = _NOT_ADVERTISED_UNTIL_URM.get(request_type)
    return versions if held is None or level >= Level.URM else range(versions.start, held.start)


def supported_api_versions(level: Level = DEFAULT_LEVEL) -> dict[int, tuple[int, int]]:
    """API key -> (min version, max version) of every API a node at ``level`` serves, by key: what the
    framing layer checks before decoding and what an ApiVersions answer advertises. Below level ``urm``
    the versions only ``urm`` serves (``_NOT_ADVERTISED_UNTIL_URM``) are left out, and an API with none
    left is absent."""
    out = {}
    for key, row in sorted(_BY_KEY.items()):
        versions = supported_versions(row.request, level)
        if versions:
            out[key] = (versions.start, versions.stop - 1)
    return out


_SCHEMAS: dict[tuple[int, int, bool], type[Any]] = {}


def _schema(api_key: int, version: int, request: bool) -> type[Any]:
    """kio's request or response payload entity for (API key, version), else kio_extra's (the KIP-966
    schemas kio 0.6.5 lacks), cached."""
    key = (api_key, version, request)
    cls = _SCHEMAS.get(key)
    if cls is None:
        load = load_request_schema if request else load_response_schema
        extra = kio_extra.load_request_schema if request else kio_extra.load_response_schema
        try:
            cls = load(api_key, version)
        except (KioIndexError, ImportError) as exc:
            try:
                cls = extra(api_key, version)
            except KioIndexError:
                raise UnsupportedVersionError(f"API key {api_key} version {version}: {exc}") from None
        _SCHEMAS[key] = cls
    return cls


def _row_of(core_type: type[Message]) -> _Api:
    try:
        return _API[core_type]
    except KeyError:
        raise TypeError(f"{core_type.__name__} has no wire mapping in kraftlog.protocol.wire") from None


def _version_for(core_type: type[Message], version: int | None) -> int:
    request_type = _REQUEST_OF[core_type]
    if version is None:
        return request_type.VERSION
    if version not in mapped_versions(request_type):
        raise UnsupportedVersionError(
            f"{request_type.API} v{version}: kraftlog maps versions {_span(mapped_versions(request_type))}"
        )
    return version


def _span(r: range) -> str:
    return f"{r.start}-{r.stop - 1}" if len(r) > 1 else str(r.start)
