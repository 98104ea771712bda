"""What a simulated scenario run records: its timeline, the same story as data, its history events and
its metrics.

:class:`RunRecorder` keeps the readable timeline (``"{t:>8}ms  {text}"`` lines) and, beside it, the
events of ``RunResult.events`` (:data:`~kraftlog.scenario.result.EVENT_KINDS`): :meth:`RunRecorder.log`
writes a line and its event at the same moment, with the same time ``t`` (ms since the cluster was ready;
lines and events written while bootstrapping are re-stamped, negative, once it is: :meth:`start_clock`).
It turns what the clients and the controller did into history events (:mod:`kraftlog.sim.history`, the
run's digest) and into the inputs of the checkers (:mod:`kraftlog.check.checkers`: ``acked``,
``consumed``, ``truncations``), and it counts the verdict's metrics (KIP-966's elections and gauges, the
time partitions spent without a live leader). It reads the cluster only: it changes no history digest
but by the events it records, in the order the run calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..check.checkers import Acked, Consumed, Truncation
from ..check.groups import GroupEvent
from ..client.consumer import Consumer, LogTruncationError, OffsetOutOfRangeError
from ..client.producer import Producer, record_identity
from ..controller.metrics import KIP_966
from ..metadata.image import MetadataImage
from ..metadata.records import (
    RECOVERING,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
)
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..scenario.result import Event

if TYPE_CHECKING:
    from ..broker.broker import Broker
    from ..controller.controller import QuorumController
    from .cluster import SimCluster

#: KIP-966's controller gauges in the verdict's ``metrics`` (the controller's metrics,
#: :data:`kraftlog.controller.metrics.KIP_966`).
GAUGES = ("unclean_recovery_partitions_count", "manual_leader_election_required_partition_count",
          "electable_replicas_count")

_ACKS_LABEL = {-1: "all", 1: "1", 0: "0"}
NONE = Errors.NONE


def leader_or_none(leader: int) -> int | None:
    """A leader id as the events show it: None for none (-1)."""
    return leader if leader >= 0 else None


class RunRecorder:
    """The timeline, events, checker inputs and metrics of one simulated run of ``sim``.

    ``t0``: the simulated ms at which the cluster was ready (0 while bootstrapping); ``timeline``: the
    readable lines; ``events``: the timeline as data; ``acked`` / ``consumed`` / ``truncations``: the
    checkers' inputs (shapes in :mod:`kraftlog.check.checkers`), ``acked_counts``: acknowledged records
    per ``acks`` label; ``unavailable_ms``: simulated ms, summed over partitions, without a live leader
    after ``t0``."""

    def __init__(self, sim: SimCluster) -> None:
        self.sim = sim
        self.t0 = 0
        #: (simulated ms, text) of the lines logged while bootstrapping, re-stamped relative to the moment
        #: the cluster is ready (scenario time 0: bootstrap lines get negative times)
        self._bootstrap_log: list[tuple[int, str]] = []
        #: (simulated ms, event) of the events recorded while bootstrapping, re-stamped like the lines
        self._bootstrap_events: list[tuple[int, Event]] = []
        self.timeline: list[str] = []
        #: The timeline as data (:data:`~kraftlog.scenario.result.EVENT_KINDS`), recorded by :meth:`log`.
        self.events: list[Event] = []
        self.acked: list[Acked] = []
        #: (partition name, value) -> (offset, record timestamp ms) of each acks=all record acknowledged with an
        #: offset: what the checker's retention rule needs (:class:`kraftlog.check.checkers.Retention`)
        self.acked_at: dict[tuple[str, str], tuple[int, int]] = {}
        #: (partition name, value) -> key of each keyed record a background producer sent, and which were tombstones
        self.keys: dict[tuple[str, str], str] = {}
        #: what the consumers' group coordinators told them, in time order (:mod:`kraftlog.check.groups`)
        self.group_events: list[GroupEvent] = []
        self.tombstones: set[tuple[str, str]] = set()
        self.acked_counts = {"all": 0, "1": 0, "0": 0}
        self.consumed: list[Consumed] = []
        self.truncations: list[Truncation] = []
        self.metrics = {"unclean_elections": 0, "elr_elections": 0}
        #: KIP-966 controller gauges: name -> [value after the last controller event, maximum seen]
        self._gauges: dict[str, list[int]] = {name: [0, 0] for name in GAUGES}
        #: unclean recoveries that elected a leader, over every controller incarnation
        self._recoveries_finished = 0
        self.unavailable_ms = 0
        self._leaderless_since: dict[str, int] = {}
        #: The committed metadata replayed so far, to classify each election by the state before it.
        self._shadow = MetadataImage()
        self._seen_metadata = 0  # controller log entries described in the timeline

    # ================================================================= the timeline
    def t(self) -> int:
        """Scenario time: simulated ms since the cluster was ready."""
        return self.sim.now - self.t0

    def log(self, text: str, event: Event | None = None) -> None:
        """Log ``text`` in the timeline and, when given, record ``event`` (``{"kind": ..., ...}``,
        :data:`~kraftlog.scenario.result.EVENT_KINDS`) with the same time ``t`` (ms since the cluster was ready)."""
        if not self.t0:
            self._bootstrap_log.append((self.sim.now, text))
            if event is not None:
                self._bootstrap_events.append((self.sim.now, event))
        self.timeline.append(f"{self.t():>8}ms  {text}")
        if event is not None:
            self.events.append({"t": self.t(), **event})

    def start_clock(self) -> None:
        """The cluster is ready: scenario time 0 is now; what was logged before gets negative times."""
        self.t0 = t0 = self.sim.now
        self.timeline = [f"{t - t0:>8}ms  {text}" for t, text in self._bootstrap_log]
        self.events = [{"t": t - t0, **event} for t, event in self._bootstrap_events]

    # ================================================================= the clients
    def observe_producer(self, sim: SimCluster, node_id: str) -> list[tuple[str, int, bytes]]:
        """After a producer handled an event: record its acknowledgements and failures. Returns its
        acks=all acknowledgements with an offset, as (partition name, offset, value bytes)."""
        node = sim.nodes.get(node_id)
        if node is None or not node.completions:
            return []
        assert isinstance(node, Producer)
        acked_all = []
        record = sim.history.record
        for c in node.take_completions():
            acks = _ACKS_LABEL[c.acks]
            value = c.value.decode()
            if c.error == NONE:
                self.acked.append((node_id, c.topic, c.partition, value, acks))
                self.acked_counts[acks] += 1
                name = f"{c.topic}-{c.partition}"
                record(sim.now, "ack", {"client": node_id, "partition": name, "value": value, "acks": acks,
                                        "offset": c.offset})
                if c.acks == -1 and c.offset >= 0:
                    acked_all.append((name, c.offset, c.value))
                    self.acked_at[(name, value)] = (c.offset, c.timestamp_ms)
            else:
                record(sim.now, "produce_failed", {"client": node_id, "partition": f"{c.topic}-{c.partition}",
                                                   "value": value, "error": int(c.error)})
        return acked_all

    def observe_consumer(self, sim: SimCluster, node_id: str) -> None:
        """After a consumer handled an event: record what it consumed and the truncations it detected."""
        node = sim.nodes.get(node_id)
        if node is None or (not node.records and not node.truncations and not node.has_errors
                            and not node.group_events):
            return
        assert isinstance(node, Consumer)
        if node.group_events:
            group = node.group_id or ""
            for kind, topic, index, offset in node.take_group_events():
                name = f"{topic}-{index}"
                self.group_events.append((group, node_id, name, kind, offset, self.t()))
                sim.history.record(sim.now, "group", {"client": node_id, "group": group, "partition": name,
                                                      "kind": kind, "offset": offset})
        try:
            records = node.poll_records()
        except LogTruncationError:
            records = node.take_records()  # reported below, with the earliest/latest ones
        except OffsetOutOfRangeError as exc:
            records = node.take_records()
            for topic, index, offset in exc.partitions:
                sim.history.record(sim.now, "offset_out_of_range",
                                   {"client": node_id, "partition": f"{topic}-{index}", "offset": offset})
        history = sim.history
        record = history.record
        for r in records:
            name = f"{r.topic}-{r.partition}"
            value = record_identity(r.value, r.headers)
            self.consumed.append((node_id, name, r.offset, value, sim.now, history.recorded))
            record(sim.now, "consume", {"client": node_id, "partition": name, "offset": r.offset,
                                        "epoch": r.leader_epoch, "value": value})
        for tr in node.take_truncations():
            name = f"{tr.topic}-{tr.partition}"
            self.truncations.append((node_id, name, tr.position, tr.divergence_offset, sim.now, history.recorded))
            record(sim.now, "log_truncation", {"client": node_id, "partition": name, "position": tr.position,
                                               "divergence": tr.divergence_offset})
            self.log(f"consumer {node_id}: LogTruncation on {name}: position {tr.position}, "
                     f"diverged at {tr.divergence_offset} "
                     f"({'raised LogTruncationError' if tr.reset == 'none' else 'reset to it: ' + tr.reset})",
                     {"kind": "truncation", "consumer": node_id, "partition": name, "position": tr.position,
                      "divergence_offset": tr.divergence_offset, "reset": tr.reset})

    # ================================================================= the brokers
    def storage_lines(self, sim: SimCluster, node_id: int, node: Broker | QuorumController,
                      role: str = "broker") -> None:
        """A node's storage lines (a failed log directory, data dropped at load, metadata snapshots written,
        fetched, loaded, a metadata log cleaned) into the timeline (event ``storage``) and the history."""
        for line in node.take_log_lines():
            self.log(f"{role} {node_id}: {line}", {"kind": "storage", role: node_id, "detail": line})
            sim.history.record(sim.now, "storage", {"node": str(node_id), "detail": line})

    def observe_alter_partition(self, sim: SimCluster, env: m.Envelope) -> None:
        """Log AlterPartition errors (INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, ...) in the timeline."""
        msg = env.message
        assert isinstance(msg, m.AlterPartitionResponse)
        ctl = sim.controller
        errors = [] if msg.error_code == Errors.NONE else [f"{Errors(msg.error_code).name}"]
        event: Event = {"kind": "alter_partition_error", "broker": env.dst}
        if msg.error_code != Errors.NONE:
            event["error"] = Errors(msg.error_code).name
        partition_errors: dict[str, str] = {}
        event["partition_errors"] = partition_errors
        for item in msg.partitions:
            if item.error_code != Errors.NONE:
                name = ctl.committed_image.topic_name(item.topic_id) if ctl is not None else item.topic_id
                errors.append(f"{name}-{item.partition} {Errors(item.error_code).name}")
                partition_errors[f"{name}-{item.partition}"] = Errors(item.error_code).name
        if errors:
            text = f"AlterPartition from broker {env.dst} answered: " + ", ".join(errors)
            sim.history.record(sim.now, "alter_partition_error", {"text": text})
            self.log(text, event)

    # ================================================================= the controller
    def observe_recoveries(self, sim: SimCluster, node: QuorumController) -> None:
        """The unclean recoveries' steps (level ``urm``) into the timeline and the history, and KIP-966's
        controller gauges sampled after every controller event (their final value and maximum)."""
        for ev in node.urm.take_events():
            self.log(f"unclean recovery of {ev.partition}: {ev.kind}: {ev.detail}",
                     {"kind": "recovery", "partition": ev.partition, "step": ev.kind, "detail": ev.detail})
            sim.history.record(sim.now, "recovery", {"partition": ev.partition, "step": ev.kind, "detail": ev.detail})
            if ev.kind == "elected":
                self._recoveries_finished += 1
        metrics = node.metrics  # the controller's own metrics, the ones its /metrics exports on a real node
        for name, gauge in self._gauges.items():
            gauge[0] = int(metrics.value(KIP_966[name]))
            if gauge[0] > gauge[1]:
                gauge[1] = gauge[0]

    def observe_metadata(self, ctl: QuorumController) -> bool:
        """The metadata records the controller committed since the last call, into the timeline and the
        history (one ``metadata`` event each that the timeline shows) and into the election counts.
        False when there were none."""
        log = ctl.log
        if len(log) <= self._seen_metadata:
            return False
        image = ctl.committed_image
        seen = max(self._seen_metadata, log.start_offset)  # a restarted controller's log may start at a snapshot
        self._count_elections(log[seen:], seen)
        for rec in log[seen:]:
            described = describe_record(rec, image)
            if described:
                text, event = described
                self.sim.history.record(self.sim.now, "metadata", {"text": text})
                self.log(text, event)
        self._seen_metadata = len(log)
        return True

    def _count_elections(self, records: list[object], base_offset: int) -> None:
        """Classify elections for the metrics: clean from the ISR, from the ELR, unclean (RECOVERING)."""
        shadow = self._shadow
        for i, rec in enumerate(records):
            if type(rec) is PartitionChangeRecord and rec.leader is not None and rec.leader >= 0:
                key = (shadow.topic_name(rec.topic_id), rec.partition_id)
                old = shadow.partitions.get(key)  # None: its creation was not seen (below a snapshot)
                if old is not None and rec.leader_recovery_state == RECOVERING:
                    self.metrics["unclean_elections"] += 1
                elif old is not None and rec.leader in old.elr:
                    self.metrics["elr_elections"] += 1
            shadow, _ = shadow.replay([rec], base_offset + i)
        self._shadow = shadow

    # ================================================================= availability and metrics
    def update_availability(self) -> None:
        """Track partitions without a live leader (no leader in metadata, or the leader is down)."""
        sim = self.sim
        ctl = sim.controller
        if not self.t0 or ctl is None:
            return
        for (topic, index), part in ctl.committed_image.partitions.items():
            name = f"{topic}-{index}"
            if part.leader < 0 or not sim.alive(part.leader):
                self._leaderless_since.setdefault(name, sim.now)
            elif name in self._leaderless_since:
                self.unavailable_ms += sim.now - self._leaderless_since.pop(name)

    def end_availability(self) -> None:
        """The run ended: partitions still without a live leader count until now."""
        for since in self._leaderless_since.values():
            self.unavailable_ms += self.sim.now - since
        self._leaderless_since.clear()

    def final_metrics(self, image: MetadataImage) -> dict[str, object]:
        """KIP-966 metrics from the committed ``image`` at the end plus the elections counted on the way."""
        under = 0
        electable = {}
        for (topic, index) in sorted(image.partitions):
            part = image.partitions[(topic, index)]
            if len(part.isr) < image.min_isr(topic, self.sim.config):
                under += 1
            electable[f"{topic}-{index}"] = len(part.isr) + len(part.elr)
        out: dict[str, object] = {"partitions_under_min_isr": under, "electable_replicas": electable,
                                  "unclean_elections": self.metrics["unclean_elections"],
                                  "elr_elections": self.metrics["elr_elections"]}
        # KIP-966's controller metrics: gauges as {"final", "max"}, the counter as a cluster total (Kafka's
        # resets on a controller failover; this sums every controller's).
        for name, (final, peak) in self._gauges.items():
            out[name] = {"final": final, "max": peak}
        out["unclean_recovery_finished_count"] = self._recoveries_finished
        return out


def describe_record(rec: object, image: MetadataImage) -> tuple[str, Event] | None:
    """A committed metadata record as its timeline line and its event (``partition`` or ``broker``,
    :data:`~kraftlog.scenario.result.EVENT_KINDS`), or None for records the timeline leaves out. ``image``:
    the controller's image after the batch."""
    if type(rec) is PartitionChangeRecord:
        name = f"{image.topic_name(rec.topic_id)}-{rec.partition_id}"
        part = image.partitions[(image.topic_name(rec.topic_id), rec.partition_id)]
        bits = []
        event: Event = {"kind": "partition", "partition": name}
        if rec.leader is not None:
            bits.append(f"leader -> {rec.leader if rec.leader >= 0 else 'none'} (epoch {part.leader_epoch})")
            event["leader"] = leader_or_none(rec.leader)
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
            event["last_known_leader"] = leader_or_none(rec.last_known_leader)
        if rec.leader_recovery_state is not None:
            bits.append("RECOVERING" if rec.leader_recovery_state else "RECOVERED")
            event["leader_recovery_state"] = "RECOVERING" if rec.leader_recovery_state else "RECOVERED"
        return f"{name}: " + ", ".join(bits), event
    if type(rec) is PartitionRecord:
        name = f"{image.topic_name(rec.topic_id)}-{rec.partition_id}"
        return (f"{name}: created, replicas {list(rec.replicas)}, leader {rec.leader}, ISR {list(rec.isr)}",
                {"kind": "partition", "partition": name, "created": True, "replicas": list(rec.replicas),
                 "leader": leader_or_none(rec.leader), "leader_epoch": rec.leader_epoch, "isr": list(rec.isr)})
    if type(rec) is RegisterBrokerRecord:
        return (f"broker {rec.broker_id} registered (broker epoch {rec.broker_epoch})",
                {"kind": "broker", "broker": rec.broker_id, "registered": True, "broker_epoch": rec.broker_epoch})
    if type(rec) is BrokerRegistrationChangeRecord:
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
