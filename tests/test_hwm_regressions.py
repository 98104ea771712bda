"""The verdict's two HWM-regression counts (issue 9 item 7, SCENARIOS.md), each shown to count one.

* ``leader_hwm_regressions``: a leader's own HWM moving backwards within one leader epoch. Kafka's
  ``Partition.maybeIncrementLeaderHW`` only ever raises it, so it must always be 0; here a leader whose
  HWM is pushed back once makes it exactly 1.
* ``hwm_regressions``: the HWM going backwards as a consumer observes it in Fetch responses, unless the
  consumer was told of a truncation in between. Not always 0 in Kafka (a new leader's HWM lags by one
  follower fetch), so it is a count, not an invariant.
"""

from __future__ import annotations

from pathlib import Path

from kraftlog.broker.partition import Partition
from kraftlog.check import checkers
from kraftlog.scenario import load_scenario
from kraftlog.sim.runner import run_scenario

ROOT = Path(__file__).resolve().parents[1]


def test_leader_hwm_regressions_counts_a_drop_within_a_leader_epoch_only():
    """(broker, partition, leader epoch, HWM, time) samples: 8 after 10 in epoch 3 is one regression; a
    new leader epoch (a new leader, or the same one re-elected) starts its own sequence."""
    samples = [(0, "t-0", 3, 5, 1), (0, "t-0", 3, 10, 2), (0, "t-0", 3, 8, 3), (0, "t-0", 3, 12, 4)]
    assert checkers.leader_hwm_regressions(samples) == 1
    new_epoch = [(0, "t-0", 3, 10, 1), (1, "t-0", 4, 7, 2), (0, "t-0", 5, 6, 3), (1, "t-1", 4, 1, 4)]
    assert checkers.leader_hwm_regressions(new_epoch) == 0


def test_hwm_regressions_counts_what_a_consumer_sees_unless_told_of_a_truncation():
    """(client, partition, HWM, time) from Fetch responses: 8 after 10 is one regression (every response
    below the highest HWM seen counts); the same drop after the consumer was told of a truncation
    (LogTruncation between the two responses) is none; another consumer's HWMs are its own sequence."""
    hwms = [("c1", "t-0", 4, 10), ("c1", "t-0", 10, 20), ("c1", "t-0", 8, 30), ("c1", "t-0", 12, 40)]
    assert checkers.hwm_regressions(hwms, []) == 1
    told = [("c1", "t-0", 10, 7, 25, 0)]  # client, partition, position, divergence, time, seq
    assert checkers.hwm_regressions(hwms, told) == 0
    other_consumer = [("c1", "t-0", 10, 20), ("c2", "t-0", 8, 30)]
    assert checkers.hwm_regressions(other_consumer, []) == 0


def test_a_leader_hwm_pushed_back_once_is_one_leader_hwm_regression(monkeypatch):
    """End to end: in the steady-replication story the leader's HWM is pushed back by one offset once
    (after it first reached 10), which Kafka's rule never does; the verdict counts exactly one leader HWM
    regression (the unbroken story counts none: tests/test_cli.py checks 0 for every library story)."""
    original = Partition.maybe_increment_high_watermark
    state = {"reached": None, "at": None, "dropped_at": None}

    def broken(self, now_ms, *args, **kwargs):
        if state["dropped_at"] == now_ms:
            return False  # the rest of the event that dropped it: the drop is what the runner samples
        moved = original(self, now_ms, *args, **kwargs)
        hw = self.log.high_watermark
        if state["reached"] is None:
            if hw >= 10:
                state["reached"], state["at"] = hw, now_ms
        elif state["dropped_at"] is None and now_ms > state["at"]:
            # a later event (the runner sampled the HWM in between): drop below what was reached
            state["dropped_at"] = now_ms
            self.log.update_high_watermark(state["reached"] - 1)
            return True
        return moved

    monkeypatch.setattr(Partition, "maybe_increment_high_watermark", broken)
    v = run_scenario(load_scenario(ROOT / "scenarios" / "steady-replication.yaml")).verdict
    assert state["dropped_at"] is not None
    assert v["leader_hwm_regressions"] == 1
