"""``kraftlog scenario run FILE --real``: a scenario file on real processes (issue 13).

The file's cluster starts as a chaos-mode cluster on 127.0.0.1 owned by this process (every node dies
with it; see :mod:`kraftlog.net.cluster`), its topics are created through a broker, and its steps run in
real time: ``at:`` counts from the moment every partition has a leader (the simulator's "cluster ready"),
``after:`` from the end of the previous step. The steps run through the simulator's interpreter
(:func:`kraftlog.scenario.interpreter.run_steps`: the same lines, the same failed expectations);
:class:`RealScenarioRun` is its :class:`~kraftlog.scenario.interpreter.ClusterBackend`, and each verb maps
to a fault on the real processes:

* ``crash`` → SIGKILL by PID; ``lose: unflushed`` then gives every file its content at its last fsync
  (:func:`kraftlog.net.shadow.restore_fsynced`: SimDisk's ``writeback: never``), ``lose: all`` removes
  the node's data directory (a replaced disk); ``restart`` starts the process again (a broker's removed
  directory is formatted first, as an operator formats a new disk; the controller's is not: it refuses
  to start, as in the simulator, and the refusal is logged);
* ``shutdown`` → SIGTERM (a controlled shutdown, waited for); ``restart_controller`` → SIGKILL of the
  controller and a restart (its metadata log is fsynced on every append, as the simulator's is);
* ``disk_full`` → an injected ENOSPC in the broker's FileDisk for the step's time, over the control
  channel (refused, as a failed step, when the broker is not running); ``corrupt`` → bytes of the chosen
  batch of the stopped broker's segment file flipped in place (positions from the run's seed; refused,
  as a failed step, while the broker runs);
* ``isolate``, ``partition``, ``cut``, ``heal``, ``hold``, ``release`` → the nodes' link filters, through
  :func:`kraftlog.net.cluster.control_all` (the simulator's rules, :mod:`kraftlog.links`);
* ``produce`` and the background ``clients`` → kraftlog's own sans-I/O producer and KIP-320 consumer, the
  ones the simulator runs, over TCP (:class:`kraftlog.net.client.ClientLoop`), with the same record
  values (``s<step>-<i>``, ``<client>-<n>``);
* ``alter_config`` and ``elect`` → IncrementalAlterConfigs and ElectLeaders sent to a broker, which
  forwards them to the controller;
* ``wait_until`` and ``expect`` → the controller's committed state, asked of its process over the
  control channel (``{"cmd": "state"}``: what the simulator's conditions read: leader, ISR, ELR,
  LastKnownELR, leader epoch, ``recovering``, a broker's fencing and controlled shutdown), ListOffsets to
  the leader (its HWM) and the process table (``alive``). While the controller is down they read the
  metadata a live broker holds, as the simulator does (the lowest broker id that answers).

A story with a controller quorum (``cluster: {controllers: N, kraft_version: V}``) runs on N real voters
(:func:`kraftlog.net.cluster.up` with ``controllers`` and ``kraft_version``): ``controller: active`` is the voter
whose run file says it is active when the step runs (:class:`~kraftlog.net.faults.ProcessFaults`), a voter's
``restart`` formats its lost directory again as the simulator does, the quorum conditions (``active_controller``,
``quorum_epoch``, ``quorum_epoch_at_least``) read the running voters' run files (:meth:`RealScenarioRun.quorum_view`),
and the other conditions ask the active voter (else a standby, else a broker). A story that waits for the voter the
simulator's seed elects may time out on real processes, where any voter may win an election.

What cannot be honoured is refused before anything starts, naming the step (:func:`refusals`): a
``sim:`` network delay (loopback has its own), ``lose: unflushed`` with a ``sim.writeback`` other than
``never`` (the kernel's writeback cannot be set per run). At the end, as ``kraftlog chaos`` does: the
clients stop, every partition is read back from its leader, the cluster shuts down cleanly and every
replica's disk is read; the verdict is the simulator's (:func:`kraftlog.verdict.is_safe`,
``history_digest`` null).
"""

