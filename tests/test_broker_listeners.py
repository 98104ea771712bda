"""The broker's per-listener rules and the client APIs the real cluster added, driven in-process (the
real-cluster tests exercise the same code in subprocesses, where coverage does not see it)."""

from __future__ import annotations

import pytest

from kraftlog.broker.describe import DEFAULT_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, TOPIC_CONFIG
from kraftlog.controller.controller import CONTROLLER
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from test_broker import MiniCluster


def ask(c: MiniCluster, msg, listener: str | None = lst.CLIENT, src="client", client_id="cli", version=None):
    """Deliver ``msg`` to broker 0 as if it arrived on ``listener``; the response addressed to ``src``."""
    c._corr += 1
    corr = c._corr
    c.b.deliver(c.now, m.Envelope(src, 0, corr, msg, False, listener, client_id, version))
    c.pump()
    got = [e.message for e in c.inbox.get(src, []) if e.correlation_id == corr and e.is_response]
    c.inbox[src] = [e for e in c.inbox.get(src, []) if e.correlation_id != corr]
    return got[0] if got else None


@pytest.fixture
def c():
    return MiniCluster()


@pytest.mark.parametrize("request_msg", [
    m.BrokerHeartbeatRequest(1, 0, 0, False, False),
    m.AlterPartitionRequest(1, 0, ()),
    m.BrokerRegistrationRequest(1, "kraftlog", __import__("uuid").UUID(int=9)),
    m.FetchRequest(1, 0, 0, 1, ()),  # a replica fetch (replica_id >= 0)
])
def test_cluster_actions_on_the_client_listener_get_cluster_authorization_failed(c, request_msg):
    """Kafka's CLUSTER_ACTION authorization: inter-broker and controller APIs on a client listener are
    answered CLUSTER_AUTHORIZATION_FAILED and never served."""
    isr = c.p.isr
    resp = ask(c, request_msg)
    assert resp.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert c.p.isr == isr



def test_a_replica_fetch_with_replica_id_0_on_the_client_listener_is_refused_and_a_consumer_fetch_is_served(c):
    """Issue 39 rule 5 (Kafka's ``KafkaApis.handleFetch``: ``fetchRequest.isFromFollower`` is
    ``replicaId >= 0``, and a follower fetch needs CLUSTER_ACTION, ``authorizeClusterOperation``): broker
    id 0 is a replica id like any other, so a Fetch with replica id 0 on the client listener is answered
    CLUSTER_AUTHORIZATION_FAILED; a consumer's fetch (replica id -1) on the same listener is served.

    Shown to fail when ``message.replica_id >= 0`` in ``listeners.is_cluster_action`` is flipped to
    ``> 0`` (replica 0's fetch gets through to the partition), and when it is loosened to ``>= -1`` (the
    consumer is refused)."""
    c.produce(3)
    for follower in (1, 2):
        c.fetch(follower, 3, last_epoch=c.p.leader_epoch)
    assert c.p.log.high_watermark == 3
    part = (m.FetchPartition(c.topic_id, 0, c.p.leader_epoch, 0),)
    resp = ask(c, m.FetchRequest(0, c.epoch[0], 0, 1, part))
    assert resp.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert all(not p.records for p in resp.partitions)
    resp = ask(c, m.FetchRequest(-1, -1, 0, 1, part))
    assert resp.error_code == Errors.NONE
    assert resp.partitions[0].error_code == Errors.NONE and resp.partitions[0].records

def test_a_replica_fetch_on_the_internal_listener_is_served(c):
    c.produce(3)
    resp = ask(c, m.FetchRequest(1, c.epoch[1], 0, 1, (m.FetchPartition(c.topic_id, 0, c.p.leader_epoch, 0),)),
               listener=lst.INTERNAL, src=1)
    assert resp.error_code == Errors.NONE and resp.partitions[0].records


def test_controller_apis_reaching_a_broker_get_not_controller(c):
    resp = ask(c, m.BrokerHeartbeatRequest(1, 0, 0, False, False), listener=lst.INTERNAL)
    assert resp.error_code == Errors.NOT_CONTROLLER


