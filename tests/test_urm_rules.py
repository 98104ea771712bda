"""Issue 25: the Unclean Recovery Manager's decision rules, one by one (fast: no simulator runs).

The rules (issue 25 "What to build", from KIP-966's later revision):

1. Balanced starts when every LastKnownELR member is unfenced, or at once when LastKnownELR is empty; it
   elects when every LastKnownELR member has answered and either every assigned replica has answered or
   ``unclean.recovery.timeout.ms`` has passed; it chooses among the answers of unfenced replicas (highest
   last written epoch, then LEO, then assignment order).
2. Aggressive elects when every replica has answered, or when the timeout has passed and at least one has
   (the best of them); if none has by then, the first to answer.
3. A question outstanding is dropped and asked again at once when its broker is unfenced or registers
   again, or heartbeats after the question's timeout.
4. ``manual_leader_election_required_partition_count`` counts every partition that waits for an operator.
5. The timeout is read per recovery from the current cluster/static config.

Only answers of replicas unfenced now count (KIP-966: "Only the unfenced replicas can be counted into the
quorum"). The stories in ``scenarios/urm-*.yaml`` show the same rules end to end (tests/test_urm.py).
"""

from __future__ import annotations

import uuid

import pytest

from kraftlog.controller.unclean_recovery import (
    AGGRESSIVE,
    BALANCED,
    NONE,
    Decision,
    RecoveryTask,
    ReplicaLogInfo,
    UncleanRecoveryManager,
    choose_leader,
    ready_to_elect,
    recovery_decision,
)
from kraftlog.level import Level
from kraftlog.metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, PartitionRegistration
from kraftlog.metadata.records import NO_LEADER
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from test_controller import Harness

STRATEGIES = (NONE, BALANCED, AGGRESSIVE)


def _part(isr=(), elr=(), lke=(), replicas=(0, 1, 2)) -> PartitionRegistration:
    return PartitionRegistration(replicas=replicas, isr=isr, leader=NO_LEADER, leader_epoch=4, partition_epoch=9,
                                 elr=elr, last_known_elr=lke)


# ============================================================================ the decision order
# (ISR, ELR, LastKnownELR, unfenced brokers) -> the decision for None, Balanced, Aggressive
C, W, P, R, M = Decision.CLEAN, Decision.WAIT, Decision.PENDING, Decision.RECOVER, Decision.MANUAL
DECISIONS = [
    # an ISR member: a clean election, whatever the strategy
    ((1,), (), (), {1}, (C, C, C)),
    ((1,), (0,), (2,), {1}, (C, C, C)),
    # an unfenced ELR member: a clean election
    ((), (0, 1), (), {1}, (C, C, C)),
    ((), (0, 1), (2,), {0, 2}, (C, C, C)),
    # fenced ELR members only: Aggressive recovers, the others wait for them (LastKnownELR does not matter)
    ((), (0, 1), (), {2}, (W, W, R)),
    ((), (0,), (1,), {1, 2}, (W, W, R)),
    ((), (0, 1), (), set(), (W, W, R)),
    # no ELR member, LastKnownELR empty: Balanced recovers at once (rule 1), None waits for an operator
    ((), (), (), {0}, (M, R, R)),
    ((), (), (), set(), (M, R, R)),
    # no ELR member, every LastKnownELR member unfenced: Balanced recovers
    ((), (), (0, 1), {0, 1}, (M, R, R)),
    ((), (), (0,), {0, 2}, (M, R, R)),
    # no ELR member, a LastKnownELR member fenced: Balanced is pending until it is unfenced (rule 1)
    ((), (), (0, 1), {0, 2}, (M, P, R)),
    ((), (), (0, 1), {2}, (M, P, R)),
    ((), (), (0, 1), set(), (M, P, R)),
]


