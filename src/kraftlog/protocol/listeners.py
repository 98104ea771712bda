"""Listeners: which APIs each endpoint of a node serves, and the error answers Kafka gives instead.

A broker has a client listener (``CLIENT``: producers, consumers, admin clients) and an internal listener
(``INTERNAL``: follower fetches from other brokers, Kafka's ``inter.broker.listener.name``); the
controller has its own (``CONTROLLER``: registration, heartbeats, AlterPartition, the metadata-log fetch
and the admin APIs a broker forwards).

Kafka authorizes inter-broker and controller APIs with the CLUSTER_ACTION operation; without ACLs for
clients that is refused with CLUSTER_AUTHORIZATION_FAILED (``KafkaApis.authorizeClusterOperation``).
kraftlog applies that rule on the client listener: a replica Fetch (``replica_id`` >= 0), the metadata-log
fetch, AlterPartition, BrokerRegistration, BrokerHeartbeat, GetReplicaLogInfo (the controller's query of
a replica's log, KIP-966) and KRaft's quorum APIs (Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum,
KIP-595; AddRaftVoter, RemoveRaftVoter, UpdateRaftVoter, KIP-853: served by the controllers only) arriving
there are answered with that error, never served; on a broker's internal listener a controller API is
answered NOT_CONTROLLER. The internal listener serves everything a broker serves (as every Kafka listener
does). Admin APIs (CreateTopics, DeleteTopics, IncrementalAlterConfigs, ElectLeaders, CreatePartitions,
the legacy AlterConfigs) are served on the client listener: the broker forwards them to the controller
(Kafka's ``ForwardingManager``).

This module is pure data and functions (no I/O): the core uses :func:`cluster_action_refusal` and
:func:`error_response`; the TCP driver uses :func:`listener_api_versions` to build each listener's
framing.
"""

from __future__ import annotations

import re

from . import messages as m
from .errors import Errors
from .node import Envelope, Message, Request
from .wire import mapped_versions

__all__ = [
    "CLIENT", "INTERNAL", "CONTROLLER", "BROKER_APIS", "CONTROLLER_APIS", "CLUSTER_ACTION_APIS",
    "FORWARDED_APIS", "RAFT_APIS", "is_cluster_action", "cluster_action_refusal", "error_response",
    "NODE_PRINCIPAL", "acting_node", "node_identity_refusal",
    "listener_api_versions",
]

#: Listener names (Kafka's ``listeners`` names).
CLIENT = "CLIENT"
INTERNAL = "INTERNAL"
CONTROLLER = "CONTROLLER"

#: Requests a broker answers itself (on its client listener and its internal one).
BROKER_APIS: frozenset[type[Request]] = frozenset((
    m.FetchRequest, m.ProduceRequest, m.ListOffsetsRequest, m.OffsetForLeaderEpochRequest, m.DeleteRecordsRequest,
    m.MetadataRequest, m.DescribeTopicPartitionsRequest, m.InitProducerIdRequest, m.FindCoordinatorRequest,
    m.OffsetCommitRequest, m.OffsetFetchRequest, m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest,
    m.LeaveGroupRequest, m.ApiVersionsRequest, m.DescribeConfigsRequest,
    m.ListGroupsRequest, m.DescribeGroupsRequest, m.DeleteGroupsRequest, m.OffsetDeleteRequest,
    m.DescribeUserScramCredentialsRequest,
))
#: Admin requests a broker forwards to the controller and whose answer it relays.
FORWARDED_APIS: frozenset[type[Request]] = frozenset((
    m.CreateTopicsRequest, m.DeleteTopicsRequest, m.IncrementalAlterConfigsRequest, m.ElectLeadersRequest,
    m.CreatePartitionsRequest, m.AlterConfigsRequest, m.AlterUserScramCredentialsRequest,
))
#: KRaft's quorum APIs (KIP-595, KIP-853): the controllers' own, served on their listener only.
RAFT_APIS: frozenset[type[Request]] = frozenset((
    m.VoteRequest, m.BeginQuorumEpochRequest, m.EndQuorumEpochRequest, m.DescribeQuorumRequest,
    m.AddRaftVoterRequest, m.RemoveRaftVoterRequest, m.UpdateRaftVoterRequest, m.FetchSnapshotRequest,
))
#: Controller APIs that need CLUSTER_ACTION: refused on a broker's client listener.
CLUSTER_ACTION_APIS: frozenset[type[Request]] = frozenset((
    m.AlterPartitionRequest, m.BrokerRegistrationRequest, m.BrokerHeartbeatRequest, m.MetadataFetchRequest,
    m.GetReplicaLogInfoRequest,  # controller -> broker (KIP-966; its JSON's listeners: ["broker"])
)) | RAFT_APIS
#: Requests the controller's listener serves.
CONTROLLER_APIS: frozenset[type[Request]] = frozenset((
    m.AlterPartitionRequest, m.BrokerRegistrationRequest, m.BrokerHeartbeatRequest, m.MetadataFetchRequest,
    m.CreateTopicsRequest, m.DeleteTopicsRequest, m.IncrementalAlterConfigsRequest, m.ElectLeadersRequest,
    m.CreatePartitionsRequest, m.AlterConfigsRequest, m.AlterUserScramCredentialsRequest,
    m.ApiVersionsRequest,
)) | RAFT_APIS


