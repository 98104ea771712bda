"""One step interpreter for every driver: a scenario's steps run over a :class:`ClusterBackend`.

The simulator's run (:class:`kraftlog.sim.runner.ScenarioRun`) and the real-process run
(:class:`kraftlog.net.real_scenario.RealScenarioRun`) are backends: they say how to crash a node, cut a
link, produce or read the controller's state; :func:`run_steps` says what each verb means, in one place —
when a step starts (``at``/``after``), what it does, the timeline line and event it leaves, when it is a
failed expectation (a ``wait_until`` that timed out, an ``expect`` that did not hold, a step the backend
refused while running). This module imports no driver.

A backend refuses what it cannot honour twice over: before anything starts, :meth:`ClusterBackend.refusals`
names each step (or setting) it cannot run, one line each (``kraftlog scenario run --real`` exits 2 with
them); while running, an operation returns a one-line reason instead of acting (a ``disk_full`` of a stopped
process, a ``corrupt`` of a running broker), which the interpreter logs as ``step N (verb): refused: ...``
and counts as a failed expectation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kraftlog.protocol.errors import Errors

from .model import ACTIVE_CONTROLLER, CONTROLLER, Condition, Node, Scenario, is_controller
from .result import Event
from .steps import (
    AlterConfig,
    Corrupt,
    Crash,
    Cut,
    DeleteTopic,
    DiskFull,
    Elect,
    Expect,
    Heal,
    Hold,
    Isolate,
    Partition,
    Pause,
    Produce,
    Release,
    Restart,
    RestartClient,
    RestartController,
    Resume,
    RunFor,
    Shutdown,
    Step,
    WaitUntil,
)

__all__ = ["ACKS", "ClusterBackend", "Corrupted", "condition_data", "describe_condition", "node_words",
           "plain", "run_step", "run_steps", "step_event"]

#: A scenario's ``acks`` as the producer's acks (Kafka's -1 for ``all``).
ACKS = {"all": -1, "1": 1, "0": 0}


def node_words(node: Node) -> str:
    """``broker N``, ``the controller`` or ``controller N`` (a quorum's), as the timeline names a node."""
    if node == CONTROLLER:
        return "the controller"
    if node == ACTIVE_CONTROLLER:
        return "the active controller"
    return f"controller {node}" if is_controller(node) else f"broker {node}"


def _node(node: Node | None) -> str:
    return "*" if node is None else str(node)


def plain(value: object) -> object:
    """A step argument as JSON data: tuples as lists, sets as sorted lists (dict keys kept)."""
    if isinstance(value, (frozenset, set)):
        return sorted(value, key=str)
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def condition_data(cond: Condition) -> dict[str, object]:
    """A ``wait_until``/``expect`` condition as data, shaped like the scenario file's:
    ``{"partition": "t-0", "leader": 1, "isr": [0, 1]}`` or ``{"broker": 1, "fenced": True}``
    (``leader`` None is ``none``)."""
    return {cond.kind: cond.target, **{k: plain(v) for k, v in cond.checks.items()}}


def describe_condition(cond: Condition) -> str:
    """A condition as the timeline states it: ``partition t-0: leader=1, isr=[0, 1]``."""
    checks = ", ".join(f"{k}={sorted(v) if isinstance(v, frozenset) else v}" for k, v in cond.checks.items())
    return f"{cond.kind} {cond.target}: {checks}"


def step_event(step: Step) -> Event:
    """The step's event (``kind`` ``step``, see :data:`kraftlog.scenario.result.EVENT_KINDS`): its index, verb and
    arguments as data (:attr:`Step.args`; a condition as :func:`condition_data`)."""
    args = step.args
    ev: Event = {"kind": "step", "index": step.index, "verb": step.verb,
                 **{k: plain(v) for k, v in args.items() if k != "condition"}}
    if isinstance(step.action, (WaitUntil, Expect)):  # the actions with a condition
        ev["condition"] = condition_data(step.action.condition)
    return ev


@dataclass(frozen=True, slots=True)
class Corrupted:
    """What a ``corrupt`` step damaged: the batch of offsets ``base_offset``..``last_offset``, ``flipped``
    bytes of it; ``detail`` is appended to the line (e.g. the byte positions)."""

    base_offset: int
    last_offset: int
    flipped: int
    detail: str = ""


class ClusterBackend(Protocol):
    """A cluster the interpreter drives: the simulator's or real processes. Times are scenario ms (0 is the
    moment the cluster was ready); nodes are broker ids or ``"controller"``. Every fault operation returns
    once the fault is in place; the ones returning ``str | None`` return a one-line reason when they could
    not act (None when they did)."""

    def refusals(self, scenario: Scenario) -> list[str]:
        """What this backend cannot honour in ``scenario``, one line each naming the step or setting."""

    def now_ms(self) -> int:
        """The scenario time now (ms)."""

    def advance_to(self, t_ms: int) -> None:
        """Let the cluster run until scenario time ``t_ms`` (at once when it is past)."""

    def log(self, text: str, event: Event | None = None) -> None:
        """A timeline line, and the same story as data (``event``, without its time) when given."""

    def fail(self, text: str, event: Event | None = None) -> None:
        """A failed expectation: recorded in the verdict and logged as :meth:`log` does."""

    def begin_step(self, step: Step) -> None:
        """``step`` is about to run (for the backend's own bookkeeping)."""

    def end_step(self, step: Step) -> None:
        """``step`` ran (the simulator checks its invariants and records the step in its history)."""

    def alive(self, node: Node) -> bool:
        """Whether ``node``'s process runs."""

    def produce(self, step: Step, action: Produce) -> int:
        """Send ``action.count`` records ``s<index>-<i>`` with a new producer and wait (up to its timeout)
        until they are answered; returns how many were acknowledged."""

    def crash(self, node: Node, lose: str) -> None:
        """Kill ``node``'s process; ``lose`` (none, unflushed, all) applies to its disk."""

    def shutdown(self, broker: int) -> None:
        """A controlled shutdown, waited for."""

    def restart(self, node: Node) -> str | None:
        """Start ``node`` again; the reason it refused to start, or None."""

    def restart_controller(self) -> str | None:
        """Controller failover; the reason the controller refused to start again, or None."""

    def pause(self, node: Node) -> str | None:
        """Freeze the running ``node`` (no ticks, no deliveries); why not, when it is not running."""

    def resume(self, node: Node) -> str | None:
        """Unfreeze the paused ``node``; why not, when it is not paused."""

    def disk_full(self, broker: int, for_ms: int) -> str | None: ...

    def restart_client(self, client: str) -> str | None:
        """Kill the consumer ``client`` and start a new one of its group; why not, when it cannot."""

    def corrupt(self, step: Step, action: Corrupt) -> Corrupted | None:
        """Flip bytes in the stopped broker's batch :func:`~kraftlog.scenario.corrupt_target` picks; None
        when no batch is there."""

    def isolate(self, nodes: tuple[Node, ...]) -> None:
        """Cut every link between each of ``nodes`` and every other node."""

    def partition(self, groups: tuple[tuple[Node, ...], ...]) -> None:
        """Only nodes of the same group can talk."""

    def cut(self, src: Node, dst: Node) -> None:
        """Drop messages ``src`` -> ``dst``."""

    def heal(self, nodes: tuple[Node, ...] | None) -> None:
        """Restore the links of ``nodes``, or every link."""

    def hold(self, api: str | None, src: Node | None, dst: Node | None) -> None:
        """Hold the matching messages (None: any) in the network."""

    def release(self, api: str | None, src: Node | None, dst: Node | None) -> None:
        """Stop holding the matching messages and deliver the held ones."""

    def alter_config(self, action: AlterConfig) -> int:
        """IncrementalAlterConfigs; the error code (REQUEST_TIMED_OUT when unanswered)."""

    def delete_topic(self, action: DeleteTopic) -> int:
        """DeleteTopics; the error code (REQUEST_TIMED_OUT when unanswered)."""

    def elect(self, action: Elect) -> int:
        """ElectLeaders; the error code (REQUEST_TIMED_OUT when unanswered)."""

    def holds(self, cond: Condition) -> bool: ...

    def wait_until(self, cond: Condition, timeout_ms: int) -> bool:
        """Run until ``cond`` holds (True) or ``timeout_ms`` passed (False)."""

    def observed(self, cond: Condition) -> str:
        """What the condition's target looks like now, for a failed expectation's message."""

    def run_for(self, duration_ms: int) -> None: ...


def run_steps(backend: ClusterBackend, scenario: Scenario) -> None:
    """Run ``scenario``'s steps on ``backend`` (the cluster is ready, its clients started): each at its
    ``at`` (scenario time) or ``after`` the end of the previous step, then until ``until`` when given."""
    prev_end = backend.now_ms()
    for step in scenario.steps:
        start = step.at_ms if step.at_ms is not None else prev_end + step.after_ms
        backend.advance_to(start)
        backend.begin_step(step)
        run_step(backend, step)
        backend.end_step(step)
        prev_end = backend.now_ms()
    if scenario.until_ms is not None:
        backend.advance_to(scenario.until_ms)


def run_step(backend: ClusterBackend, step: Step) -> None:
    """Run one step on ``backend``: the fault or request its verb means, the timeline line and event it
    leaves (SCENARIOS.md's verb table), and its failed expectation when it has one."""
    b = backend
    label = step.label
    ev = step_event(step)
    match step.action:
        case Produce(topic, partition, count, acks) as action:
            got = b.produce(step, action)
            b.log(f"{label}: {got}/{count} records acknowledged (acks={acks}) to {topic}-{partition}",
                  {**ev, "acked": got})
        case Crash(node, lose):
            b.crash(node, lose)
            b.log(f"{label}: {node_words(node)} crashed (lose {lose})", ev)
        case Shutdown(broker):
            started = b.now_ms()
            b.shutdown(broker)
            b.log(f"{label}: broker {broker} shut down cleanly", {**ev, "started_t": started})
        case Restart(node):
            _restarted(b, label, node, b.restart(node), f"{node_words(node)} restarted", ev)
        case RestartController():
            _restarted(b, label, CONTROLLER, b.restart_controller(),
                       "controller failover (metadata log replayed)", ev)
        case Pause(node):
            _done(b, label, b.pause(node), f"{node_words(node)} paused (no ticks, messages to it wait)", ev)
        case Resume(node):
            _done(b, label, b.resume(node), f"{node_words(node)} resumed", ev)
        case RestartClient(client):
            _done(b, label, b.restart_client(client),
                  f"consumer {client} killed and started again (it resumes from its group's committed offsets)", ev)
        case DiskFull(broker, for_ms):
            _done(b, label, b.disk_full(broker, for_ms),
                  f"broker {broker}'s file system is full for {for_ms}ms (every write fails with ENOSPC)", ev)
        case Corrupt(broker, partition, at) as action:
            if b.alive(broker):
                b.fail(f"{label}: refused: broker {broker} is running; corrupt needs it stopped (crash or "
                       "shutdown it first)", {**ev, "done": False})
                return
            done = b.corrupt(step, action)
            if done is None:
                b.log(f"{label}: broker {broker} holds no batch of {partition} at {at}: nothing corrupted",
                      {**ev, "done": False})
            else:
                b.log(f"{label}: flipped {done.flipped} byte(s) in broker {broker}'s {partition} batch of offsets "
                      f"{done.base_offset}..{done.last_offset}{done.detail}",
                      {**ev, "done": True, "base_offset": done.base_offset, "last_offset": done.last_offset})
        case Isolate(nodes):
            b.isolate(nodes)
            b.log(f"{label}: isolated {list(nodes)}", ev)
        case Partition(groups):
            b.partition(groups)
            b.log(f"{label}: network partitioned into {[list(g) for g in groups]}", ev)
        case Cut(src, dst):
            b.cut(src, dst)
            b.log(f"{label}: cut {src} -> {dst}", ev)
        case Heal(nodes):
            b.heal(nodes)
            b.log(f"{label}: healed {list(nodes) if nodes is not None else 'all links'}", ev)
        case Hold(api, src, dst):
            b.hold(api, src, dst)
            b.log(f"{label}: holding {api or 'all'} messages {_node(src)} -> {_node(dst)}", ev)
        case Release(api, src, dst):
            b.release(api, src, dst)
            b.log(f"{label}: released {api or 'all'} messages {_node(src)} -> {_node(dst)}", ev)
        case AlterConfig(topic, config) as action:
            err = _error_name(b.alter_config(action))
            b.log(f"{label}: {topic or 'cluster'} config {config} -> {err}", {**ev, "error": err})
        case DeleteTopic(topic) as action:
            err = _error_name(b.delete_topic(action))
            b.log(f"{label}: delete topic {topic} -> {err}", {**ev, "error": err})
        case Elect(partition, kind) as action:
            err = _error_name(b.elect(action))
            b.log(f"{label}: {kind} election on {partition} -> {err}", {**ev, "error": err})
        case WaitUntil(cond, timeout_ms):
            if b.wait_until(cond, timeout_ms):
                b.log(f"{label}: {describe_condition(cond)} holds", {**ev, "holds": True})
            else:
                observed = b.observed(cond)
                b.fail(f"{label}: timed out after {timeout_ms}ms waiting for {describe_condition(cond)} "
                       f"(observed {observed})", {**ev, "holds": False, "timed_out": True, "observed": observed})
        case Expect(cond):
            if b.holds(cond):
                b.log(f"{label}: {describe_condition(cond)} holds", {**ev, "holds": True})
            else:
                observed = b.observed(cond)
                b.fail(f"{label}: expected {describe_condition(cond)}, observed {observed}",
                       {**ev, "holds": False, "observed": observed})
        case RunFor(duration_ms):
            b.run_for(duration_ms)
        case _:  # pragma: no cover - the parser builds only the verbs above
            raise ValueError(f"{label}: no interpretation for {step.action!r}")


def _done(b: ClusterBackend, label: str, refused: str | None, done: str, ev: Event) -> None:
    """A fault's line: ``done``, or its refusal while running (a failed expectation)."""
    if refused is None:
        b.log(f"{label}: {done}", ev)
    else:
        b.fail(f"{label}: refused: {refused}", {**ev, "done": False})


def _restarted(b: ClusterBackend, label: str, node: Node, refused: str | None, done: str, ev: Event) -> None:
    """A restart's line: ``done``, or the node's refusal to start (it stays down; not a failed expectation)."""
    if refused is None:
        b.log(f"{label}: {done}", ev)
    else:
        b.log(f"{label}: {node_words(node)} refused to start: {refused}", {**ev, "refused": refused})


def _error_name(code: int) -> str:
    return Errors(code).name