@pytest.mark.parametrize("isr, elr, lke, unfenced, expected", DECISIONS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_decision_order(strategy, isr, elr, lke, unfenced, expected):
    """KIP-966 "Unclean Recovery": an ISR member; else an unfenced ELR member; else fenced ELR members
    only: Aggressive recovers, the others wait; else no ELR member: Aggressive recovers, Balanced recovers
    once every LastKnownELR member is unfenced (at once when it is empty), None waits for an operator."""
    want = expected[STRATEGIES.index(strategy)]
    assert recovery_decision(_part(isr, elr, lke), strategy, lambda b: b in unfenced) is want


# ============================================================================ when a recovery elects
def _info(epoch: int, leo: int) -> ReplicaLogInfo:
    return ReplicaLogInfo(broker_epoch=10, last_written_leader_epoch=epoch, log_end_offset=leo, current_leader_epoch=4)


#: the logs the replicas answer with: 1 is the best (epoch 1, LEO 9), then 0 (epoch 1, LEO 5), then 2
#: (a longer log at an older epoch)
LOGS = {0: _info(1, 5), 1: _info(1, 9), 2: _info(0, 50)}
ALL = {0, 1, 2}
# (LastKnownELR, replicas that answered, replicas unfenced) -> leader elected (not timed out, timed out)
BALANCED_CASES = [
    # LastKnownELR empty: every replica, or the timeout with at least one answer (then the first answer)
    ((), set(), ALL, (NO_LEADER, NO_LEADER)),
    ((), {2}, ALL, (NO_LEADER, 2)),
    ((), {0, 2}, ALL, (NO_LEADER, 0)),
    ((), ALL, ALL, (1, 1)),
    ((), ALL, {0, 2}, (NO_LEADER, 0)),  # 1's answer does not count while it is fenced
    ((), {1}, {0, 2}, (NO_LEADER, NO_LEADER)),
    # LastKnownELR [0]: 0 must have answered; the others, or the timeout
    ((0,), {0}, ALL, (NO_LEADER, 0)),
    ((0,), {0, 2}, ALL, (NO_LEADER, 0)),
    ((0,), {1, 2}, ALL, (NO_LEADER, NO_LEADER)),  # the LastKnownELR member has not answered
    ((0,), ALL, ALL, (1, 1)),  # a replica outside LastKnownELR with a longer log wins (rule 1)
    ((0,), ALL, {1, 2}, (NO_LEADER, NO_LEADER)),  # the LastKnownELR member is fenced again
    # LastKnownELR [0, 1]
    ((0, 1), {0, 1}, ALL, (NO_LEADER, 1)),
    ((0, 1), {0}, ALL, (NO_LEADER, NO_LEADER)),
    ((0, 1), {0, 1}, {0, 2}, (NO_LEADER, NO_LEADER)),
    ((0, 1), ALL, ALL, (1, 1)),
]
AGGRESSIVE_CASES = [
    # LastKnownELR plays no part: every replica, or the timeout with at least one answer
    ((), set(), ALL, (NO_LEADER, NO_LEADER)),
    ((), {2}, ALL, (NO_LEADER, 2)),
    ((0, 1), {2}, ALL, (NO_LEADER, 2)),
    ((), {0, 2}, ALL, (NO_LEADER, 0)),
    ((), ALL, ALL, (1, 1)),
    ((0, 1), ALL, ALL, (1, 1)),
    ((), ALL, {0, 2}, (NO_LEADER, 0)),  # a fenced replica's answer does not count
    ((), {2}, {0, 1}, (NO_LEADER, NO_LEADER)),  # the only answer is from a fenced replica
]


def _elect(strategy, lke, answered, unfenced, now_ms) -> int:
    part = _part(lke=lke)
    task = RecoveryTask(("t", 0), strategy, False, started_ms=1000, timeout_ms=30_000,
                        answers={r: LOGS[r] for r in answered})
    return UncleanRecoveryManager().ready_leader(now_ms, task, part, lambda b: b in unfenced)


@pytest.mark.parametrize("strategy, lke, answered, unfenced, expected",
                         [(BALANCED, *c) for c in BALANCED_CASES] + [(AGGRESSIVE, *c) for c in AGGRESSIVE_CASES])
def test_when_a_recovery_elects_and_whom(strategy, lke, answered, unfenced, expected):
    """Rules 1 and 2 for each strategy, LastKnownELR, set of answers and fencing, before the timeout (31 s
    after a start at 1 s, with a 30 s timeout) and at it; the leader is the best unfenced answer."""
    before, at_timeout = expected
    assert _elect(strategy, lke, answered, unfenced, 30_999) == before
    assert _elect(strategy, lke, answered, unfenced, 31_000) == at_timeout


@pytest.mark.parametrize("strategy", [BALANCED, AGGRESSIVE])
def test_ready_to_elect_is_the_rule_ready_leader_applies(strategy):
    """``ready_to_elect`` is the rule alone: Balanced needs LastKnownELR on top of Aggressive's condition."""
    part = _part(lke=(0,))
    assert ready_to_elect(strategy, part, lambda r: True, timed_out=False)
    assert not ready_to_elect(strategy, part, lambda r: r == 0, timed_out=False)
    assert ready_to_elect(strategy, part, lambda r: r == 0, timed_out=True)
    assert ready_to_elect(strategy, part, lambda r: r == 2, timed_out=True) is (strategy == AGGRESSIVE)
    assert not ready_to_elect(strategy, part, lambda r: False, timed_out=True)


def test_after_the_timeout_the_first_answer_elects_and_no_deadline_is_left():
    """Rule 2 (and rule 1 with LastKnownELR empty): when nobody answered within the timeout, the first
    replica to answer is elected; once the timeout has passed the task asks for no more timer."""
    part = _part()
    for strategy in (AGGRESSIVE, BALANCED):
        urm = UncleanRecoveryManager()
        task = urm.start(0, ("t", 0), part, strategy, 5000)
        assert urm.next_deadline() == 0  # the questions are due at once
        urm.requests_due(0)
        assert urm.next_deadline() == 5000  # the timeout
        assert urm.ready_leader(5000, task, part, lambda b: True) == NO_LEADER and task.timed_out
        assert urm.next_deadline() is None
        task.answers[2] = LOGS[2]
        assert urm.ready_leader(70_000, task, part, lambda b: True) == 2
        urm.elected(70_000, task, 2)
        assert not urm.tasks and urm.finished_count == 1


def test_choice_highest_last_written_epoch_then_longest_log_then_assignment_order():
    """Rule 1's choice (KIP-966 "Unclean Recovery Manager"), fenced replicas never chosen."""
    part = _part()
    answers = {0: _info(3, 500), 1: _info(5, 10), 2: _info(5, 40)}
    assert choose_leader(part, answers, lambda b: True) == 2  # epoch 5 beats a longer log at epoch 3
    answers[2] = _info(5, 10)
    assert choose_leader(part, answers, lambda b: True) == 1  # a tie goes to assignment order
    assert choose_leader(_part(replicas=(2, 1, 0)), answers, lambda b: True) == 2
    assert choose_leader(part, answers, lambda b: b != 1) == 2
    assert choose_leader(part, answers, lambda b: False) == NO_LEADER
    assert choose_leader(part, {}, lambda b: True) == NO_LEADER


def test_each_recovery_keeps_the_timeout_it_started_with():
    """Rule 5 in the manager: the timeout is the task's, given at its start; an operator taking a recovery
    over keeps its start, timeout and answers."""
    urm = UncleanRecoveryManager()
    part = _part()
    a = urm.start(0, ("t", 0), part, BALANCED, 1000)
    b = urm.start(500, ("t", 1), part, AGGRESSIVE, 60_000)
    assert (a.deadline_ms, b.deadline_ms) == (1000, 60_500)
    a.answers[0] = LOGS[0]
    taken = urm.start(700, ("t", 0), part, AGGRESSIVE, 99_999, manual=True)
    assert taken is a and (a.strategy, a.manual, a.deadline_ms, set(a.answers)) == (AGGRESSIVE, True, 1000, {0})


# ============================================================================ rule 3: asking again
def test_reask_drops_the_outstanding_question_and_queues_it_at_once():
    urm = UncleanRecoveryManager()
    part = _part()
    task = urm.start(0, ("t", 0), part, AGGRESSIVE, 5000)
    for broker, keys in urm.requests_due(0):
        urm.sent(broker, keys, 0, 5000, 100 + broker)
    task.answers[0] = LOGS[0]
    urm.not_before[1] = 10_000  # a backoff does not delay a question asked again
    assert not urm.question_overdue(4999, 1) and urm.question_overdue(5000, 1)
    assert urm.reask(10, 1, "is unfenced") == 101
    assert urm.reask(10, 1, "is unfenced") is None  # nothing outstanding any more
    assert urm.requests_due(10) == [(1, (("t", 0),))]
    assert [e.kind for e in urm.take_events()][-1] == "reasked"
    # an answered partition is not asked again
    assert urm.reask(10, 0, "is unfenced") == 100 and urm.requests_due(10) == []


def _leaderless(config=None) -> Harness:
    """t-0 on [0, 1, 2], min ISR 2: every broker fenced in turn (ISR [], ELR [0, 1]), then each registers
    again after an unclean shutdown: ISR [], ELR [], LastKnownELR [0, 1], all three fenced."""
    h = Harness(Level.URM, {"min.insync.replicas": "2", **(config or {})})
    h.start_brokers(0, 1, 2)
    h.create_topic("t", [(0, 1, 2)])
    for b in (2, 1, 0):
        h.heartbeat(b, want_fence=True)
    for b in (0, 1, 2):
        h.incarnation[b] = uuid.UUID(int=2000 + b)
        assert h.register(b).error_code == Errors.NONE
    part = h.part()
    assert (part.leader, part.isr, part.elr, part.last_known_elr) == (NO_LEADER, (), (), (0, 1))
    return h


def _recording(h: Harness) -> Harness:
    """Keep the GetReplicaLogInfo requests the controller sends (``Harness.call`` drops what is not its
    answer) in ``h.questions``."""
    h.questions = []
    poll = h.ctl.poll

    def recording_poll():
        out = poll()
        h.questions += [e for e in out if type(e.message) is m.GetReplicaLogInfoRequest]
        return out

    h.ctl.poll = recording_poll
    return h


def _questions(h: Harness) -> dict[int, int]:
    """broker -> correlation id of the GetReplicaLogInfo requests the controller sent since the last call."""
    h.ctl.poll()
    out = {e.dst: e.correlation_id for e in h.questions}
    h.questions = []
    return out


def _answer(h: Harness, broker: int, corr: int, leo: int) -> None:
    tid = h.ctl.image.topics["t"].topic_id
    h.ctl.deliver(h.now, m.Envelope(broker, "controller", corr, m.GetReplicaLogInfoResponse(
        h.epoch[broker], (m.PartitionLogInfo(tid, 0, 0, h.part().leader_epoch, leo),)), True))


def _outstanding(h: Harness) -> dict[int, int]:
    """broker -> correlation id of its GetReplicaLogInfo in flight."""
    return {b: q.correlation_id for b, q in sorted(h.ctl.urm.inflight.items())}


def test_a_question_outstanding_is_asked_again_when_its_broker_is_unfenced():
    """Rule 3 (KIP-966: "when a replica gets unfenced, URM should check if it can be elected"). Aggressive
    started when only fenced ELR members were left and asks every replica, fenced ones included; the
    questions are lost (never answered). When broker 0 is unfenced it is asked again at once, and an
    answer to the dropped question is not read."""
    h = _recording(_leaderless({"unclean.recovery.strategy": "Aggressive"}))
    task = h.ctl.urm.tasks[("t", 0)]
    first = _outstanding(h)
    assert sorted(first) == [0, 1, 2]
    h.heartbeat(1, offset=0)  # not caught up: still fenced, nothing asked again
    assert _questions(h) == {} and _outstanding(h) == first
    h.heartbeat(0)  # unfenced
    again = _questions(h)
    assert list(again) == [0] and again[0] != first[0] and _outstanding(h)[0] == again[0]
    assert [e.detail for e in h.ctl.urm.take_events() if e.kind == "reasked"][-1] == (
        "broker 0 is unfenced: its question is dropped and asked again")
    _answer(h, 0, first[0], 99)  # the dropped question's answer: never read
    assert 0 not in task.answers
    _answer(h, 0, again[0], 7)
    assert task.answers[0].log_end_offset == 7


def test_a_question_outstanding_is_asked_again_when_its_broker_registers_again():
    h = _recording(_leaderless({"unclean.recovery.strategy": "Aggressive"}))
    first = _outstanding(h)
    h.incarnation[1] = uuid.UUID(int=3001)  # broker 1 restarts (fenced, so its session is over)
    assert h.register(1).error_code == Errors.NONE
    again = _questions(h)
    assert list(again) == [1] and again[1] != first[1]
    assert first[1] not in h.ctl._inflight and again[1] in h.ctl._inflight


def test_a_question_outstanding_past_its_timeout_is_asked_again_on_a_heartbeat():
    """Rule 3's last case (KIP-966: "the controller will trigger the recovery again when handling
    heartbeats"): a heartbeat from unfenced broker 2 after its question's timeout asks again at once."""
    h = _recording(_leaderless({"unclean.recovery.strategy": "Aggressive", "unclean.recovery.timeout.ms": "5000"}))
    h.heartbeat(2)  # unfenced: asked again (sent at 0)
    first = _questions(h)
    assert list(first) == [2]
    h.heartbeat(2, now=4999)
    assert _questions(h) == {}
    h.heartbeat(2, now=5000)  # no tick in between: the request has not been timed out yet
    again = _questions(h)
    assert list(again) == [2] and again[2] != first[2]


# ============================================================================ rule 5: the timeout's config
def _alter(h: Harness, resource_type: int, name: str, **configs) -> None:
    resp = h.call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(resource_type, name, tuple(
        m.AlterableConfig(k.replace("_", "."), m.OP_SET, v) for k, v in configs.items())),)), src="admin")
    assert resp.responses[0].error_code == Errors.NONE


