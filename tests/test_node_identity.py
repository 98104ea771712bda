"""The node identity rule of a secured cluster (issue 36, a kraftlog addition to Kafka): a request from the principal
``User:node-<id>`` that acts as another node is answered CLUSTER_AUTHORIZATION_FAILED and not served; a node acting
as itself, a ``super.users`` principal and a request without a principal (the simulator) are not this rule's to
refuse. Checked on ``protocol.listeners.node_identity_refusal`` for every API that names the node it comes from, then
on the controller and on a broker (``KafkaApis``), sans I/O: the refused request changes nothing."""

from __future__ import annotations

import random
import uuid

import pytest

from kraftlog.broker.broker import Broker
from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.level import Level
from kraftlog.metadata import config as cfg
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.listeners import acting_node, node_identity_refusal
from kraftlog.storage.disk import SimDisk

T = uuid.UUID(int=7)

#: every request that names the node it comes from, acting as node 1
AS_NODE_1 = [
    m.BrokerRegistrationRequest(1, "kraftlog", uuid.UUID(int=1)),
    m.BrokerHeartbeatRequest(1, 5, 10, True, False),
    m.AlterPartitionRequest(1, 5, (m.AlterPartitionItem(T, 0, 0, (m.BrokerState(1, 5),), 0),)),
    m.FetchRequest(1, 5, 0, 1, (m.FetchPartition(T, 0, 0, 0),)),
    m.MetadataFetchRequest(1, -1, 0, 0),
    m.VoteRequest(None, 1, 2, None, 0, 0, False),
    m.BeginQuorumEpochRequest(None, 1, 2),
    m.EndQuorumEpochRequest(1, 2, ()),
    m.FetchSnapshotRequest(2, 10, 1, 0, replica_id=1),
    m.UpdateRaftVoterRequest(None, 2, 1, None, (), 0, 1),
]


def _env(message, principal: str | None) -> m.Envelope:
    return m.Envelope("peer", CONTROLLER, 1, message, False, "CONTROLLER", None, None, None, principal)


@pytest.mark.parametrize("message", AS_NODE_1, ids=lambda x: type(x).__name__)
def test_a_node_principal_acting_as_another_node_is_refused(message):
    assert acting_node(message) == 1
    refusal = node_identity_refusal(_env(message, "User:node-2"), frozenset())
    assert refusal is not None and type(refusal).__name__ == type(message).__name__.replace("Request", "Response")
    assert refusal.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert node_identity_refusal(_env(message, "User:node-1"), frozenset()) is None  # as itself
    assert node_identity_refusal(_env(message, "User:node-2"), frozenset({"User:node-2"})) is None  # a super user
    assert node_identity_refusal(_env(message, None), frozenset()) is None  # the simulator: no principal
    assert node_identity_refusal(_env(message, "User:alice"), frozenset()) is None  # not a node: ACLs' business


def test_a_consumer_fetch_and_requests_naming_no_node_are_not_this_rules():
    consumer = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(T, 0, 0, 0),))
    assert acting_node(consumer) is None
    assert node_identity_refusal(_env(consumer, "User:node-2"), frozenset()) is None
    info = m.GetReplicaLogInfoRequest(())
    assert node_identity_refusal(_env(info, "User:node-2"), frozenset()) is None
    # a principal that only looks like a node's
    beat = m.BrokerHeartbeatRequest(1, 5, 10, True, False)
    for principal in ("User:node-", "User:node-2x", "User:NODE-2", "Group:node-2"):
        assert node_identity_refusal(_env(beat, principal), frozenset()) is None, principal


def test_super_users_parse_as_kafka_writes_them():
    assert cfg.parse_super_users("") == frozenset()
    assert cfg.parse_super_users("User:admin; User:node-1 ;") == frozenset({"User:admin", "User:node-1"})
    assert cfg.parse_super_users("admin") is None
    assert cfg.invalid_value("super.users", "User:") is not None


def test_the_controller_refuses_a_forged_fencing_and_changes_nothing():
    ctl = QuorumController({}, Level.ELR, SimDisk(None), random.Random(0), 0)
    for b in (1, 2):
        ctl.deliver(0, m.Envelope(b, CONTROLLER, b, m.BrokerRegistrationRequest(b, "kraftlog", uuid.UUID(int=b))))
    epochs = {e.dst: e.message.broker_epoch for e in ctl.poll()}
    end = ctl.end_offset
    forged = m.BrokerHeartbeatRequest(1, epochs[1], end, True, False)
    ctl.deliver(10, m.Envelope("forger", CONTROLLER, 7, forged, False, "CONTROLLER", None, None, None, "User:node-2"))
    (answer,) = [e.message for e in ctl.poll() if e.correlation_id == 7]
    assert answer.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert ctl.end_offset == end  # nothing written
    own = m.BrokerHeartbeatRequest(2, epochs[2], end, False, False)
    ctl.deliver(20, m.Envelope(2, CONTROLLER, 8, own, False, "CONTROLLER", None, None, None, "User:node-2"))
    (answer,) = [e.message for e in ctl.poll() if e.correlation_id == 8]
    assert answer.error_code == Errors.NONE  # a node acting as itself is served
    admin = QuorumController({"super.users": "User:node-2"}, Level.ELR, SimDisk(None), random.Random(0), 0)
    assert admin.super_users == frozenset({"User:node-2"})


def test_a_broker_refuses_a_replica_fetch_in_another_nodes_name():
    broker = Broker(0, {}, Level.ELR, SimDisk(None), random.Random(1), 0)
    broker.poll()
    fetch = m.FetchRequest(1, 5, 0, 1, (m.FetchPartition(T, 0, 0, 0),))
    broker.deliver(0, m.Envelope("peer", 0, 9, fetch, False, "INTERNAL", "broker-2", None, None, "User:node-2"))
    (answer,) = [e.message for e in broker.poll() if e.correlation_id == 9]
    assert isinstance(answer, m.FetchResponse) and answer.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    exempt = Broker(0, {"super.users": "User:node-2"}, Level.ELR, SimDisk(None), random.Random(1), 0)
    exempt.poll()
    exempt.deliver(0, m.Envelope("peer", 0, 9, fetch, False, "INTERNAL", "broker-2", None, None, "User:node-2"))
    (answer,) = [e.message for e in exempt.poll() if e.correlation_id == 9]
    assert answer.error_code != Errors.CLUSTER_AUTHORIZATION_FAILED
