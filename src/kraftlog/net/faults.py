"""Faults on a chaos-mode cluster's real processes, as scenario verbs: the process, disk and link operations
of :class:`kraftlog.scenario.interpreter.ClusterBackend`, by PID and over the nodes' control channels
(:mod:`kraftlog.net.cluster`). Shared by ``kraftlog scenario run --real``
(:class:`kraftlog.net.real_scenario.RealScenarioRun`) and ``kraftlog chaos`` (:mod:`kraftlog.net.chaos`),
whose fault plans are scenario steps: one fault vocabulary, one way to inject each fault.

With a controller quorum (``cluster up --controllers N``), a fault on ``"controller"`` hits the *active* voter (the
one whose run file says so, when the fault is injected: Kafka's failover tests kill the active controller), and
its heal restarts, resumes or reconnects that same voter; a partition from "the controller" is one from every
voter.
"""

from __future__ import annotations

import os
import shutil
from random import Random

from ..controller.controller import CONTROLLER
from ..scenario import Corrupt, Step, corrupt_target
from ..scenario.interpreter import Corrupted, node_words
from ..scenario.model import ACTIVE_CONTROLLER
from . import cluster as cl
from .node import node_name, quorum_voters

__all__ = ["ProcessFaults"]


class ProcessFaults:
    """The fault operations on the cluster in ``directory`` (chaos mode); ``seed`` draws the bytes a
    ``corrupt`` flips. ``paused``: the nodes a ``pause`` stopped (SIGSTOP) and no ``resume`` or ``crash``
    has ended. Operations returning ``str | None`` give a one-line reason when they could not act."""

    def __init__(self, directory: str, seed: int) -> None:
        self.directory = directory
        self.seed = seed
        self.paused: set = set()
        #: the voter a fault on "controller" hit last (a quorum run), which its heal brings back
        self.hit_voter: int | None = None

    def _voters(self) -> list[int]:
        return quorum_voters(cl.load(self.directory))

    def _target(self, node):
        """The process a fault on ``node`` hits: a quorum's active voter for ``"controller"`` or ``"active"`` (a
        story's ``controller: active``; any running voter while none is active), ``node`` itself otherwise."""
        if node not in (CONTROLLER, ACTIVE_CONTROLLER) or not self._voters():
            return node
        voter = cl.active_controller(self.directory)
        self.hit_voter = voter
        return voter

    def _healed(self, node):
        """The process a heal of ``node`` concerns: the voter the last fault on ``"controller"`` or ``"active"``
        hit."""
        if node in (CONTROLLER, ACTIVE_CONTROLLER) and self.hit_voter is not None:
            return self.hit_voter
        return node

    def alive(self, node) -> bool:
        info = cl.load(self.directory)
        if node == ACTIVE_CONTROLLER:
            node = self._healed(node) if self.hit_voter is not None else cl.active_controller(self.directory)
        if node == CONTROLLER and quorum_voters(info):
            return all(cl.node_alive(info, v) for v in quorum_voters(info))
        return cl.node_alive(info, node)

    def crash(self, node, lose: str) -> None:
        """SIGKILL by PID; ``unflushed``: every file back to its last fsync; ``all``: the data directory gone."""
        node = self._target(node)
        cl.kill_node(self.directory, node)
        self.paused.discard(node)
        root = os.path.join(self.directory, node_name(node))
        if lose == "unflushed":
            from .shadow import restore_fsynced
            restore_fsynced(root)
        elif lose == "all":
            shutil.rmtree(root, ignore_errors=True)

    def shutdown(self, broker: int) -> None:
        cl.stop_broker(self.directory, broker)

    def restart(self, node) -> str | None:
        try:
            voters = self._voters()
            if node in (CONTROLLER, ACTIVE_CONTROLLER) and voters:
                for voter in ([self._healed(node)] if self.hit_voter is not None else voters):
                    if not cl.node_alive(cl.load(self.directory), voter):
                        self._reformat_lost_voter(voter)
                        cl.start_controller(self.directory, voter)
            elif node in voters:  # a story's `restart: {controller: 3001}`
                self._reformat_lost_voter(node)
                cl.start_controller(self.directory, node)
            elif node == CONTROLLER:
                cl.start_controller(self.directory)
            else:
                cl.start_broker(self.directory, node, wait=False)
        except cl.ClusterError as exc:
            return str(exc)
        return None

    def _reformat_lost_voter(self, voter: int) -> None:
        """The operator's answer to a voter's lost directory, as the simulator's restart of a blank disk: it is
        formatted again (a new directory id, no bootstrap checkpoint: ``storage format --no-initial-controllers``).
        At kraft.version 1 (KIP-853) the voter then rejoins by auto-join (``controller.quorum.auto.join.enable``)
        with its new directory; at kraft.version 0 it comes back as a static voter with an empty log, the unsafe
        case KIP-853 fixes (``quorum-static-voter-disk-loss.yaml``; chaos plans never lose a static voter's
        disk). Nothing is done to a directory that is still formatted."""
        if not os.path.exists(os.path.join(self.directory, node_name(voter), "meta.properties")):
            cl.format_node(self.directory, voter, cl.load(self.directory))

    def restart_controller(self) -> str | None:
        cl.kill_node(self.directory, self._target(CONTROLLER))
        return self.restart(CONTROLLER)

    def pause(self, node) -> str | None:
        """SIGSTOP by PID (:func:`kraftlog.net.cluster.pause`, as ``kraftlog chaos`` pauses a node)."""
        if not cl.pause(self.directory, self._target(node)):
            return f"{node_words(node)} is not running"
        self.paused.add(node)
        return None

    def resume(self, node) -> str | None:
        """SIGCONT by PID."""
        if node not in self.paused:
            return f"{node_words(node)} is not paused"
        self.paused.discard(node)
        cl.resume(self.directory, self._healed(node))
        return None

    def disk_full(self, broker: int, for_ms: int) -> str | None:
        if not self.alive(broker):
            return (f"broker {broker} is not running: with --real a full disk is injected into the broker's "
                    "process (its FileDisk), so it must run")
        cl.control(self.directory, broker, {"cmd": "disk_full", "for_ms": for_ms})
        return None

    def corrupt(self, step: Step, action: Corrupt) -> Corrupted | None:
        """Flip bytes in one batch of the stopped broker's segment file (the simulator's rule for which
        batch: :func:`~kraftlog.scenario.corrupt_target`; the bytes from the run's seed)."""
        from ..storage.segment import base_of
        from .segment import corrupt_segment, segment_batches
        topic, _, idx = action.partition.rpartition("-")
        part = os.path.join(self.directory, node_name(action.broker), "data", f"{topic}-{idx}")
        names = sorted(n for n in os.listdir(part) if base_of(n) is not None) if os.path.isdir(part) else []
        located = [(os.path.join(part, n), span) for n in names for span in segment_batches(os.path.join(part, n))]
        target = corrupt_target([span for _path, span in located], action.at)
        if target is None:
            return None
        path, span = located[target[0]]
        flipped = corrupt_segment(path, span, action.bytes, Random(f"corrupt:{self.seed}:{step.index}"))
        return Corrupted(span.base_offset, span.next_offset - 1, len(flipped), f" (bytes {flipped})")

    def _links(self, verb: str, **fields) -> None:
        """A link-filter command to every node (the simulator's rules, :mod:`kraftlog.links`)."""
        cl.control_all(self.directory, {"cmd": verb, **{k: v for k, v in fields.items() if v is not None}})

    def isolate(self, nodes: tuple) -> None:
        self._links("isolate", nodes=[self._target(n) for n in nodes])

    def partition(self, groups: tuple) -> None:
        voters = self._voters()
        expanded = [[v for n in g for v in (voters if n == CONTROLLER and voters else [self._target(n)])]
                    for g in groups]
        self._links("partition", groups=expanded)

    def cut(self, src, dst) -> None:
        self._links("cut", **{"from": self._target(src), "to": self._target(dst)})

    def heal(self, nodes: tuple | None) -> None:
        self._links("heal", nodes=None if nodes is None else [self._healed(n) for n in nodes])

    def hold(self, api: str | None, src, dst) -> None:
        self._links("hold", **{"api": api, "from": src, "to": dst})

    def release(self, api: str | None, src, dst) -> None:
        self._links("release", **{"api": api, "from": src, "to": dst})
