"""Scenario step verbs (SCENARIOS.md, format v1) end to end: one small scenario per verb through
``parse_scenario`` + ``run_scenario``, asserting the verdict, the final state and the timeline; plus
determinism of ``history_digest``, the ``wire=True`` switch (every message through the kio mapping) and
the two reference stories (a leader crash under load loses nothing; the last ISR member losing its page
cache loses acknowledged records at level classic).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlog.level import Level
from kraftlog.scenario import load_scenario, parse_scenario
from kraftlog.scenario.result import RunResult
from kraftlog.sim.runner import ScenarioRun, run_scenario
from kraftlog.storage.checkpoints import read_clean_shutdown

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"


def scenario_text(steps: str, *, config: str = "{min.insync.replicas: 2}", extra: str = "", until: str = "",
                  seed: int = 1, name: str = "verb") -> str:
    text = f"""
name: {name}
seed: {seed}
level: classic
cluster:
  brokers: 3
  config: {config}
topics:
  - {{name: t, assignment: [[0, 1, 2]]}}
{extra}
steps:
{steps}
"""
    if until:
        text += f"until: {until}\n"
    return text


def run_text(steps: str, **kw) -> RunResult:
    return run_scenario(parse_scenario(scenario_text(steps, **kw)))


def runner(steps: str, **kw) -> tuple[ScenarioRun, RunResult]:
    run = ScenarioRun(parse_scenario(scenario_text(steps, **kw)))
    return run, run.run()


def line(result: RunResult, text: str) -> str:
    """The timeline line containing ``text`` (asserts there is one); invariant violations, which name the
    step they happened in, are not the step's own line."""
    hits = [x for x in result.timeline if text in x and "invariant violated:" not in x]
    assert hits, f"{text!r} not in timeline:\n" + "\n".join(result.timeline)
    return hits[0]


def part(result: RunResult, name: str = "t-0") -> dict:
    return result.verdict["final"]["partitions"][name]


def broker(result: RunResult, b: int) -> dict:
    return result.verdict["final"]["brokers"][str(b)]


def ok(result: RunResult) -> None:
    assert result.exit_code == 0, result.verdict["failed_expectations"]
    assert result.verdict["failed_expectations"] == []
    assert result.verdict["lost_acked"] == 0


# ================================================================================ produce
def test_verb_produce_acks_all_1_and_0():
    """`produce`: one-shot produce of `count` distinct records per acks mode; every acknowledged record
    is counted under its acks and the leader's HWM covers them all."""
    r = run_text("""
  - {produce: {topic: t, partition: 0, count: 10, acks: all}}
  - {produce: {topic: t, count: 5, acks: 1}}
  - {produce: {topic: t, count: 3, acks: 0}}
  - {run_for: 1s}
""")
    ok(r)
    assert r.verdict["acked"] == {"all": 10, "1": 5, "0": 3}
    assert "10/10 records acknowledged (acks=all) to t-0" in line(r, "step 1 (produce)")
    assert "5/5 records acknowledged (acks=1)" in line(r, "step 2 (produce)")
    assert "3/3 records acknowledged (acks=0)" in line(r, "step 3 (produce)")
    assert part(r)["hwm"] == 18
    assert part(r)["leo"] == {"0": 18, "1": 18, "2": 18}


def test_verb_produce_gives_up_after_timeout_when_not_enough_replicas():
    """`produce` retries retriable errors until `timeout`; with ISR [0] < min.insync.replicas 2 every
    acks=all record fails (NOT_ENOUGH_REPLICAS) and the step still completes."""
    r = run_text("""
  - {crash: {broker: 1, lose: none}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {produce: {topic: t, count: 4, acks: all, timeout: 2s}}
  - {produce: {topic: t, count: 4, acks: 1}}
""")
    ok(r)
    assert "0/4 records acknowledged (acks=all)" in line(r, "step 4 (produce)")
    assert r.verdict["acked"] == {"all": 0, "1": 4, "0": 0}
    assert part(r)["leo"]["0"] == 4