def test_the_timeout_is_read_when_each_recovery_starts():
    """Rule 5: the static unclean.recovery.timeout.ms (here 60 s) until a cluster-level dynamic value
    (2 s) is set; a recovery started before the change keeps its timeout, one started after takes the new
    one, and so do the GetReplicaLogInfo requests sent after it."""
    h = _leaderless({"unclean.recovery.timeout.ms": "60000"})
    for b in (0, 1, 2):
        h.heartbeat(b)  # every LastKnownELR member unfenced: Balanced starts
    before = h.ctl.urm.tasks[("t", 0)]
    assert (before.strategy, before.timeout_ms) == (BALANCED, 60_000)
    _alter(h, RESOURCE_BROKER, "", unclean_recovery_timeout_ms="2000")
    h.heartbeat(2)
    assert h.ctl.urm.tasks[("t", 0)].timeout_ms == 60_000  # still the same recovery
    _alter(h, RESOURCE_TOPIC, "t", unclean_recovery_strategy="Aggressive")  # the recovery starts again
    h.heartbeat(2)
    after = h.ctl.urm.tasks[("t", 0)]
    assert after is not before and (after.strategy, after.timeout_ms) == (AGGRESSIVE, 2000)
    assert h.ctl.urm.next_deadline() == h.now + 2000
    assert h.ctl.urm.inflight[1].timeout_ms == 60_000  # sent before the change
    h.incarnation[1] = uuid.UUID(int=3001)
    h.heartbeat(1, want_fence=True)
    assert h.register(1).error_code == Errors.NONE  # asked again (rule 3): a request sent after the change
    assert h.ctl.urm.inflight[1].timeout_ms == 2000


