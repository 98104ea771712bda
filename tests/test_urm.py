"""Level ``urm``: KIP-966 part 2, the Unclean Recovery Manager (issue 10).

The stories (``scenarios/urm-*.yaml`` and KIP-966's own, ``last-isr-member-loses-page-cache``) prove the
behaviour end to end in the simulator; the unit tests below pin the request sender (the rejection of stale
answers, failed requests), the strategy's config resolution, ElectLeaders v3, the controller's use of
``unclean.recovery.timeout.ms`` and the gauges, and that nothing of this happens below level ``urm`` or with
``unclean.recovery.manager.enabled=false``. The decision rules themselves (the decision order, when each
strategy elects, the choice) are pinned in ``tests/test_urm_rules.py``; issue 25's four stories are at the end.
"""

from __future__ import annotations

import uuid

import pytest

from conftest import SCENARIO_DIR
from kraftlog.controller.unclean_recovery import UncleanRecoveryManager
from kraftlog.level import DEFAULT, Level
from kraftlog.metadata import config as cfg
from kraftlog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataImage, PartitionRegistration
from kraftlog.metadata.records import NO_LEADER, RECOVERED, RECOVERING
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.scenario import load_scenario, parse_scenario
from kraftlog.sim.cluster import SimCluster
from kraftlog.sim.runner import run_scenario
from test_controller import Harness


def _timeline(result, partition: str, step: str) -> list[str]:
    return [line for line in result.timeline if f"unclean recovery of {partition}: {step}" in line]


def test_urm_is_the_default_level():
    assert DEFAULT is Level.URM and Level.parse("urm") is Level.URM


# =============================================================================== the stories
def test_kip966_story_elr_elects_the_last_known_leader_and_loses_urm_waits_and_elects_the_longest_log(library):
    """Must show 1. KIP-966's story (two unclean shutdowns, the last known leader lost its page cache): at
    level elr ISR and ELR are empty and the last known leader 0 is elected with an empty log, losing the
    twenty acknowledged records; at level urm (Balanced) the controller waits for both LastKnownELR
    members, asks each for its log and elects broker 1, which has all twenty: nothing is lost."""
    elr = library.run("last-isr-member-loses-page-cache", Level.ELR)
    urm = library.run("last-isr-member-loses-page-cache", Level.URM)
    assert elr.verdict["final"]["partitions"]["t-0"]["leader"] == 0
    assert elr.verdict["lost_acked"] == 20
    assert not _timeline(elr, "t-0", "")
    v = urm.verdict
    assert v["level"] == "urm" and v["lost_acked"] == 0 and v["invariant_violations"] == []
    assert v["final"]["partitions"]["t-0"]["leader"] == 1
    assert v["final"]["partitions"]["t-0"]["leo"] == {"0": 20, "1": 20, "2": 20}
    # The recovery waited for the LastKnownELR members and elected the longest log.
    assert _timeline(urm, "t-0", "started: Balanced")
    elected = _timeline(urm, "t-0", "elected")
    assert len(elected) == 1 and "broker 1 (last written epoch 0, LEO 20)" in elected[0]
    metrics = v["metrics"]
    assert metrics["unclean_recovery_finished_count"] == 1
    assert metrics["unclean_recovery_partitions_count"] == {"final": 0, "max": 1}
    assert metrics["manual_leader_election_required_partition_count"] == {"final": 0, "max": 0}
    assert metrics["electable_replicas_count"]["final"] == 3


def test_fenced_only_elr_balanced_and_none_wait_aggressive_recovers_from_the_replica_that_answers(library):
    """Must show 2 (urm-strategies-fenced-elr): with only fenced ELR members, Aggressive asks every replica
    and elects broker 2, the only one that answers, once the file's unclean.recovery.timeout.ms (10 s) has
    passed since the recovery started (issue 25: no fixed 5 s; RECOVERING, its ten records are lost);
    Balanced and None wait, and elect ELR member 1 cleanly when it returns: no loss."""
    r = library["urm-strategies-fenced-elr"]
    v = r.verdict
    assert r.exit_code == 0, v["failed_expectations"]
    final = v["final"]["partitions"]
    assert final["aggressive-0"]["leader"] == 2
    assert (final["balanced-0"]["leader"], final["none-0"]["leader"]) == (1, 1)
    assert {rec["partition"] for rec in v["lost_acked_records"]} == {"aggressive-0"} and v["lost_acked"] == 10
    assert not _timeline(r, "balanced-0", "") and not _timeline(r, "none-0", "")
    started = _timeline(r, "aggressive-0", "started")
    elected = _timeline(r, "aggressive-0", "elected")
    assert len(started) == len(elected) == 1 and "from answers of [2]" in elected[0]
    t_start, t_elect = (int(line.split("ms")[0]) for line in (started[0], elected[0]))
    assert t_elect - t_start == 10_000