def is_cluster_action(message: Message) -> bool:
    """Whether ``message`` is an inter-broker or controller request (CLUSTER_ACTION in Kafka): a replica
    Fetch (``replica_id`` >= 0, Kafka's ``FetchRequest.isFromFollower``) or a CLUSTER_ACTION_APIS one."""
    if type(message) is m.FetchRequest:
        return message.replica_id >= 0
    return type(message) in CLUSTER_ACTION_APIS


def cluster_action_refusal(envelope: Envelope) -> Message | None:
    """The CLUSTER_AUTHORIZATION_FAILED answer to an inter-broker or controller request that arrived on a
    client listener, or None when the request may be served."""
    if envelope.listener != CLIENT or not is_cluster_action(envelope.message):
        return None
    return error_response(envelope.message, Errors.CLUSTER_AUTHORIZATION_FAILED)


def error_response(request: Message, code: int) -> Message:
    """The response to ``request`` with error ``code`` everywhere Kafka's ``getErrorResponse`` puts it
    (top level, and each topic/partition/resource of the request). Raises TypeError for a request type
    kraftlog never answers with an error of its own."""
    if type(request) is m.MetadataFetchRequest:
        return m.MetadataFetchResponse(code, -1, request.fetch_offset)
    if type(request) is m.FetchRequest:
        return m.FetchResponse(code, ())
    if type(request) is m.AlterPartitionRequest:
        return m.AlterPartitionResponse(code, ())
    if type(request) is m.BrokerRegistrationRequest:
        return m.BrokerRegistrationResponse(code)
    if type(request) is m.BrokerHeartbeatRequest:
        return m.BrokerHeartbeatResponse(code)
    if type(request) is m.GetReplicaLogInfoRequest:
        return m.GetReplicaLogInfoResponse(-1, tuple(
            m.PartitionLogInfo(p.topic_id, p.partition, -1, -1, -1, code) for p in request.partitions))
    if type(request) is m.CreateTopicsRequest:
        return m.CreateTopicsResponse(tuple(m.CreateTopicResult(t.name, code) for t in request.topics))
    if type(request) is m.DeleteTopicsRequest:
        return m.DeleteTopicsResponse(tuple(m.DeletableTopicResult(n, code) for n in request.topic_names))
    if type(request) is m.IncrementalAlterConfigsRequest:
        return m.IncrementalAlterConfigsResponse(tuple(
            m.AlterConfigsResourceResponse(code, r.resource_type, r.resource_name) for r in request.resources))
    if type(request) is m.CreatePartitionsRequest:
        return m.CreatePartitionsResponse(tuple(m.CreatePartitionsTopicResult(t.name, code) for t in request.topics))
    if type(request) is m.AlterConfigsRequest:
        return m.AlterConfigsResponse(tuple(
            m.LegacyAlterConfigsResourceResponse(code, r.resource_type, r.resource_name) for r in request.resources))
    if type(request) is m.ElectLeadersRequest:
        return m.ElectLeadersResponse(code, tuple(
            m.ElectLeadersResult(p.topic, p.partition, code) for p in request.partitions))
    if type(request) is m.OffsetCommitRequest:
        return m.OffsetCommitResponse(tuple(m.OffsetCommitPartitionResponse(p.topic, p.partition, code)
                                            for p in request.partitions))
    if type(request) is m.OffsetFetchRequest:
        return m.OffsetFetchResponse(request.group_id, code, ())
    if type(request) is m.JoinGroupRequest:
        return m.JoinGroupResponse(code, request.member_id)
    if type(request) is m.SyncGroupRequest:
        return m.SyncGroupResponse(code)
    if type(request) is m.HeartbeatRequest:
        return m.HeartbeatResponse(code)
    if type(request) is m.LeaveGroupRequest:
        return m.LeaveGroupResponse(code)
    if type(request) is m.ListGroupsRequest:
        return m.ListGroupsResponse(code)
    if type(request) is m.DescribeGroupsRequest:
        return m.DescribeGroupsResponse(tuple(m.DescribedGroup(code, g) for g in request.groups))
    if type(request) is m.DeleteGroupsRequest:
        return m.DeleteGroupsResponse(tuple(m.DeletableGroupResult(g, code) for g in request.groups_names))
    if type(request) is m.OffsetDeleteRequest:
        return m.OffsetDeleteResponse(code)
    if type(request) is m.AlterUserScramCredentialsRequest:
        names = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
        return m.AlterUserScramCredentialsResponse(tuple(m.AlterUserScramCredentialsResult(n, code) for n in names))
    if type(request) is m.DescribeUserScramCredentialsRequest:
        return m.DescribeUserScramCredentialsResponse(code)
    if type(request) is m.DeleteRecordsRequest:
        return m.DeleteRecordsResponse(tuple(m.DeleteRecordsPartitionResponse(p.topic, p.partition, -1, code)
                                             for p in request.partitions))
    return _raft_error_response(request, code)


