"""``kraftlog chaos`` (issue 13): seeded faults on real processes, judged by the simulator's checkers.

Fast tests: the fault plan is a pure function of the seed (same seed, same faults; never the global
``random``), the options are checked before anything starts (exit 2, one line, nothing left behind),
the verdict on hand-made final logs and producer stamps (an idempotence finding makes the run unsafe)
and the fault budget on hand-made fault lists (issue 39's safety net).

Slow tests (real processes on loopback, every node stopped by PID in a ``finally``):

* one chaos run of 30 s at the default level, seed 7 (issue 23's storage faults: a clean shutdown and one
  byte flipped in a log, whose load then drops the damaged batch and registers unclean; then a full disk
  injected into a broker, whose log directory goes offline until its restart): faults injected, records
  acknowledged, none lost,
  the verdict's shape (``history_digest`` null, ``faults``), ``acks.parquet`` holding every
  acknowledgement, ``chaos.json`` written, no node left running;
* the pinned last-replica-standing story at ``classic`` loses acknowledged records (KIP-966's motivating
  story: forced, not timing-dependent, since the crashed leader never fsynced) and the consumer detects
  the truncation (KIP-320); the cluster runs at the level asked for (``cluster up --level classic``
  once started at ``urm``);
* the harness killed midway (SIGKILL, while a node is paused by SIGSTOP) leaves no node behind; SIGINT
  stops every node and exits 130.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from conftest import (
    CLASSIC_STORY_GROUP,
    CLASSIC_STORY_RUN,
    DEFAULT_LEVEL_GROUP,
    DEFAULT_LEVEL_RUN,
    assert_all_gone,
    node_pids,
)
from kraftlog.net import cluster as cl
from kraftlog.net.chaos import ChaosRun, _Acked
from kraftlog.net.chaos_plan import FAULT_KINDS, Fault, plan_faults

KRAFTLOG = [sys.executable, "-m", "kraftlog.cli"]


# ------------------------------------------------------------------------------------- fast
def test_fault_plan_is_a_function_of_the_seed():
    a, b = plan_faults(3, 3), plan_faults(3, 3)
    assert [(f.kind, f.node, f.peer, f.hold_ms, f.gap_ms) for f in a] == \
        [(f.kind, f.node, f.peer, f.hold_ms, f.gap_ms) for f in b]
    assert [f.kind for f in plan_faults(4, 3)] != [f.kind for f in a]
    kinds = {f.kind for s in range(40) for f in plan_faults(s, 3)}
    assert kinds == set(FAULT_KINDS), "every fault kind is drawn by some seed"
    for s in range(40):
        for f in plan_faults(s, 3):
            assert 3000 <= f.hold_ms <= 10000 and 2000 <= f.gap_ms <= 5000
            assert f.node == "controller" if f.kind == "controller_kill" else f.node in (0, 1, 2)
            if f.kind == "cut":
                assert f.peer != f.node and f.peer in (0, 1, 2, "controller")


def test_duplicates_are_told_apart_by_their_producer_stamps():
    """KIP-98: within one producer epoch the broker appends each sequence once, so two copies with the
    same producer id and epoch are an idempotence violation; copies under a bumped epoch (KIP-360: the
    client re-sent what it gave up on) or from a non-idempotent producer are duplicates Kafka writes too."""
    from kraftlog.check.checkers import duplicate_causes, duplicates
    final_logs = {"chaos-0": {0: ("all-1", 0), 1: ("all-2", 0), 2: ("all-1", 3), 3: ("all-2", 3),
                              4: ("one-7", 3), 5: ("one-7", 3), 6: ("all-3", 3)},
                  "chaos-1": None}
    stamps = {"chaos-0": {0: (1, 0, 10), 1: (1, 0, 11), 2: (1, 4, 0), 3: (1, 0, 11), 4: (-1, -1, -1),
                          5: (-1, -1, -1), 6: (1, 4, 1)}}
    counts, findings = duplicate_causes(final_logs, stamps)
    assert counts == {"same_producer_epoch": 1, "producer_epoch_bump": 1, "not_idempotent": 1}
    assert sum(counts.values()) == duplicates(final_logs)
    assert findings == ["idempotence chaos-0: value 'all-2' appended twice by producer 1 epoch 0 "
                        "(sequence 11 at offset 1, sequence 11 at offset 3)"]
    assert duplicate_causes({"chaos-0": {0: ("a", 0), 1: ("b", 0)}}, {}) == (
        {"same_producer_epoch": 0, "producer_epoch_bump": 0, "not_idempotent": 0}, [])



def test_a_duplicate_with_one_non_idempotent_copy_is_not_idempotent():
    """Issue 39 rule 10 (``checkers.duplicate_causes``: a copy from a producer that is not idempotent,
    producer id -1, makes the duplicate ``not_idempotent`` whatever the other copy carries; only an
    idempotent producer's sequences are deduplicated, KIP-98): a value written once by idempotent producer
    1 and once without a producer id, in either order, is ``not_idempotent``, never a
    ``producer_epoch_bump`` (and never an idempotence finding).

    Shown to fail when ``pid < 0 or o_pid < 0`` in ``duplicate_causes`` becomes ``pid < 0 and o_pid < 0``
    (the mixed duplicates are counted as producer_epoch_bump)."""
    from kraftlog.check.checkers import duplicate_causes
    final_logs = {"chaos-0": {0: ("v", 0), 1: ("v", 0), 2: ("w", 0), 3: ("w", 0)}}
    stamps = {"chaos-0": {0: (1, 0, 5), 1: (-1, -1, -1), 2: (-1, -1, -1), 3: (1, 0, 6)}}
    assert duplicate_causes(final_logs, stamps) == (
        {"same_producer_epoch": 0, "producer_epoch_bump": 0, "not_idempotent": 2}, [])

def test_client_sends_count_failed_sends_and_timeouts_per_producer():
    """Issue 28 item 7: the verdict's client_sends gives, per producer, what its sends became as the
    client saw them: acknowledged, failed (delivery reports with an error), of them timed out, by error
    name; a record librdkafka refused to queue is an error but not a failed send (it was never sent)."""
    from collections import Counter

    from kraftlog.net.chaos import client_sends
    all_ = SimpleNamespace(name="producer-all", acks="all", sent=100, fatal=1, abandoned=3, unacked_at_end=2,
                           errors=Counter({"_MSG_TIMED_OUT": 32, "NOT_ENOUGH_REPLICAS": 5}))
    one = SimpleNamespace(name="producer-one", acks="1", sent=50, fatal=0, abandoned=0, unacked_at_end=0,
                          errors=Counter({"REQUEST_TIMED_OUT": 4, "produce: queue full": 7}))
    got = client_sends([all_, one], Counter({"producer-all": 58, "producer-one": 46}))
    assert got["producer-all"] == {"acks": "all", "sent": 100, "acknowledged": 58, "failed": 37, "timed_out": 32,
                                   "errors": {"NOT_ENOUGH_REPLICAS": 5, "_MSG_TIMED_OUT": 32}, "replaced": 1,
                                   "abandoned": 3, "unacknowledged_at_end": 2}
    assert (got["producer-one"]["failed"], got["producer-one"]["timed_out"]) == (4, 4)
    assert got["producer-one"]["errors"]["produce: queue full"] == 7


def test_fault_plan_with_one_broker_has_no_link_between_brokers():
    assert not {f.kind for s in range(40) for f in plan_faults(s, 1)} & {"cut", "partition"}


@pytest.mark.parametrize("kwargs, message", [
    ({"brokers": 0}, "--brokers must be within 1..9"),
    ({"partitions": 0}, "--partitions must be within 1..50"),
    ({"rate": 0}, "--rate must be within"),
    ({"story": "nope"}, "unknown --story"),
    ({"story": "last-replica-standing", "brokers": 2}, "needs at least 3 brokers"),
])
def test_bad_options_are_refused_before_anything_starts(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        ChaosRun(str(tmp_path / "c"), **kwargs)
    assert not (tmp_path / "c").exists()


def test_cli_refuses_bad_options_with_one_line_and_exit_2(tmp_path):
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "cluster.json").write_text("{}")
    for args, message in ((["--brokers", "0"], "--brokers must be within 1..9"),
                          (["--duration", "ten"], "Invalid value for '--duration'"),
                          (["--dir", str(tmp_path / "used")], "already holds a cluster")):
        r = subprocess.run(KRAFTLOG + ["chaos", "--dir", str(tmp_path / "new"), *args] if "--dir" not in args
                           else KRAFTLOG + ["chaos", *args], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2, r
        assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "new").exists()



_FAULT_VERBS = {  # each fault kind as scenario verbs (inject; heal): one fault vocabulary (issue 26)
    "kill": (["crash"], ["restart"]), "controller_kill": (["crash"], ["restart"]),
    "lose_unflushed": (["crash"], ["restart"]), "pause": (["pause"], ["resume"]),
    "shutdown": (["shutdown"], ["restart"]), "isolate": (["isolate"], ["heal"]), "cut": (["cut"], ["heal"]),
    "partition": (["partition"], ["heal"]), "disk_full": (["disk_full"], ["shutdown", "restart"]),
    "corrupt": (["shutdown", "corrupt"], ["restart"]),
}


def test_every_fault_kind_is_a_sequence_of_scenario_steps():
    from kraftlog.net.chaos_plan import fault_steps
    assert set(_FAULT_VERBS) == set(FAULT_KINDS)
    for seed in range(40):
        for number, f in enumerate(plan_faults(seed, 3)):
            inject, heal = fault_steps(f, 3, 3, seed, number)
            assert ([a.VERB for a in inject], [a.VERB for a in heal]) == _FAULT_VERBS[f.kind]
            if f.kind == "lose_unflushed":
                assert inject[0].lose == "unflushed" and inject[0].node == f.node
            if f.kind == "controller_kill":
                assert inject[0].node == heal[0].node == "controller"


def test_a_quorum_plan_faults_the_controller_as_often_as_a_broker_and_a_single_controllers_plan_is_unchanged():
    """--controllers 3: the active controller is killed, paused and isolated (QUORUM_FAULT_KINDS), each a fault on
    "controller" healed on it; with one controller every seed's plan is what it was."""
    from kraftlog.net.chaos_plan import QUORUM_FAULT_KINDS, fault_steps
    quorum = [f for s in range(40) for f in plan_faults(s, 3, controllers=3)]
    assert {f.kind for f in quorum} == set(QUORUM_FAULT_KINDS)
    assert sum(f.kind.startswith("controller_") for f in quorum) > len(quorum) // 5
    verbs = {"controller_kill": (["crash"], ["restart"]), "controller_pause": (["pause"], ["resume"]),
             "controller_isolate": (["isolate"], ["heal"])}
    for number, f in enumerate(quorum):
        if f.kind in verbs:
            inject, heal = fault_steps(f, 3, 3, 0, number)
            assert ([a.VERB for a in inject], [a.VERB for a in heal]) == verbs[f.kind] and f.node == "controller"
    assert [(f.kind, f.node) for f in plan_faults(3, 3)] == [(f.kind, f.node) for f in plan_faults(3, 3, controllers=1)]
    assert not any(f.kind.startswith("controller_") and f.kind != "controller_kill"
                   for s in range(40) for f in plan_faults(s, 3))


def test_a_dynamic_quorum_plan_also_loses_the_active_controllers_disk_and_a_static_one_never_does():
    """--kraft-version 1 (KIP-853): controller_disk_loss is a crash losing the active controller's directory, healed
    by a restart (which formats it again); a static quorum's plan never draws it and refuses it by name, since a
    static voter that lost its log must not come back."""
    from kraftlog.net.chaos_plan import DYNAMIC_QUORUM_FAULT_KINDS, QUORUM_FAULT_KINDS, fault_steps
    dynamic = [f for s in range(40) for f in plan_faults(s, 3, controllers=3, kraft_version=1)]
    assert {f.kind for f in dynamic} == set(DYNAMIC_QUORUM_FAULT_KINDS)
    lost = [f for f in dynamic if f.kind == "controller_disk_loss"]
    inject, heal = fault_steps(lost[0], 3, 3, 0, 0)
    assert [(a.VERB, a.node, a.lose) for a in inject] == [("crash", "controller", "all")]
    assert [a.VERB for a in heal] == ["restart"]
    assert not any(f.kind == "controller_disk_loss" for s in range(40) for f in plan_faults(s, 3, controllers=3))
    assert {f.kind for s in range(40) for f in plan_faults(s, 3, controllers=3)} == set(QUORUM_FAULT_KINDS)
    with pytest.raises(ValueError, match="controller_disk_loss needs a kraft.version 1 quorum"):
        plan_faults(1, 3, kinds=("controller_disk_loss",), controllers=3)


def test_chaos_dry_run_prints_the_plan_as_scenario_steps_and_starts_nothing(tmp_path):
    """``kraftlog chaos --dry-run``: the seed's plan as the steps section of a scenario file (it parses, with
    the chaos topic, to the steps :func:`plan_steps` gives); the faults are plan_faults' in order; nothing
    starts (no directory, no process)."""
    from kraftlog.net.chaos_plan import plan_steps
    from kraftlog.scenario import dump_steps, parse_scenario
    r = subprocess.run(KRAFTLOG + ["chaos", "--dry-run", "--seed", "3", "--duration", "90s", "--dir",
                                   str(tmp_path / "c")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "c").exists()
    steps = plan_steps(3, 3, 3, 90.0)
    assert r.stdout.endswith(dump_steps(steps)) and r.stdout.startswith("# kraftlog chaos --seed 3")
    head = "name: plan\ncluster: {brokers: 3}\ntopics:\n  - {name: chaos, partitions: 3, replication_factor: 3}\n"
    parsed = parse_scenario(head + r.stdout)
    assert parsed.steps == tuple(steps) and parsed.steps[0].at_ms == 5000
    kinds = [f.kind for f in plan_faults(3, 3)]
    injected = [s.verb for s in steps if s.after_ms != 0 or s.at_ms is not None][::2]
    assert injected == [_FAULT_VERBS[k][0][0] for k in kinds[:len(injected)]]
    r = subprocess.run(KRAFTLOG + ["chaos", "--dry-run", "--story", "last-replica-standing"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "random plans only" in r.stderr


def _chaos_verdict(tmp_path, final_logs: dict, stamps: dict) -> dict:
    """ChaosRun.verdict on hand-made end state (no cluster): the final logs and producer stamps of
    ``kraftlog chaos``'s read-back, every value acknowledged by producer ``all`` with acks=all."""
    run = ChaosRun(str(tmp_path / "c"))
    os.makedirs(run.directory)
    run.stamps = stamps
    for name, log in final_logs.items():
        for offset, (value, _) in sorted(log.items()):
            run.record_ack(_Acked("all", int(name.rsplit("-", 1)[1]), value, "all", offset, 10))
    producer = SimpleNamespace(name="all", acks="all", errors={}, fatal=0, abandoned=0, unacked_at_end=0,
                               sent=len(run.acked))
    hwms = {name: len(log) for name, log in final_logs.items()}
    return run.verdict(True, [producer], final_logs, hwms, {}, {}, [], {})


def test_chaos_verdict_keeps_an_idempotence_finding_in_invariant_violations_and_is_unsafe(tmp_path):
    """Issue 39 rule 7 (KIP-98: within one producer epoch the broker appends a sequence once; the module
    doc of ``kraftlog.net.chaos``: a same-epoch duplicate is an invariant violation): a final log holding
    value 'v1' twice under producer 1 epoch 0 gives a verdict with that idempotence finding in
    ``invariant_violations`` and ``safe`` false, though nothing acknowledged is lost; the same log with the
    second copy under a bumped epoch (KIP-360) is safe.

    Shown to fail when ``+ idempotence`` is dropped from ``invariant_violations`` in ``ChaosRun.verdict``
    (the run is called safe)."""
    logs = {"chaos-0": {0: ("v0", 0), 1: ("v1", 0), 2: ("v1", 0)}}
    v = _chaos_verdict(tmp_path / "same", logs, {"chaos-0": {0: (1, 0, 0), 1: (1, 0, 1), 2: (1, 0, 1)}})
    assert v["lost_acked"] == 0 and v["metrics"]["duplicates_by_cause"]["same_producer_epoch"] == 1
    assert v["invariant_violations"] == ["idempotence chaos-0: value 'v1' appended twice by producer 1 epoch 0 "
                                         "(sequence 1 at offset 1, sequence 1 at offset 2)"]
    assert v["safe"] is False
    v = _chaos_verdict(tmp_path / "bump", logs, {"chaos-0": {0: (1, 0, 0), 1: (1, 0, 1), 2: (1, 1, 0)}})
    assert v["metrics"]["duplicates_by_cause"]["producer_epoch_bump"] == 1
    assert v["invariant_violations"] == [] and v["safe"] is True


@pytest.mark.parametrize("brokers, faults, within", [
    (3, [], True),
    (3, [("kill", None)], True),  # min ISR 2: one unclean shutdown not yet recovered is within budget
    (3, [("kill", None), ("lose_unflushed", None)], False),  # two overlapping: beyond
    (3, [("kill", 5000), ("lose_unflushed", None)], True),  # the first was back in a complete ISR
    (3, [("kill", None), ("pause", None), ("shutdown", None), ("isolate", None)], True),  # clean ones never count
    (1, [("kill", None)], False),  # min ISR 1: no unclean shutdown is within budget
    (1, [("kill", 5000)], True),
])
def test_chaos_fault_budget_allows_at_most_min_isr_minus_1_overlapping_unclean_shutdowns(
        tmp_path, brokers, faults, within):
    """Issue 39 rule 8 (KIP-966's guarantee holds while fewer than min.insync.replicas replicas shut down
    uncleanly at once; ``ChaosRun._within_budget``, the verdict's ``fault_budget`` = min ISR - 1): hand-
    made fault lists, an unclean fault (kill, lose_unflushed) overlapping while its ``recovered_ms`` is
    None. 3 brokers (min ISR 2): one overlapping unclean shutdown is within budget, two are not; 1 broker
    (min ISR 1): none is.

    Shown to fail when the comparison ``down <= max(0, self.min_isr - 1)`` is loosened to
    ``down <= self.min_isr`` (the off-by-one only a slow test noticed) or tightened to ``down < ...``."""
    run = ChaosRun(str(tmp_path / "c"), brokers=brokers)
    run.faults = [Fault(kind, 0, 0, 0, recovered_ms=recovered) for kind, recovered in faults]
    assert run._within_budget() is within

# ------------------------------------------------------------------------------------- slow
@pytest.mark.slow
@pytest.mark.xdist_group(DEFAULT_LEVEL_GROUP)
def test_a_30s_chaos_run_at_the_default_level_loses_nothing(chaos_runs):
    """Seed 7: a corrupted log (a clean shutdown, a byte flipped, a start: the load drops the damaged
    batch and everything after it and the broker registers as after an unclean shutdown), then a full
    disk (ENOSPC injected: the broker's log directory goes offline, the controller moves its leaderships,
    an operator's restart brings it back); every acknowledged acks=all record is in the final log, every
    invariant holds, and the acknowledgement log has a row per acknowledgement."""
    import pyarrow.parquet as pq
    directory, v = chaos_runs.run(*DEFAULT_LEVEL_RUN)
    assert v["level"] == "urm" and v["seed"] == 7 and v["history_digest"] is None
    kinds = [f["kind"] for f in v["faults"]]
    # The plan is corrupt, disk_full, ...; a slow machine may reach only the first in 30 s (each fault waits
    # for complete ISRs before the next): tests/test_real_storage_faults.py has the full disk on its own.
    assert kinds[:2] in (["corrupt"], ["corrupt", "disk_full"]), kinds
    with open(os.path.join(directory, f"broker-{v['faults'][0]['node']}.log")) as f:
        text = f.read()
        assert "dropped bytes" in text and "registering as after an unclean shutdown" in text
    if kinds[1:2] == ["disk_full"]:
        with open(os.path.join(directory, f"broker-{v['faults'][1]['node']}.log")) as f:
            text = f.read()
            assert "No space left on device" in text and "the controller acknowledged the offline log directory" in text
    for f in v["faults"]:
        assert f["at_ms"] <= f["healed_ms"]
    assert v["acked"]["all"] > 500 and v["acked"]["1"] > 500
    assert v["passed"] and v["safe"], v
    assert v["lost_acked"] == 0 and v["undetected_truncations"] == 0 and v["invariant_violations"] == []
    assert v["anomalies"] == {"lost-write": 0, "duplicate": 0, "inconsistent-offsets": 0, "nonmonotonic-poll": 0,
                              "poll-skip": 0}
    assert v["metrics"]["records_consumed"] > 0
    # issue 32: a confluent-kafka group of two members committing every 100 records and restarted every 15-30 s,
    # its coordinator among the faulted brokers: no commit rolled back, nothing skipped
    g = v["metrics"]["consumer_group"]
    assert g["records_delivered"] > 500 and g["commits"] > 5 and g["restarts"] >= 1, g
    assert v["committed_offset_regressions"] == 0 and v["skipped_by_group"] == 0, v["group_anomalies"]
    sends = v["client_sends"]  # issue 28 item 7: the client's side of every send, per producer
    assert set(sends) == {"producer-all", "producer-1"}, sends
    for c in sends.values():
        assert c["acknowledged"] == v["acked"][c["acks"]]
        assert c["acknowledged"] + c["failed"] + c["abandoned"] + c["unacknowledged_at_end"] <= c["sent"]
        assert 0 <= c["timed_out"] <= c["failed"] == sum(n for k, n in c["errors"].items()
                                                         if not k.startswith("produce: "))
    assert v["metrics"]["duplicates_by_cause"] == {"same_producer_epoch": 0, "producer_epoch_bump": 0,
                                                   "not_idempotent": 0}
    with open(os.path.join(directory, "clients.log")) as f:  # the idempotent producer's eos debug log
        assert "Idempotent producer state change" in f.read()
    assert set(v["final"]["partitions"]) == {"chaos-0", "chaos-1", "chaos-2"}
    for p in v["final"]["partitions"].values():
        assert sorted(p["isr"]) == [0, 1, 2] and p["leader"] in p["isr"]
    acks = pq.read_table(os.path.join(directory, "acks.parquet"))
    assert acks.column_names == ["topic", "partition", "offset", "leader_epoch", "value_sha256", "ack_time_ms",
                                 "acks", "producer"]
    assert acks.num_rows == v["acked"]["all"] + v["acked"]["1"]
    rows = acks.to_pylist()
    assert {r["acks"] for r in rows} == {"all", "1"} and all(len(r["value_sha256"]) == 64 for r in rows)
    assert all(r["offset"] >= 0 for r in rows)
    # nothing acknowledged with acks=all was lost, so each is in the final log, with its batch's epoch
    assert all(r["leader_epoch"] is not None and r["leader_epoch"] >= 0 for r in rows if r["acks"] == "all")
    with open(os.path.join(directory, "chaos.json")) as f:
        assert json.load(f)["lost_acked"] == 0


@pytest.mark.slow
@pytest.mark.xdist_group(CLASSIC_STORY_GROUP)
def test_last_replica_standing_loses_acknowledged_records_at_classic(chaos_runs):
    """KIP-966's motivating story on real processes: below the ELR the last ISR member, which lost what it
    had not fsynced, is elected again and the other replicas truncate to it."""
    directory, v = chaos_runs.run(*CLASSIC_STORY_RUN)
    assert cl.load(directory)["level"] == "classic"
    assert v["level"] == "classic" and v["scenario"] == "chaos:last-replica-standing"
    assert [f["kind"] for f in v["faults"]] == ["kill", "isolate", "lose_unflushed"]
    assert v["passed"] and not v["safe"]
    assert v["lost_acked"] > 0 and v["anomalies"]["lost-write"] == v["lost_acked"]
    assert all(r["partition"].startswith("chaos-") for r in v["lost_acked_records"])
    assert v["detected_truncations"] >= 1, "the KIP-320 consumer saw the log truncated under its position"
    assert not v["within_budget"], "two unclean shutdowns of one partition's replicas"


def _sigint_as_in_a_terminal() -> None:
    """In the harness before exec: SIGINT back to its default. A shell without job control starts a background
    job (``cmd &``, as a CI runner may start the test run) with SIGINT ignored, the child inherits that, and
    Python then installs no KeyboardInterrupt handler: Ctrl-C in a terminal is what these tests mean."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start_harness(directory: str, seed: int, duration: str = "60s") -> subprocess.Popen:
    return subprocess.Popen(KRAFTLOG + ["chaos", "--dir", directory, "--duration", duration, "--seed", str(seed)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_sigint_as_in_a_terminal)


def _wait_for_line(proc: subprocess.Popen, text: str, timeout_s: float = 90) -> list[str]:
    import selectors
    seen: list[str] = []
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if sel.select(timeout=1.0):
            line = proc.stdout.readline()
            if not line:
                break
            seen.append(line)
            if text in line:
                return seen
    raise AssertionError(f"no {text!r} line within {timeout_s} s: {''.join(seen)[-2000:]}")


def _first_seed_starting_with(kind: str) -> int:
    return next(s for s in range(1000) if plan_faults(s, 3)[0].kind == kind)


@contextlib.contextmanager
def _harness_until(directory: str, seed: int, text: str):
    """The harness (seed ``seed``) once it printed a line holding ``text``: yields ``(proc, node pids)``.
    On the way out, whatever the test did, the harness and every node still alive are SIGKILLed."""
    proc = _start_harness(directory, seed)
    pids: list[int] = []
    try:
        _wait_for_line(proc, text)
        pids = node_pids(directory)
        yield proc, pids
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in pids or node_pids(directory):
            if cl.pid_alive(p):
                os.kill(p, signal.SIGKILL)


@pytest.mark.slow
def test_killing_the_harness_midway_leaves_no_node_running(tmp_path):
    """SIGKILL the harness while a broker is paused (SIGSTOP): the kernel kills every node it owned
    (PR_SET_PDEATHSIG reaches a stopped process too)."""
    with _harness_until(str(tmp_path / "killed"), _first_seed_starting_with("pause"), "fault: pause") as (proc, pids):
        assert len(pids) == 4 and all(cl.pid_alive(p) for p in pids)
        proc.kill()
        proc.wait(10)
        assert_all_gone(pids)


@pytest.mark.slow
def test_interrupting_the_harness_stops_every_node_and_exits_130(tmp_path):
    with _harness_until(str(tmp_path / "interrupted"), 1, "cluster ready") as (proc, pids):
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, out
        assert "interrupted: every node" in out and "Traceback" not in out
        assert_all_gone(pids, timeout_s=5)


def test_free_ports_lie_below_the_ephemeral_range_so_a_restart_can_bind_them_again():
    """A port the kernel picks for ``bind(0)`` is an ephemeral one: while its node is down it may become
    the local end of an outgoing connection, and the node's restart fails with EADDRINUSE (seen in a
    chaos run). cluster.up records ports chosen below that range instead."""
    import socket

    from kraftlog.net.cluster_files import _ephemeral_range
    low, _ = _ephemeral_range()
    ports = cl.free_ports(7)
    assert len(set(ports)) == 7 and all(1024 <= p < low for p in ports)
    for p in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))
