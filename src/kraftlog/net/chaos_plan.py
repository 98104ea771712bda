"""``kraftlog chaos``'s fault plan: a seed's random faults (:func:`plan_faults`, drawn from
``random.Random(f"chaos:{seed}")`` only), each as the scenario steps that inject and heal it
(:func:`fault_steps`: one fault vocabulary with ``scenario run --real``), and the whole plan as steps
(:func:`plan_steps`, ``kraftlog chaos --dry-run``). Pure: no process, no clock. The run that plays it is
:mod:`kraftlog.net.chaos`.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from ..controller.controller import CONTROLLER
from ..scenario import (
    Corrupt,
    Crash,
    Cut,
    DiskFull,
    Heal,
    Isolate,
    Partition,
    Pause,
    Restart,
    Resume,
    Shutdown,
    Step,
)
from .node import node_name

__all__ = ["Fault", "plan_faults", "fault_steps", "plan_steps", "FAULT_KINDS", "QUORUM_FAULT_KINDS", "UNCLEAN",
           "DYNAMIC_QUORUM_FAULT_KINDS",
           "STORIES", "TOPIC",
           "RECOVERY_WAIT_S", "STEADY_S"]

#: The topic every client writes to and reads from.
TOPIC = "chaos"
#: The fault kinds of a random plan, with their weights.
FAULT_KINDS = {"kill": 2.0, "pause": 2.0, "shutdown": 1.5, "lose_unflushed": 1.5, "isolate": 2.0, "cut": 1.0,
               "partition": 1.0, "controller_kill": 0.7, "disk_full": 1.0, "corrupt": 1.0}
#: The fault kinds of a random plan on a controller quorum (``--controllers`` > 1): the same, and the active
#: controller killed, paused (SIGSTOP: a deposed leader that comes back) or isolated (check-quorum) as often as a
#: broker is (a fault on "the controller" hits the active voter: :mod:`kraftlog.net.faults`).
QUORUM_FAULT_KINDS = {**FAULT_KINDS, "controller_kill": 2.0, "controller_pause": 1.5, "controller_isolate": 1.5}
#: The fault kinds of a random plan on a kraft.version 1 quorum (``--kraft-version 1``, KIP-853): the same, and the
#: active controller's directory lost (SIGKILL, the directory deleted, formatted again, restarted: it rejoins the
#: voters with a new directory id).
DYNAMIC_QUORUM_FAULT_KINDS = {**QUORUM_FAULT_KINDS, "controller_disk_loss": 1.5}
#: Faults after which the broker restarted as after an unclean shutdown and may have lost data (KIP-966:
#: it leaves the ELR): a crash, and a corrupted log (the fault budget counts both as data-losing; a full
#: disk loses nothing acknowledged and counts as none).
UNCLEAN = ("kill", "lose_unflushed", "corrupt")
#: Pinned fault sequences (``--story``).
STORIES = ("random", "last-replica-standing")
#: How long (s) the run waits after a heal for every ISR to be complete before the next fault.
RECOVERY_WAIT_S = 30.0
#: Seconds of steady traffic before the first fault.
STEADY_S = 5.0


@dataclass
class Fault:
    """One fault: ``kind`` (a key of :data:`FAULT_KINDS`) on ``node`` (a broker id; ``"controller"``
    for controller_kill), ``peer`` (the other end of a ``cut``; the other group of a ``partition`` is
    everyone else), held ``hold_ms`` ms then healed. ``gap_ms``: the pause after the recovery before the
    next fault. Filled while the run goes (ms from cluster ready): ``at_ms``, ``healed_ms``,
    ``recovered_ms`` (every ISR complete again; None if not within RECOVERY_WAIT_S), ``detail``."""

    kind: str
    node: object
    hold_ms: int
    gap_ms: int
    peer: object = None
    at_ms: int | None = None
    healed_ms: int | None = None
    recovered_ms: int | None = None
    detail: str = ""

    def describe(self) -> str:
        who = node_name(self.node)
        if self.kind == "cut":
            return f"cut {who} -> {node_name(self.peer)}"
        if self.kind == "partition":
            return f"partition {who} from the rest"
        return f"{self.kind} {who}"


def plan_faults(seed: int, brokers: int, count: int = 64, kinds: tuple[str, ...] | None = None,
                controllers: int = 1, kraft_version: int = 0) -> list[Fault]:
    """The first ``count`` faults of seed ``seed``'s random plan (the run takes as many as its duration
    allows): drawn from ``Random(f"chaos:{seed}")`` only, so the same seed and cluster size give the
    same faults, in the same order, with the same holds and gaps (ms). ``kinds``: draw only these (keys of
    :data:`QUORUM_FAULT_KINDS`; ValueError for another); None: all of :data:`FAULT_KINDS`, or of
    :data:`QUORUM_FAULT_KINDS` with ``controllers`` > 1 (a quorum), of :data:`DYNAMIC_QUORUM_FAULT_KINDS` with
    ``kraft_version`` 1 too (``controller_disk_loss`` needs it: ValueError otherwise)."""
    rng = Random(f"chaos:{seed}")
    table = (DYNAMIC_QUORUM_FAULT_KINDS if kraft_version == 1 else QUORUM_FAULT_KINDS) if controllers > 1 \
        else FAULT_KINDS
    if kinds is not None:
        unknown = sorted(set(kinds) - set(DYNAMIC_QUORUM_FAULT_KINDS))
        if unknown or not kinds:
            raise ValueError(f"unknown fault kind(s) {', '.join(unknown) or '(none given)'} "
                             f"(expected some of: {', '.join(sorted(DYNAMIC_QUORUM_FAULT_KINDS))})")
        if "controller_disk_loss" in kinds and table is not DYNAMIC_QUORUM_FAULT_KINDS:
            raise ValueError("controller_disk_loss needs a kraft.version 1 quorum (--controllers 3 --kraft-version 1):"
                             " a static voter that lost its disk must not come back")
    names = sorted(table if kinds is None else set(kinds))
    weights = [table.get(k, DYNAMIC_QUORUM_FAULT_KINDS[k]) for k in names]
    out = []
    for _ in range(count):
        kind = rng.choices(names, weights)[0]
        if brokers < 2 and kind in ("cut", "partition"):
            kind = "isolate" if "isolate" in names else "pause"
        node = CONTROLLER if kind.startswith("controller_") else rng.randrange(brokers)
        peer = None
        if kind == "cut":
            others = [b for b in range(brokers) if b != node] + [CONTROLLER]
            peer = others[rng.randrange(len(others))]
        out.append(Fault(kind, node, hold_ms=rng.randint(3000, 10000), gap_ms=rng.randint(2000, 5000), peer=peer))
    return out


def fault_steps(f: Fault, brokers: int, partitions: int, seed: int, number: int) -> tuple[tuple, tuple]:
    """Fault ``f`` as scenario actions (:mod:`kraftlog.scenario.steps`, one fault vocabulary): the ones that
    inject it and the ones that heal it, run by the scenario interpreter. ``number``: the fault's place in
    the plan (0-based), from which a ``corrupt`` draws its partition of :data:`TOPIC` (Random of the seed and
    ``number`` only: the plan's own draws are unchanged).

    kill → crash (lose none), restart; controller_kill → the same on the controller; controller_disk_loss → crash
    (lose all) the controller, restart it (its directory formatted again); controller_pause → pause,
    resume the controller; controller_isolate → isolate the controller, heal; lose_unflushed →
    crash (lose unflushed), restart; pause → pause, resume; shutdown → shutdown, restart; isolate →
    isolate, heal; cut → cut, heal; partition → partition ([node] from the rest), heal; disk_full →
    disk_full for the hold, then an operator's restart (shutdown, restart); corrupt → shutdown, corrupt (the
    middle batch, 1 byte), restart."""
    node = f.node
    match f.kind:
        case "kill" | "controller_kill":
            return (Crash(node, "none"),), (Restart(node),)
        case "controller_disk_loss":  # the restart formats the lost directory again (ProcessFaults.restart)
            return (Crash(node, "all"),), (Restart(node),)
        case "lose_unflushed":
            return (Crash(node, "unflushed"),), (Restart(node),)
        case "pause" | "controller_pause":
            return (Pause(node),), (Resume(node),)
        case "shutdown":
            return (Shutdown(node),), (Restart(node),)
        case "isolate" | "controller_isolate":
            return (Isolate((node,)),), (Heal(None),)
        case "cut":
            return (Cut(node, f.peer),), (Heal(None),)
        case "partition":
            rest = tuple(b for b in range(brokers) if b != node) + (CONTROLLER,)
            return (Partition(((node,), rest)),), (Heal(None),)
        case "disk_full":
            return (DiskFull(node, max(1, f.hold_ms)),), (Shutdown(node), Restart(node))
        case "corrupt":
            p = Random(f"chaos:{seed}:corrupt:{number}").randrange(partitions)
            return (Shutdown(node), Corrupt(node, f"{TOPIC}-{p}", "middle", 1)), (Restart(node),)
    raise ValueError(f"unknown fault kind {f.kind!r}")


def plan_steps(seed: int, brokers: int, partitions: int = 3, duration_s: float = 120.0,
               kinds: tuple[str, ...] | None = None, controllers: int = 1, kraft_version: int = 0) -> list[Step]:
    """Seed ``seed``'s random plan as scenario steps (what ``kraftlog chaos --dry-run`` prints): the first
    fault at :data:`STEADY_S`, each fault's heal ``after`` its hold, the next fault ``after`` its gap, as
    many faults as fit in ``duration_s`` when every recovery is instant. A run also waits, after each heal,
    until every ISR is complete (at most :data:`RECOVERY_WAIT_S`): its faults start later than here, and
    fewer may fit."""
    steps: list[Step] = []
    t_ms, end_ms, gap_ms = int(STEADY_S * 1000), int(duration_s * 1000), 0
    for number, f in enumerate(plan_faults(seed, brokers, kinds=kinds, controllers=controllers,
                                           kraft_version=kraft_version)):
        if t_ms + f.hold_ms + 1000 > end_ms:
            break
        inject, heal = fault_steps(f, brokers, partitions, seed, number)
        for i, action in enumerate(inject):  # the first fault at STEADY_S, each next one after the gap
            at_ms, after_ms = (None, 0) if i else ((None, gap_ms) if steps else (t_ms, 0))
            steps.append(Step(len(steps) + 1, 0, at_ms, after_ms, action))
        for i, action in enumerate(heal):
            steps.append(Step(len(steps) + 1, 0, None, 0 if i else f.hold_ms, action))
        t_ms, gap_ms = t_ms + f.hold_ms + f.gap_ms, f.gap_ms
    return steps