@pytest.mark.parametrize("request_type", sorted(lst.RAFT_APIS, key=lambda t: t.API_KEY), ids=lambda t: t.__name__)
def test_kraft_quorum_apis_reaching_a_broker_are_refused(c, request_type):
    """KRaft's quorum APIs (KIP-595, KIP-853) are the controllers' own: a broker answers them
    CLUSTER_AUTHORIZATION_FAILED on its client listener and NOT_CONTROLLER on its internal one, at the top
    level, and serves nothing."""
    from test_wire import SAMPLES

    msg = SAMPLES[request_type]
    assert ask(c, msg).error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    assert ask(c, msg, listener=lst.INTERNAL).error_code == Errors.NOT_CONTROLLER


def test_a_replica_fetch_naming_the_leader_itself_is_refused(c):
    """Kafka's followerReplicaOrThrow: the leader is not its own follower (a self-fetch would freeze the HWM)."""
    resp = ask(c, m.FetchRequest(0, c.epoch[0], 0, 1, (m.FetchPartition(c.topic_id, 0, c.p.leader_epoch, 0),)),
               listener=lst.INTERNAL, src=9)
    assert resp.partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER


@pytest.mark.parametrize("records", [(), (RecordBatch(-1, -1, ()),)])
def test_a_produce_partition_without_records_is_invalid_record(c, records):
    """Kafka's ProduceRequest.validateRecords / LogValidator: no batch, or a batch without records, is
    INVALID_RECORD; nothing is appended."""
    leo = c.p.log.log_end_offset
    resp = ask(c, m.ProduceRequest(-1, 1000, (m.ProducePartition("t", 0, records),)))
    assert resp.partitions[0].error_code == Errors.INVALID_RECORD
    assert c.p.log.log_end_offset == leo


def test_admin_requests_are_forwarded_to_the_controller_and_answered(c):
    """Kafka's ForwardingManager: CreateTopics on a broker's client listener reaches the controller, whose
    answer comes back to the client."""
    resp = ask(c, m.CreateTopicsRequest((m.CreatableTopic("fwd", assignment=((0, 1, 2),)),)))
    assert resp.topics[0].name == "fwd" and resp.topics[0].error_code == Errors.NONE
    assert "fwd" in c.ctl.image.topics


def test_a_forwarded_request_the_controller_never_answers_times_out(c):
    """A forwarded admin request whose answer never comes is answered REQUEST_TIMED_OUT after
    request.timeout.ms (the client is not left waiting forever)."""
    c.hold = lambda env: env.dst == CONTROLLER and type(env.message) is m.CreateTopicsRequest
    c._corr += 1
    corr = c._corr
    c.b.deliver(c.now, m.Envelope("client", 0, corr, m.CreateTopicsRequest((m.CreatableTopic("lost", 1, 3),)),
                                  False, lst.CLIENT))
    c.pump()
    assert len(c.held) == 1 and not c.inbox.get("client")
    c.now += c.b.config.request_timeout_ms
    c.b.tick(c.now)
    c.pump()
    (resp,) = [e.message for e in c.inbox["client"] if e.correlation_id == corr]
    assert resp.topics[0].error_code == Errors.REQUEST_TIMED_OUT


def test_delete_topics_is_forwarded_from_the_client_listener_and_deletes():
    """DeleteTopics is an admin API: served on the client listener, forwarded to the controller (Kafka's
    ForwardingManager), which deletes the topic; with delete.topic.enable=false it is
    TOPIC_DELETION_DISABLED and nothing changes."""
    c = MiniCluster()  # creates topic "t"
    resp = ask(c, m.DeleteTopicsRequest(("t",)))
    assert resp.responses[0].error_code == Errors.NONE and "t" not in c.ctl.image.topics
    off = MiniCluster(config={"delete.topic.enable": "false"})
    resp = ask(off, m.DeleteTopicsRequest(("t",)))
    assert resp.responses[0].error_code == Errors.TOPIC_DELETION_DISABLED and "t" in off.ctl.image.topics


def test_an_unknown_election_type_is_invalid_request(c):
    resp = ask(c, m.ElectLeadersRequest(119, (m.ElectLeadersPartition("t", 0),)))
    assert resp.error_code == Errors.INVALID_REQUEST


