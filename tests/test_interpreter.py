"""The one step interpreter (issue 26 item 4): :mod:`kraftlog.scenario.interpreter` gives every verb its
meaning once, over the :class:`ClusterBackend` protocol that the simulator's run and the real-process run
implement."""

from __future__ import annotations

import inspect

from kraftlog.net.real_scenario import RealScenarioRun
from kraftlog.scenario import Corrupt, Produce, parse_scenario
from kraftlog.scenario.interpreter import ClusterBackend, Corrupted, run_steps
from kraftlog.sim.runner import ScenarioRun

STORY = """
name: interpreted
cluster: {brokers: 3}
topics:
  - {name: t, partitions: 1, assignment: [[0, 1, 2]]}
steps:
  - {at: 1s, crash: {broker: 1, lose: unflushed}}
  - {after: 500ms, corrupt: {broker: 1, partition: t-0}}
  - {disk_full: {broker: 2, for: 2s}}
  - {at: 3s, restart: {node: controller}}
  - {hold: {api: Fetch, from: 0}}
  - {produce: {topic: t, count: 3}}
  - {expect: {partition: t-0, leader: 0}}
  - {wait_until: {broker: 1, fenced: false, timeout: 5s}}
  - {run_for: 1s}
until: 20s
"""


class Recorder:
    """A ClusterBackend that records each operation and answers from a script."""

    def __init__(self) -> None:
        self.t = 0
        self.calls: list = []
        self.lines: list[str] = []
        self.failed: list[str] = []

    def refusals(self, scenario):
        return []

    def now_ms(self):
        return self.t

    def advance_to(self, t_ms):
        self.calls.append(("advance_to", t_ms))
        self.t = max(self.t, t_ms)

    def log(self, text, event=None):
        self.lines.append(text)

    def fail(self, text, event=None):
        self.failed.append(text)
        self.lines.append(text)

    def begin_step(self, step):
        pass

    def end_step(self, step):
        self.t += 10  # every step takes 10 ms here

    def alive(self, node):
        return False

    def produce(self, step, action: Produce):
        self.calls.append(("produce", action.count))
        return 2

    def corrupt(self, step, action: Corrupt):
        self.calls.append(("corrupt", action.broker, action.partition, action.at))
        return Corrupted(4, 7, 1)

    def disk_full(self, broker, for_ms):
        return f"broker {broker} cannot"

    def restart(self, node):
        self.calls.append(("restart", node))
        return "no meta.properties"

    def holds(self, cond):
        return False

    def wait_until(self, cond, timeout_ms):
        self.calls.append(("wait_until", timeout_ms))
        return True

    def observed(self, cond):
        return "leader=2"

    def __getattr__(self, name):  # crash, hold, run_for, ...: recorded as called
        return lambda *args: self.calls.append((name, *args))


def test_both_drivers_implement_every_operation_of_the_backend_protocol():
    """The simulator's run and the real-process run are ClusterBackends: every operation the interpreter
    calls exists on both, with the protocol's parameters."""
    ops = [n for n, f in inspect.getmembers(ClusterBackend, inspect.isfunction) if not n.startswith("_")]
    assert {"crash", "restart", "isolate", "hold", "produce", "wait_until", "refusals"} <= set(ops)
    for cls in (ScenarioRun, RealScenarioRun):
        for name in ops:
            assert callable(getattr(cls, name, None)), f"{cls.__name__} lacks {name}"
            want = list(inspect.signature(getattr(ClusterBackend, name)).parameters)
            assert list(inspect.signature(getattr(cls, name)).parameters) == want, (cls.__name__, name)


def test_the_interpreter_times_steps_and_gives_each_verb_its_meaning():
    """at counts from t=0, after from the previous step's end; each verb calls its backend operation; a
    refusal while running (disk_full) is a failed expectation, a restart refusal is only logged; until last."""
    b = Recorder()
    run_steps(b, parse_scenario(STORY))
    assert ("advance_to", 1000) in b.calls and ("advance_to", 1510) in b.calls and ("advance_to", 3000) in b.calls
    assert ("crash", 1, "unflushed") in b.calls and ("corrupt", 1, "t-0", "middle") in b.calls
    assert ("restart", "controller") in b.calls and ("hold", "Fetch", 0, None) in b.calls
    assert ("produce", 3) in b.calls and ("wait_until", 5000) in b.calls and ("run_for", 1000) in b.calls
    assert b.calls[-1] == ("advance_to", 20000)
    assert b.lines[0] == "step 1 (crash): broker 1 crashed (lose unflushed)"
    assert b.lines[1] == "step 2 (corrupt): flipped 1 byte(s) in broker 1's t-0 batch of offsets 4..7"
    assert b.failed == ["step 3 (disk_full): refused: broker 2 cannot",
                        "step 7 (expect): expected partition t-0: leader=0, observed leader=2"]
    assert "step 4 (restart): the controller refused to start: no meta.properties" in b.lines
    assert "step 6 (produce): 2/3 records acknowledged (acks=all) to t-0" in b.lines