# ================================================================================ crash
@pytest.mark.parametrize("lose, leo", [("none", 15), ("unflushed", 10), ("all", 0)])
def test_verb_crash_lose_modes(lose, leo):
    """`crash` with `lose`: `none` keeps everything written (15 records), `unflushed` loses the page cache
    (only the 10 records older than the 30s writeback survive), `all` replaces the disk (empty log). The
    restarted broker's link to the leader is cut so its recovered log end offset is what the disk kept."""
    r = run_text(f"""
  - {{produce: {{topic: t, count: 10}}}}
  - {{run_for: 35s}}
  - {{produce: {{topic: t, count: 5}}}}
  - {{crash: {{broker: 2, lose: {lose}}}}}
  - {{cut: {{from: 2, to: 0}}}}
  - {{wait_until: {{broker: 2, fenced: true, timeout: 20s}}}}
  - {{restart: {{broker: 2}}}}
  - {{wait_until: {{broker: 2, fenced: false, timeout: 20s}}}}
  - {{run_for: 1s}}
""")
    ok(r)
    assert f"broker 2 crashed (lose {lose})" in line(r, "step 4 (crash)")
    assert part(r)["leo"]["2"] == leo
    assert part(r)["leo"]["0"] == 15 and part(r)["hwm"] == 15
    assert r.verdict["acked"]["all"] == 15


def test_verb_crash_stops_the_broker_and_controller_fences_it():
    """`crash` is a hard stop: the broker is not alive; after broker.session.timeout.ms the controller
    fences it and removes it from the ISR; a crashed leader is replaced by the next ISR member."""
    r = run_text("""
  - {crash: {broker: 0, lose: none}}
  - {expect: {broker: 0, alive: false, fenced: false}}
  - {wait_until: {broker: 0, fenced: true, timeout: 15s}}
  - {expect: {partition: t-0, leader: 1, isr: [1, 2]}}
""")
    ok(r)
    assert broker(r, 0) == {"alive": False, "fenced": True, "epoch": broker(r, 0)["epoch"]}
    assert "broker 0 fenced" in line(r, "broker 0 fenced")


# ================================================================================ shutdown / restart
def test_verb_shutdown_is_clean_moves_leadership_and_writes_clean_shutdown_file():
    """`shutdown`: controlled shutdown: the controller moves leadership and ISR membership away first,
    then lets the broker stop; it flushes and writes the clean-shutdown file with its broker epoch."""
    run, r = runner("""
  - {produce: {topic: t, count: 5}}
  - {shutdown: {broker: 0}}
  - {expect: {broker: 0, alive: false, fenced: true, in_controlled_shutdown: false}}
  - {expect: {partition: t-0, leader: 1, isr: [1, 2]}}
""")
    ok(r)
    assert "broker 0 shut down cleanly" in line(r, "step 2 (shutdown)")
    line(r, "broker 0 in controlled shutdown")
    assert not broker(r, 0)["alive"]
    assert read_clean_shutdown(run.sim.disks[0], "data") == broker(r, 0)["epoch"]
    assert r.verdict["acked"]["all"] == 5
    assert part(r)["leo"] == {"1": 5, "2": 5}


def test_verb_restart_registers_again_with_new_broker_epoch():
    """`restart`: a stopped broker starts again, registers with a new (larger) broker epoch, is unfenced
    and rejoins the ISR."""
    r = run_text("""
  - {crash: {broker: 1, lose: none}}
  - {wait_until: {broker: 1, fenced: true, timeout: 15s}}
  - {produce: {topic: t, count: 5}}
  - {restart: {broker: 1}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 30s}}
  - {expect: {broker: 1, alive: true, fenced: false}}
""")
    ok(r)
    assert "broker 1 restarted" in line(r, "step 4 (restart)")
    epochs = {b: broker(r, b)["epoch"] for b in (0, 1, 2)}
    assert epochs[1] > max(epochs[0], epochs[2])
    registered = [x for x in r.timeline if "broker 1 registered" in x]
    assert len(registered) == 2 and f"broker epoch {epochs[1]})" in registered[-1]
    assert part(r)["leo"]["1"] == 5