from __future__ import annotations

import os
import threading
import time
from random import Random

from ..check import checkers
from ..check.groups import group_findings
from ..controller.controller import CONTROLLER
from ..level import DEFAULT, Level
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..scenario import AlterConfig, Condition, Crash, DeleteTopic, Elect, Produce, RestartClient, Scenario, Step
from ..scenario.interpreter import ACKS, node_words, run_steps
from ..scenario.result import RunResult
from ..verdict import is_safe
from . import cluster as cl
from .client import ClientLoop, ConsumerRecorder, KafkaConnection
from .faults import ProcessFaults
from .metrics_http import MetricsSampler
from .node import HOST, quorum_voters
from .readback import end_state_violations, read_back, read_replica_disks

__all__ = ["RealScenarioRun", "refusals"]

#: The simulator's default network delay (ms): a file that sets another is refused.
_SIM_DELAY = (1, 5)
_LABEL = {-1: "all", 1: "1", 0: "0"}


def refusals(scn: Scenario) -> list[str]:
    """What ``scn`` asks that real processes cannot honour, one line each naming the step; [] when it
    can run with ``--real``."""
    out = []
    if (scn.delay_min_ms, scn.delay_max_ms) != _SIM_DELAY:
        out.append(f"sim.network_delay {scn.delay_min_ms}ms-{scn.delay_max_ms}ms: real processes on loopback "
                   "have their own delays; remove it to run with --real")
    for step in scn.steps:
        where = step.label
        cond = getattr(step.action, "condition", None)
        if isinstance(cond, Condition) and (cond.kind == "metadata" or {"metadata_offset_at_least",
                                                                            "stray_partitions"} & set(cond.checks)):
            out.append(f"{where}: the metadata log conditions (metadata_log_start_at_least, "
                       "metadata_snapshot_at_least, metadata_offset_at_least, stray_partitions) are read by the "
                       "simulator only; remove them to run with --real")
        if isinstance(step.action, RestartClient):
            out.append(f"{where}: restart_client is run by the simulator only (with --real the consumers run in "
                       "this process; kraftlog chaos restarts a real consumer group)")
        if isinstance(step.action, Crash) and step.action.lose == "unflushed" and scn.writeback_ms is not None:
            out.append(f"{where}: lose: unflushed with sim.writeback {scn.writeback_ms}ms: the kernel's "
                       "writeback cannot be set per run (with --real it is `never`: the restored files are "
                       "those at the last fsync); set sim.writeback: never")
    return out


