"""The TLA+ invariants of KIP-966 replication, checked while a run goes (issue 9), and a run in which a
consumer sees the HWM move backwards (``hwm_regressions``).

Source of the invariants: Vanlightly/kafka-tlaplus, ``kafka_data_replication/kraft/v_elr/v_elr_properties.tla``
(ControllerIsrHasUpToTrueHWM, ValidControllerIsrAndElr, ValidLeaderMaximalISR,
LeaderHasCompleteCommittedLog, NoMetadataLogDivergence). Each checker is shown to fire on a hand-written
state and to stay quiet on the safe one; then the KIP stories show the runner catching the unsafe state
*when it appears* — before the election that loses the records — at the level that loses them, and
staying quiet at the level whose KIP fixed the story; a mutation of the core (a rule broken on purpose)
trips the invariant that guards it. (``leader_hwm_regressions``: tests/test_hwm_regressions.py and
tests/test_cli.py.)
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from conftest import LIBRARY
from kraftlog.check import invariants
from kraftlog.level import DEFAULT, Level
from kraftlog.scenario import parse_scenario
from kraftlog.sim.runner import ScenarioRun, run_scenario

#: The invariant names of the TLA+ specification (the first word after ``t=<ms>ms`` in a message).
TLA_NAMES = {invariants.CONTROLLER_ISR_HAS_UP_TO_TRUE_HWM, invariants.VALID_CONTROLLER_ISR_AND_ELR,
             invariants.VALID_LEADER_MAXIMAL_ISR, invariants.LEADER_HAS_COMPLETE_COMMITTED_LOG,
             invariants.NO_METADATA_LOG_DIVERGENCE}
_VIOLATION = re.compile(r"^t=(-?\d+)ms (\S+) (broker \d+|\S+): (.*) \[(.+)\]$")
_ELECTION = re.compile(r"^\s*(-?\d+)ms  (\S+-\d+): leader -> (\d+) \(epoch (\d+)\)(.*)$")


def _violations(verdict: dict) -> list[tuple[int, str, str, str, str]]:
    """(time ms, invariant name, partition or broker, text, step) of each TLA+ invariant violation."""
    out = []
    for message in verdict["invariant_violations"]:
        m = _VIOLATION.match(message)
        assert m, f"violation message not in the `t=...ms name partition: ... [step]` form: {message}"
        t, name, where, text, step = m.groups()
        if name in TLA_NAMES:
            out.append((int(t), name, where, text, step))
    return out


def _elections(timeline: list[str]) -> list[tuple[int, str, int, int, str]]:
    """(time ms, partition, leader, leader epoch, rest of the line) of each election in the timeline."""
    out = []
    for line in timeline:
        m = _ELECTION.match(line)
        if m:
            t, part, leader, epoch, rest = m.groups()
            out.append((int(t), part, int(leader), int(epoch), rest))
    return out


def _run(library, name: str, level: str):
    """The session's run of ``scenarios/<name>.yaml`` at ``level`` (conftest's ``library``)."""
    return library.run(name, level=Level.parse(level))


# ------------------------------------------------------------------------------------ the checkers
def test_controller_isr_has_up_to_true_hwm_fires_for_a_running_member_below_the_true_hwm():
    """ControllerIsrHasUpToTrueHWM: a running ISR member with LEO 0 under a true HWM of 20 breaks it;
    the same member not running (down, or restarted and not registered) does not; nothing is
    checked before anything is committed (true HWM 0)."""
    found = invariants.isr_elr_completeness("t-0", (0, 1), (), {0: 0, 1: 20}, 20, 1234)
    assert [k for k, _ in found] == ["ControllerIsrHasUpToTrueHWM t-0 0"]
    assert found[0][1].startswith("t=1234ms ControllerIsrHasUpToTrueHWM t-0: running ISR member 0 has LEO 0 "
                                  "below the true HWM 20")
    assert invariants.isr_elr_completeness("t-0", (0, 1), (), {1: 20}, 20, 0) == []  # 0 not running
    assert invariants.isr_elr_completeness("t-0", (0, 1), (), {0: 0, 1: 0}, 0, 0) == []


def test_elr_part_of_valid_controller_isr_and_elr_fires_for_an_elr_member_below_the_true_hwm():
    """ValidControllerIsrAndElr (its ELR clause): an electable ELR member must hold every committed record."""
    found = invariants.isr_elr_completeness("t-0", (0,), (1, 2), {0: 30, 1: 30, 2: 29}, 30, 5)
    assert [k for k, _ in found] == ["ValidControllerIsrAndElr t-0 2"]
    assert "running ELR member 2 has LEO 29 below the true HWM 30" in found[0][1]


def test_valid_leader_maximal_isr_both_clauses():
    """ValidLeaderMaximalISR: (1) no AlterPartition in flight ⇒ maximal ISR = ISR; (2) leader ISR >= min
    ISR ⇒ maximal ISR ⊇ controller ISR ∪ ELR. Below min ISR the second clause does not apply."""
    ok = invariants.leader_maximal_isr("t-0", 0, (0, 1), {0, 1, 2}, True, (0, 1, 2), (), 2, 0)
    assert ok == []  # pending expand: the maximal ISR holds the new member
    missing = invariants.leader_maximal_isr("t-0", 0, (0, 1), {0, 1}, True, (0, 1, 2), (), 2, 7)
    assert [k for k, _ in missing] == ["ValidLeaderMaximalISR t-0 0 superset"]
    assert "lacks [2] of the controller's ISR [0, 1, 2]" in missing[0][1]
    elr = invariants.leader_maximal_isr("t-0", 0, (0, 1), {0, 1}, False, (0, 1), (2,), 2, 7)
    assert [k for k, _ in elr] == ["ValidLeaderMaximalISR t-0 0 superset"]
    unequal = invariants.leader_maximal_isr("t-0", 0, (0, 1), {0, 1, 2}, False, (0, 1), (), 2, 7)
    assert [k for k, _ in unequal] == ["ValidLeaderMaximalISR t-0 0 equal"]
    below = invariants.leader_maximal_isr("t-0", 0, (0,), {0}, False, (0,), (1, 2), 2, 7)
    assert below == []  # ISR [0] < min ISR 2: the HWM does not advance, no superset needed


def test_leader_has_complete_committed_log_compares_each_acked_record_at_its_offset():
    """LeaderHasCompleteCommittedLog: a record acknowledged at offset 1 that the leader holds elsewhere,
    or not at all, is missing; the scan resumes where the previous one ended."""
    log = {0: b"a", 1: b"x", 2: b"c"}
    record_at = lambda o: (SimpleNamespace(value=log[o]), 1) if o in log else None  # noqa: E731
    acked = [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]
    n, missing = invariants.missing_acked(acked, 0, record_at)
    assert n == 4 and missing == [(1, b"b"), (3, b"d")]
    assert invariants.missing_acked(acked, 2, record_at) == (4, [(3, b"d")])
    found = invariants.leader_complete_log("t-0", 2, 5, missing, 4, 99)
    assert found == [("LeaderHasCompleteCommittedLog t-0 5",
                      "t=99ms LeaderHasCompleteCommittedLog t-0: leader 2 (epoch 5) lacks 2 of 4 acknowledged "
                      "records, the first 'b' at offset 1")]
    assert invariants.leader_complete_log("t-0", 2, 5, [], 4, 99) == []


def test_no_metadata_log_divergence_compares_by_identity_then_value():
    """NoMetadataLogDivergence: equal records (a --wire copy) agree; a different record at an offset both
    logs hold is a divergence; offsets only one side holds are not compared."""
    a, b, c = ("rec", 0), ("rec", 1), ("rec", 2)
    controller = [a, b, c]
    assert invariants.metadata_log_divergence(1, [a, ("rec", 1)], controller, 0, 0) == []
    assert invariants.metadata_log_divergence(1, [a, b, c, ("extra", 3)], controller, 0, 0) == []
    found = invariants.metadata_log_divergence(1, [a, ("other", 1)], controller, 0, 42)
    assert [k for k, _ in found] == ["NoMetadataLogDivergence broker 1"]
    assert found[0][1].startswith("t=42ms NoMetadataLogDivergence broker 1: metadata offset 1 holds")
    assert invariants.metadata_log_divergence(1, [a, ("other", 1)], controller, 2, 42) == []


# ------------------------------------------------------------------------------ the KIP stories
def test_kip903_stale_alter_partition_trips_isr_invariant_before_the_losing_election(library):
    """KAFKA-14617 at classic: the stale AlterPartition puts broker 1 — back with an empty disk — into
    the ISR. ControllerIsrHasUpToTrueHWM fires at that commit, right after the release step, long
    before broker 1 is elected and the 20 records are lost (LeaderHasCompleteCommittedLog at the election)."""
    r = _run(library, "kafka-14617-stale-alter-partition", "classic")
    assert r.verdict["lost_acked"] == 20
    found = _violations(r.verdict)
    isr = [v for v in found if v[1] == "ControllerIsrHasUpToTrueHWM" and "member 1 " in v[3]]
    lead = [v for v in found if v[1] == "LeaderHasCompleteCommittedLog"]
    assert isr and lead
    assert isr[0][4] == "after step 12 (release)"
    (election,) = [e for e in _elections(r.timeline) if e[2] == 1]
    assert isr[0][0] < election[0]
    assert lead[0][0] == election[0] and f"leader 1 (epoch {election[3]})" in lead[0][3]
    # The violation is in the timeline at the moment it was found, before the election line.
    first = next(i for i, line in enumerate(r.timeline) if "invariant violated: ControllerIsrHasUpToTrueHWM" in line)
    assert first < next(i for i, line in enumerate(r.timeline) if _ELECTION.match(line) and "leader -> 1" in line)


@pytest.mark.parametrize("level", ["kip903", "elr"])
def test_kip903_stale_alter_partition_is_safe_from_kip903(library, level):
    """From kip903 on the stale request is refused (INELIGIBLE_REPLICA): no TLA+ invariant fires."""
    r = _run(library, "kafka-14617-stale-alter-partition", level)
    assert r.verdict["lost_acked"] == 0
    assert _violations(r.verdict) == []


@pytest.mark.parametrize("story", ["last-replica-standing", "last-isr-member-loses-page-cache"])
def test_kip966_stories_trip_isr_invariant_before_the_losing_election_at_classic(library, story):
    """KIP-966's stories at classic: broker 0, the last ISR member, returns with an empty log and stays
    in the ISR. ControllerIsrHasUpToTrueHWM fires once it runs again (registered), before the controller
    elects it and the records are lost; LeaderHasCompleteCommittedLog fires at that election."""
    r = _run(library, story, "classic")
    assert r.verdict["lost_acked"] == 20
    found = _violations(r.verdict)
    first_isr = next(v for v in found if v[1] == "ControllerIsrHasUpToTrueHWM")
    assert first_isr[2] == "t-0" and "running ISR member 0 has LEO 0 below the true HWM 20" in first_isr[3]
    lead = next(v for v in found if v[1] == "LeaderHasCompleteCommittedLog")
    losing = [e for e in _elections(r.timeline) if e[2] == 0 and e[0] == lead[0]]
    assert losing, "LeaderHasCompleteCommittedLog fires at the election of the empty broker 0"
    assert first_isr[0] < losing[0][0]
    assert first_isr[4].startswith(("in step", "after step"))


def test_last_replica_standing_is_safe_at_elr(library):
    """At elr broker 1 stays in the ELR with every record and is elected: no TLA+ invariant fires."""
    r = _run(library, "last-replica-standing", "elr")
    assert r.verdict["lost_acked"] == 0
    assert _violations(r.verdict) == []


def test_last_isr_member_loses_page_cache_at_elr_is_safe_until_the_unclean_election(library):
    """At elr both replicas that hold the records restart without a clean-shutdown file, so KIP-966 part 1
    keeps neither in the ISR or ELR (LastKnownELR). Nothing unsafe happens until the controller elects the
    last known leader, empty, as a RECOVERING (unclean) leader: the invariants fire at that election and
    not before (the story loses its records at elr; Unclean Recovery, level urm, is KIP-966's answer)."""
    r = _run(library, "last-isr-member-loses-page-cache", "elr")
    assert r.verdict["lost_acked"] == 20
    found = _violations(r.verdict)
    unclean = [e for e in _elections(r.timeline) if "RECOVERING" in e[4]]
    assert unclean, "the loss at elr comes from an unclean election"
    assert found and min(v[0] for v in found) == unclean[0][0]
    assert {v[1] for v in found if v[0] == unclean[0][0]} >= {"LeaderHasCompleteCommittedLog"}


# --------------------------------------------------------------------------- the scenario library
@pytest.mark.parametrize("name", LIBRARY)
def test_every_library_loss_is_flagged_by_a_tla_invariant_when_it_happens(library, name):
    """At each file's level (`kraftlog scenario library scenarios`): a story that loses acknowledged
    records trips LeaderHasCompleteCommittedLog at the election of the leader that lacks them (the loss);
    a story that loses nothing trips none (tests/test_cli.py checks that its invariant_violations are
    empty and that leader_hwm_regressions is 0 for every file)."""
    r = library[name]
    found = _violations(r.verdict)
    if r.verdict["lost_acked"] == 0 and r.verdict["committed_offset_regressions"]:
        # a consumer group's commit rolled back (issue 32): the unclean election of its __consumer_offsets
        # partition is flagged, as any partition's
        assert any(v[1] == "ControllerIsrHasUpToTrueHWM" and "__consumer_offsets" in v[2] for v in found), found
        return
    if r.verdict["lost_acked"] == 0:
        assert found == []
        return
    lead = [v for v in found if v[1] == invariants.LEADER_HAS_COMPLETE_COMMITTED_LOG]
    assert lead, f"{name} loses {r.verdict['lost_acked']} records but no leader was found incomplete"
    assert any(e[0] == lead[0][0] for e in _elections(r.timeline)), "flagged at the election that loses them"


# ------------------------------------------------------------------------ HWM regressions in runs
LAGGING_HWM = """
name: consumer-sees-lagging-hwm
description: >
  Leader 0 crashes under an acks=all load. Followers learn the HWM one fetch late, so broker 1, elected
  next, starts with a HWM below what the consumer last saw from 0; brokers 1 and 2 cannot reach each
  other, so 1's HWM stays there until the links heal. The consumer, fetching from 1, sees the HWM move
  backwards (Kafka answers consumer Fetch with the lagging HWM; KIP-207 applies to ListOffsets only).
seed: 5
cluster:
  brokers: 3
  config: {min.insync.replicas: 1, replica.socket.timeout.ms: 3000}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
clients:
  - {id: p1, producer: t, acks: all, interval: 100ms}
  - {id: c1, consumer: t, reset: earliest}
steps:
  - {at: 5s, cut: {from: 1, to: 2}}
  - {cut: {from: 2, to: 1}}
  - {crash: {broker: 0, lose: none}}
  - {wait_until: {partition: t-0, leader: 1, timeout: 30s}}
  - {run_for: 10s}
  - {heal: {}}
until: 40s
"""


def test_consumer_sees_a_lagging_hwm_after_a_leader_change():
    """hwm_regressions counts what the consumer saw: after leader 0 fails, leader 1's lagging HWM is
    below the one 0 reported; leader_hwm_regressions stays 0 (no leader's own HWM went back) and
    nothing acknowledged is lost."""
    run = ScenarioRun(parse_scenario(LAGGING_HWM), level=DEFAULT)
    r = run.run()
    v = r.verdict
    assert v["hwm_regressions"] >= 1
    assert v["leader_hwm_regressions"] == 0
    assert v["lost_acked"] == 0 and v["invariant_violations"] == []
    (election,) = [e for e in _elections(r.timeline) if e[2] == 1 and not e[1].startswith("__consumer_offsets")]
    seen, first_drop = -1, None
    for at, _topic, _part, hwm in run.consumers[0].hwms:
        if hwm < seen and first_drop is None:
            first_drop = at - run.t0
        seen = max(seen, hwm)
    assert first_drop is not None and first_drop >= election[0]


FOLLOWER_LAG = """
name: expand-while-at-min-isr
cluster:
  brokers: 3
  config: {min.insync.replicas: 2, replica.lag.time.max.ms: 10000, replica.socket.timeout.ms: 5000}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
clients:
  - {id: p1, producer: t, acks: all, interval: 100ms}
steps:
  - {at: 2s, cut: {from: 2, to: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1], timeout: 30s}}
  - {after: 3s, heal: {}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 30s}}
until: 40s
"""


def test_valid_leader_maximal_isr_catches_a_broken_pending_expand(monkeypatch):
    """Mutation of KIP-497: a leader that proposes adding broker 2 but leaves it out of its maximal ISR
    (the HWM may then pass records 2 lacks) breaks ValidLeaderMaximalISR when the controller commits
    ISR [0, 1, 2] while the leader's ISR [0, 1] is at min ISR 2. Unbroken, the same run is clean."""
    scenario = parse_scenario(FOLLOWER_LAG)
    clean = run_scenario(scenario)
    assert clean.verdict["invariant_violations"] == []

    from kraftlog.broker.partition import Partition

    original = Partition.propose

    def buggy(self, new_isr, *args, **kwargs):
        pending = original(self, new_isr, *args, **kwargs)
        self.maximal_isr = frozenset(self.isr)  # the new member left out of the maximal ISR
        return pending

    monkeypatch.setattr(Partition, "propose", buggy)
    r = run_scenario(scenario)
    found = [v for v in _violations(r.verdict) if v[1] == "ValidLeaderMaximalISR"]
    assert found and "lacks [2]" in found[0][3]


CONTROLLER_FAILOVER = """
name: controller-loses-metadata
sim: {writeback: never}
cluster: {brokers: 3}
topics:
  - {name: t, assignment: [[0, 1, 2]]}
steps:
  - {at: 2s, restart_controller: {}}
  - {run_for: 15s}
until: 20s
"""


def test_no_metadata_log_divergence_catches_a_controller_that_loses_its_log(monkeypatch):
    """Mutation of KRaft's commit rule: a controller that does not fsync its metadata log loses it in a
    failover (writeback never); the records it appends afterwards land at offsets the brokers already
    replayed with other records: NoMetadataLogDivergence. With fsync, the same failover is clean."""
    scenario = parse_scenario(CONTROLLER_FAILOVER)
    clean = run_scenario(scenario)
    assert [v for v in _violations(clean.verdict) if v[1] == "NoMetadataLogDivergence"] == []

    from kraftlog.controller import controller as ctl_module
    from kraftlog.storage.disk import SimDisk

    original = SimDisk.fsync

    def no_metadata_fsync(self, path, now_ms):
        if path != ctl_module.METADATA_LOG:
            original(self, path, now_ms)

    monkeypatch.setattr(SimDisk, "fsync", no_metadata_fsync)
    r = run_scenario(scenario)
    found = [v for v in _violations(r.verdict) if v[1] == "NoMetadataLogDivergence"]
    assert found, r.verdict["invariant_violations"]
