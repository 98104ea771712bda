"""The invariants a simulated scenario run checks while it goes.

:class:`OnlineChecks` checks, against the live cluster, the controller's partition state
(:func:`kraftlog.check.checkers.partition_state_violations`) and the TLA+ invariants of
:mod:`kraftlog.check.invariants` (ControllerIsrHasUpToTrueHWM, the ELR part of ValidControllerIsrAndElr,
ValidLeaderMaximalISR, LeaderHasCompleteCommittedLog, NoMetadataLogDivergence): after every controller
event that committed metadata, after every step, when a broker's registration changes and when a broker
replays metadata. Each violation is kept once, with the simulated time and the step the run was in
(``[in step 3 (crash)]``, ``[after step 3 (crash)]``), and logged in the timeline through the
:class:`~kraftlog.sim.recorder.RunRecorder`. It also samples every leader's HWM (``leader_hwms``, for
:func:`kraftlog.check.checkers.leader_hwm_regressions`). It only reads the cluster: it changes no history
digest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..check import checkers, invariants
from ..check.raft_invariants import RaftInvariantChecker
from ..protocol import messages as m
from .cluster_state import compaction_of

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..broker.partition import Partition
    from ..controller.controller import QuorumController
    from ..metadata.image import PartitionRegistration
    from ..storage.log import PartitionLog
    from .cluster import SimCluster
    from .recorder import RunRecorder

#: (broker, partition name, leader epoch, HWM, scenario ms): one per change of a leader's HWM.
LeaderHwm = tuple[int, str, int, int, int]
#: A leader's last seen [leader epoch, HWM, partition name] (None, None before the first look).
_Seen = list  # [int | None, int | None, str], mutated in place on the hot path
Observer = Callable[["SimCluster", int], None]


class OnlineChecks:
    """The invariants of one simulated run of ``sim`` (``brokers`` brokers), checked as it goes.

    ``where``: what the run is doing, for the messages (``"bootstrap"``, ``"in step 3 (crash)"``...);
    ``violations``: {finding key: message}, first finding of each key; ``leader_hwms``: every change of a
    leader's HWM; ``controller_node``: the last controller seen (its image outlives it)."""

    def __init__(self, sim: SimCluster, recorder: RunRecorder) -> None:
        self.sim = sim
        self.recorder = recorder
        self.where = "bootstrap"
        self.violations: dict[str, str] = {}
        #: Per partition name: the true HWM (offset; the TLA+ spec's inv_true_hwm, see check/invariants.py).
        self._true_hwm: dict[str, int] = {}
        #: Per partition name: [(offset, value bytes)] acknowledged to acks=all producers (inv_pos_acked).
        self._acked_at: dict[str, list[tuple[int, bytes]]] = {}
        #: Per partition name: (leader, leader epoch, incarnation) whose log was found to hold
        #: acked[:n], and n; or the same key with n = -1 once it was reported incomplete.
        self._complete_upto: dict[str, tuple[tuple[int, int, int | None], int]] = {}
        #: Per leader Partition object: [leader epoch, last HWM seen, partition name].
        self._hwm_seen: dict[Partition, _Seen] = {}
        #: Per broker: its copy of the metadata log (the records it replayed, by offset).
        self._broker_metadata: dict[int, list[object]] = {}
        self.controller_node: QuorumController | None = None
        #: (broker, base offset, records) of a MetadataFetch response being delivered
        self._metadata_pending: tuple[object, int, tuple[object, ...]] | None = None
        self._metadata_checked = 0  # controller log entries compared with the brokers' copies
        self.leader_hwms: list[LeaderHwm] = []
        #: Raft's invariants over a controller quorum's replicas (controllers and brokers)
        self.raft_checker = RaftInvariantChecker()

    # ================================================================= what the run tells
    def note_acked(self, name: str, offset: int, value: bytes) -> None:
        """An acks=all acknowledgement of ``offset`` on partition ``name``: the leader's HWM passed it (the
        true HWM is >= offset + 1), and the record must stay (LeaderHasCompleteCommittedLog)."""
        self._acked_at.setdefault(name, []).append((offset, value))
        if offset >= self._true_hwm.get(name, 0):
            self._true_hwm[name] = offset + 1

    # ================================================================= the brokers
    def broker_observer(self, broker_id: int) -> Observer:
        """The observer run after every event of broker ``broker_id`` (the simulator's hot path): it
        records each change of a leader's HWM (``leader_hwms``; the true HWM) and checks the invariants
        when the broker's registration changed (a registration answered makes it *running*).

        To stay cheap it keeps, in a closure, the partitions the broker leads with their last seen
        (leader epoch, HWM), rebuilt only when the broker's metadata image or broker epoch changed: a
        broker takes or leaves leadership only when it applies metadata, which replaces its image."""
        # the broker's image, its broker epoch, [(Partition, _hwm_seen entry)] when last looked at
        seen_image: object = None
        seen_epoch: int | None = None
        led: list[tuple[Partition, _Seen]] = []
        leader_hwms = self.leader_hwms
        true_hwm = self._true_hwm
        recorder = self.recorder

        quorum = bool(self.sim.quorum_ids)

        def observe(sim: SimCluster, node_id: int) -> None:
            nonlocal seen_image, seen_epoch, led
            node: Broker = sim.nodes[node_id]
            if node.log_lines:
                recorder.storage_lines(sim, node_id, node)
            if quorum:
                self.observe_quorum(node_id)
            if self._metadata_pending is not None:
                self._metadata_replayed(node_id, node)
            if node.image is not seen_image or node.broker_epoch != seen_epoch:
                registered = node.broker_epoch != seen_epoch
                seen_image, seen_epoch, led = node.image, node.broker_epoch, self._leading(node_id, node)
                if registered:
                    self.check_invariants()
            for p, st in led:
                hw = p.log.high_watermark
                if hw != st[1] or p.leader_epoch != st[0]:
                    st[0] = p.leader_epoch
                    st[1] = hw
                    name = st[2]
                    leader_hwms.append((node_id, name, st[0], hw, sim.now - recorder.t0))
                    if hw > true_hwm.get(name, 0):
                        true_hwm[name] = hw

        return observe

    def _leading(self, node_id: int, node: Broker) -> list[tuple[Partition, _Seen]]:
        """The partitions ``node`` leads, each with its ``_hwm_seen`` entry [leader epoch, HWM, name]; a
        leadership seen for the first time (or in a new leader epoch) records its starting HWM."""
        led = []
        for key in sorted(node.partitions):
            p = node.partitions[key]
            if not p.is_leader:
                continue
            st = self._hwm_seen.get(p)
            if st is None:
                st = self._hwm_seen[p] = [None, None, f"{key[0]}-{key[1]}"]
            if st[0] != p.leader_epoch or st[1] != p.log.high_watermark:
                st[0] = p.leader_epoch
                st[1] = p.log.high_watermark
                self.leader_hwms.append((node_id, st[2], st[0], st[1], self.sim.now - self.recorder.t0))
                if st[1] > self._true_hwm.get(st[2], 0):
                    self._true_hwm[st[2]] = st[1]
            led.append((p, st))
        return led

    def observe_metadata_fetch(self, sim: SimCluster, env: m.Envelope) -> None:
        """Before a MetadataFetch response is delivered: note its records; once the broker handled it,
        :meth:`_metadata_replayed` keeps them if the broker replayed them."""
        msg = env.message
        assert isinstance(msg, m.MetadataFetchResponse)
        if msg.records:
            self._metadata_pending = (env.dst, msg.base_offset, msg.records)

    def _metadata_replayed(self, node_id: int, node: Broker) -> None:
        """After the broker handled the noted MetadataFetch response: if it replayed the records (its image
        reached their last offset), append them to its copy of the metadata log and check
        NoMetadataLogDivergence on them."""
        assert self._metadata_pending is not None
        broker, base, records = self._metadata_pending
        self._metadata_pending = None
        if broker != node_id or node.image.offset != base + len(records) - 1:
            return  # dropped (a stale response, a gap) or replayed by another path
        copy = self._broker_metadata.setdefault(node_id, [])
        if base > len(copy):  # after a snapshot the broker loaded: the records below it are not known here
            copy.extend([None] * (base - len(copy)))
        copy[base:] = records  # a restarted broker fetches from its local metadata log's end
        ctl = self.sim.controller
        if ctl is not None:
            self._record_violations(
                invariants.metadata_log_divergence(node_id, copy, ctl.log, base, self.recorder.t()))

    # ================================================================= a controller quorum
    def observe_quorum(self, node_id: object) -> None:
        """After an event of a controller or broker of a quorum: Raft's invariants on its Raft client
        (:class:`~kraftlog.check.raft_invariants.RaftInvariantChecker`: Election Safety, Leader Completeness,
        State Machine Safety between voters and observers)."""
        node = self.sim.nodes.get(node_id)
        if node is None:
            return
        raft = node.quorum.raft if hasattr(node, "quorum") else node.loader.raft
        self._record_violations(self.raft_checker.observe(node_id, raft, self.recorder.t()))

    def final_quorum_checks(self) -> list[str]:
        """Raft's Log Matching over the running controllers' logs at the end of a run."""
        logs = [(c.node_id, c.quorum.raft.log_batches()) for c in self.sim.controllers() if c.quorum is not None]
        return [f"{message} [at the end]" for _key, message in self.raft_checker.log_matching(logs, self.recorder.t())]

    # ================================================================= the controller
    def observe_controller_log(self, ctl: QuorumController) -> None:
        """After a controller event: NoMetadataLogDivergence on the controller's new records (all of them
        when a new controller replayed its log from disk) against the brokers' copies."""
        log = ctl.log
        if ctl is not self.controller_node:
            self.controller_node = ctl
            self._metadata_checked = 0
        if len(log) > self._metadata_checked:
            self._check_metadata_logs(log, self._metadata_checked)
            self._metadata_checked = len(log)

    def _check_metadata_logs(self, log: Sequence[object], start: int) -> None:
        """NoMetadataLogDivergence from the controller's side: its records from offset ``start`` on
        against each broker's copy of the metadata log (brokers in id order)."""
        for broker in sorted(self._broker_metadata):
            copy = self._broker_metadata[broker]
            if start < len(copy):
                self._record_violations(
                    invariants.metadata_log_divergence(broker, copy, log, start, self.recorder.t()))

    # ================================================================= the invariants
    def check_invariants(self) -> None:
        """Check the invariants against the current cluster: the controller's partition state
        (checkers.partition_state_violations) and the TLA+ invariants of check/invariants.py
        (ControllerIsrHasUpToTrueHWM, the ELR part of ValidControllerIsrAndElr, ValidLeaderMaximalISR,
        LeaderHasCompleteCommittedLog). Called after every controller event that committed metadata,
        after every step, and when a broker's registration changed; reads state, changes nothing."""
        ctl = self.sim.controller
        if ctl is None:
            return
        image = ctl.committed_image
        now = self.recorder.t()
        config = self.sim.config
        found = checkers.partition_state_violations(image, now, lambda topic: image.min_isr(topic, config))
        nodes = self.sim.nodes
        brokers = image.brokers
        for key in sorted(image.partitions):
            part = image.partitions[key]
            name = f"{key[0]}-{key[1]}"
            true_hwm = self._true_hwm.get(name, 0)
            if true_hwm > 0 and (part.isr or part.elr):
                running = {}
                for b in (*part.isr, *part.elr):
                    node = nodes.get(b)
                    reg = brokers.get(b)
                    if (node is not None and reg is not None and node.broker_epoch == reg.broker_epoch
                            and not node.log_dir_offline):
                        log = node.logs.get(key)  # loaded at start: known before the partition is created
                        running[b] = log.log_end_offset if log is not None else 0
                found += invariants.isr_elr_completeness(name, part.isr, part.elr, running, true_hwm, now)
            if part.leader < 0:
                continue
            node = nodes.get(part.leader)
            if node is None:
                continue
            p = node.partitions.get(key)
            if p is not None and p.is_leader and p.leader_epoch == part.leader_epoch:  # IsNonStaleLeader
                found += invariants.leader_maximal_isr(
                    name, part.leader, p.isr, p.maximal_isr, p.pending is not None, part.isr, part.elr,
                    image.min_isr(key[0], config), now)
            acked = self._acked_at.get(name)
            reg = brokers.get(part.leader)
            if acked and reg is not None and node.broker_epoch == reg.broker_epoch and not node.log_dir_offline:
                # (a leader whose log directory is offline serves nothing until it restarts: not running)
                found += self._leader_completeness(name, key, part, node, p, acked, now)
        self._record_violations(found)

    def _leader_completeness(self, name: str, key: tuple[str, int], part: PartitionRegistration, node: Broker,
                             p: Partition | None, acked: list[tuple[int, bytes]], now: int) -> list[tuple[str, str]]:
        """LeaderHasCompleteCommittedLog for the running leader ``node`` of ``part``, incrementally: a
        leader that already leads in this epoch never truncates, so the acked records found in its log
        need not be looked up again."""
        tag = (part.leader, part.leader_epoch, self.sim.incarnation.get(part.leader))
        done = self._complete_upto.get(name)
        start = done[1] if done is not None and done[0] == tag else 0
        if start < 0 or start == len(acked):
            return []  # already reported for this leader, or nothing new
        log: PartitionLog | None = node.logs.get(key)
        if log is None:
            n, missing = len(acked), acked[start:]
        else:
            n, missing = invariants.missing_acked(acked, start, log.record_at)
            if missing and log.log_start_offset > 0:
                missing = self._not_retained(name, log, missing)
            if missing and log.config.compact:
                missing = self._not_compacted(name, log, missing)
        if missing:
            self._complete_upto[name] = (tag, -1)
            return invariants.leader_complete_log(name, part.leader, part.leader_epoch, missing, len(acked), now)
        if p is not None and p.is_leader and p.leader_epoch == part.leader_epoch:
            self._complete_upto[name] = (tag, n)
        return []

    def _not_retained(self, name: str, log: PartitionLog, missing: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """``missing`` without the records below the log start offset that retention was entitled to delete by
        now (:func:`kraftlog.check.checkers.retention_allowed`, the rule the final verdict applies)."""
        start = log.log_start_offset
        r: checkers.Retention = {
            "log_start": start, "retention_ms": log.config.retention_ms,
            "retention_bytes": log.config.retention_bytes, "end_ms": self.sim.now,
            "batches": [(b.base_offset, b.size_bytes) for b in log.batches() if b.next_offset > start],
            "acked_at": {}}
        acked_at = self.recorder.acked_at
        out = []
        for offset, value in missing:
            at = acked_at.get((name, value.decode() if isinstance(value, bytes) else value))
            if offset < start and at is not None and checkers.retention_allowed(r, *at):
                continue
            out.append((offset, value))
        return out

    def _not_compacted(self, name: str, log: PartitionLog, missing: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """``missing`` without the records the log cleaner was entitled to remove (a later record with the same key
        is in the log: :func:`kraftlog.check.checkers.compaction_allowed`, the rule the final verdict applies)."""
        rec = self.recorder
        c = compaction_of(log, name, rec.keys, rec.acked_at, rec.tombstones, self.sim.now, log.log_end_offset)
        return [(offset, value) for offset, value in missing
                if not checkers.compaction_allowed(c, offset, value.decode() if isinstance(value, bytes) else value)]

    def _record_violations(self, found: list[tuple[str, str]]) -> None:
        """Keep the first finding of each key, with the step the run was in; log it in the timeline."""
        for key, message in found:
            if key not in self.violations:
                message = f"{message} [{self.where}]"
                self.violations[key] = message
                shown = message.split(" ", 1)[1]
                self.recorder.log("invariant violated: " + shown, {"kind": "invariant", "name": key.split(" ", 1)[0],
                                                                   "key": key, "message": shown})