class RealScenarioRun(ProcessFaults):
    """``scenario`` on real processes in ``directory`` (a new directory; kept afterwards with the nodes'
    logs) at ``level`` (default: the file's, else the default) with ``seed`` (the nodes' seed; default
    the file's). ``progress(line)``: each timeline line as it happens. ``run()`` returns a RunResult
    whose verdict is the simulator's shape with ``history_digest`` None. Raises ValueError (before
    anything starts) with :func:`refusals`' lines when the file cannot be honoured."""

    def __init__(self, scenario: Scenario, directory: str, level: Level | None = None, seed: int | None = None,
                 progress=lambda line: None) -> None:
        problems = refusals(scenario)
        if problems:
            raise ValueError("cannot run with --real:\n  " + "\n  ".join(problems))
        super().__init__(os.path.abspath(directory), scenario.seed if seed is None else seed)
        self.scenario = scenario
        if level is None:
            level = Level.parse(scenario.level) if scenario.level is not None else DEFAULT
        self.level = level
        self.progress = progress
        self.lock = threading.Lock()
        self.acked: list = []
        self.acked_counts = {"all": 0, "1": 0, "0": 0}
        #: the controller's KIP-966 metrics sampled from its /metrics during the story (``real_metrics``)
        self.sampled: dict[str, dict[str, float]] = {}
        self.reads = ConsumerRecorder(self._now)
        self.failed: list[str] = []
        self.timeline: list[str] = []
        self.t0 = time.monotonic()
        self.ports: dict = {}
        self.loops: list[ClientLoop] = []

    # ------------------------------------------------------------------ timeline
    def _now(self) -> int:
        return int((time.monotonic() - self.t0) * 1000)

    def _log(self, text: str) -> None:
        line = f"{self._now():>8}ms  {text}"
        self.timeline.append(line)
        self.progress(line)

    # ------------------------------------------------------------------ requests
    def _request(self, message, timeout_s: float = 5.0):
        """An admin request to the first running broker that answers; None when none does."""
        info = cl.load(self.directory)
        for e in info["nodes"]:
            if e["role"] != "broker" or not cl.pid_alive(e.get("pid")):
                continue
            try:
                with KafkaConnection(f"{HOST}:{e['port']}", timeout_s=timeout_s) as k:
                    return k.request(message)
            except (OSError, ValueError):
                continue
        return None

    def _describe(self) -> dict:
        resp = self._request(m.DescribeTopicPartitionsRequest(tuple(t.name for t in self.scenario.topics)))
        if resp is None:
            return {}
        return {t.name: list(t.partitions) for t in resp.topics if t.error_code == Errors.NONE}

    def _partition(self, name: str):
        topic, _, idx = name.rpartition("-")
        for p in self._describe().get(topic, []):
            if p.partition_index == int(idx):
                return p
        return None

    def _hwm(self, name: str, leader: int) -> int | None:
        topic, _, idx = name.rpartition("-")
        try:
            with KafkaConnection(f"{HOST}:{self.ports[leader]}", timeout_s=3) as k:
                resp = k.request(m.ListOffsetsRequest(-1, (m.ListOffsetsPartition(topic, int(idx), -1),)))
        except (OSError, ValueError, KeyError):
            return None
        r = resp.partitions[0] if resp.partitions else None
        return r.offset if r is not None and r.error_code == Errors.NONE else None

    def _controller_state(self) -> dict | None:
        """The controller's committed state (``{"brokers", "partitions"}``, see
        :meth:`kraftlog.metadata.image.MetadataImage.snapshot`), asked of its process over the control
        channel; while it is down, the metadata the first live broker that answers holds; None when no
        node answers."""
        info = cl.load(self.directory)
        voters = quorum_voters(info)
        if voters:  # a quorum: the active voter first, then the other running voters (a standby's committed image)
            active, _epoch = self.quorum_view()
            controllers = ([active] if active is not None else []) + [
                v for v in voters if v != active and cl.node_alive(info, v)]
        else:
            controllers = [CONTROLLER] if cl.node_alive(info, CONTROLLER) else []
        nodes = controllers or [e["id"] for e in info["nodes"] if e["role"] == "broker" and cl.pid_alive(e.get("pid"))]
        for node in nodes:
            try:
                answer = cl.control(self.directory, node, {"cmd": "state"}, timeout_s=3.0)
            except cl.ClusterError:
                continue
            if answer.get("ok"):
                return answer.get("state")
        return None

    def quorum_view(self) -> tuple[int | None, int]:
        """(the active controller, the highest Raft epoch) as the running voters' run files report them (the
        active one: in the newest epoch, so that a paused former leader's stale file does not count); (None, -1)
        without a running voter."""
        info = cl.load(self.directory)
        views = [(q.get("epoch", -1), bool(q.get("active")), v) for v in quorum_voters(info)
                 if cl.node_alive(info, v) and (q := (cl.run_file(self.directory, v) or {}).get("quorum"))]
        if not views:
            return None, -1
        epoch = max(e for e, _a, _v in views)
        active = [v for e, a, v in views if a and e == epoch]
        return (active[0] if active else None), epoch

    def _holds_quorum(self, checks: dict) -> bool:
        active, epoch = self.quorum_view()
        for key, want in checks.items():
            if key == "active_controller":
                if (active is None) if want == "any" else (active != want):
                    return False
            elif key == "quorum_epoch" and epoch != want:
                return False
            elif key == "quorum_epoch_at_least" and epoch < want:
                return False
        return True

    def holds(self, cond: Condition) -> bool:
        """``cond`` against the controller's committed state, as the simulator reads it (see the module
        doc); False while the controller cannot be asked. A quorum condition reads the voters' run files."""
        checks = cond.checks
        if cond.kind == "quorum":
            return self._holds_quorum(checks)
        if cond.kind == "broker" and set(checks) == {"alive"}:
            return self.alive(int(cond.target)) == checks["alive"]
        state = self._controller_state()
        if state is None:
            return False
        if cond.kind == "partition":
            p = state["partitions"].get(str(cond.target))
            if p is None:
                return False
            for key, want in checks.items():
                if key in ("isr", "elr", "last_known_elr"):
                    if frozenset(p[key]) != want:
                        return False
                elif key == "leader_epoch_at_least":
                    if p["leader_epoch"] < want:
                        return False
                elif key in ("hwm", "hwm_at_least"):
                    hwm = self._hwm(str(cond.target), p["leader"]) if p["leader"] is not None else None
                    if hwm is None or (hwm != want if key == "hwm" else hwm < want):
                        return False
                elif p[key] != want:  # leader, recovering
                    return False
            return True
        broker = int(cond.target)
        reg = state["brokers"].get(str(broker))
        for key, want in checks.items():
            if key == "alive":
                if self.alive(broker) != want:
                    return False
            elif key == "fenced":
                if (reg is None or reg["fenced"]) != want:
                    return False
            elif (reg is not None and reg[key]) != want:  # in_controlled_shutdown
                return False
        return True

    def _fenced(self, broker: int) -> bool | None:
        """Whether the controller has ``broker`` fenced (or unregistered); None when it cannot be asked."""
        state = self._controller_state()
        if state is None:
            return None
        reg = state["brokers"].get(str(broker))
        return reg is None or reg["fenced"]

    def observed(self, cond: Condition) -> str:
        if cond.kind == "quorum":
            active, epoch = self.quorum_view()
            return f"active_controller={'none' if active is None else active}, quorum_epoch={epoch}"
        state = self._controller_state()
        if cond.kind == "partition":
            p = state["partitions"].get(str(cond.target)) if state else None
            if p is None:
                return "the controller did not answer" if state is None else "no such partition"
            hwm = self._hwm(str(cond.target), p["leader"]) if p["leader"] is not None else None
            return (f"leader={p['leader']}, isr={p['isr']}, elr={p['elr']}, last_known_elr={p['last_known_elr']}, "
                    f"leader_epoch={p['leader_epoch']}, hwm={hwm}, recovering={p['recovering']}")
        b = int(cond.target)
        reg = state["brokers"].get(str(b)) if state else None
        return (f"alive={self.alive(b)}, fenced={None if state is None else (reg is None or reg['fenced'])}, "
                f"in_controlled_shutdown={reg['in_controlled_shutdown'] if reg else None}")

    # ------------------------------------------------------------------ clients (their loops' threads)
    def _address(self, broker):
        return (HOST, self.ports[broker]) if broker in self.ports else None

    def _take_completions(self, prod) -> int:
        got = 0
        with self.lock:
            for c in prod.take_completions():
                if c.error == Errors.NONE:
                    label = _LABEL[c.acks]
                    self.acked.append((prod.node_id, c.topic, c.partition, c.value.decode(), label))
                    self.acked_counts[label] += 1
                    got += 1
        return got

    def _start_clients(self) -> None:
        from ..client.consumer import Consumer
        from ..client.producer import Producer
        brokers = list(range(self.scenario.brokers))
        for c in self.scenario.clients:
            spec = self.scenario.topic(c.topic)
            count = (len(spec.assignment) if spec.assignment else spec.partitions) if spec else 1
            parts = [(c.topic, c.partition)] if c.partition is not None else [(c.topic, i) for i in range(count)]
            if c.kind == "producer":
                prod = Producer(c.id, brokers, ACKS[c.acks], Random(f"{c.id}:{self.seed}"))
                state = {"n": 0, "next": 0}

                def observe(node, parts=parts, interval=c.interval_ms, state=state) -> bool:
                    self._take_completions(node)
                    now = self._now()
                    sent = False
                    while now >= state["next"]:
                        topic, index = parts[state["n"] % len(parts)]
                        node.send(topic, index, f"{node.node_id}-{state['n']}".encode(), self._clock_ms())
                        state["n"] += 1
                        state["next"] += interval
                        sent = True
                    return sent
                loop = ClientLoop(prod, self._address, observe, wake_every_ms=min(100, c.interval_ms))
            else:
                cons = Consumer(c.id, brokers, parts, c.reset, Random(f"{c.id}:{self.seed}"), group_id=c.group_id,
                                auto_commit_interval_ms=c.commit_interval_ms)
                loop = ClientLoop(cons, self._address, self.reads.observe)
            loop.start()
            self.loops.append(loop)

    def _clock_ms(self) -> int:
        """The driver's clock (wall ms), which the client nodes' timestamps use."""
        return int(time.time() * 1000)

    # ------------------------------------------------------------------ the ClusterBackend (main thread)
    # kraftlog.scenario.interpreter runs the steps: what each verb means, and its line, is written there once.
    def refusals(self, scenario: Scenario) -> list[str]:
        return refusals(scenario)

    def restart_client(self, client: str) -> str | None:  # pragma: no cover - refused before the run starts
        return "restart_client is run by the simulator only"

    def now_ms(self) -> int:
        return self._now()

    def advance_to(self, t_ms: int) -> None:
        time.sleep(max(0.0, t_ms / 1000 - (time.monotonic() - self.t0)))

    def log(self, text: str, event: dict | None = None) -> None:
        self._log(text)

    def fail(self, text: str, event: dict | None = None) -> None:
        self.failed.append(text)
        self._log(text)

    def begin_step(self, step: Step) -> None:
        pass

    def end_step(self, step: Step) -> None:
        pass

    def produce(self, step: Step, action: Produce) -> int:
        from ..client.producer import Producer
        prod = Producer(f"step{step.index}-producer", list(range(self.scenario.brokers)), ACKS[action.acks],
                        Random(f"step{step.index}:{self.seed}"), delivery_timeout_ms=action.timeout_ms,
                        request_timeout_ms=min(30000, action.timeout_ms))
        done = threading.Event()
        state = {"sent": False, "acked": 0}

        def observe(node) -> bool:
            sent = False
            if not state["sent"]:
                for i in range(action.count):
                    node.send(action.topic, action.partition, f"s{step.index}-{i}".encode(), self._clock_ms())
                state["sent"] = sent = True
            state["acked"] += self._take_completions(node)
            if state["sent"] and node.idle:
                done.set()
            return sent

        loop = ClientLoop(prod, self._address, observe)
        loop.start()
        try:
            done.wait(action.timeout_ms / 1000 + 1)
        finally:
            loop.stop()
        return state["acked"]

    def alter_config(self, action: AlterConfig) -> int:
        rtype, rname = (m.RESOURCE_TOPIC, action.topic) if action.topic else (m.RESOURCE_BROKER, "")
        resp = self._request(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(
            rtype, rname, tuple(m.AlterableConfig(k, m.OP_SET, str(v)) for k, v in sorted(action.config.items()))),)))
        return Errors.REQUEST_TIMED_OUT if resp is None else resp.responses[0].error_code

    def delete_topic(self, action: DeleteTopic) -> int:
        resp = self._request(m.DeleteTopicsRequest((action.topic,)))
        return Errors.REQUEST_TIMED_OUT if resp is None else resp.responses[0].error_code

    def elect(self, action: Elect) -> int:
        topic, _, idx = action.partition.rpartition("-")
        resp = self._request(m.ElectLeadersRequest(m.ELECTION_TYPES[action.type], (m.ElectLeadersPartition(
            topic, int(idx), action.leader if action.leader is not None else -1),)))
        return Errors.REQUEST_TIMED_OUT if resp is None else (resp.error_code or resp.results[0].error_code)

    def wait_until(self, cond: Condition, timeout_ms: int) -> bool:
        deadline = time.monotonic() + timeout_ms / 1000
        ok = self.holds(cond)
        while not ok and time.monotonic() < deadline:
            time.sleep(0.2)
            ok = self.holds(cond)
        return ok

    def run_for(self, duration_ms: int) -> None:
        time.sleep(duration_ms / 1000)

    # ------------------------------------------------------------------ the run
    def _create_topics(self) -> bool:
        topics = []
        for t in self.scenario.topics:
            configs = tuple(sorted(t.config.items()))
            if t.assignment:
                topics.append(m.CreatableTopic(t.name, assignment=t.assignment, configs=configs))
            else:
                topics.append(m.CreatableTopic(t.name, t.partitions, t.replication_factor, configs=configs))
        resp = self._request(m.CreateTopicsRequest(tuple(topics)), timeout_s=20)
        if resp is None:
            self.failed.append("bootstrap: no broker answered CreateTopics")
            return False
        for r in resp.topics:
            if r.error_code not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
                self.failed.append(f"bootstrap: CreateTopics {r.name}: {Errors(r.error_code).name}")
                return False
        deadline = time.monotonic() + 60
        want = {t.name: (len(t.assignment) if t.assignment else t.partitions) for t in self.scenario.topics}
        while time.monotonic() < deadline:
            described = self._describe()
            if all(len(described.get(n, [])) == k and all(p.leader_id >= 0 for p in described[n])
                   for n, k in want.items()):
                return True
            time.sleep(0.2)
        self.failed.append("bootstrap: the topics had no leader 60 s after their creation")
        return False

    def run(self) -> RunResult:
        """Start the cluster, run the steps in real time, read back and judge; every node is stopped
        before this returns or raises."""
        wall = time.perf_counter()
        scn = self.scenario
        sampler: MetricsSampler | None = None
        try:
            cl.up(self.directory, scn.brokers, port=0, level=self.level, seed=self.seed, config=dict(scn.config),
                  chaos=True, owned=True, controllers=scn.controllers, kraft_version=scn.kraft_version)
            nodes = cl.load(self.directory)["nodes"]
            self.ports = {e["id"]: e["port"] for e in nodes if e["role"] == "broker"}
            metrics_ports = {e["id"]: e.get("metrics_port") for e in nodes if e["role"] == "controller"}

            def controller_metrics():  # the active controller's (a quorum's changes with each election)
                active = self.quorum_view()[0] if scn.controllers > 1 else CONTROLLER
                return metrics_ports.get(active)
            sampler = MetricsSampler(controller_metrics, tuple(REAL_GAUGES.values()))
            sampler.start()
            ready = self._create_topics()
            self.t0 = time.monotonic()
            if ready:
                quorum = (f", a quorum of {scn.controllers} controllers (kraft.version {scn.kraft_version})"
                          if scn.controllers > 1 else "")
                self._log(f"cluster ready: {scn.brokers} brokers{quorum}, level {self.level.label}, seed {self.seed} "
                          f"(real processes in {self.directory})")
                self._start_clients()
                run_steps(self, scn)
            end_ms = self._now()
            self.sampled = sampler.stop()
            for node in sorted(self.paused, key=str):  # the read-back needs every process to answer
                self.resume(node)
                self._log(f"end of the story: {node_words(node)} resumed to read the cluster back")
            for loop in self.loops:
                loop.stop()
            described = self._describe()
            final_logs, hwms = read_back(self._request, self.ports, described) if described else ({}, {})
            partitions = {}
            for topic, parts in described.items():
                for p in parts:
                    name = f"{topic}-{p.partition_index}"
                    partitions[name] = {"leader": p.leader_id if p.leader_id >= 0 else None,
                                        "leader_epoch": p.leader_epoch, "isr": list(p.isr_nodes),
                                        "elr": list(p.eligible_leader_replicas),
                                        "last_known_elr": list(p.last_known_elr), "hwm": hwms.get(name)}
            brokers = {str(s.id): {"alive": s.alive, "fenced": self._fenced(s.id) if s.alive else True,
                                   "epoch": s.broker_epoch}
                       for s in cl.status(self.directory) if s.role == "broker"}
            cl.down(self.directory)
            names = [(t.name, i) for t in scn.topics
                     for i in range(len(t.assignment) if t.assignment else t.partitions)]
            replica_logs, leos = read_replica_disks(self.directory, scn.brokers, names)
            for name, p in partitions.items():
                p["leo"] = leos.get(name, {})
            verdict = self._verdict(end_ms, final_logs, replica_logs, partitions, brokers)
            code = 0 if ready and not self.failed else 1
            verdict["passed"] = code == 0
            verdict["safe"] = is_safe(verdict)
            verdict["history_digest"] = None
            return RunResult(verdict, self.timeline, code, (time.perf_counter() - wall) * 1000)
        finally:
            if sampler is not None:
                sampler.close()
            for loop in self.loops:
                loop.stop(2.0)
            try:
                cl.kill(self.directory)
            except cl.ClusterError:
                pass

    def _verdict(self, end_ms: int, final_logs: dict, replica_logs: dict, partitions: dict, brokers: dict) -> dict:
        return {
            "scenario": self.scenario.name, "level": self.level.label, "seed": self.seed, "real": True,
            "sim_time_ms": end_ms,
            "acked": {k: v for k, v in self.acked_counts.items() if v or k != "0"},
            **checkers.judge(self.acked, final_logs, self.reads.consumed, self.reads.truncations, self.reads.hwms),
            **group_findings(self.reads.group_events, self.reads.consumed, final_logs),
            "invariant_violations": end_state_violations(replica_logs, partitions),
            "failed_expectations": list(self.failed),
            "metrics": {"records_consumed": len(self.reads.consumed), **real_metrics(self.sampled)},
            "final": {"partitions": partitions, "brokers": brokers},
        }