def test_below_urm_the_strategy_does_nothing(library):
    """Nothing of KIP-966 part 2 below level urm: at elr the fenced-only-ELR story keeps all three topics
    leaderless until broker 1 returns (no Aggressive recovery), so the run's expectation that
    `aggressive` gets leader 2 times out."""
    r = library.run("urm-strategies-fenced-elr", Level.ELR)
    assert r.verdict["failed_expectations"] and "aggressive-0" in r.verdict["failed_expectations"][0]
    assert not [line for line in r.timeline if "unclean recovery" in line]
    assert r.verdict["metrics"]["unclean_recovery_finished_count"] == 0


def test_strategy_none_stays_leaderless_until_an_operator_elects(library):
    """Must show 2 (urm-none-waits-for-operator): with None the partitions stay leaderless with every
    broker back (the manual-election gauge counts both) until ElectLeaders: LONGEST_LOG_BALANCED runs a
    recovery that elects the longest log, DESIGNATION elects the named replica; nothing is lost."""
    r = library["urm-none-waits-for-operator"]
    v = r.verdict
    assert r.exit_code == 0, v["failed_expectations"]
    assert v["lost_acked"] == 0
    assert v["metrics"]["manual_leader_election_required_partition_count"] == {"final": 0, "max": 2}
    assert _timeline(r, "longest-0", "started: Balanced (ElectLeaders)")
    assert not _timeline(r, "designated-0", "started")
    assert [line for line in r.timeline if "designation election on designated-0 -> NONE" in line]


def test_an_answer_from_a_broker_that_restarted_is_rejected_and_the_replica_asked_again(library):
    """Must show 3 (urm-stale-answer-after-restart, hold/release): broker 1 answered LEO 20, then lost its
    disk and registered again; its earlier answer is rejected (broker epoch), it is asked again (LEO 0)
    and broker 2 (LEO 10) is elected. At level elr the last known leader's empty log loses all twenty."""
    r = library["urm-stale-answer-after-restart"]
    v = r.verdict
    assert r.exit_code == 0, v["failed_expectations"]
    rejected = _timeline(r, "t-0", "rejected: broker 1's earlier answer: broker epoch")
    assert len(rejected) == 1 and "(it restarted)" in rejected[0]
    answers = _timeline(r, "t-0", "answered: broker 1")
    assert [a.split("broker 1: ")[1] for a in answers] == ["last written epoch 0, LEO 20",
                                                            "last written epoch -1, LEO 0"]
    assert v["final"]["partitions"]["t-0"]["leader"] == 2 and v["lost_acked"] == 10
    assert library.run("urm-stale-answer-after-restart", Level.ELR).verdict["lost_acked"] == 20


def test_controller_failover_during_a_recovery_restarts_it_and_elects_the_longest_log(library):
    """Must show 4 (urm-controller-failover): the new controller starts the recovery again (nothing was
    persisted) and still elects broker 1, the longest log; the old controller's question, released after
    the failover, gets an answer the new controller never sees."""
    r = library["urm-controller-failover"]
    v = r.verdict
    assert r.exit_code == 0, v["failed_expectations"]
    assert len(_timeline(r, "t-0", "started: Balanced")) == 2
    assert len(_timeline(r, "t-0", "answered: broker 1")) == 1
    assert v["final"]["partitions"]["t-0"]["leader"] == 1 and v["lost_acked"] == 0
    assert v["metrics"]["unclean_recovery_finished_count"] == 1


def _at(line: str) -> int:
    return int(line.split("ms")[0])