def test_describe_configs_names_the_source_of_each_topic_value(c):
    """DescribeConfigs resolves like Kafka's ConfigHelper: the topic's own value (TOPIC_CONFIG), else the
    cluster default (DYNAMIC_DEFAULT_BROKER_CONFIG), else Kafka's default (DEFAULT_CONFIG)."""
    c.send(m.IncrementalAlterConfigsRequest((
        m.AlterConfigsResource(2, "t", (m.AlterableConfig("min.insync.replicas", 0, "2"),)),
        m.AlterConfigsResource(4, "", (m.AlterableConfig("log.flush.interval.messages", 0, "7"),)),)),
        "admin", CONTROLLER)
    c.advance(c.now + 10)
    resp = ask(c, m.DescribeConfigsRequest((m.DescribeConfigsResource(2, "t"),
                                            m.DescribeConfigsResource(2, "nope"),
                                            m.DescribeConfigsResource(4, "0", ("num.partitions",)),
                                            m.DescribeConfigsResource(4, "5"))))
    topic, unknown, broker, other = resp.results
    by_name = {e.name: (e.value, e.config_source) for e in topic.configs}
    assert by_name["min.insync.replicas"] == ("2", TOPIC_CONFIG)
    assert by_name["flush.messages"] == ("7", DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert by_name["unclean.leader.election.enable"] == ("false", DEFAULT_CONFIG)
    assert unknown.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert [(e.name, e.value) for e in broker.configs] == [("num.partitions", "1")]
    assert other.error_code == Errors.INVALID_REQUEST


def offsets_topic(c) -> None:
    """``__consumer_offsets`` with three partitions led by brokers 0, 1 and 2, loaded by broker 0."""
    r = c.send(m.CreateTopicsRequest((m.CreatableTopic("__consumer_offsets", assignment=((0,), (1,), (2,))),)),
               "admin", CONTROLLER)
    assert r.topics[0].error_code == Errors.NONE
    c.advance(c.now + 10)


def test_group_requests_go_to_the_coordinator_or_get_not_coordinator(c):
    """JoinGroup to the coordinating broker is handled (MEMBER_ID_REQUIRED on a first v4+ join, the id
    prefixed with the client id); a group coordinated elsewhere gets NOT_COORDINATOR."""
    from kraftlog.broker.group_coordinator import coordinator_for
    offsets_topic(c)
    mine = next(g for g in (f"g{i}" for i in range(100)) if coordinator_for(g, c.b.image) == 0)
    other = next(g for g in (f"g{i}" for i in range(100)) if coordinator_for(g, c.b.image) != 0)
    join = lambda g: m.JoinGroupRequest(g, 10000, "", "consumer", (m.JoinGroupRequestProtocol("range", b""),))  # noqa: E731
    resp = ask(c, join(mine), client_id="app", version=5)
    assert resp.error_code == Errors.MEMBER_ID_REQUIRED and resp.member_id.startswith("app-")
    assert ask(c, join(other)).error_code == Errors.NOT_COORDINATOR
    assert ask(c, m.HeartbeatRequest(other, 1, "x")).error_code == Errors.NOT_COORDINATOR
    assert ask(c, m.SyncGroupRequest(other, 1, "x")).error_code == Errors.NOT_COORDINATOR
    assert ask(c, m.LeaveGroupRequest(other, (m.MemberIdentity("x"),))).error_code == Errors.NOT_COORDINATOR
    commit = ask(c, m.OffsetCommitRequest(other, (m.OffsetCommitPartition("t", 0, 1),)))
    assert commit.partitions[0].error_code == Errors.NOT_COORDINATOR
    assert ask(c, m.OffsetFetchRequest(other, None)).error_code == Errors.NOT_COORDINATOR


def test_a_parked_join_is_answered_when_the_rebalance_completes(c):
    """The broker ticks the group coordinator and sends the JoinGroup it parked once the initial
    rebalance delay (group.initial.rebalance.delay.ms, 3 s) has passed."""
    from kraftlog.broker.group_coordinator import coordinator_for
    offsets_topic(c)
    group = next(g for g in (f"g{i}" for i in range(100)) if coordinator_for(g, c.b.image) == 0)
    member = ask(c, m.JoinGroupRequest(group, 10000, "", "consumer", (m.JoinGroupRequestProtocol("range", b"m"),)),
                 client_id="app", version=5).member_id
    c._corr += 1
    corr = c._corr
    c.b.deliver(c.now, m.Envelope("client", 0, corr, m.JoinGroupRequest(
        group, 10000, member, "consumer", (m.JoinGroupRequestProtocol("range", b"m"),)), False, lst.CLIENT, "app", 5))
    c.pump()
    assert not c.inbox.get("client")
    deadline = c.b.next_deadline()
    c.now = max(c.now, c.b.groups.next_deadline())
    c.b.tick(c.now)
    c.pump()
    (resp,) = [e.message for e in c.inbox["client"] if e.correlation_id == corr]
    assert resp.error_code == Errors.NONE and resp.leader == member and resp.generation_id == 1
    assert deadline is not None


def test_metadata_and_find_coordinator_answer_the_listeners_endpoint():
    """Brokers register Kafka's listeners; Metadata and FindCoordinator answer with the endpoint of the
    listener the request arrived on (Kafka's MetadataCache by listener name)."""
    c = MiniCluster(config={"advertised.listeners": "CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:19092"})
    meta = ask(c, m.MetadataRequest(None))
    assert [(b.node_id, b.host, b.port) for b in meta.brokers] == [(0, "127.0.0.1", 9092)]  # 1 and 2: no CLIENT
    group = "g"
    coord = ask(c, m.FindCoordinatorRequest((group,)))
    (entry,) = coord.coordinators
    if entry.node_id == 0:
        assert (entry.host, entry.port) == ("127.0.0.1", 9092)
    else:
        assert entry.error_code == Errors.COORDINATOR_NOT_AVAILABLE
    sim = ask(c, m.MetadataRequest(None), listener=None)
    assert [(b.host, b.port) for b in sim.brokers] == [(f"broker-{i}", 9092) for i in range(3)]


def test_parse_listeners_refuses_a_malformed_entry():
    from kraftlog.broker.broker import parse_listeners
    assert parse_listeners("A://h:1, B://h2:2") == (m.Listener("A", "h", 1), m.Listener("B", "h2", 2))
    assert parse_listeners("") == ()
    with pytest.raises(ValueError, match="NAME://host:port"):
        parse_listeners("h:1")


def test_listener_api_versions_split_controller_and_broker_apis():
    from kraftlog.protocol.wire import supported_api_versions
    supported = supported_api_versions()
    ctl = lst.listener_api_versions(lst.CONTROLLER, supported)
    client = lst.listener_api_versions(lst.CLIENT, supported)
    assert m.BrokerHeartbeatRequest.API_KEY in ctl and m.ProduceRequest.API_KEY not in ctl
    assert m.ProduceRequest.API_KEY in client and m.JoinGroupRequest.API_KEY in client
    assert m.ApiVersionsRequest.API_KEY in ctl and m.ApiVersionsRequest.API_KEY in client



def test_list_offsets_by_timestamp_decodes_only_the_batch_whose_max_timestamp_reaches_it():
    """Kafka's ListOffsets by timestamp (UnifiedLog.fetchOffsetByTimestamp): the first offset below the
    HWM whose record timestamp is >= the target. Batches arrive as the wire gives them (encoded, records
    not decoded); like Kafka's time index, the broker skips every batch whose header maxTimestamp is below
    the target and decodes only the one that reaches it."""
    from kraftlog.protocol.records import decode_batches, encode_batches

    c = MiniCluster()
    for first_ts in (1000, 2000, 3000):
        raw = encode_batches((RecordBatch(-1, -1, tuple(Record(first_ts + i, None, b"x") for i in range(3))),))
        (wire_batch,) = decode_batches(raw)
        resp = c.send(m.ProduceRequest(1, 30000, (m.ProducePartition("t", 0, (wire_batch,)),)), "client")
        assert resp.partitions[0].error_code == Errors.NONE
    for follower in (1, 2):
        c.fetch(follower, 9)
    c.fetch(1, 9)
    assert c.p.log.high_watermark == 9
    resp = c.send(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition("t", 0, 2001),)), "client")
    (part,) = resp.partitions
    assert (part.error_code, part.offset, part.timestamp) == (Errors.NONE, 4, 2001)  # the record's timestamp
    stored = list(c.b.disk.read_range(c.p.log.segment_path, 0, 3))  # SimDisk keeps the stored objects
    assert [b.is_encoded for b in stored] == [True, True, True]
    assert [b.max_timestamp for b in stored] == [1002, 2002, 3002]
    assert [b._records is not None for b in stored] == [False, True, False]  # only the second decoded