#: The verdict's KIP-966 metrics (as the simulator's verdict names them) -> the controller's Prometheus
#: sample each is read from when a real run scrapes its /metrics.
REAL_GAUGES = {
    "unclean_recovery_partitions_count": "kafka_controller_unclean_recovery_partitions_count",
    "manual_leader_election_required_partition_count":
        "kafka_controller_manual_leader_election_required_partition_count",
    "electable_replicas_count": "kafka_controller_electable_replicas_count",
    "unclean_recovery_finished_count": "kafka_controller_unclean_recovery_finished_count",
    "partitions_under_min_isr": "kafka_controller_global_under_min_isr_partition_count",
}
#: Of those, the ones reported as a value at the end rather than ``{"final", "max"}`` (as the simulator does).
_FINAL_ONLY = ("unclean_recovery_finished_count", "partitions_under_min_isr")


def real_metrics(sampled: dict[str, dict[str, float]]) -> dict[str, object]:
    """The verdict's KIP-966 metrics from the controller's /metrics sampled every 200 ms during a real run
    (:class:`~kraftlog.net.metrics_http.MetricsSampler`): each gauge's ``{"final", "max"}``, the counter and
    the under-min-ISR count at the end. The counter is the last controller's (Kafka's resets on a
    failover; the simulator's sums every controller's)."""
    out: dict[str, object] = {}
    for key, name in REAL_GAUGES.items():
        seen = sampled.get(name)
        if seen is None:
            continue
        final, peak = int(seen["final"]), int(seen["max"])
        out[key] = final if key in _FINAL_ONLY else {"final": final, "max": peak}
    return out

