"""The scenario runner: replays a scenario file (SCENARIOS.md) in the simulator and returns its verdict.

Scenario time 0 is the moment the cluster is ready: every broker registered and unfenced, every topic
created, every partition with a leader and a full ISR. ``at`` times are measured from there.

Invariants are checked while the run goes (``invariant_violations``): after every controller event that
committed metadata, after every step, when a broker's registration changes and when a broker replays
metadata — the controller's partition state (:mod:`kraftlog.check.checkers`) and the TLA+ invariants of
:mod:`kraftlog.check.invariants`. Each violation is reported once, with its simulated time and the step
the run was in (``[in step 3 (crash)]``, ``[after step 3 (crash)]``), and logged in the timeline. Observers
only read the cluster: they change no history digest.

Beside the readable timeline the run keeps the same story as data, ``RunResult.events`` (:data:`~kraftlog.scenario.result.EVENT_KINDS`;
:meth:`ScenarioRun._log` records a line and its event at the same moment, with the same time): the campaign
report (:mod:`kraftlog.report.plots`) draws its timeline from them, never from the timeline's wording.
"""

from __future__ import annotations

import gc
import random
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..check import checkers, invariants
from ..client.admin import Admin
from ..client.consumer import Consumer, LogTruncationError, OffsetOutOfRangeError
from ..client.producer import Producer
from ..controller.controller import CONTROLLER
from ..metadata.image import MetadataImage
from ..metadata.records import (
    RECOVERING, BrokerRegistrationChangeRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord,
)
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..level import DEFAULT, Level
from ..broker.broker import LOG_DIR
from ..storage.log import SEGMENT_FILE
from .cluster import SimCluster
from ..scenario import Condition, Corrupt, Produce, Scenario, Step, configs_at_level, corrupt_target
from ..scenario.interpreter import ACKS, Corrupted, node_words, run_steps
from ..scenario.result import RunResult
from ..verdict import is_safe

BOOTSTRAP_TIMEOUT_MS = 60000
SHUTDOWN_WAIT_MS = 35000
_ACKS_LABEL = {-1: "all", 1: "1", 0: "0"}
NONE = Errors.NONE


