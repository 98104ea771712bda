"""protocol/listeners.py for KRaft's quorum APIs (KIP-595, KIP-996, KIP-853): Vote, BeginQuorumEpoch,
EndQuorumEpoch, DescribeQuorum, AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter are the controllers' own.

Rules proved here: the controller's listener serves and advertises them (and its Fetch up to the metadata
fetch's v18); a broker's listeners parse them only to refuse them (CLUSTER_AUTHORIZATION_FAILED on the client
listener, as every controller API); ``error_response`` answers each with its own response type, the error at
the top level and the partition's fields at their none values, which crosses the wire without topics, as
Kafka's ``getErrorResponse`` answers.
"""

from __future__ import annotations

import pytest

from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from test_wire import SAMPLES

RAFT_REQUESTS = (m.VoteRequest, m.BeginQuorumEpochRequest, m.EndQuorumEpochRequest, m.DescribeQuorumRequest,
                 m.AddRaftVoterRequest, m.RemoveRaftVoterRequest, m.UpdateRaftVoterRequest, m.FetchSnapshotRequest)
_IDS = [t.__name__ for t in RAFT_REQUESTS]


def test_the_quorum_apis_are_controller_apis() -> None:
    assert lst.RAFT_APIS == frozenset(RAFT_REQUESTS)
    assert lst.RAFT_APIS <= lst.CONTROLLER_APIS and lst.RAFT_APIS <= lst.CLUSTER_ACTION_APIS
    assert not lst.RAFT_APIS & (lst.BROKER_APIS | lst.FORWARDED_APIS)


def test_the_controller_listener_advertises_them_and_the_kraft_fetch_versions() -> None:
    supported = wire.supported_api_versions()
    ctl = lst.listener_api_versions(lst.CONTROLLER, supported)
    assert {t.API_KEY: ctl[t.API_KEY] for t in RAFT_REQUESTS} == {
        52: (2, 2), 53: (1, 1), 54: (1, 1), 55: (0, 2), 59: (0, 1), 80: (0, 0), 81: (0, 0), 82: (0, 0)}
    assert ctl[m.MetadataFetchRequest.API_KEY] == (4, 18)  # a KRaft replica's fetch: v17/v18
    for listener in (lst.CLIENT, lst.INTERNAL):  # parsed to be refused; a data Fetch stops at v15
        advertised = lst.listener_api_versions(listener, supported)
        assert all(t.API_KEY in advertised for t in RAFT_REQUESTS)
        assert advertised[m.FetchRequest.API_KEY] == (4, 15)


@pytest.mark.parametrize("request_type", RAFT_REQUESTS, ids=_IDS)
def test_a_quorum_api_on_a_client_listener_is_refused(request_type: type) -> None:
    msg = SAMPLES[request_type]
    assert lst.is_cluster_action(msg)
    refusal = lst.cluster_action_refusal(m.Envelope("client", 0, 5, msg, False, lst.CLIENT))
    assert type(refusal) is wire.response_type_for(request_type)
    assert refusal.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    for listener in (lst.INTERNAL, lst.CONTROLLER, None):
        assert lst.cluster_action_refusal(m.Envelope("c", 0, 5, msg, False, listener)) is None


@pytest.mark.parametrize("request_type", RAFT_REQUESTS, ids=_IDS)
def test_error_response_puts_the_error_at_the_top_level_only(request_type: type) -> None:
    resp = lst.error_response(SAMPLES[request_type], Errors.NOT_CONTROLLER)
    assert type(resp) is wire.response_type_for(request_type)
    assert resp.error_code == Errors.NOT_CONTROLLER
    assert getattr(resp, "partition_error_code", Errors.NONE) == Errors.NONE
    assert getattr(resp, "leader_id", -1) == -1 and getattr(resp, "current_leader_id", -1) == -1
    entity = wire.to_kio(resp)
    assert getattr(entity, "topics", ()) == ()  # Kafka's getErrorResponse: no topics
    assert wire.roundtrip(resp) == resp


def test_error_response_refuses_a_type_it_does_not_answer() -> None:
    with pytest.raises(TypeError):
        lst.error_response(SAMPLES[m.VoteResponse], Errors.NOT_CONTROLLER)