# ============================================================================ rule 4: the gauges
@pytest.mark.parametrize("strategy, unfence, manual, recovering", [
    ("None", (2,), 1, 0),  # None with no ELR member: only an operator can elect
    ("Balanced", (2,), 0, 1),  # pending until 0 and 1 are unfenced: a live recovery (KIP-966)
    ("Balanced", (0, 1, 2), 0, 1),  # running
    ("Aggressive", (2,), 0, 1),
])
def test_the_gauges_count_partitions_waiting_for_an_operator_and_recoveries(strategy, unfence, manual, recovering):
    h = _leaderless({"unclean.recovery.strategy": strategy})
    for b in unfence:
        h.heartbeat(b)
    metrics = h.ctl.recovery_metrics()
    assert metrics["manual_leader_election_required_partition_count"] == manual
    assert metrics["unclean_recovery_partitions_count"] == recovering


def test_fenced_elr_members_are_waited_for_not_an_operator():
    """None (and Balanced) with fenced ELR members waits for them to be unfenced (KIP-966's decision
    order, step 3.2): they elect cleanly when they come back, so the partition is not counted as waiting
    for an operator, nor as a recovery."""
    for strategy in ("None", "Balanced"):
        h = Harness(Level.URM, {"min.insync.replicas": "2", "unclean.recovery.strategy": strategy})
        h.start_brokers(0, 1, 2)
        h.create_topic("t", [(0, 1, 2)])
        for b in (2, 1, 0):
            h.heartbeat(b, want_fence=True)
        h.heartbeat(2, want_fence=False)
        assert (h.part().leader, h.part().elr) == (NO_LEADER, (0, 1))
        metrics = h.ctl.recovery_metrics()
        assert (metrics["manual_leader_election_required_partition_count"],
                metrics["unclean_recovery_partitions_count"]) == (0, 0)


def test_an_operators_recovery_is_no_longer_waiting_for_an_operator():
    """Strategy None: counted until an operator's LONGEST_LOG_BALANCED starts a recovery, then counted as
    a recovery instead."""
    h = _leaderless({"unclean.recovery.strategy": "None"})
    h.heartbeat(2)
    assert h.ctl.recovery_metrics()["manual_leader_election_required_partition_count"] == 1
    h._corr += 1
    h.ctl.deliver(h.now, m.Envelope("admin", "controller", h._corr, m.ElectLeadersRequest(
        m.ELECTION_LONGEST_LOG_BALANCED, (m.ElectLeadersPartition("t", 0),), 1000)))
    metrics = h.ctl.recovery_metrics()
    assert (metrics["manual_leader_election_required_partition_count"],
            metrics["unclean_recovery_partitions_count"]) == (0, 1)