def _one_recovery(library, name: str, strategy: str):
    """Library story ``name`` (its expectations held) with its one recovery of t-0: (the run, when the
    recovery started in ms, its ``elected`` timeline line)."""
    r = library[name]
    assert r.exit_code == 0, r.verdict["failed_expectations"]
    started, elected = _timeline(r, "t-0", f"started: {strategy}"), _timeline(r, "t-0", "elected")
    assert len(started) == len(elected) == 1
    return r, _at(started[0]), elected[0]


def test_issue25_aggressive_waits_for_the_longest_log_and_loses_nothing(library):
    """Issue 25 story 1 (urm-aggressive-waits-for-the-longest-log): unclean.leader.election.enable=true
    maps to Aggressive, which no longer elects after a fixed 5 s: broker 0, the only replica with the ten
    records, restarts 9 s into the recovery, answers, and is elected once every replica has answered."""
    r, started, elected = _one_recovery(library, "urm-aggressive-waits-for-the-longest-log", "Aggressive")
    assert r.verdict["lost_acked"] == 0 and r.verdict["invariant_violations"] == []
    assert "broker 0 (last written epoch 0, LEO 10) from answers of [0, 1, 2]" in elected
    assert _at(elected) - started > 5000
    assert r.verdict["final"]["partitions"]["t-0"]["leo"] == {"0": 10, "1": 10, "2": 10}


def test_issue25_a_lost_question_is_asked_again_when_its_broker_is_unfenced(library):
    """Issue 25 story 2 (urm-lost-question-asked-again): the questions to isolated brokers 1 and 2 are
    lost; each is asked again when its broker is unfenced, and the partition is elected within a second of
    the last unfencing (before issue 25: 5 minutes later, when the lost questions timed out)."""
    r, _, elected = _one_recovery(library, "urm-lost-question-asked-again", "Balanced")
    assert r.verdict["lost_acked"] == 0
    reasked = _timeline(r, "t-0", "reasked")
    assert [line.split("reasked: ")[1].split(":")[0] for line in reasked] == ["broker 1 is unfenced",
                                                                              "broker 2 is unfenced"]
    unfenced = [line for line in r.timeline if line.endswith("broker 2 unfenced")][-1]
    assert 0 <= _at(elected) - _at(unfenced) < 1000
    assert not _timeline(r, "t-0", "failed")  # no question had to time out


def test_issue25_balanced_with_an_empty_last_known_elr_elects_after_the_timeout(library):
    """Issue 25 story 3 (urm-balanced-empty-last-known-elr): a min.insync.replicas change cleared ELR and
    LastKnownELR and broker 2 is gone for good; Balanced elects broker 0 from the answers of 0 and 1 once
    the dynamically set unclean.recovery.timeout.ms (30 s) has passed (rules 1 and 5); nothing is lost."""
    r, started, elected = _one_recovery(library, "urm-balanced-empty-last-known-elr", "Balanced")
    assert r.verdict["lost_acked"] == 0 and r.verdict["invariant_violations"] == []
    assert "broker 0 (last written epoch 0, LEO 20) from answers of [0, 1]" in elected
    assert _at(elected) - started == 30_000
    assert r.verdict["metrics"]["unclean_recovery_partitions_count"]["max"] == 1


def test_issue25_balanced_waits_for_the_replica_outside_last_known_elr(library):
    """Issue 25 story 4 (urm-balanced-waits-for-every-replica): LastKnownELR [0, 1] answered with empty
    logs; Balanced waits for broker 2 (ten of the twenty records), which answers when it is healed 10 s
    later and is elected: ten records kept (before issue 25 broker 0 was elected at once: twenty lost)."""
    r, _, elected = _one_recovery(library, "urm-balanced-waits-for-every-replica", "Balanced")
    assert r.verdict["lost_acked"] == 10
    assert {rec["value"] for rec in r.verdict["lost_acked_records"]} == {f"s4-{i}" for i in range(10)}
    assert "broker 2 (last written epoch 0, LEO 10) from answers of [0, 1, 2]" in elected
    assert r.verdict["final"]["partitions"]["t-0"]["hwm"] == 10