def test_verb_restart_controller_replays_metadata_and_keeps_brokers_unfenced():
    """`restart_controller`: controller failover: in-memory state lost, metadata log replayed; brokers
    keep their registrations (fresh sessions) and the cluster keeps accepting acks=all writes."""
    run, r = runner("""
  - {produce: {topic: t, count: 5}}
  - {restart_controller: {}}
  - {after: 3s, expect: {broker: 0, fenced: false}}
  - {expect: {broker: 1, fenced: false}}
  - {expect: {broker: 2, fenced: false}}
  - {expect: {partition: t-0, leader: 0, isr: [0, 1, 2]}}
  - {produce: {topic: t, count: 5}}
  - {run_for: 10s}
  - {expect: {broker: 2, fenced: false}}
""")
    ok(r)
    assert "controller failover (metadata log replayed)" in line(r, "step 2 (restart_controller)")
    assert run.sim.incarnation["controller"] == 2
    assert r.verdict["acked"]["all"] == 10
    assert part(r)["leader_epoch"] == 0


# ================================================================================ network faults
def test_verb_isolate_leader_is_fenced_and_replaced():
    """`isolate`: every link between broker 0 and all other nodes is cut; the controller stops hearing
    its heartbeats, fences it and elects the next ISR member; writes go on at the new leader."""
    r = run_text("""
  - {isolate: {nodes: [0]}}
  - {wait_until: {partition: t-0, leader: 1, timeout: 20s}}
  - {expect: {broker: 0, fenced: true, alive: true}}
  - {expect: {partition: t-0, isr: [1, 2]}}
  - {run_for: 1s}
  - {produce: {topic: t, count: 5, timeout: 70s}}
""")
    ok(r)
    assert "isolated [0]" in line(r, "step 1 (isolate)")
    assert r.verdict["acked"]["all"] == 5
    assert broker(r, 0) == {"alive": True, "fenced": True, "epoch": broker(r, 0)["epoch"]}


def test_verb_partition_groups():
    """`partition`: nodes only reach nodes of their own group; broker 2, alone, is fenced and dropped from
    the ISR while broker 0 keeps leading."""
    r = run_text("""
  - {partition: {groups: [[0, 1, controller], [2]]}}
  - {wait_until: {broker: 2, fenced: true, timeout: 20s}}
  - {expect: {partition: t-0, leader: 0, isr: [0, 1]}}
  - {produce: {topic: t, count: 5}}
  - {expect: {broker: 2, alive: true}}
""")
    ok(r)
    assert "network partitioned into" in line(r, "step 1 (partition)")
    assert r.verdict["acked"]["all"] == 5
    assert part(r)["leo"]["2"] == 0


LAG = "{min.insync.replicas: 2, replica.lag.time.max.ms: 3000, replica.socket.timeout.ms: 3000}"
PRODUCER = "clients:\n  - {id: p1, producer: t, acks: 1, interval: 100ms}"


def test_verb_cut_one_directed_link_shrinks_isr_without_fencing():
    """`cut`: drop messages on one directed link: broker 2's fetches to the leader vanish, so after
    replica.lag.time.max.ms the leader shrinks the ISR (AlterPartition), while 2 still heartbeats to the
    controller and stays unfenced."""
    r = run_text("""
  - {cut: {from: 2, to: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1], timeout: 20s}}
  - {expect: {broker: 2, fenced: false, alive: true}}
""", config=LAG, extra=PRODUCER)
    ok(r)
    assert "cut 2 -> 0" in line(r, "step 1 (cut)")
    assert not broker(r, 2)["fenced"]


@pytest.mark.parametrize("heal, text", [("{}", "healed all links"), ("{nodes: [2]}", "healed [2]")])
def test_verb_heal_restores_links_and_isr(heal, text):
    """`heal`: restore every link (or those touching the given nodes); the follower catches up and the
    leader expands the ISR again."""
    r = run_text(f"""
  - {{cut: {{from: 2, to: 0}}}}
  - {{wait_until: {{partition: t-0, isr: [0, 1], timeout: 20s}}}}
  - {{heal: {heal}}}
  - {{wait_until: {{partition: t-0, isr: [0, 1, 2], timeout: 20s}}}}
""", config=LAG, extra=PRODUCER)
    ok(r)
    assert text in line(r, "step 3 (heal)")
    assert part(r)["isr"] == [0, 1, 2]