def _raft_error_response(request: Message, code: int) -> Message:
    """KRaft's quorum APIs: ``code`` at the top level and nothing else, as their ``getErrorResponse`` answers
    (no topics on the wire: the partition's fields at their none values, -1 and NONE). Raises TypeError for
    another request type."""
    if type(request) is m.VoteRequest:
        return m.VoteResponse(error_code=code, partition_error_code=Errors.NONE, leader_id=-1, leader_epoch=-1,
                              vote_granted=False)
    if type(request) is m.BeginQuorumEpochRequest:
        return m.BeginQuorumEpochResponse(error_code=code, partition_error_code=Errors.NONE, leader_id=-1,
                                          leader_epoch=-1)
    if type(request) is m.EndQuorumEpochRequest:
        return m.EndQuorumEpochResponse(error_code=code, partition_error_code=Errors.NONE, leader_id=-1,
                                        leader_epoch=-1)
    if type(request) is m.DescribeQuorumRequest:
        return m.DescribeQuorumResponse(error_code=code, error_message=None, partition_error_code=Errors.NONE,
                                        partition_error_message=None, leader_id=-1, leader_epoch=-1,
                                        high_watermark=-1, current_voters=(), observers=())
    if type(request) is m.FetchSnapshotRequest:
        return m.FetchSnapshotResponse(error_code=code, partition_error_code=Errors.NONE, snapshot_end_offset=-1,
                                       snapshot_epoch=-1)
    if type(request) is m.AddRaftVoterRequest:
        return m.AddRaftVoterResponse(error_code=code, error_message=None)
    if type(request) is m.RemoveRaftVoterRequest:
        return m.RemoveRaftVoterResponse(error_code=code, error_message=None)
    if type(request) is m.UpdateRaftVoterRequest:
        return m.UpdateRaftVoterResponse(error_code=code)
    raise TypeError(f"no error response for {type(request).__name__}")


