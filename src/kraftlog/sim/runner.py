"""The scenario runner: replays a scenario file (SCENARIOS.md) in the simulator and returns its verdict.

Scenario time 0 is the moment the cluster is ready: every broker registered and unfenced, every topic
created, every partition with a leader and a full ISR. ``at`` times are measured from there.

:class:`ScenarioRun` is the run loop: it bootstraps the cluster, starts the scenario's clients, and is the
simulator's :class:`~kraftlog.scenario.interpreter.ClusterBackend` (what each step does to the simulated
cluster); the step interpreter (:func:`~kraftlog.scenario.interpreter.run_steps`) drives it. Beside it:

* :mod:`kraftlog.sim.recorder` (:class:`~kraftlog.sim.recorder.RunRecorder`): the readable timeline, the
  same story as data (``RunResult.events``, :data:`~kraftlog.scenario.result.EVENT_KINDS`: a line and its
  event are recorded at the same moment, with the same time; the campaign report draws its timeline from
  the events, never from the wording), the history events of the digest, the checkers' inputs and the
  metrics;
* :mod:`kraftlog.sim.online_checks` (:class:`~kraftlog.sim.online_checks.OnlineChecks`): the invariants
  checked while the run goes — after every controller event that committed metadata, after every step,
  when a broker's registration changes and when a broker replays metadata — each violation reported
  once, with its simulated time and the step the run was in, and logged in the timeline;
* :mod:`kraftlog.sim.cluster_state`: the committed metadata, the conditions, the final state and the
  replicas' logs, read from the cluster.

Observers only read the cluster: they change no history digest.
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import cast

from ..broker.broker import LOG_DIR
from ..check import checkers
from ..check.groups import group_findings
from ..client.admin import Admin
from ..client.consumer import Consumer
from ..client.producer import Producer
from ..controller.controller import CONTROLLER, QuorumController
from ..level import DEFAULT, Level
from ..metadata.image import MetadataImage
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..scenario import (
    ClientSpec,
    Condition,
    Corrupt,
    Produce,
    Scenario,
    Step,
    configs_at_level,
    corrupt_target,
)
from ..scenario.interpreter import ACKS, Corrupted, node_words, run_steps
from ..scenario.model import ACTIVE_CONTROLLER
from ..scenario.result import Event, RunResult
from ..storage.segment import segment_paths
from ..verdict import is_safe
from . import cluster_state
from .cluster import SimCluster
from .online_checks import LeaderHwm, OnlineChecks
from .recorder import RunRecorder, leader_or_none

BOOTSTRAP_TIMEOUT_MS = 60000
SHUTDOWN_WAIT_MS = 35000


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
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


class ScenarioRun:
    """One run of ``scenario`` at ``level`` with ``seed``; ``run()`` returns a RunResult.

    ``sim``: the simulated cluster; ``recorder``: what the run records (:class:`RunRecorder`: the timeline,
    its events, the checkers' inputs ``acked``/``consumed``/``truncations``, shown here too);
    ``checks``: the invariants checked as it goes (:class:`OnlineChecks`); ``failed``: the failed
    expectations; ``producers``/``consumers``: the scenario's clients."""

    def __init__(self, scenario: Scenario, level: Level | None = None, seed: int | None = None,
                 wire: bool = False, validate_positions: bool = True) -> None:
        self.validate_positions = validate_positions
        self.level = level if level is not None else (Level.parse(scenario.level) if scenario.level else DEFAULT)
        #: Configs that do not exist at this level, left out (a run below the level the file was
        #: written for): one line each, which the CLI prints as warnings (``configs_at_level``).
        scenario, self.config_notes = configs_at_level(scenario, self.level)
        self.scenario = scenario
        self.seed = seed if seed is not None else scenario.seed
        config = dict(scenario.config)
        # As `kraftlog cluster up --brokers N` writes into the cluster config: __consumer_offsets' replication
        # factor (Kafka's 3, not capped) is at most the number of brokers, unless the scenario says otherwise.
        config.setdefault("offsets.topic.replication.factor", str(min(3, scenario.brokers)))
        # and 3 partitions rather than Kafka's 50 unless the scenario says otherwise: a group lives in one
        # partition, and 50 idle partitions in every follower fetch made a story 2.2x slower to simulate.
        config.setdefault("offsets.topic.num.partitions", str(SIM_OFFSETS_PARTITIONS))
        self.sim = SimCluster(scenario.brokers, config, self.level, self.seed,
                              writeback_ms=scenario.writeback_ms,
                              delay_ms=(scenario.delay_min_ms, scenario.delay_max_ms), wire=wire,
                              controllers=scenario.controllers, kraft_version=scenario.kraft_version)
        self.rng = random.Random(f"clients:{self.seed}")
        self.admin = Admin("admin")
        self.sim.add_client(self.admin)
        self.recorder = RunRecorder(self.sim)
        self.checks = OnlineChecks(self.sim, self.recorder)
        self.end_ms = 0
        #: the controller the last ``controller: active`` crash or pause stopped
        self._stopped_active = None
        self.failed: list[str] = []
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        for cid in self.sim.controller_ids:
            self.sim.observers[cid] = self._after_controller_event
        for b in range(scenario.brokers):
            self.sim.observers[b] = self.checks.broker_observer(b)
        self.sim.message_observers[m.AlterPartitionResponse] = self.recorder.observe_alter_partition
        self.sim.message_observers[m.MetadataFetchResponse] = self.checks.observe_metadata_fetch

    # ================================================================= what the recorder and checks hold
    @property
    def t0(self) -> int:
        """The simulated ms at which the cluster was ready (scenario time 0; 0 while bootstrapping)."""
        return self.recorder.t0

    @property
    def timeline(self) -> list[str]:
        return self.recorder.timeline

    @property
    def events(self) -> list[Event]:
        return self.recorder.events

    @property
    def acked(self) -> list[checkers.Acked]:
        return self.recorder.acked

    @property
    def acked_counts(self) -> dict[str, int]:
        return self.recorder.acked_counts

    @property
    def consumed(self) -> list[checkers.Consumed]:
        return self.recorder.consumed

    @property
    def truncations(self) -> list[checkers.Truncation]:
        return self.recorder.truncations

    @property
    def unavailable_ms(self) -> int:
        return self.recorder.unavailable_ms

    @property
    def violations(self) -> dict[str, str]:
        return self.checks.violations

    @property
    def leader_hwms(self) -> list[LeaderHwm]:
        return self.checks.leader_hwms

    # ================================================================= observers
    def _after_controller_event(self, sim: SimCluster, node_id: object) -> None:
        """After the controller handled an event: log its recoveries' steps and its new metadata records,
        check the metadata logs and, when it committed metadata, the invariants."""
        if sim.quorum_ids:
            self.checks.observe_quorum(node_id)
        ctl = sim.nodes.get(node_id)
        if isinstance(ctl, QuorumController):
            self.recorder.storage_lines(sim, cast(int, node_id), ctl, "controller")
        node = sim.controller if node_id in sim.controller_ids else None
        if node is None:
            return
        self.recorder.observe_recoveries(sim, node)  # a recovery's steps first: its election's record follows
        self.checks.observe_controller_log(node)
        if self.recorder.observe_metadata(node):
            self.recorder.update_availability()
            self.checks.check_invariants()

    def _observe_producer(self, sim: SimCluster, node_id: str) -> None:
        """After a producer handled an event: its acknowledgements and failures recorded, its acks=all
        acknowledgements noted for the invariants."""
        for name, offset, value in self.recorder.observe_producer(sim, node_id):
            self.checks.note_acked(name, offset, value)

    # ================================================================= conditions
    def _image(self) -> MetadataImage:
        """The committed metadata conditions and the verdict read (:func:`cluster_state.committed_image`)."""
        return cluster_state.committed_image(self.sim, self.scenario.brokers, self.checks.controller_node)

    def holds(self, cond: Condition) -> bool:
        """Evaluate a condition against the controller's committed state (and the leader's HWM); while the
        controller is down, against the metadata the brokers hold (:meth:`_image`)."""
        return cluster_state.holds(self.sim, self._image(), cond)

    def observed(self, cond: Condition) -> str:
        return cluster_state.observed(self.sim, self._image(), cond)

    # ================================================================= bootstrap
    def _bootstrap(self) -> bool:
        sim = self.sim
        n = self.scenario.brokers

        def brokers_ready(s) -> bool:
            ctl = s.controller
            return ctl is not None and all(ctl.committed_image.is_active(b) for b in range(n))

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
            for key, part in ctl.committed_image.partitions.items():
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
                self._schedule_background(prod, parts, c.interval_ms, 0, c.keys, c.tombstones)
            else:
                self._start_consumer(c, c.id, parts)

    def _start_consumer(self, c: ClientSpec, node_id: str, parts: list[tuple[str, int]]) -> None:
        cons = Consumer(node_id, list(range(self.scenario.brokers)), parts, c.reset,
                        random.Random(f"{node_id}:{self.seed}"), validate_positions=self.validate_positions,
                        group_id=c.group_id, auto_commit_interval_ms=c.commit_interval_ms)
        self.sim.observers[cons.node_id] = self.recorder.observe_consumer
        self.sim.add_client(cons)
        self.consumers.append(cons)

    def restart_client(self, client: str) -> str | None:
        """Kill the consumer ``client`` (its latest incarnation: no last commit, no LeaveGroup) and start a new
        one of the same group, named ``<client>~<n>`` for its ``n``-th restart (a new client: its records and
        requests are its own); None, or why not."""
        spec = next(c for c in self.scenario.clients if c.id == client and c.kind == "consumer")
        old = [c for c in self.consumers if c.node_id == client or c.node_id.startswith(f"{client}~")]
        current = old[-1]
        if self.sim.alive(current.node_id):
            self.sim.remove_client(current.node_id)
        self._start_consumer(spec, f"{client}~{len(old)}", sorted(current.state))
        return None

    def _partition_count(self, topic: str) -> int:
        for t in self.scenario.topics:
            if t.name == topic:
                return len(t.assignment) if t.assignment else t.partitions
        return 1

    def _schedule_background(self, prod: Producer, parts, interval: int, n: int, keys: int = 0,
                             tombstones: int = 0) -> None:
        def fire(sim: SimCluster, n=n) -> None:
            if not sim.alive(prod.node_id):
                return
            topic, index = parts[n % len(parts)]
            value = f"{prod.node_id}-{n}"
            key = f"k{n % keys}" if keys else None
            tombstone = bool(tombstones) and n % tombstones == tombstones - 1
            if key is not None:
                self.recorder.keys[(f"{topic}-{index}", value)] = key
                if tombstone:
                    self.recorder.tombstones.add((f"{topic}-{index}", value))
            prod.send(topic, index, value.encode(), sim.now, None if key is None else key.encode(), tombstone)
            sim._after(prod.node_id, prod)
            self._schedule_background(prod, parts, interval, n + 1, keys, tombstones)
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
        return self.recorder.t()

    def advance_to(self, t_ms: int) -> None:
        self.sim.run_until(max(self.recorder.t0 + t_ms, self.sim.now))

    def log(self, text: str, event: dict | None = None) -> None:
        self.recorder.log(text, event)

    def fail(self, text: str, event: dict | None = None) -> None:
        self.failed.append(text)
        self.recorder.log(text, event)

    def begin_step(self, step: Step) -> None:
        self.checks.where = f"in step {step.index} ({step.verb})"

    def end_step(self, step: Step) -> None:
        self.sim.history.record(self.sim.now, "step", {"index": step.index, "verb": step.verb})
        self.checks.check_invariants()
        if step.verb in ("crash", "shutdown", "restart", "restart_controller"):
            self.recorder.update_availability()
        # What the step started (a release, a crash, a restart) mostly plays out after it.
        self.checks.where = f"after step {step.index} ({step.verb})"

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

    def _controller(self, node, stopping: bool):
        """``controller: active``: the active controller for a crash or pause (remembered), the one that stopped
        for a restart or resume; any other node as it is."""
        if node != ACTIVE_CONTROLLER:
            return node
        if stopping or self._stopped_active is None:
            self._stopped_active = self.sim.active_controller_id()
        return self._stopped_active

    def crash(self, node, lose: str) -> None:
        self.sim.crash(self._controller(node, True), lose)

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
        return None if self.sim.restart(self._controller(node, False)) else self.sim.refused[-1][2]

    def restart_controller(self) -> str | None:
        return None if self.sim.restart_controller() else self.sim.refused[-1][2]

    def pause(self, node) -> str | None:
        return None if self.sim.pause(self._controller(node, True)) else f"{node_words(node)} is not running"

    def resume(self, node) -> str | None:
        return None if self.sim.resume(self._controller(node, False)) else f"{node_words(node)} is not paused"

    def disk_full(self, broker: int, for_ms: int) -> str | None:
        self.sim.disk_full(broker, for_ms)
        return None

    def corrupt(self, step: Step, action: Corrupt) -> Corrupted | None:
        """Flip bytes in one batch of the stopped broker's replica log (the interpreter refused it, as a
        failed step, while the broker runs: a running process would overwrite nothing, but its reads are
        not what the step means to test)."""
        topic, _, idx = action.partition.rpartition("-")
        disk = self.sim.disks[action.broker]
        located = [(path, i, batch) for path in segment_paths(disk, f"{LOG_DIR}/{topic}-{idx}")
                   for i, batch in enumerate(disk.read(path))]
        target = corrupt_target([batch for _path, _i, batch in located], action.at)
        if target is None:
            return None
        path, index, batch = located[target[0]]
        self.sim.corrupt(action.broker, path, index)
        return Corrupted(batch.base_offset, batch.next_offset - 1, action.bytes)

    def _now_active(self, node):
        """``active`` in a link step: the active controller when the step runs (remembered for a later one)."""
        return self._controller(node, True) if node == ACTIVE_CONTROLLER else node

    def isolate(self, nodes: tuple) -> None:
        self.sim.isolate([self._now_active(n) for n in nodes])

    def partition(self, groups: tuple) -> None:
        self.sim.partition([[self._now_active(n) for n in g] for g in groups])

    def cut(self, src, dst) -> None:
        self.sim.cut_link(self._now_active(src), self._now_active(dst))

    def heal(self, nodes: tuple | None) -> None:
        self.sim.heal([self._controller(n, False) for n in nodes] if nodes is not None else None)

    def hold(self, api: str | None, src, dst) -> None:
        self.sim.hold(api, self._now_active(src), self._now_active(dst))

    def release(self, api: str | None, src, dst) -> None:
        self.sim.release(api, self._controller(src, False), self._controller(dst, False))

    def alter_config(self, action) -> int:
        rtype, rname = (m.RESOURCE_TOPIC, action.topic) if action.topic else (m.RESOURCE_BROKER, "")
        resp = self._admin_call(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            rtype, rname, tuple(m.AlterableConfig(k, m.OP_SET, str(v)) for k, v in sorted(action.config.items()))),)))
        err = resp if isinstance(resp, int) else resp.responses[0].error_code
        self.sim.history.record(self.sim.now, "alter_config", {"error": int(err)})
        return err

    def delete_topic(self, action) -> int:
        resp = self._admin_call(m.DeleteTopicsRequest((action.topic,)))
        err = resp if isinstance(resp, int) else resp.responses[0].error_code
        self.sim.history.record(self.sim.now, "delete_topic", {"topic": action.topic, "error": int(err)})
        return err

    def elect(self, action) -> int:
        topic, _, idx = action.partition.rpartition("-")
        resp = self._admin_call(m.ElectLeadersRequest(m.ELECTION_TYPES[action.type], (m.ElectLeadersPartition(
            topic, int(idx), action.leader if action.leader is not None else -1),)))
        err = resp if isinstance(resp, int) else (resp.error_code or resp.results[0].error_code)
        self.sim.history.record(self.sim.now, "elect",
                                {"partition": action.partition, "type": action.type, "error": int(err)})
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
        # The scenario's clock starts when the cluster is ready: what happened before it is negative.
        self.recorder.start_clock()
        self.sim.history.record(self.sim.now, "ready", {"ok": ready})
        if not ready:
            if not self.failed:
                self.failed.append("bootstrap: the cluster did not become ready within 60s of simulated time")
        else:
            self.recorder.log(
                f"cluster ready: {self.scenario.brokers} brokers, level {self.level.label}, seed {self.seed}",
                {"kind": "ready", "brokers": self.scenario.brokers, "level": self.level.label, "seed": self.seed})
            self._start_clients()
            self.checks.where = "before the first step"
            run_steps(self, self.scenario)
        self.recorder.end_availability()
        self.checks.check_invariants()
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
            self.recorder.log(f"DescribeTopicPartitions from broker {brokers[0]}: {Errors(resp).name}",
                              {"kind": "described", "broker": brokers[0], "error": Errors(resp).name})
            return
        for t in resp.topics:
            for p in t.partitions:
                name = f"{t.name}-{p.partition_index}"
                self.recorder.log(
                    f"described by broker {brokers[0]}: {name} leader {p.leader_id} (epoch {p.leader_epoch}), "
                    f"ISR {list(p.isr_nodes)}, ELR {list(p.eligible_leader_replicas)}, "
                    f"LastKnownELR {list(p.last_known_elr)}, offline {list(p.offline_replicas)}",
                    {"kind": "described", "broker": brokers[0], "partition": name,
                     "leader": leader_or_none(p.leader_id), "leader_epoch": p.leader_epoch,
                     "isr": list(p.isr_nodes), "elr": list(p.eligible_leader_replicas),
                     "last_known_elr": list(p.last_known_elr), "offline": list(p.offline_replicas)})

    # ================================================================= verdict
    def final_state(self) -> tuple[dict[str, dict[str, dict[str, object]]], checkers.FinalLogs,
                                   checkers.ReplicaLogs]:
        """The verdict's ``final``, the final leader logs and the replicas' logs
        (:func:`cluster_state.final_state`)."""
        return cluster_state.final_state(self.sim, self._image(), self.scenario.brokers)

    def dump_logs(self) -> dict[str, dict[str, dict[str, object]]]:
        """Every replica's log at the end, for ``scenario run --dump-logs`` (:func:`cluster_state.dump_logs`).
        Read-only."""
        return cluster_state.dump_logs(self.sim, self._image())

    def verdict(self) -> dict[str, object]:
        final, final_logs, replica_logs = self.final_state()
        hwms = [(c.node_id, f"{t}-{p}", h, at) for c in self.consumers for at, t, p, h in c.hwms]
        violations = list(self.violations.values()) + checkers.log_matching(replica_logs)
        if self.sim.quorum_ids:
            violations += self.checks.final_quorum_checks()
        return {
            "scenario": self.scenario.name, "level": self.level.label, "seed": self.seed,
            "sim_time_ms": self.end_ms - self.t0,
            "acked": dict(self.acked_counts),
            **checkers.judge(self.acked, final_logs, self.consumed, self.truncations, hwms,
                             checkers.leader_hwm_regressions(self.leader_hwms),
                             cluster_state.retention_view(self.sim, self._image(), self.sim.now,
                                                          self.recorder.acked_at) or None,
                             cluster_state.compaction_view(self.sim, self._image(), self.recorder.keys,
                                                           self.recorder.acked_at, self.recorder.tombstones)
                             or None),
            **group_findings(self.recorder.group_events, self.consumed, final_logs),
            "invariant_violations": violations,
            "failed_expectations": list(self.failed),
            "metrics": self.recorder.final_metrics(self._image()),
            "final": final,
            "history_digest": self.sim.history.digest(),
        }


#: ``offsets.topic.num.partitions`` in the simulator when a scenario does not set it (see ScenarioRun).
SIM_OFFSETS_PARTITIONS = 3


def run_scenario(scenario: Scenario, level: Level | None = None, seed: int | None = None,
                 wire: bool = False, validate_positions: bool = True) -> RunResult:
    """Run ``scenario`` (level/seed override the file's) and return its RunResult.

    ``validate_positions=False`` makes the scenario's consumers skip KIP-320 position validation, as
    some real clients do (used to prove the checker catches the resulting silent skip)."""
    return ScenarioRun(scenario, level, seed, wire, validate_positions).run()