def test_verb_hold_and_release_alter_partition():
    """`hold` keeps matching messages in flight (here the leader's AlterPartition to the controller), so
    the committed ISR does not shrink although the leader wants it; `release` delivers them in order and
    the shrink commits."""
    r = run_text("""
  - {hold: {api: AlterPartition, from: 0, to: controller}}
  - {cut: {from: 2, to: 0}}
  - {run_for: 8s}
  - {expect: {partition: t-0, isr: [0, 1, 2]}}
  - {release: {api: AlterPartition, from: 0, to: controller}}
  - {wait_until: {partition: t-0, isr: [0, 1], timeout: 5s}}
""", config=LAG, extra=PRODUCER)
    ok(r)
    assert "holding AlterPartition messages 0 -> controller" in line(r, "step 1 (hold)")
    assert "released AlterPartition messages 0 -> controller" in line(r, "step 5 (release)")
    release_at = int(line(r, "step 5 (release)").split("ms")[0])
    shrink_at = int(line(r, "ISR -> [0, 1]").split("ms")[0])
    assert shrink_at >= release_at


def test_verb_alter_config_topic_min_insync_replicas():
    """`alter_config` with `topic`: a topic-level min.insync.replicas 3 makes acks=all fail with ISR
    [0, 1]; setting it back to 2 makes the same writes succeed."""
    r = run_text("""
  - {alter_config: {topic: t, config: {min.insync.replicas: 3}}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0, 1], timeout: 20s}}
  - {produce: {topic: t, count: 3, acks: all, timeout: 2s}}
  - {alter_config: {topic: t, config: {min.insync.replicas: 2}}}
  - {produce: {topic: t, count: 3, acks: all}}
""")
    ok(r)
    assert "t config {'min.insync.replicas': '3'} -> NONE" in line(r, "step 1 (alter_config)")
    assert "0/3 records acknowledged" in line(r, "step 4 (produce)")
    assert "3/3 records acknowledged" in line(r, "step 6 (produce)")
    assert r.verdict["acked"]["all"] == 3


def _last_isr_member_down(extra_steps: str) -> str:
    return """
  - {crash: {broker: 1, lose: none}}
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0], timeout: 20s}}
  - {produce: {topic: t, count: 4, acks: 1}}
  - {crash: {broker: 0, lose: none}}
  - {wait_until: {partition: t-0, leader: none, timeout: 20s}}
  - {expect: {partition: t-0, isr: [0]}}
  - {restart: {broker: 2}}
  - {wait_until: {broker: 2, fenced: false, timeout: 10s}}
  - {run_for: 3s}
  - {expect: {partition: t-0, leader: none}}
""" + extra_steps


def test_verb_alter_config_cluster_unclean_leader_election():
    """`alter_config` without `topic`: a cluster-level unclean.leader.election.enable=true lets the
    controller's periodic unclean-election task (unclean.leader.election.interval.ms, 1 s here) elect the
    out-of-sync replica 2: unclean, ISR [2], LeaderRecoveryState RECOVERING. Kafka never elects as a side
    effect of the config change itself, and the controller's RECOVERING flag clears only with the next
    ISR change (here: broker 1 returns and joins the ISR), issue 9 items 5 and 6."""
    r = run_text(_last_isr_member_down("""
  - {alter_config: {config: {unclean.leader.election.enable: true}}}
  - {wait_until: {partition: t-0, leader: 2, isr: [2], timeout: 5s}}
  - {expect: {partition: t-0, recovering: true}}
  - {restart: {broker: 1}}
  - {wait_until: {partition: t-0, isr: [1, 2], recovering: false, timeout: 30s}}
"""), config="{min.insync.replicas: 1, unclean.leader.election.interval.ms: 1000}")
    assert r.exit_code == 0, r.verdict["failed_expectations"]
    assert "cluster config {'unclean.leader.election.enable': 'true'} -> NONE" in line(r, "step 12 (alter_config)")
    line(r, "t-0: leader -> 2 (epoch 4), ISR -> [2], RECOVERING")  # classic bumps the epoch on ISR shrinks
    line(r, "RECOVERED")
    assert part(r)["leader"] == 2 and not part(r)["recovering"]