#: A node's principal on a secured cluster (``cluster up --secure`` issues one SASL user per node): ``User:node-<id>``.
NODE_PRINCIPAL = re.compile(r"User:node-(\d+)")


def acting_node(message: Message) -> int | None:
    """The node id ``message`` acts as, for the node identity rule: BrokerRegistration's and BrokerHeartbeat's
    BrokerId, AlterPartition's BrokerId (the partitions' leader), a replica Fetch's and the metadata-log fetch's
    ReplicaId, a KRaft Vote's candidate (ReplicaId), BeginQuorumEpoch's and EndQuorumEpoch's LeaderId,
    FetchSnapshot's ReplicaId and UpdateRaftVoter's VoterId (a voter updates only itself); None for a request
    that names no node it comes from (a consumer's Fetch, ReplicaId -1)."""
    kind = type(message)
    if kind is m.BrokerRegistrationRequest or kind is m.BrokerHeartbeatRequest or kind is m.AlterPartitionRequest:
        return message.broker_id  # type: ignore[attr-defined,no-any-return]
    if kind is m.FetchRequest or kind is m.MetadataFetchRequest or kind is m.VoteRequest \
            or kind is m.FetchSnapshotRequest:
        replica: int = message.replica_id  # type: ignore[attr-defined]
        return replica if replica >= 0 else None
    if kind is m.BeginQuorumEpochRequest or kind is m.EndQuorumEpochRequest:
        return message.leader_id  # type: ignore[attr-defined,no-any-return]
    if kind is m.UpdateRaftVoterRequest:
        return message.voter_id  # type: ignore[attr-defined,no-any-return]
    return None


def node_identity_refusal(envelope: Envelope, super_users: frozenset[str]) -> Message | None:
    """The node identity rule of a secured cluster (a kraftlog addition to Kafka, which checks only that the
    principal may CLUSTER_ACTION): a request from ``User:node-<id>`` that acts as another node
    (:func:`acting_node`) is answered CLUSTER_AUTHORIZATION_FAILED and not served, so a node whose credentials
    leaked cannot heartbeat, register, fetch as a replica or change an ISR in another node's name. A principal in
    ``super_users`` (``super.users``) is exempt; a request without a principal (the simulator) or from any other
    principal is not this rule's to refuse. None when the request may be served."""
    principal = envelope.principal
    if principal is None or principal in super_users:
        return None
    own = NODE_PRINCIPAL.fullmatch(principal)
    if own is None:
        return None
    acting = acting_node(envelope.message)
    if acting is None or acting == int(own.group(1)):
        return None
    return error_response(envelope.message, Errors.CLUSTER_AUTHORIZATION_FAILED)


def listener_api_versions(listener: str, supported: dict[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """The API key -> (min, max) versions a ``listener`` advertises in ApiVersions and accepts, from the
    wire layer's ``supported`` ranges: the controller's listener its own APIs, its Fetch up to the metadata
    fetch's highest version (``supported`` has a data Fetch's range; a KRaft replica's fetch is v17 with its
    directory id, v18 with its high watermark: ``wire.default_version``); a broker's listeners the broker,
    forwarded and CLUSTER_ACTION APIs (the last are parsed so that they can be refused with an answer on the
    client listener)."""
    if listener == CONTROLLER:
        keys = {cls.API_KEY for cls in CONTROLLER_APIS}
    else:
        keys = {cls.API_KEY for cls in BROKER_APIS | FORWARDED_APIS | CLUSTER_ACTION_APIS}
    out = {k: v for k, v in sorted(supported.items()) if k in keys}
    fetch = m.MetadataFetchRequest.API_KEY
    if listener == CONTROLLER and fetch in out:
        out[fetch] = (out[fetch][0], max(out[fetch][1], mapped_versions(m.MetadataFetchRequest).stop - 1))
    return out