def test_urm_with_the_manager_disabled_behaves_exactly_as_elr():
    """``unclean.recovery.manager.enabled=false`` at level urm: the same elections as level elr (the last
    known leader is elected, the same records are lost), no recovery."""
    s = load_scenario(SCENARIO_DIR / "last-isr-member-loses-page-cache.yaml")
    s.config["unclean.recovery.manager.enabled"] = "false"
    off = run_scenario(s, level=Level.URM)
    elr = run_scenario(load_scenario(SCENARIO_DIR / "last-isr-member-loses-page-cache.yaml"), level=Level.ELR)
    assert not [line for line in off.timeline if "unclean recovery" in line]
    for key in ("lost_acked", "lost_acked_records", "final", "acked"):
        assert off.verdict[key] == elr.verdict[key], key
    strip = [line.split("level")[0] for line in off.timeline if "cluster ready" not in line]
    assert strip == [line.split("level")[0] for line in elr.timeline if "cluster ready" not in line]


def test_recovery_histories_are_deterministic():
    """Same scenario, level and seed: the same history digest, recoveries included."""
    path = SCENARIO_DIR / "urm-stale-answer-after-restart.yaml"
    digests = {run_scenario(load_scenario(path)).verdict["history_digest"] for _ in range(2)}
    assert len(digests) == 1


def test_a_response_to_a_process_that_restarted_is_never_delivered():
    """The simulator's connections: a response whose requester restarted since it was sent (a controller
    failover with answers in flight) dies with the connection, as over TCP; so does a request its sender
    sent before restarting."""
    sim = SimCluster(1, {}, Level.URM, 0)
    sim.run_until(3000)
    ctl = sim.controller
    image = ctl.image
    assert image.brokers[0].fenced is False
    delivered = []
    sim.message_observers[m.GetReplicaLogInfoResponse] = lambda s, env: delivered.append(env)
    sim.hold("GetReplicaLogInfo", 0, "controller")
    ctl.send_request(0, m.GetReplicaLogInfoRequest(()), sim.now, 1000, ("log_info", 0, ()))
    sim._after("controller", ctl)
    sim.run_until(sim.now + 100)
    assert len(sim.held) == 1  # broker 0's answer, held on its way back
    sim.restart_controller()
    sim.release("GetReplicaLogInfo")
    sim.run_until(sim.now + 100)
    assert delivered == []


# ========================================================================= the request sender
def _part(isr=(), elr=(), lke=(), replicas=(0, 1, 2), leader=NO_LEADER, epoch=4) -> PartitionRegistration:
    return PartitionRegistration(replicas=replicas, isr=isr, leader=leader, leader_epoch=epoch, partition_epoch=9,
                                 elr=elr, last_known_elr=lke)


def _image_with(broker_epochs: dict, part: PartitionRegistration) -> MetadataImage:
    from kraftlog.metadata.image import BrokerRegistration, TopicImage
    tid = uuid.UUID(int=7)
    return MetadataImage(
        offset=100,
        brokers={b: BrokerRegistration(b, e, uuid.UUID(int=b), fenced=False) for b, e in broker_epochs.items()},
        topics={"t": TopicImage("t", tid, 1)}, topic_names={tid: "t"}, partitions={("t", 0): part})


def _answer(broker_epoch, epoch, leo, current=4, error=Errors.NONE):
    return m.GetReplicaLogInfoResponse(broker_epoch, (m.PartitionLogInfo(uuid.UUID(int=7), 0, epoch, current, leo,
                                                                         error),))