def test_verb_elect_preferred():
    """`elect` type preferred: ElectLeaders PREFERRED moves leadership back to the first replica once
    it is in the ISR; when it already leads the answer is ELECTION_NOT_NEEDED."""
    r = run_text("""
  - {shutdown: {broker: 0}}
  - {restart: {broker: 0}}
  - {wait_until: {partition: t-0, isr: [0, 1, 2], timeout: 30s}}
  - {expect: {partition: t-0, leader: 1}}
  - {elect: {partition: t-0, type: preferred}}
  - {wait_until: {partition: t-0, leader: 0, timeout: 5s}}
  - {elect: {partition: t-0, type: preferred}}
""")
    ok(r)
    assert "preferred election on t-0 -> NONE" in line(r, "step 5 (elect)")
    assert "preferred election on t-0 -> ELECTION_NOT_NEEDED" in line(r, "step 7 (elect)")
    assert part(r)["leader"] == 0 and part(r)["leader_epoch"] == 2


def test_verb_elect_unclean():
    """`elect` type unclean: with no ISR member alive, ElectLeaders UNCLEAN elects an active out-of-sync
    replica (ISR [it], RECOVERING until the next ISR change, issue 9 item 6); with a leader present the
    answer is ELECTION_NOT_NEEDED."""
    r = run_text(_last_isr_member_down("""
  - {elect: {partition: t-0, type: unclean}}
  - {expect: {partition: t-0, leader: 2, isr: [2], recovering: true}}
  - {elect: {partition: t-0, type: unclean}}
"""), config="{min.insync.replicas: 1}")
    assert r.exit_code == 0, r.verdict["failed_expectations"]
    assert "unclean election on t-0 -> NONE" in line(r, "step 12 (elect)")
    assert "unclean election on t-0 -> ELECTION_NOT_NEEDED" in line(r, "step 14 (elect)")
    assert part(r)["leader"] == 2 and part(r)["recovering"]
    # Broker 2 crashed before the 4 acks=1 records: the unclean leader does not have them.
    assert part(r)["hwm"] == 0


# ================================================================================ conditions and time
def test_verb_wait_until_holds():
    """`wait_until` runs until the condition holds and logs it."""
    r = run_text("""
  - {crash: {broker: 2, lose: none}}
  - {wait_until: {partition: t-0, isr: [0, 1], leader: 0, timeout: 20s}}
""")
    ok(r)
    assert line(r, "step 2 (wait_until)").endswith("holds")
    assert "isr=[0, 1]" in line(r, "step 2 (wait_until)")
    assert 5000 <= r.verdict["sim_time_ms"] < 20000  # fenced after broker.session.timeout.ms (9s)


def test_verb_wait_until_timeout_fails_run_with_exit_code_1():
    """`wait_until` on timeout: the run is reported failed (exit code 1), naming the condition and what
    was observed; later steps still run."""
    r = run_text("""
  - {wait_until: {partition: t-0, leader: 2, timeout: 2s}}
  - {produce: {topic: t, count: 2}}
""")
    assert r.exit_code == 1
    failed = r.verdict["failed_expectations"]
    assert len(failed) == 1
    assert "step 1 (wait_until): timed out after 2000ms" in failed[0]
    assert "leader=0" in failed[0]
    assert r.verdict["acked"]["all"] == 2
    assert r.verdict["sim_time_ms"] >= 2000


def test_verb_expect_holds_and_fails():
    """`expect` asserts now: a holding expectation is logged; a failing one is reported with the
    observed state and makes the exit code 1."""
    good = run_text("""
  - {expect: {partition: t-0, leader: 0, isr: [0, 1, 2], leader_epoch_at_least: 0, recovering: false}}
  - {expect: {broker: 1, alive: true, fenced: false, in_controlled_shutdown: false}}
  - {produce: {topic: t, count: 3}}
  - {after: 1s, expect: {partition: t-0, hwm: 3, hwm_at_least: 2}}
""")
    ok(good)
    line(good, "step 1 (expect)")
    bad = run_text("""
  - {expect: {partition: t-0, leader: 2}}
  - {expect: {broker: 1, fenced: true}}
""")
    assert bad.exit_code == 1
    failed = bad.verdict["failed_expectations"]
    assert len(failed) == 2
    assert "step 1 (expect): expected partition t-0: leader=2" in failed[0] and "leader=0" in failed[0]
    assert "step 2 (expect): expected broker 1: fenced=True" in failed[1] and "fenced=False" in failed[1]