@contextmanager
def cyclic_gc_paused():
    """Pause CPython's cyclic garbage collector inside the block, restoring its state after it.

    A run allocates millions of short-lived messages and keeps a growing history; the cyclic collector
    keeps scanning them and finds nothing to free: reference counting frees every message, and a run
    leaves almost no reference cycles (measured: none in a fault-free run, about 35 objects when a
    node is restarted). Pausing it makes benchmarks/sim_speed.py about 10% faster in wall time. A
    driver concern: the sans-I/O core never touches the GC."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _leader(leader: int) -> int | None:
    return leader if leader >= 0 else None




class ScenarioRun:
    """One run of ``scenario`` at ``level`` with ``seed``; ``run()`` returns a RunResult."""

    def __init__(self, scenario: Scenario, level: Level | None = None, seed: int | None = None,
                 wire: bool = False, validate_positions: bool = True) -> None:
        self.validate_positions = validate_positions
        self.level = level if level is not None else (Level.parse(scenario.level) if scenario.level else DEFAULT)
        #: Configs that do not exist at this level, left out (a run below the level the file was
        #: written for): one line each, which the CLI prints as warnings (``configs_at_level``).
        scenario, self.config_notes = configs_at_level(scenario, self.level)
        self.scenario = scenario
        self.seed = seed if seed is not None else scenario.seed
        self.sim = SimCluster(scenario.brokers, scenario.config, self.level, self.seed,
                              writeback_ms=scenario.writeback_ms,
                              delay_ms=(scenario.delay_min_ms, scenario.delay_max_ms), wire=wire)
        self.rng = random.Random(f"clients:{self.seed}")
        self.admin = Admin("admin")
        self.sim.add_client(self.admin)
        self.t0 = 0
        #: (simulated ms, text) of the lines logged while bootstrapping, re-stamped relative to the moment
        #: the cluster is ready (scenario time 0: bootstrap lines get negative times)
        self._bootstrap_log: list[tuple[int, str]] = []
        #: (simulated ms, event) of the events recorded while bootstrapping, re-stamped like the lines
        self._bootstrap_events: list[tuple[int, dict]] = []
        self.end_ms = 0
        self.timeline: list[str] = []
        #: The timeline as data (:data:`~kraftlog.scenario.result.EVENT_KINDS`), recorded by :meth:`_log` beside each line.
        self.events: list[dict] = []
        self.failed: list[str] = []
        self.acked: list = []
        self.acked_counts = {"all": 0, "1": 0, "0": 0}
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        self.consumed: list = []
        self.truncations: list = []
        self.violations: dict[str, str] = {}
        self._seen_metadata = 0
        self._leaderless_since: dict[str, int] = {}
        self._shadow = MetadataImage()
        self.metrics = {"unclean_elections": 0, "elr_elections": 0}
        #: KIP-966 controller gauges: name -> [value after the last controller event, maximum seen]
        self._gauges: dict[str, list[int]] = {name: [0, 0] for name in _GAUGES}
        #: unclean recoveries that elected a leader, over every controller incarnation
        self._recoveries_finished = 0
        self.unavailable_ms = 0
        #: What the run is doing, for invariant messages: "bootstrap", "step 3 (crash)", ...
        self._where = "bootstrap"
        #: Per partition name: the true HWM (offset; the TLA+ spec's inv_true_hwm, see check/invariants.py).
        self._true_hwm: dict[str, int] = {}
        #: Per partition name: [(offset, value bytes)] acknowledged to acks=all producers (inv_pos_acked).
        self._acked_at: dict[str, list] = {}
        #: Per partition name: (leader, leader epoch, incarnation) whose log was found to hold
        #: acked[:n], and n; or the same key with n = -1 once it was reported incomplete.
        self._complete_upto: dict[str, tuple] = {}
        #: Per leader Partition object: [leader epoch, last HWM seen, partition name].
        self._hwm_seen: dict = {}
        #: Per broker: its copy of the metadata log (the records it replayed, by offset).
        self._broker_metadata: dict = {}
        self._controller_node = None
        self._metadata_pending = None  # (broker, base offset, records) of a MetadataFetch being delivered
        self._metadata_checked = 0  # controller log entries compared with the brokers' copies
        #: (broker, partition name, leader epoch, hwm, time ms), one per change of a leader's HWM.
        self.leader_hwms: list = []
        self.sim.observers[CONTROLLER] = self._after_controller_event
        for b in range(scenario.brokers):
            self.sim.observers[b] = self._broker_observer(b)
        self.sim.message_observers[m.AlterPartitionResponse] = self._observe_message
        self.sim.message_observers[m.MetadataFetchResponse] = self._observe_metadata_fetch

    # ================================================================= observation
    def _t(self) -> int:
        return self.sim.now - self.t0

    def _log(self, text: str, event: dict | None = None) -> None:
        """Log ``text`` in the timeline and, when given, record ``event`` (``{"kind": ..., ...}``,
        :data:`~kraftlog.scenario.result.EVENT_KINDS`) with the same time ``t`` (ms since the cluster was ready)."""
        if not self.t0:
            self._bootstrap_log.append((self.sim.now, text))
            if event is not None:
                self._bootstrap_events.append((self.sim.now, event))
        self.timeline.append(f"{self._t():>8}ms  {text}")
        if event is not None:
            self.events.append({"t": self._t(), **event})

    def _after_controller_event(self, sim: SimCluster, node_id) -> None:
        """After the controller handled an event: log its new metadata records, check invariants."""
        node = sim.nodes.get(node_id)
        if node is not None:
            self._observe_recoveries(sim, node)  # a recovery's steps first: its election's record follows
            self._observe_controller(node)

    def _observe_recoveries(self, sim: SimCluster, node) -> None:
        """The unclean recoveries' steps (level ``urm``) into the timeline and the history, and KIP-966's
        controller gauges sampled after every controller event (their final value and maximum)."""
        for ev in node.urm.take_events():
            self._log(f"unclean recovery of {ev.partition}: {ev.kind}: {ev.detail}",
                      {"kind": "recovery", "partition": ev.partition, "step": ev.kind, "detail": ev.detail})
            sim.history.record(sim.now, "recovery", partition=ev.partition, step=ev.kind, detail=ev.detail)
            if ev.kind == "elected":
                self._recoveries_finished += 1
        values = node.recovery_metrics()
        for name, gauge in self._gauges.items():
            gauge[0] = values[name]
            if gauge[0] > gauge[1]:
                gauge[1] = gauge[0]

    def _storage_lines(self, sim: SimCluster, node_id, node) -> None:
        """A broker's storage-fault lines (a failed log directory, data dropped at load) into the timeline
        (event ``storage``) and the history."""
        for line in node.take_log_lines():
            self._log(f"broker {node_id}: {line}", {"kind": "storage", "broker": node_id, "detail": line})
            sim.history.record(sim.now, "storage", node=str(node_id), detail=line)

    def _observe_producer(self, sim: SimCluster, node_id) -> None:
        """After a producer handled an event: record its acknowledgements and failures."""
        node = sim.nodes.get(node_id)
        if node is None or not node.completions:
            return
        record = sim.history.record
        for c in node.take_completions():
            acks = _ACKS_LABEL[c.acks]
            value = c.value.decode()
            if c.error == NONE:
                self.acked.append((node_id, c.topic, c.partition, value, acks))
                self.acked_counts[acks] += 1
                name = f"{c.topic}-{c.partition}"
                record(sim.now, "ack", client=node_id, partition=name,
                       value=value, acks=acks, offset=c.offset)
                if c.acks == -1 and c.offset >= 0:
                    # An acks=all ack of offset o: the leader's HWM passed o (the true HWM is >= o + 1).
                    self._acked_at.setdefault(name, []).append((c.offset, c.value))
                    if c.offset >= self._true_hwm.get(name, 0):
                        self._true_hwm[name] = c.offset + 1
            else:
                record(sim.now, "produce_failed", client=node_id,
                       partition=f"{c.topic}-{c.partition}", value=value, error=int(c.error))

    def _observe_consumer(self, sim: SimCluster, node_id) -> None:
        """After a consumer handled an event: record what it consumed and the truncations it detected."""
        node = sim.nodes.get(node_id)
        if node is None or (not node.records and not node.truncations and not node.has_errors):
            return
        try:
            records = node.poll_records()
        except LogTruncationError:
            records = node.take_records()  # reported below, with the earliest/latest ones
        except OffsetOutOfRangeError as exc:
            records = node.take_records()
            for topic, index, offset in exc.partitions:
                sim.history.record(sim.now, "offset_out_of_range", client=node_id,
                                   partition=f"{topic}-{index}", offset=offset)
        history = sim.history
        record = history.record
        for r in records:
            name = f"{r.topic}-{r.partition}"
            value = r.value.decode() if r.value is not None else None
            self.consumed.append((node_id, name, r.offset, value, sim.now, history.recorded))
            record(sim.now, "consume", client=node_id, partition=name, offset=r.offset,
                   epoch=r.leader_epoch, value=value)
        for tr in node.take_truncations():
            name = f"{tr.topic}-{tr.partition}"
            self.truncations.append((node_id, name, tr.position, tr.divergence_offset, sim.now, history.recorded))
            record(sim.now, "log_truncation", client=node_id, partition=name,
                   position=tr.position, divergence=tr.divergence_offset)
            self._log(f"consumer {node_id}: LogTruncation on {name}: position {tr.position}, "
                      f"diverged at {tr.divergence_offset} "
                      f"({'raised LogTruncationError' if tr.reset == 'none' else 'reset to it: ' + tr.reset})",
                      {"kind": "truncation", "consumer": node_id, "partition": name, "position": tr.position,
                       "divergence_offset": tr.divergence_offset, "reset": tr.reset})

    def _observe_message(self, sim: SimCluster, env: m.Envelope) -> None:
        """Log AlterPartition errors (INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, ...) in the timeline."""
        msg: m.AlterPartitionResponse = env.message
        ctl = sim.controller
        errors = [] if msg.error_code == Errors.NONE else [f"{Errors(msg.error_code).name}"]
        event: dict = {"kind": "alter_partition_error", "broker": env.dst}
        if msg.error_code != Errors.NONE:
            event["error"] = Errors(msg.error_code).name
        event["partition_errors"] = {}
        for item in msg.partitions:
            if item.error_code != Errors.NONE:
                name = ctl.image.topic_name(item.topic_id) if ctl is not None else item.topic_id
                errors.append(f"{name}-{item.partition} {Errors(item.error_code).name}")
                event["partition_errors"][f"{name}-{item.partition}"] = Errors(item.error_code).name
        if errors:
            text = f"AlterPartition from broker {env.dst} answered: " + ", ".join(errors)
            sim.history.record(sim.now, "alter_partition_error", text=text)
            self._log(text, event)

    def _broker_observer(self, broker_id: int):
        """The observer run after every event of broker ``broker_id`` (the simulator's hot path): it
        records each change of a leader's HWM (``leader_hwms``; the true HWM) and checks the invariants
        when the broker's registration changed (a registration answered makes it *running*).

        To stay cheap it keeps, in a closure, the partitions the broker leads with their last seen
        (leader epoch, HWM), rebuilt only when the broker's metadata image or broker epoch changed: a
        broker takes or leaves leadership only when it applies metadata, which replaces its image."""
        state = [None, None, ()]  # the broker's image, its broker epoch, [(Partition, _hwm_seen entry)]
        leader_hwms = self.leader_hwms
        true_hwm = self._true_hwm

        def observe(sim: SimCluster, node_id) -> None:
            node = sim.nodes[node_id]
            if node.log_lines:
                self._storage_lines(sim, node_id, node)
            if self._metadata_pending is not None:
                self._metadata_replayed(node_id, node)
            if node.image is not state[0] or node.broker_epoch != state[1]:
                registered = node.broker_epoch != state[1]
                state[0], state[1], state[2] = node.image, node.broker_epoch, self._leading(node_id, node)
                if registered:
                    self._check_invariants()
            for p, st in state[2]:
                hw = p.log.high_watermark
                if hw != st[1] or p.leader_epoch != st[0]:
                    st[0] = p.leader_epoch
                    st[1] = hw
                    name = st[2]
                    leader_hwms.append((node_id, name, st[0], hw, sim.now - self.t0))
                    if hw > true_hwm.get(name, 0):
                        true_hwm[name] = hw

        return observe

    def _leading(self, node_id, node) -> list:
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
                self.leader_hwms.append((node_id, st[2], st[0], st[1], self.sim.now - self.t0))
                if st[1] > self._true_hwm.get(st[2], 0):
                    self._true_hwm[st[2]] = st[1]
            led.append((p, st))
        return led

    def _observe_metadata_fetch(self, sim: SimCluster, env: m.Envelope) -> None:
        """Before a MetadataFetch response is delivered: note its records; once the broker handled it,
        :meth:`_metadata_replayed` keeps them if the broker replayed them."""
        msg: m.MetadataFetchResponse = env.message
        if msg.records:
            self._metadata_pending = (env.dst, msg.base_offset, msg.records)

    def _metadata_replayed(self, node_id, node) -> None:
        """After the broker handled the noted MetadataFetch response: if it replayed the records (its image
        reached their last offset), append them to its copy of the metadata log and check
        NoMetadataLogDivergence on them."""
        broker, base, records = self._metadata_pending
        self._metadata_pending = None
        if broker != node_id or node.image.offset != base + len(records) - 1:
            return  # dropped (a stale response, a gap) or replayed by another path
        copy = self._broker_metadata.setdefault(broker, [])
        copy[base:] = records  # a restarted broker replays from offset 0
        ctl = self.sim.controller
        if ctl is not None:
            self._record_violations(invariants.metadata_log_divergence(broker, copy, ctl.log, base, self._t()))

    def _observe_controller(self, ctl) -> None:
        log = ctl.log
        if ctl is not self._controller_node:
            # A new controller replayed its log from disk: compare all of it with the brokers' copies.
            self._controller_node = ctl
            self._metadata_checked = 0
        if len(log) > self._metadata_checked:
            self._check_metadata_logs(log, self._metadata_checked)
            self._metadata_checked = len(log)
        if len(log) <= self._seen_metadata:
            return
        image = ctl.image
        self._count_elections(log[self._seen_metadata:], self._seen_metadata)
        for rec in log[self._seen_metadata:]:
            described = self._describe(rec, image)
            if described:
                text, event = described
                self.sim.history.record(self.sim.now, "metadata", text=text)
                self._log(text, event)
        self._seen_metadata = len(log)
        self._update_availability()
        self._check_invariants()

    def _check_metadata_logs(self, log: list, start: int) -> None:
        """NoMetadataLogDivergence from the controller's side: its records from offset ``start`` on
        against each broker's copy of the metadata log (brokers in id order)."""
        for broker in sorted(self._broker_metadata):
            copy = self._broker_metadata[broker]
            if start < len(copy):
                self._record_violations(invariants.metadata_log_divergence(broker, copy, log, start, self._t()))

    def _check_invariants(self) -> None:
        """Check the invariants against the current cluster: the controller's partition state
        (checkers.partition_state_violations) and the TLA+ invariants of check/invariants.py
        (ControllerIsrHasUpToTrueHWM, the ELR part of ValidControllerIsrAndElr, ValidLeaderMaximalISR,
        LeaderHasCompleteCommittedLog). Called after every controller event that committed metadata,
        after every step, and when a broker's registration changed; reads state, changes nothing."""
        ctl = self.sim.controller
        if ctl is None:
            return
        image = ctl.image
        now = self._t()
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

    def _leader_completeness(self, name: str, key, part, node, p, acked: list, now: int) -> list:
        """LeaderHasCompleteCommittedLog for the running leader ``node`` of ``part``, incrementally: a
        leader that already leads in this epoch never truncates, so the acked records found in its log
        need not be looked up again."""
        tag = (part.leader, part.leader_epoch, self.sim.incarnation.get(part.leader))
        done = self._complete_upto.get(name)
        start = done[1] if done is not None and done[0] == tag else 0
        if start < 0 or start == len(acked):
            return []  # already reported for this leader, or nothing new
        log = node.logs.get(key)
        if log is None:
            n, missing = len(acked), acked[start:]
        else:
            n, missing = invariants.missing_acked(acked, start, log.record_at)
        if missing:
            self._complete_upto[name] = (tag, -1)
            return invariants.leader_complete_log(name, part.leader, part.leader_epoch, missing, len(acked), now)
        if p is not None and p.is_leader and p.leader_epoch == part.leader_epoch:
            self._complete_upto[name] = (tag, n)
        return []

    def _record_violations(self, found) -> None:
        """Keep the first finding of each key, with the step the run was in; log it in the timeline."""
        for key, message in found:
            if key not in self.violations:
                message = f"{message} [{self._where}]"
                self.violations[key] = message
                shown = message.split(" ", 1)[1]
                self._log("invariant violated: " + shown, {"kind": "invariant", "name": key.split(" ", 1)[0],
                                                           "key": key, "message": shown})

    def _count_elections(self, records, base_offset: int) -> None:
        """Classify elections for the metrics: clean from the ISR, from the ELR, unclean (RECOVERING)."""
        shadow = self._shadow
        for i, rec in enumerate(records):
            if type(rec) is PartitionChangeRecord and rec.leader is not None and rec.leader >= 0:
                key = (shadow.topic_name(rec.topic_id), rec.partition_id)
                old = shadow.partitions[key]
                if rec.leader_recovery_state == RECOVERING:
                    self.metrics["unclean_elections"] += 1
                elif rec.leader in old.elr:
                    self.metrics["elr_elections"] += 1
            shadow, _ = shadow.replay([rec], base_offset + i)
        self._shadow = shadow

    def _update_availability(self) -> None:
        """Track partitions without a live leader (no leader in metadata, or the leader is down)."""
        ctl = self.sim.controller
        if not self.t0 or ctl is None:
            return
        for (topic, index), part in ctl.image.partitions.items():
            name = f"{topic}-{index}"
            if part.leader < 0 or not self.sim.alive(part.leader):
                self._leaderless_since.setdefault(name, self.sim.now)
            elif name in self._leaderless_since:
                self.unavailable_ms += self.sim.now - self._leaderless_since.pop(name)

    def _describe(self, rec, image) -> tuple[str, dict] | None:
        """A committed metadata record as its timeline line and its event (``partition`` or ``broker``,
        :data:`~kraftlog.scenario.result.EVENT_KINDS`), or None for records the timeline leaves out. ``image``: the controller's
        image after the batch."""
        kind = type(rec)
        if kind is PartitionChangeRecord:
            name = f"{image.topic_name(rec.topic_id)}-{rec.partition_id}"
            part = image.partitions[(image.topic_name(rec.topic_id), rec.partition_id)]
            bits = []
            event: dict = {"kind": "partition", "partition": name}
            if rec.leader is not None:
                bits.append(f"leader -> {rec.leader if rec.leader >= 0 else 'none'} (epoch {part.leader_epoch})")
                event["leader"] = _leader(rec.leader)
            event["leader_epoch"] = part.leader_epoch
            if rec.isr is not None:
                bits.append(f"ISR -> {list(rec.isr)}")
                event["isr"] = list(rec.isr)
            if rec.eligible_leader_replicas is not None:
                bits.append(f"ELR -> {list(rec.eligible_leader_replicas)}")
                event["elr"] = list(rec.eligible_leader_replicas)
            if rec.last_known_elr is not None:
                bits.append(f"LastKnownELR -> {list(rec.last_known_elr)}")
                event["last_known_elr"] = list(rec.last_known_elr)
            if rec.last_known_leader is not None:
                bits.append(f"LastKnownLeader -> {rec.last_known_leader if rec.last_known_leader >= 0 else 'none'}")
                event["last_known_leader"] = _leader(rec.last_known_leader)
            if rec.leader_recovery_state is not None:
                bits.append("RECOVERING" if rec.leader_recovery_state else "RECOVERED")
                event["leader_recovery_state"] = "RECOVERING" if rec.leader_recovery_state else "RECOVERED"
            return f"{name}: " + ", ".join(bits), event
        if kind is PartitionRecord:
            name = f"{image.topic_name(rec.topic_id)}-{rec.partition_id}"
            return (f"{name}: created, replicas {list(rec.replicas)}, leader {rec.leader}, ISR {list(rec.isr)}",
                    {"kind": "partition", "partition": name, "created": True, "replicas": list(rec.replicas),
                     "leader": _leader(rec.leader), "leader_epoch": rec.leader_epoch, "isr": list(rec.isr)})
        if kind is RegisterBrokerRecord:
            return (f"broker {rec.broker_id} registered (broker epoch {rec.broker_epoch})",
                    {"kind": "broker", "broker": rec.broker_id, "registered": True, "broker_epoch": rec.broker_epoch})
        if kind is BrokerRegistrationChangeRecord:
            bits = []
            event = {"kind": "broker", "broker": rec.broker_id, "broker_epoch": rec.broker_epoch}
            if rec.fenced is not None:
                bits.append("fenced" if rec.fenced else "unfenced")
                event["fenced"] = bool(rec.fenced)
            if rec.in_controlled_shutdown:
                bits.append("in controlled shutdown")
                event["in_controlled_shutdown"] = True
            if rec.log_dirs is not None:
                bits.append("log directory offline" if not rec.log_dirs else f"log directories {len(rec.log_dirs)}")
                event["log_dir_offline"] = not rec.log_dirs
            return (f"broker {rec.broker_id} " + ", ".join(bits), event) if bits else None
        return None

    # ================================================================= conditions
    def _image(self) -> MetadataImage:
        """The committed metadata that conditions and the verdict read: the controller's image; while
        the controller is down (it refused to start), the newest image a live broker holds (the metadata
        the cluster still serves; the lowest broker id among equals), else the last controller's."""
        ctl = self.sim.controller
        if ctl is not None:
            return ctl.image
        best = None
        for b in range(self.scenario.brokers):
            node = self.sim.broker(b)
            if node is not None and (best is None or node.image.offset > best.offset):
                best = node.image
        if best is not None:
            return best
        return self._controller_node.image if self._controller_node is not None else MetadataImage()

    def _leader_hwm(self, topic: str, index: int) -> int | None:
        part = self._image().partitions.get((topic, index))
        if part is None or part.leader < 0:
            return None
        b = self.sim.broker(part.leader)
        if b is None:
            return None
        p = b.partitions.get((topic, index))
        if p is None or not p.is_leader:
            return None
        return p.log.high_watermark

    def holds(self, cond: Condition) -> bool:
        """Evaluate a condition against the controller's committed state (and the leader's HWM); while the
        controller is down, against the metadata the brokers hold (:meth:`_image`)."""
        image = self._image()
        checks = cond.checks
        if cond.kind == "partition":
            topic, _, idx = str(cond.target).rpartition("-")
            part = image.partitions.get((topic, int(idx)))
            if part is None:
                return False
            for key, want in checks.items():
                if key == "leader":
                    if (part.leader if part.leader >= 0 else None) != want:
                        return False
                elif key == "isr":
                    if frozenset(part.isr) != want:
                        return False
                elif key == "elr":
                    if frozenset(part.elr) != want:
                        return False
                elif key == "last_known_elr":
                    if frozenset(part.last_known_elr) != want:
                        return False
                elif key == "leader_epoch_at_least":
                    if part.leader_epoch < want:
                        return False
                elif key == "recovering":
                    if part.recovering != want:
                        return False
                elif key in ("hwm", "hwm_at_least"):
                    hwm = self._leader_hwm(topic, int(idx))
                    if hwm is None or (hwm != want if key == "hwm" else hwm < want):
                        return False
            return True
        broker = int(cond.target)
        reg = image.brokers.get(broker)
        for key, want in checks.items():
            if key == "alive":
                if self.sim.alive(broker) != want:
                    return False
            elif key == "fenced":
                if (reg is None or reg.fenced) != want:
                    return False
            elif key == "in_controlled_shutdown":
                if (reg is not None and reg.in_controlled_shutdown) != want:
                    return False
            elif key == "log_dir_offline":
                if (reg is not None and not reg.has_online_log_dir) != want:
                    return False
        return True

    def observed(self, cond: Condition) -> str:
        image = self._image()
        if cond.kind == "partition":
            topic, _, idx = str(cond.target).rpartition("-")
            part = image.partitions.get((topic, int(idx)))
            if part is None:
                return "no such partition"
            hwm = self._leader_hwm(topic, int(idx))
            return (f"leader={part.leader if part.leader >= 0 else None}, isr={list(part.isr)}, elr={list(part.elr)}, "
                    f"last_known_elr={list(part.last_known_elr)}, leader_epoch={part.leader_epoch}, hwm={hwm}, "
                    f"recovering={part.recovering}")
        reg = image.brokers.get(int(cond.target))
        return (f"alive={self.sim.alive(int(cond.target))}, fenced={reg.fenced if reg else None}, "
                f"in_controlled_shutdown={reg.in_controlled_shutdown if reg else None}, "
                f"log_dir_offline={(not reg.has_online_log_dir) if reg else None}")

    # ================================================================= bootstrap
    def _bootstrap(self) -> bool:
        sim = self.sim
        n = self.scenario.brokers

        def brokers_ready(s) -> bool:
            ctl = s.controller
            return ctl is not None and all(ctl.image.is_active(b) for b in range(n))

        if not sim.run_until(BOOTSTRAP_TIMEOUT_MS, brokers_ready):
            return False
        topics = []
        for t in self.scenario.topics:
            topics.append(m.CreatableTopic(
                t.name, num_partitions=t.partitions if not t.assignment else -1,
                replication_factor=t.replication_factor or -1 if not t.assignment else -1,
                assignment=tuple(tuple(a) for a in t.assignment) if t.assignment else (),
                configs=tuple(sorted(t.config.items()))))
        rid = self.admin.submit(m.CreateTopicsRequest(tuple(topics)), sim.now)
        sim._after(self.admin.node_id, self.admin)
        if not sim.run_until(sim.now + BOOTSTRAP_TIMEOUT_MS, lambda s: rid in self.admin.results):
            return False
        resp = self.admin.results[rid]
        for r in resp.topics:
            if r.error_code != Errors.NONE:
                self.failed.append(f"bootstrap: creating topic {r.name} failed: {Errors(r.error_code).name} "
                                   f"{r.error_message or ''}".strip())
                return False

        def partitions_ready(s) -> bool:
            ctl = s.controller
            for key, part in ctl.image.partitions.items():
                if part.leader < 0 or len(part.isr) != len(part.replicas):
                    return False
                b = s.broker(part.leader)
                if b is None:
                    return False
                p = b.partitions.get(key)
                if p is None or not p.is_leader or p.leader_epoch != part.leader_epoch:
                    return False
                for r in part.replicas:
                    rb = s.broker(r)
                    if rb is None or key not in rb.partitions or rb.image.offset < ctl.end_offset - 1:
                        return False
            return True

        return sim.run_until(sim.now + BOOTSTRAP_TIMEOUT_MS, partitions_ready)

    def _start_clients(self) -> None:
        sim = self.sim
        brokers = list(range(self.scenario.brokers))
        for c in self.scenario.clients:
            parts = [(c.topic, c.partition)] if c.partition is not None else [
                (c.topic, i) for i in range(self._partition_count(c.topic))]
            if c.kind == "producer":
                prod = Producer(c.id, brokers, ACKS[c.acks], random.Random(f"{c.id}:{self.seed}"))
                self.sim.observers[prod.node_id] = self._observe_producer
                sim.add_client(prod)
                self.producers.append(prod)
                self._schedule_background(prod, parts, c.interval_ms, 0)
            else:
                cons = Consumer(c.id, brokers, parts, c.reset, random.Random(f"{c.id}:{self.seed}"),
                                validate_positions=self.validate_positions, group_id=c.id)
                self.sim.observers[cons.node_id] = self._observe_consumer
                sim.add_client(cons)
                self.consumers.append(cons)

    def _partition_count(self, topic: str) -> int:
        for t in self.scenario.topics:
            if t.name == topic:
                return len(t.assignment) if t.assignment else t.partitions
        return 1

    def _schedule_background(self, prod: Producer, parts, interval: int, n: int) -> None:
        def fire(sim: SimCluster, n=n) -> None:
            if not sim.alive(prod.node_id):
                return
            topic, index = parts[n % len(parts)]
            prod.send(topic, index, f"{prod.node_id}-{n}".encode(), sim.now)
            sim._after(prod.node_id, prod)
            self._schedule_background(prod, parts, interval, n + 1)
        self.sim.call_at(self.sim.now if n == 0 else self.sim.now + interval, fire)

    # ================================================================= steps
    def _admin_call(self, request, timeout_ms: int = 30000, dst=CONTROLLER):
        sim = self.sim
        rid = self.admin.submit(request, sim.now, timeout_ms, dst=dst)
        sim._after(self.admin.node_id, self.admin)
        sim.run_until(sim.now + timeout_ms + 1, lambda s: rid in self.admin.results)
        return self.admin.results.pop(rid, Errors.REQUEST_TIMED_OUT)

    # ================================================================= the ClusterBackend of the interpreter
    # (kraftlog.scenario.interpreter: what each verb means, its line and its event, is written there once)
    def refusals(self, scenario: Scenario) -> list[str]:
        """The simulator honours every verb and setting."""
        return []

    def now_ms(self) -> int:
        return self._t()

    def advance_to(self, t_ms: int) -> None:
        self.sim.run_until(max(self.t0 + t_ms, self.sim.now))

    def log(self, text: str, event: dict | None = None) -> None:
        self._log(text, event)

    def fail(self, text: str, event: dict | None = None) -> None:
        self.failed.append(text)
        self._log(text, event)

    def begin_step(self, step: Step) -> None:
        self._where = f"in step {step.index} ({step.verb})"

    def end_step(self, step: Step) -> None:
        self.sim.history.record(self.sim.now, "step", index=step.index, verb=step.verb)
        self._check_invariants()
        if step.verb in ("crash", "shutdown", "restart", "restart_controller"):
            self._update_availability()
        # What the step started (a release, a crash, a restart) mostly plays out after it.
        self._where = f"after step {step.index} ({step.verb})"

    def alive(self, node) -> bool:
        return self.sim.alive(node)

    def produce(self, step: Step, action: Produce) -> int:
        sim = self.sim
        prod = Producer(f"step{step.index}-producer", list(range(self.scenario.brokers)), ACKS[action.acks],
                        random.Random(f"step{step.index}:{self.seed}"), delivery_timeout_ms=action.timeout_ms,
                        request_timeout_ms=min(30000, action.timeout_ms))
        self.sim.observers[prod.node_id] = self._observe_producer
        sim.add_client(prod)
        for i in range(action.count):
            prod.send(action.topic, action.partition, f"s{step.index}-{i}".encode(), sim.now)
        sim._after(prod.node_id, prod)
        before = len(self.acked)
        sim.run_until(sim.now + action.timeout_ms + 1000, lambda s: prod.idle)
        got = sum(1 for x in self.acked[before:] if x[0] == prod.node_id)
        sim.nodes.pop(prod.node_id, None)
        return got

    def crash(self, node, lose: str) -> None:
        self.sim.crash(node, lose)

    def shutdown(self, broker: int) -> None:
        sim = self.sim
        sim.shutdown(broker)
        sim.run_until(sim.now + SHUTDOWN_WAIT_MS, lambda s: s.broker(broker) is None or s.broker(broker).stopped)
        if sim.broker(broker) is not None:
            sim.nodes.pop(broker, None)
            sim.scheduled.pop(broker, None)

    def restart(self, node) -> str | None:
        """None, or the reason the node refused to start (its disk's meta.properties, see
        SimCluster.refused): it stays down."""
        return None if self.sim.restart(node) else self.sim.refused[-1][2]

    def restart_controller(self) -> str | None:
        return None if self.sim.restart_controller() else self.sim.refused[-1][2]

    def pause(self, node) -> str | None:
        return None if self.sim.pause(node) else f"{node_words(node)} is not running"

    def resume(self, node) -> str | None:
        return None if self.sim.resume(node) else f"{node_words(node)} is not paused"

    def disk_full(self, broker: int, for_ms: int) -> str | None:
        self.sim.disk_full(broker, for_ms)
        return None

    def corrupt(self, step: Step, action: Corrupt) -> Corrupted | None:
        """Flip bytes in one batch of the stopped broker's replica log (the interpreter refused it, as a
        failed step, while the broker runs: a running process would overwrite nothing, but its reads are
        not what the step means to test)."""
        topic, _, idx = action.partition.rpartition("-")
        path = f"{LOG_DIR}/{topic}-{idx}/{SEGMENT_FILE}"
        target = corrupt_target(self.sim.disks[action.broker].read(path), action.at)
        if target is None:
            return None
        index, batch = target
        self.sim.corrupt(action.broker, path, index)
        return Corrupted(batch.base_offset, batch.next_offset - 1, action.bytes)

    def isolate(self, nodes: tuple) -> None:
        self.sim.isolate(list(nodes))

    def partition(self, groups: tuple) -> None:
        self.sim.partition([list(g) for g in groups])

    def cut(self, src, dst) -> None:
        self.sim.cut_link(src, dst)

    def heal(self, nodes: tuple | None) -> None:
        self.sim.heal(list(nodes) if nodes is not None else None)

    def hold(self, api: str | None, src, dst) -> None:
        self.sim.hold(api, src, dst)

    def release(self, api: str | None, src, dst) -> None:
        self.sim.release(api, src, dst)

    def alter_config(self, action) -> int:
        rtype, rname = (m.RESOURCE_TOPIC, action.topic) if action.topic else (m.RESOURCE_BROKER, "")
        resp = self._admin_call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            rtype, rname, tuple(m.AlterableConfig(k, m.OP_SET, str(v)) for k, v in sorted(action.config.items()))),)))
        err = resp if isinstance(resp, int) else resp.responses[0].error_code
        self.sim.history.record(self.sim.now, "alter_config", error=int(err))
        return err

    def elect(self, action) -> int:
        topic, _, idx = action.partition.rpartition("-")
        resp = self._admin_call(m.ElectLeadersRequest(m.ELECTION_TYPES[action.type], (m.ElectLeadersPartition(
            topic, int(idx), action.leader if action.leader is not None else -1),)))
        err = resp if isinstance(resp, int) else (resp.error_code or resp.results[0].error_code)
        self.sim.history.record(self.sim.now, "elect", partition=action.partition, type=action.type, error=int(err))
        return err

    def wait_until(self, cond: Condition, timeout_ms: int) -> bool:
        return self.sim.run_until(self.sim.now + timeout_ms, lambda s: self.holds(cond))

    def run_for(self, duration_ms: int) -> None:
        self.sim.run_until(self.sim.now + duration_ms)

    # ================================================================= run
    def run(self) -> RunResult:
        """Bootstrap the cluster, run the steps, check and judge; the verdict is SCENARIOS.md's."""
        with cyclic_gc_paused():
            return self._run()

    def _run(self) -> RunResult:
        wall = time.perf_counter()
        ready = self._bootstrap()
        self.t0 = self.sim.now
        # The scenario's clock starts when the cluster is ready: what happened before it is negative.
        self.timeline = [f"{t - self.t0:>8}ms  {text}" for t, text in self._bootstrap_log]
        self.events = [{"t": t - self.t0, **event} for t, event in self._bootstrap_events]
        self.sim.history.record(self.sim.now, "ready", ok=ready)
        if not ready:
            if not self.failed:
                self.failed.append("bootstrap: the cluster did not become ready within 60s of simulated time")
        else:
            self._log(f"cluster ready: {self.scenario.brokers} brokers, level {self.level.label}, seed {self.seed}",
                      {"kind": "ready", "brokers": self.scenario.brokers, "level": self.level.label, "seed": self.seed})
            self._start_clients()
            self._where = "before the first step"
            run_steps(self, self.scenario)
        for since in self._leaderless_since.values():
            self.unavailable_ms += self.sim.now - since
        self._leaderless_since.clear()
        self._check_invariants()
        self.end_ms = self.sim.now
        if ready:
            self._describe_at_end()
        verdict = self.verdict()
        code = 0 if ready and not verdict["failed_expectations"] else 1
        # SCENARIOS.md: `passed` (completed, every expect/wait_until held) and `safe` (nothing acknowledged
        # lost, no invariant violated, no truncation left undetected) are separate questions.
        digest = verdict.pop("history_digest")
        verdict["passed"] = code == 0
        verdict["safe"] = is_safe(verdict)
        verdict["history_digest"] = digest
        wall_ms = (time.perf_counter() - wall) * 1000
        return RunResult(verdict, self.timeline, code, wall_ms, self.sim.messages_delivered, self.unavailable_ms,
                         self.events)

    def _describe_at_end(self) -> None:
        """Ask a live broker for DescribeTopicPartitions (KIP-966) as an admin would, and put what it
        reports (leader, ISR, ELR, LastKnownELR, offline replicas) in the timeline."""
        brokers = [b for b in range(self.scenario.brokers) if self.sim.alive(b)]
        if not brokers:
            return
        resp = self._admin_call(m.DescribeTopicPartitionsRequest(()), timeout_ms=5000, dst=brokers[0])
        if isinstance(resp, int):
            self._log(f"DescribeTopicPartitions from broker {brokers[0]}: {Errors(resp).name}",
                      {"kind": "described", "broker": brokers[0], "error": Errors(resp).name})
            return
        for t in resp.topics:
            for p in t.partitions:
                self._log(f"described by broker {brokers[0]}: {t.name}-{p.partition_index} leader {p.leader_id} "
                          f"(epoch {p.leader_epoch}), ISR {list(p.isr_nodes)}, ELR {list(p.eligible_leader_replicas)}, "
                          f"LastKnownELR {list(p.last_known_elr)}, offline {list(p.offline_replicas)}",
                          {"kind": "described", "broker": brokers[0], "partition": f"{t.name}-{p.partition_index}",
                           "leader": _leader(p.leader_id), "leader_epoch": p.leader_epoch,
                           "isr": list(p.isr_nodes), "elr": list(p.eligible_leader_replicas),
                           "last_known_elr": list(p.last_known_elr), "offline": list(p.offline_replicas)})

    # ================================================================= verdict
    def final_state(self) -> tuple[dict, dict, dict]:
        sim = self.sim
        image = self._image()
        partitions, final_logs, replica_logs = {}, {}, {}
        # {offset: (value, leader epoch)} per distinct log. In the simulator replicas append the very
        # batch objects they fetched, so a log holding the same batches as one already read is read once.
        contents: dict[tuple[int, ...], dict] = {}
        for (topic, idx) in sorted(image.partitions):
            part = image.partitions[(topic, idx)]
            name = f"{topic}-{idx}"
            leos, logs = {}, {}
            for r in part.replicas:
                b = sim.broker(r)
                p = b.partitions.get((topic, idx)) if b is not None else None
                if p is None:
                    continue
                leos[str(r)] = p.log.log_end_offset
                batches = list(p.log.batches())
                same_batches = tuple(map(id, batches))
                content = contents.get(same_batches)
                if content is None:
                    content = contents[same_batches] = {}
                    for batch in batches:
                        epoch = batch.partition_leader_epoch
                        values = [(rec.value.decode() if rec.value is not None else None, epoch)
                                  for rec in batch.records]
                        content.update(zip(range(batch.base_offset, batch.base_offset + len(values)), values))
                logs[r] = (content, p.log.high_watermark)
            replica_logs[name] = logs
            hwm = None
            if part.leader >= 0 and part.leader in logs:
                b = sim.broker(part.leader)
                if b.partitions[(topic, idx)].is_leader:
                    content, hwm = logs[part.leader]
                    final_logs[name] = {o: v for o, v in content.items() if o < hwm}
            if name not in final_logs:
                final_logs[name] = None
            partitions[name] = {
                "leader": part.leader if part.leader >= 0 else None, "leader_epoch": part.leader_epoch,
                "partition_epoch": part.partition_epoch, "isr": list(part.isr), "elr": list(part.elr),
                "last_known_elr": list(part.last_known_elr), "last_known_leader": part.last_known_leader if part.last_known_leader >= 0 else None,
                "recovering": part.recovering, "hwm": hwm, "leo": leos}
        brokers = {}
        for b in range(self.scenario.brokers):
            reg = image.brokers.get(b)
            brokers[str(b)] = {"alive": sim.alive(b), "fenced": reg.fenced if reg else True,
                               "epoch": reg.broker_epoch if reg else -1}
        return {"partitions": partitions, "brokers": brokers}, final_logs, replica_logs

    def dump_logs(self) -> dict:
        """Every replica's log at the end, like ``kafka-dump-log --print-data-log``, for ``scenario run
        --dump-logs``: ``{partition: {broker: {"alive", "state", "leo", "hwm", "leader_epoch_cache":
        [[epoch, start offset], ...], "batches": [{"base_offset", "last_offset", "count", "leader_epoch",
        "producer_id", "producer_epoch", "base_sequence", "size_bytes", "values"}, ...]}}}``. A broker that
        is down shows what its disk holds (what it will recover on restart; ``hwm`` None). Read-only."""
        from ..broker.broker import LOG_DIR
        from ..storage.epoch_cache import parse_epoch_checkpoint
        from ..storage.log import EPOCH_CHECKPOINT_FILE, SEGMENT_FILE

        sim = self.sim
        image = self._image()
        out: dict = {}
        for (topic, idx) in sorted(image.partitions):
            part = image.partitions[(topic, idx)]
            replicas: dict = {}
            for r in part.replicas:
                b = sim.broker(r)
                p = b.partitions.get((topic, idx)) if b is not None else None
                if p is not None:
                    batches, cache = list(p.log.batches()), p.log.epoch_cache.entries()
                    leo, hwm = p.log.log_end_offset, p.log.high_watermark
                    state = "leader" if p.is_leader else "follower"
                else:
                    disk, directory = sim.disks[r], f"{LOG_DIR}/{topic}-{idx}"
                    batches = list(disk.scan(f"{directory}/{SEGMENT_FILE}"))
                    text = disk.read_value(f"{directory}/{EPOCH_CHECKPOINT_FILE}")
                    cache = parse_epoch_checkpoint(text) if text else []
                    leo, hwm = (batches[-1].next_offset if batches else 0), None
                    state = "down (its disk)" if b is None else "no replica"
                replicas[str(r)] = {
                    "alive": b is not None, "state": state, "leo": leo, "hwm": hwm,
                    "leader_epoch_cache": [list(entry) for entry in cache],
                    "batches": [{"base_offset": batch.base_offset, "last_offset": batch.last_offset,
                                 "count": batch.record_count, "leader_epoch": batch.partition_leader_epoch,
                                 "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                                 "base_sequence": batch.base_sequence, "size_bytes": batch.size_bytes,
                                 "values": [rec.value.decode(errors="replace") if rec.value is not None else None
                                            for rec in batch.records]}
                                for batch in batches]}
            out[f"{topic}-{idx}"] = replicas
        return out

    def _final_metrics(self) -> dict:
        """KIP-966 metrics from the controller's final state plus the elections counted on the way."""
        image = self._image()
        under = 0
        electable = {}
        for (topic, index) in sorted(image.partitions):
            part = image.partitions[(topic, index)]
            if len(part.isr) < image.min_isr(topic, self.sim.config):
                under += 1
            electable[f"{topic}-{index}"] = len(part.isr) + len(part.elr)
        out = {"partitions_under_min_isr": under, "electable_replicas": electable,
               "unclean_elections": self.metrics["unclean_elections"],
               "elr_elections": self.metrics["elr_elections"]}
        # KIP-966's controller metrics: gauges as {"final", "max"}, the counter as a cluster total (Kafka's
        # resets on a controller failover; this sums every controller's).
        for name, (final, peak) in self._gauges.items():
            out[name] = {"final": final, "max": peak}
        out["unclean_recovery_finished_count"] = self._recoveries_finished
        return out

    def verdict(self) -> dict:
        final, final_logs, replica_logs = self.final_state()
        hwms = [(c.node_id, f"{t}-{p}", h, at) for c in self.consumers for at, t, p, h in c.hwms]
        violations = list(self.violations.values()) + checkers.log_matching(replica_logs)
        return {
            "scenario": self.scenario.name, "level": self.level.label, "seed": self.seed,
            "sim_time_ms": self.end_ms - self.t0,
            "acked": dict(self.acked_counts),
            **checkers.judge(self.acked, final_logs, self.consumed, self.truncations, hwms,
                             checkers.leader_hwm_regressions(self.leader_hwms)),
            "invariant_violations": violations,
            "failed_expectations": list(self.failed),
            "metrics": self._final_metrics(),
            "final": final,
            "history_digest": self.sim.history.digest(),
        }


#: KIP-966's controller gauges in the verdict's ``metrics`` (QuorumController.recovery_metrics).
_GAUGES = ("unclean_recovery_partitions_count", "manual_leader_election_required_partition_count",
           "electable_replicas_count")


def run_scenario(scenario: Scenario, level: Level | None = None, seed: int | None = None,
                 wire: bool = False, validate_positions: bool = True) -> RunResult:
    """Run ``scenario`` (level/seed override the file's) and return its RunResult.

    ``validate_positions=False`` makes the scenario's consumers skip KIP-320 position validation, as
    some real clients do (used to prove the checker catches the resulting silent skip)."""
    return ScenarioRun(scenario, level, seed, wire, validate_positions).run()