def test_stale_answers_are_rejected_and_the_replica_asked_again():
    """KIP-966: an answer whose broker epoch is not the broker's registration, or whose current leader
    epoch is not the controller's, or that carries an error, is rejected and the broker queued again after
    the retry backoff; a kept answer is rejected too once its broker registers again."""
    part = _part(lke=(0, 1))
    image = _image_with({0: 10, 1: 11, 2: 12}, part)
    urm = UncleanRecoveryManager()
    task = urm.start(0, ("t", 0), part, "Balanced", 300_000)
    assert [b for b, _ in urm.requests_due(0)] == [0, 1, 2]
    key = (("t", 0),)
    urm.on_answer(5, 0, key, _answer(9, 2, 50), image)  # broker epoch 9: 0 restarted since
    urm.on_answer(5, 1, key, _answer(11, 2, 50, current=3), image)  # stale metadata cache
    urm.on_answer(5, 2, key, _answer(12, -1, -1, error=Errors.NOT_LEADER_OR_FOLLOWER), image)
    assert task.answers == {}
    kinds = [(e.kind, e.detail.split(":")[0]) for e in urm.take_events()]
    assert kinds[0] == ("started", "Balanced, asking replicas [0, 1, 2]")
    assert [k for k, _ in kinds[1:]] == ["rejected"] * 3
    assert urm.requests_due(50) == []  # the retry backoff
    assert [b for b, _ in urm.requests_due(200)] == [0, 1, 2]
    urm.on_answer(205, 0, key, _answer(10, 2, 50), image)
    urm.on_answer(205, 1, key, _answer(11, 2, 70), image)
    assert set(task.answers) == {0, 1}
    assert urm.ready_leader(300_000, task, part, lambda b: True) == 1  # the timeout passed without 2
    # broker 1 registers again: its kept answer no longer holds
    image = _image_with({0: 10, 1: 30, 2: 12}, part)
    urm.revalidate(300_001, task, image, part)
    assert set(task.answers) == {0}
    assert urm.ready_leader(300_001, task, part, lambda b: True) == NO_LEADER


def test_failed_requests_are_sent_again_on_the_brokers_next_heartbeat():
    part = _part()
    urm = UncleanRecoveryManager()
    task = urm.start(0, ("t", 0), part, "Aggressive", 300_000)
    due = urm.requests_due(0)
    urm.on_failure(10, 1, due[1][1])
    assert task.failed == {1} and urm.requests_due(20) == []
    urm.retry_failed(1)
    assert [b for b, _ in urm.requests_due(30)] == [1]


# ======================================================================= configs
@pytest.mark.parametrize("topic, cluster, static, expected", [
    ({}, {}, {}, "Balanced"),  # KIP-966's default
    ({}, {}, {"unclean.leader.election.enable": "true"}, "Aggressive"),  # the mapping
    ({}, {}, {"unclean.leader.election.enable": "false"}, "Balanced"),
    ({}, {"unclean.recovery.strategy": "None"}, {"unclean.leader.election.enable": "true"}, "None"),
    ({"unclean.leader.election.enable": "true"}, {"unclean.recovery.strategy": "None"}, {}, "Aggressive"),
    # an explicit strategy beats the mapped one at the same level
    ({"unclean.leader.election.enable": "true", "unclean.recovery.strategy": "Balanced"}, {}, {}, "Balanced"),
    ({"unclean.recovery.strategy": "aggressive"}, {}, {}, "Aggressive"),
])
def test_strategy_resolution(topic, cluster, static, expected):
    """KIP-966: unclean.leader.election.enable true -> Aggressive, false -> Balanced, when no strategy is
    set at the same or a more specific level (topic beats cluster beats static)."""
    image = MetadataImage(configs={(RESOURCE_TOPIC, "t"): topic, (RESOURCE_BROKER, ""): cluster})
    assert image.unclean_recovery_strategy("t", static) == expected


def test_invalid_config_values_are_refused_by_the_controller_and_the_scenario_parser():
    h = Harness(Level.URM)
    h.start_brokers(0)
    resp = h.call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
        RESOURCE_BROKER, "", (m.AlterableConfig("unclean.recovery.strategy", m.OP_SET, "Fast"),)),)))
    assert resp.responses[0].error_code == Errors.INVALID_CONFIG
    assert "must be one of None, Balanced, Aggressive" in resp.responses[0].error_message
    resp = h.call(m.CreateTopicsRequest((m.CreatableTopic("t", 1, 1, configs=(
        ("unclean.recovery.timeout.ms", "soon"),)),)))
    assert resp.topics[0].error_code == Errors.INVALID_CONFIG
    assert cfg.invalid_value("unclean.recovery.manager.enabled", "yes")
    with pytest.raises(Exception) as err:
        parse_scenario("name: x\ncluster: {brokers: 1}\ntopics: [{name: t, replication_factor: 1, config: "
                       "{unclean.recovery.strategy: Fast}}]\nsteps: []\nuntil: 1s\n")
    assert "unclean.recovery.strategy" in str(err.value) and ":3" in str(err.value)