def test_verb_run_for_lets_time_pass():
    """`run_for` lets simulated time pass; `at` is absolute from cluster-ready, `until` ends the run."""
    r = run_text("  - {run_for: 7s}\n")
    ok(r)
    assert r.verdict["sim_time_ms"] == 7000
    r = run_text("  - {at: 2s, run_for: 3s}\n", until="9s")
    ok(r)
    assert r.verdict["sim_time_ms"] == 9000
    r = run_text("  - {at: 2s, run_for: 3s}\n  - {after: 1s, expect: {broker: 0, alive: true}}\n")
    assert r.verdict["sim_time_ms"] == 6000


# ================================================================================ whole runs
def test_same_scenario_and_seed_give_same_history_digest_other_seed_differs(library):
    """Deterministic simulation: the same file, level and seed give the same history_digest (and the
    same verdict and timeline) as the session's library run of it; another seed gives another history."""
    sc = load_scenario(SCENARIOS / "leader-failover.yaml")
    a = library["leader-failover"]
    b = run_scenario(sc)
    assert a.verdict["history_digest"] == b.verdict["history_digest"]
    assert a.verdict == b.verdict
    assert a.timeline == b.timeline
    c = run_scenario(sc, seed=sc.seed + 1)
    assert c.verdict["history_digest"] != a.verdict["history_digest"]
    assert c.verdict["seed"] == sc.seed + 1


@pytest.mark.parametrize("name", ["leader-failover.yaml", "controlled-shutdown.yaml"])
def test_wire_mode_gives_same_outcome(library, name):
    """`wire=True` sends every message through the kio wire mapping (Kafka bytes and back): the run
    completes with the same outcome as without (acked counts, nothing lost, same final state) and, the
    mapping being lossless for what the protocol uses, the very same history."""
    plain = library[name.removesuffix(".yaml")]
    wire = run_scenario(load_scenario(SCENARIOS / name), wire=True)
    assert wire.exit_code == plain.exit_code == 0
    assert wire.verdict["acked"] == plain.verdict["acked"]
    assert wire.verdict["acked"]["all"] > 0
    assert wire.verdict["lost_acked"] == plain.verdict["lost_acked"] == 0
    assert wire.verdict["final"] == plain.verdict["final"]
    assert wire.verdict["invariant_violations"] == plain.verdict["invariant_violations"]
    assert wire.verdict == plain.verdict


def test_leader_crash_under_load_loses_nothing(library):
    """The leader-crash-under-load story (scenarios/leader-failover.yaml): the acks=all leader crashes
    and loses its page cache; the next ISR member (1) takes over; no acknowledged record is lost."""
    r = library["leader-failover"]
    ok(r)
    assert r.verdict["acked"]["all"] > 500
    assert part(r)["leader"] == 1
    assert r.verdict["lost_acked"] == 0 and r.verdict["lost_acked_records"] == []
    assert r.verdict["anomalies"]["lost-write"] == 0
    assert r.verdict["invariant_violations"] == []


def test_last_isr_member_loses_page_cache_loses_acked_records_at_classic(library):
    """KIP-966's motivating story (scenarios/last-isr-member-loses-page-cache.yaml) at level classic: the
    last ISR member stays in the ISR, loses its page cache, is re-elected with an empty log, and all 20
    acknowledged acks=all records are lost; the verdict says so (lost-write) and the invariant checker
    flags the fenced broker left in the ISR."""
    r = library.run("last-isr-member-loses-page-cache", Level.CLASSIC)
    v = r.verdict
    assert v["level"] == "classic"
    assert v["acked"]["all"] == 20
    assert v["lost_acked"] == len(v["lost_acked_records"]) == v["anomalies"]["lost-write"] == 20
    assert any("fenced-in-isr" in x for x in v["invariant_violations"])
    assert part(r)["leader"] == 0


def test_verb_isolate_also_cuts_nodes_added_later():
    """`isolate`: an isolated broker reaches no other node, including the producer of a later `produce`
    step; so the isolated (zombie) leader 0 cannot acknowledge acks=1 records, and nothing reaches its log."""
    r = run_text("""
  - {isolate: {nodes: [0]}}
  - {produce: {topic: t, count: 3, acks: 1, timeout: 5s}}
  - {wait_until: {partition: t-0, leader: 1, timeout: 20s}}
""", config="{min.insync.replicas: 1}")
    assert "0/3 records acknowledged" in line(r, "step 2 (produce)")
    assert part(r)["leo"]["0"] == 0