# ======================================================================= ElectLeaders v3
def _leaderless(level=Level.URM, config=None) -> Harness:
    """Partition t-0 on [0, 1, 2], min ISR 2: 1 and 2 fenced then 0 fenced -> ISR [], ELR [0, 1] fenced...
    then 0 and 1 re-register after unclean shutdowns: ISR [], ELR [], LastKnownELR [0, 1]; 2 unfenced."""
    h = Harness(level, {"min.insync.replicas": "2", **(config or {})})
    h.start_brokers(0, 1, 2)
    resp = h.call(m.CreateTopicsRequest((m.CreatableTopic("t", assignment=((0, 1, 2),)),)))
    assert resp.topics[0].error_code == Errors.NONE
    for b in (2, 1, 0):
        h.heartbeat(b, want_fence=True)
    part = h.ctl.image.partitions[("t", 0)]
    assert part.leader == NO_LEADER and part.elr == (0, 1)
    for b in (0, 1, 2):
        h.incarnation[b] = uuid.UUID(int=2000 + b)
        assert h.register(b).error_code == Errors.NONE
    part = h.ctl.image.partitions[("t", 0)]
    assert (part.isr, part.elr, part.last_known_elr) == ((), (), (0, 1))
    return h


def _elect(h: Harness, etype: int, *partitions, timeout_ms=30000):
    return h.call(m.ElectLeadersRequest(etype, tuple(partitions), timeout_ms), src="admin")


def test_elect_leaders_designation_elects_the_desired_unfenced_replica():
    h = _leaderless(config={"unclean.recovery.strategy": "None"})
    h.heartbeat(2)  # unfenced
    resp = _elect(h, m.ELECTION_DESIGNATION, m.ElectLeadersPartition("t", 0, 1))
    assert resp.results[0].error_code == Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE  # 1 is fenced
    resp = _elect(h, m.ELECTION_DESIGNATION, m.ElectLeadersPartition("t", 0, 2))
    assert resp.results[0].error_code == Errors.NONE
    part = h.ctl.image.partitions[("t", 0)]
    assert (part.leader, part.isr, part.leader_recovery_state, part.last_known_elr) == (2, (2,), RECOVERING, ())
    resp = _elect(h, m.ELECTION_DESIGNATION, m.ElectLeadersPartition("t", 0, 2))
    assert resp.results[0].error_code == Errors.ELECTION_NOT_NEEDED


def test_elect_leaders_longest_log_waits_for_the_recovery_then_answers():
    """LONGEST_LOG_AGGRESSIVE starts a recovery; the answer waits for its election (or the request's
    timeout: REQUEST_TIMED_OUT, the recovery goes on), which comes once unclean.recovery.timeout.ms (5 s
    here) has passed with broker 2's answer only."""
    h = _leaderless(config={"unclean.recovery.strategy": "None", "unclean.recovery.timeout.ms": "5000"})
    h.heartbeat(2)
    h._corr += 1
    h.ctl.deliver(h.now, m.Envelope("admin", "controller", h._corr, m.ElectLeadersRequest(
        m.ELECTION_LONGEST_LOG_AGGRESSIVE, (m.ElectLeadersPartition("t", 0),), 1000)))
    out = h.ctl.poll()
    asks = [e for e in out if type(e.message) is m.GetReplicaLogInfoRequest]
    assert sorted(e.dst for e in asks) == [0, 1, 2] and not [e for e in out if e.dst == "admin"]
    h.ctl.tick(h.now + 1000)
    answer = [e for e in h.ctl.poll() if e.dst == "admin"]
    assert answer[0].message.results[0].error_code == Errors.REQUEST_TIMED_OUT
    assert ("t", 0) in h.ctl.urm.tasks
    env = next(e for e in asks if e.dst == 2)
    tid = h.ctl.image.topics["t"].topic_id
    h.ctl.deliver(h.now + 1001, m.Envelope(2, "controller", env.correlation_id, m.GetReplicaLogInfoResponse(
        h.epoch[2], (m.PartitionLogInfo(tid, 0, 0, 1, 7),)), True))
    h.ctl.tick(h.now + 4999)
    assert h.ctl.image.partitions[("t", 0)].leader == NO_LEADER
    assert h.ctl.next_deadline() == h.now + 5000
    h.ctl.tick(h.now + 5000)
    assert h.ctl.image.partitions[("t", 0)].leader == 2


def test_elect_leaders_beyond_the_partition_limit_is_request_limit_reached():
    h = _leaderless(config={"max.request.partition.size.limit": "1"})
    resp = _elect(h, m.ELECTION_PREFERRED, m.ElectLeadersPartition("t", 0), m.ElectLeadersPartition("t", 1))
    assert [r.error_code for r in resp.results] == [Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                                                     Errors.REQUEST_LIMIT_REACHED]
    # REQUEST_LIMIT_REACHED (KIP-966, no Kafka number) crosses the wire in ElectLeaders v3
    assert wire.roundtrip(resp, as_response_to=m.ElectLeadersRequest, version=3) == resp



@pytest.mark.parametrize("version, second", [(0, Errors.UNKNOWN_TOPIC_OR_PARTITION),
                                             (1, Errors.UNKNOWN_TOPIC_OR_PARTITION),
                                             (2, Errors.UNKNOWN_TOPIC_OR_PARTITION),
                                             (3, Errors.REQUEST_LIMIT_REACHED)])
def test_the_elect_leaders_partition_limit_applies_to_v3_over_the_wire_and_not_to_v0_to_v2(version, second):
    """Issue 39 rule 6 (KIP-966: ``max.request.partition.size.limit`` bounds the partitions of an
    ElectLeaders v3 request; older versions have no such limit). The request is encoded at ``version``
    and decoded by ``wire.decode_request_frame``, then delivered as ``net/driver.py``'s ``_pump`` delivers
    it (an Envelope with the listener, client id and api_version of the frame). Limit 1, two partitions:
    at v3 the second is REQUEST_LIMIT_REACHED, at v0-v2 it is served (t-1 does not exist: UNKNOWN_TOPIC_OR_
    PARTITION). The in-process tests above deliver without a version (None, which the controller limits
    as v3).

    Shown to fail when ``env.api_version >= 3`` in ``ReplicationControlManager.handle_elect_leaders`` becomes
    ``>= 0`` (v0-v2 limited) and when the version condition is replaced by ``env.api_version is None``
    (v3 over the wire not limited)."""
    h = _leaderless(config={"max.request.partition.size.limit": "1"})
    data = wire.encode_request(m.ElectLeadersRequest(m.ELECTION_PREFERRED, (
        m.ElectLeadersPartition("t", 0), m.ElectLeadersPartition("t", 1))), 77, client_id="admin", version=version)
    api_key, api_version, corr, client_id, msg = wire.decode_request_frame(data)
    assert (api_key, api_version, corr) == (43, version, 77)
    h.ctl.deliver(h.now, m.Envelope("admin", "controller", corr, msg, False, lst.CONTROLLER, client_id, api_version))
    out = [e.message for e in h.ctl.poll() if e.dst == "admin" and e.correlation_id == corr]
    assert [r.error_code for r in out[0].results] == [Errors.PREFERRED_LEADER_NOT_AVAILABLE, second]

def test_elect_leaders_v3_types_are_invalid_below_urm_and_unclean_is_kafkas():
    h = _leaderless(Level.ELR)
    for etype in (m.ELECTION_LONGEST_LOG_BALANCED, m.ELECTION_LONGEST_LOG_AGGRESSIVE, m.ELECTION_DESIGNATION):
        resp = _elect(h, etype, m.ElectLeadersPartition("t", 0, 1))
        assert resp.results[0].error_code == Errors.INVALID_REQUEST
    assert not h.ctl.urm.tasks


def test_elect_leaders_unclean_at_urm_runs_an_aggressive_recovery():
    h = _leaderless(config={"unclean.recovery.strategy": "None"})
    h._corr += 1
    h.ctl.deliver(h.now, m.Envelope("admin", "controller", h._corr, m.ElectLeadersRequest(
        m.ELECTION_UNCLEAN, (m.ElectLeadersPartition("t", 0),))))
    task = h.ctl.urm.tasks[("t", 0)]
    assert (task.strategy, task.manual) == ("Aggressive", True)


def test_recovery_metrics_count_live_and_manual_recoveries():
    h = _leaderless(config={"unclean.recovery.strategy": "None"})
    assert h.ctl.recovery_metrics()["manual_leader_election_required_partition_count"] == 1
    h2 = _leaderless()
    h2.heartbeat(2)
    metrics = h2.ctl.recovery_metrics()
    # Balanced, LastKnownELR still fenced: pending, not started (issue 25, rule 1), but counted as a live
    # recovery (KIP-966's gauge)
    assert metrics["unclean_recovery_partitions_count"] == 1 and not h2.ctl.urm.tasks
    assert metrics["manual_leader_election_required_partition_count"] == 0


def test_a_new_incarnation_refused_registration_still_invalidates_the_old_answer():
    """A broker whose new incarnation asks to register while the old session is still valid
    (DUPLICATE_BROKER_REGISTRATION) has restarted: the answer its old process gave is dropped, so a replica
    whose disk may have been replaced is not elected on it (KIP-966 accepts that risk until the new
    registration succeeds; kraftlog does not wait for it)."""
    h = _leaderless(config={"unclean.recovery.strategy": "Aggressive"})
    h.heartbeat(2)
    task = h.ctl.urm.tasks[("t", 0)]
    corr = next(c for c, (_, dst) in sorted(h.ctl._inflight.items()) if dst == 2)  # the question to 2
    tid = h.ctl.image.topics["t"].topic_id
    h.ctl.deliver(h.now, m.Envelope(2, "controller", corr, m.GetReplicaLogInfoResponse(
        h.epoch[2], (m.PartitionLogInfo(tid, 0, 0, h.ctl.image.partitions[("t", 0)].leader_epoch, 9),)), True))
    assert set(task.answers) == {2}
    resp = h.call(m.BrokerRegistrationRequest(2, "kraftlog", uuid.UUID(int=99)), src=2)
    assert resp.error_code == Errors.DUPLICATE_BROKER_REGISTRATION
    assert task.answers == {} and task.failed == {2}


# ======================================================================= safety net (issue 39)
def test_a_recovery_is_dropped_once_its_partition_gets_a_clean_leader_and_later_answers_never_depose_it():
    """Issue 39 rule 1 (KIP-966 "Unclean Recovery": the URM works only on leaderless partitions;
    ``ReplicationControlManager.consider_recoveries`` drops a recovery once its partition has a leader). Fenced ELR
    members only, strategy Aggressive: a recovery starts and asks every replica; ELR member 1 comes back and
    is elected cleanly; broker 2 then answers (current leader epoch, a longer log), is unfenced, and
    unclean.recovery.timeout.ms (5 s here) passes. The recovery must be gone: leader 1 stays, ISR [1]
    RECOVERED, nothing unclean.

    Shown to fail when ``part.leader != NO_LEADER`` is dropped from the first loop's drop condition in
    ``consider_recoveries``: the leftover recovery deposes leader 1 with broker 2 (ISR [2], RECOVERING)."""
    h = Harness(Level.URM, {"min.insync.replicas": "2", "unclean.recovery.strategy": "Aggressive",
                            "unclean.recovery.timeout.ms": "5000"})
    h.start_brokers(0, 1, 2)
    tid = h.create_topic("t", ((0, 1, 2),))
    for b in (2, 1, 0):
        h.heartbeat(b, want_fence=True)
    assert (h.part().leader, h.part().elr) == (NO_LEADER, (0, 1))
    assert ("t", 0) in h.ctl.urm.tasks  # Aggressive: recover with fenced ELR members only
    asked = {dst: corr for corr, (_, dst) in sorted(h.ctl._inflight.items())}
    assert sorted(asked) == [0, 1, 2]
    h.heartbeat(1, now=100)  # ELR member 1 is unfenced: a clean election
    clean = h.part()
    assert (clean.leader, clean.isr, clean.leader_recovery_state) == (1, (1,), RECOVERED)
    assert ("t", 0) not in h.ctl.urm.tasks
    h.ctl.deliver(200, m.Envelope(2, "controller", asked[2], m.GetReplicaLogInfoResponse(
        h.epoch[2], (m.PartitionLogInfo(tid, 0, clean.leader_epoch, clean.leader_epoch, 500),)), True))
    h.heartbeat(2, now=300)  # unfenced: its answer would count now
    h.ctl.tick(6000)
    h.heartbeat(2, now=6000)
    part = h.part()
    assert (part.leader, part.isr, part.leader_recovery_state) == (1, (1,), RECOVERED)
    assert h.ctl.urm.finished_count == 0
