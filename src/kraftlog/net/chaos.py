"""``kraftlog chaos``: real processes, real clients, seeded faults, and the simulator's checkers (issue 13).

One run:

1. **Cluster.** A chaos-mode cluster (:func:`kraftlog.net.cluster.up` with ``chaos=True``: link filters
   with a control channel, FileDisk shadows) of ``brokers`` brokers and a controller on 127.0.0.1, owned
   by this process (every node dies with it, even when it is SIGKILLed: see :mod:`kraftlog.net.node`),
   with the short timeouts of :data:`CHAOS_CONFIG` so that ISR shrinks and recoveries happen inside a
   short run. A topic :data:`~kraftlog.net.chaos_plan.TOPIC` of ``partitions`` partitions, replication
   factor min(3, brokers), ``min.insync.replicas`` min(2, RF). librdkafka's log lines go to ``DIR/clients.log``.
2. **Clients**, from the moment the cluster is ready to the end: a confluent-kafka (librdkafka)
   producer with ``acks=all`` and ``enable.idempotence=true``, a plain ``acks=1`` producer, each
   sending ``rate`` records/s round-robin over the partitions (values ``all-<n>`` / ``one-<n>``, unique),
   and kraftlog's own KIP-320 consumer (:class:`kraftlog.client.consumer.Consumer` over TCP,
   :class:`kraftlog.net.client.ClientLoop`) reading every partition from the start and validating its
   positions with OffsetForLeaderEpoch. An acknowledgement is a delivery report without error; a
   producer whose idempotence state librdkafka declares fatal is replaced (counted in ``metrics``). A
   confluent-kafka consumer group of two members (:mod:`kraftlog.net.chaos_group`) commits every 100 records
   and restarts its members every 15-30 s; the verdict's ``committed_offset_regressions`` and
   ``skipped_by_group`` judge what its coordinator (the leader of its ``__consumer_offsets`` partition) told it.
3. **Faults** (:func:`~kraftlog.net.chaos_plan.plan_faults`, drawn from ``random.Random(f"chaos:{seed}")``
   only): one at a time, each held 3-10 s, then healed; the next starts once every partition's ISR is
   complete again (at most :data:`~kraftlog.net.chaos_plan.RECOVERY_WAIT_S`) plus a seeded gap of 2-5 s.
   Kinds: ``kill`` (SIGKILL, restart),
   ``pause`` (SIGSTOP, SIGCONT: a long GC pause), ``shutdown`` (SIGTERM: a controlled shutdown,
   restart), ``lose_unflushed`` (SIGKILL, then every file restored to its state at its last fsync by
   :func:`kraftlog.net.shadow.restore_fsynced`, restart), ``isolate`` (a broker cut from everyone, through
   the nodes' link filters), ``cut`` (one direction of one link), ``partition`` (two groups),
   ``controller_kill`` (SIGKILL the controller, restart), ``disk_full`` (every write of the broker's
   FileDisk fails with ENOSPC for the fault's hold, injected over the control channel, so no root or real
   full disk is needed: its log directory goes offline at its next write; healed by an operator's restart,
   a clean shutdown then a start, once the disk has space) and ``corrupt`` (a clean shutdown, one byte
   flipped in the middle batch of the broker's segment of one of its partitions, a start: its load drops
   that batch and every later one and, its clean-shutdown file notwithstanding, it registers as after an
   unclean shutdown). ``kinds`` restricts the plan to some kinds (``--faults``). Each fault is injected and
   healed as scenario steps (:func:`~kraftlog.net.chaos_plan.fault_steps`) run by the scenario interpreter
   (:func:`kraftlog.scenario.interpreter.run_step` over :class:`kraftlog.net.faults.ProcessFaults`, as
   ``scenario run --real`` runs them): one fault vocabulary; :func:`~kraftlog.net.chaos_plan.plan_steps`
   gives a seed's plan as steps (``kraftlog chaos --dry-run``). A *story* replaces the random plan with a
   pinned sequence: ``last-replica-standing`` (KIP-966's motivating story;
   :meth:`ChaosRun._story_last_replica_standing`).
   With a controller quorum (``controllers`` 3 or 5), a fault on the controller hits the active voter (see
   :mod:`kraftlog.net.faults`) and the plan draws :data:`~kraftlog.net.chaos_plan.QUORUM_FAULT_KINDS`
   (``controller_pause``, ``controller_isolate``, a heavier ``controller_kill``).
4. **Heal, settle, read back.** Every link healed, every node resumed or restarted, the brokers unfenced
   and the ISRs complete (at most :data:`SETTLE_S`); the producers flush and stop; every partition is
   read from its leader from offset 0 to its HWM (what a consumer may read); the consumer catches up and
   stops; DescribeTopicPartitions gives the final leader, ISR and ELR. Then the cluster shuts down
   cleanly and every replica's log and HWM checkpoint is read from its disk.
5. **Judge** with :mod:`kraftlog.check.checkers`, as the simulator does: acknowledged ``acks=all``
   records missing below the final HWM (lost-write), Jepsen's duplicate / inconsistent-offsets /
   nonmonotonic-poll / poll-skip over what the consumer read, truncations the consumer detected or
   not, HWM regressions it saw, and log matching below the HWMs across the replicas' disks. Invariants
   that the simulator checks after every event (it sees every node's memory) are checked here at the
   end only: log matching, and each partition's leader in its ISR. Each duplicate gets its cause from
   the producer stamps of its copies (:func:`~kraftlog.check.checkers.duplicate_causes`, in the
   metrics' ``duplicates_by_cause``): the same producer id and epoch twice breaks idempotence and is an
   invariant violation; copies under a bumped epoch or a new producer id are librdkafka re-sending what
   it gave up on (KIP-360), which Kafka writes twice too. The idempotent producer's ``eos`` debug log
   is in ``DIR/clients.log``.

The verdict has the simulator's shape (``history_digest`` null: real time is not replayable) plus
``faults`` (what was injected, when, ms from cluster ready, and when it was healed and the ISRs were
complete again), ``fault_budget`` (min ISR - 1) and ``within_budget`` (no partition ever had more
replicas down after an unclean shutdown at once than the budget: faults never overlap here, so a run
is beyond the budget only when an unclean shutdown's replica was not back in the ISR before the next
fault). Written to ``DIR/chaos.json``; the acknowledgement log to ``DIR/acks.parquet`` (one row per
acknowledged record: ``topic``, ``partition``, ``offset``, ``leader_epoch``, ``value_sha256`` (hex),
``ack_time_ms`` (Unix ms), ``acks`` ("all"/"1"), ``producer``) for ``kraftlog audit``. A produce
response carries no leader epoch (librdkafka's delivery report has none), so ``leader_epoch`` is the
epoch of the batch holding the record at its acknowledged offset in the final log, read back at the
end; null when the final log does not hold it there (the record was lost).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass
from random import Random

from ..check import checkers
from ..check.groups import group_findings
from ..cli_options import interruptible_sleep
from ..controller.controller import CONTROLLER
from ..level import DEFAULT, Level
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..scenario import (
    Step,
)
from ..scenario.interpreter import run_step
from ..verdict import is_safe
from . import cluster as cl
from .chaos_group import GROUP, ChaosGroup
from .chaos_plan import (
    RECOVERY_WAIT_S,
    STEADY_S,
    STORIES,
    TOPIC,
    UNCLEAN,
    Fault,
    fault_steps,
    plan_faults,
)
from .client import ClientLoop, ConsumerRecorder, KafkaConnection
from .faults import ProcessFaults
from .node import HOST, write_json
from .readback import ChaosError, end_state_violations, read_back, read_replica_disks

__all__ = ["ChaosRun", "ChaosError", "CHAOS_CONFIG", "run_chaos"]

#: Cluster configs of a chaos run (Kafka's names): lag-driven ISR shrinks within 5 s and replica
#: fetches that time out within 3 s, as the campaign's stories use, so a fault plays out in seconds.
CHAOS_CONFIG = {"replica.lag.time.max.ms": "5000", "replica.socket.timeout.ms": "3000"}
#: How long (s) the end of a run waits for every broker to be unfenced and every ISR complete.
SETTLE_S = 45.0
#: Bounds on the producers' flush and the consumer's catch-up at the end (s).
FLUSH_S = 30.0
CATCH_UP_S = 30.0
#: Seconds between progress lines.
PROGRESS_EVERY_S = 5.0


def _file_logger(path: str):
    """A logger writing to ``path`` only (librdkafka's own log lines: connection refused while a broker
    is down, and the like, and the idempotent producer's ``eos`` debug lines: there, not on the
    terminal)."""
    import logging
    logger = logging.getLogger(f"kraftlog.chaos.clients.{path}")
    logger.propagate = False
    logger.setLevel(logging.DEBUG)  # a client's debug lines are there only if its `debug` config asks
    if not logger.handlers:
        handler = logging.FileHandler(path)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        logger.addHandler(handler)
    return logger


def _now_ms(t0: float) -> int:
    return int((time.monotonic() - t0) * 1000)


@dataclass
class _Acked:
    producer: str
    partition: int
    value: str
    acks: str
    offset: int | None
    ack_time_ms: int


class _ProducerThread:
    """A confluent-kafka producer sending ``rate`` records/s round-robin over the partitions until
    stopped, recording every delivery report; replaced by a new one after a fatal error."""

    def __init__(self, run: ChaosRun, name: str, acks: str, rate: float) -> None:
        self.run, self.name, self.acks, self.rate = run, name, acks, rate
        self.stop = threading.Event()
        self.errors: Counter = Counter()
        self.fatal = 0
        self.sent = 0
        #: records a fatally failed producer still held when it was replaced (they get no delivery report)
        self.abandoned = 0
        self.thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.unacked_at_end = 0

    def _producer(self):
        from confluent_kafka import Producer
        conf = {"bootstrap.servers": self.run.bootstrap, "acks": self.acks, "linger.ms": 5,
                "message.timeout.ms": 30000, "request.timeout.ms": 10000, "retry.backoff.ms": 100,
                "topic.metadata.refresh.interval.ms": 5000, "client.id": self.name,
                "logger": self.run.client_logger}
        if self.acks == "all":
            conf["enable.idempotence"] = True
            # librdkafka's idempotence state machine (producer id, epoch bumps, in-flight drains) into
            # clients.log: the evidence behind a duplicates_by_cause of producer_epoch_bump
            conf["debug"] = "eos"
        else:
            conf["enable.idempotence"] = False
        return Producer(conf)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.run.record_ack(_Acked(self.name, msg.partition(), msg.value().decode(), self.acks, msg.offset(),
                                       int(time.time() * 1000)))
        else:
            self.errors[err.name()] += 1
            if err.fatal():
                self._fatal = True

    def _loop(self) -> None:
        from confluent_kafka import KafkaException
        producer = self._producer()
        self._fatal = False
        interval = 1.0 / self.rate
        next_at = time.monotonic()
        n = 0
        parts = self.run.partitions
        prefix = "all" if self.acks == "all" else "one"
        while not self.stop.is_set():
            now = time.monotonic()
            if now < next_at:
                producer.poll(min(next_at - now, 0.05))
                continue
            next_at += interval
            if next_at < now - 1.0:  # fell behind (a stall): do not burst to catch up
                next_at = now
            try:
                producer.produce(TOPIC, value=f"{prefix}-{n}".encode(), partition=n % parts,
                                 on_delivery=self._on_delivery)
                n += 1
                self.sent += 1
            except BufferError:
                producer.poll(0.1)
            except KafkaException as exc:
                self.errors[f"produce: {exc}"] += 1
            producer.poll(0)
            if self._fatal:  # librdkafka's idempotence state is fatal: a new producer (a new producer id)
                self.fatal += 1
                self.run.event(f"{self.name}: fatal producer error, replaced by a new producer")
                producer.flush(0)
                self.abandoned += len(producer)
                producer = self._producer()
                self._fatal = False
        self.unacked_at_end = producer.flush(FLUSH_S)


class _ChaosFaults(ProcessFaults):
    """The chaos run's :class:`~kraftlog.scenario.interpreter.ClusterBackend`: the process, disk and link
    faults of :class:`~kraftlog.net.faults.ProcessFaults`, keeping the run's idea of which nodes are down,
    paused or isolated (its clients skip them); the interpreter's lines are collected for the fault's
    ``detail``. Only fault verbs reach it (:func:`fault_steps`)."""

    def __init__(self, run: ChaosRun) -> None:
        super().__init__(run.directory, run.seed)
        self.run = run
        self.lines: list[str] = []

    def refusals(self, scenario) -> list[str]:
        return []

    def now_ms(self) -> int:
        return _now_ms(self.run.t0)

    def log(self, text: str, event: dict | None = None) -> None:
        self.lines.append(text)

    fail = log  # a refused fault (e.g. a full disk for a broker that is down) is told in the fault's detail

    def begin_step(self, step: Step) -> None:
        pass

    def end_step(self, step: Step) -> None:
        pass

    def crash(self, node, lose: str) -> None:
        super().crash(node, lose)
        self.run.down_nodes.add(node)

    def shutdown(self, broker: int) -> None:
        super().shutdown(broker)
        self.run.down_nodes.add(broker)

    def restart(self, node) -> str | None:
        why = super().restart(node)
        if why is None:
            self.run.down_nodes.discard(node)
        return why

    def isolate(self, nodes: tuple) -> None:
        super().isolate(nodes)
        self.run.isolated.update(nodes)

    def heal(self, nodes: tuple | None) -> None:
        super().heal(nodes)
        self.run.isolated.clear()


#: librdkafka's delivery errors that are a send's timeout (``message.timeout.ms`` or ``request.timeout.ms``
#: running out, locally or at the broker), not the broker's refusal.
TIMEOUT_ERRORS = frozenset({"_MSG_TIMED_OUT", "_TIMED_OUT", "_TIMED_OUT_QUEUE", "REQUEST_TIMED_OUT"})


def client_sends(producers, acked_by_producer: Counter) -> dict[str, dict[str, object]]:
    """The verdict's ``client_sends``: per producer (its client id), what became of its sends as the
    client saw them -- ``acks``, ``sent`` (records handed to librdkafka), ``acknowledged`` (delivery
    reports without error), ``failed`` (delivery reports with an error), of them ``timed_out``
    (:data:`TIMEOUT_ERRORS`), ``errors`` (failed sends by librdkafka's error name, plus ``produce: ...``
    for a record librdkafka refused to queue, not counted in ``sent``), ``replaced`` (times the producer
    hit a fatal error and was replaced), ``abandoned`` (records the replaced producers still held: no
    report will come) and ``unacknowledged_at_end`` (still without a report when the run stopped).
    ``sent`` = ``acknowledged`` + ``failed`` + ``abandoned`` + ``unacknowledged_at_end`` up to the
    records the producer was sending as it was replaced or stopped."""
    out: dict[str, dict[str, object]] = {}
    for p in producers:
        reported = {k: v for k, v in p.errors.items() if not k.startswith("produce: ")}
        out[p.name] = {
            "acks": p.acks, "sent": p.sent, "acknowledged": acked_by_producer[p.name],
            "failed": sum(reported.values()),
            "timed_out": sum(v for k, v in reported.items() if k in TIMEOUT_ERRORS),
            "errors": dict(sorted(p.errors.items())), "replaced": p.fatal, "abandoned": p.abandoned,
            "unacknowledged_at_end": p.unacked_at_end,
        }
    return out


def chaos_ports(port_base: int | None, brokers: int, controllers: int = 1) -> dict[str, int]:
    """``kraftlog chaos --port-base N``'s ports as :func:`kraftlog.net.cluster.up` takes them: controller ``j``
    on N+j, broker ``i``'s client listener on N+C+i and its internal one on N+C+brokers+i (2 x brokers + C
    consecutive ports, C controllers); None: free ports. ValueError when they do not fit under 65536."""
    if port_base is None:
        return {"port": 0}
    top = 65536 - 2 * brokers - controllers
    if not 1 <= port_base <= top:
        raise ValueError(f"--port-base must be within 1..{top} for {brokers} brokers, got {port_base}")
    return {"controller_port": port_base, "port": port_base + controllers,
            "internal_port": port_base + controllers + brokers}


class ChaosRun:
    """One ``kraftlog chaos`` run (see the module doc). ``directory``: the cluster directory (a new one,
    or one of an earlier chaos run with the same broker count and level: its data is reused);
    ``duration_s``: seconds of faults and traffic after the cluster is ready (the heal, settle and read
    back come after); ``rate``: records/s of each producer; ``story``: one of :data:`STORIES`;
    ``progress(line)``: one line every :data:`PROGRESS_EVERY_S` seconds and per fault."""

    def __init__(self, directory: str, brokers: int = 3, duration_s: float = 120.0, seed: int = 0,
                 level: Level | None = None, partitions: int = 3, rate: float = 100.0, story: str = "random",
                 progress=lambda line: None, kinds: tuple[str, ...] | None = None,
                 port_base: int | None = None, controllers: int = 1, kraft_version: int = 0) -> None:
        if brokers < 1 or brokers > 9:
            raise ValueError(f"--brokers must be within 1..9 for a chaos run, got {brokers}")
        if controllers not in (1, 3, 5):
            raise ValueError(f"--controllers must be 1, 3 or 5 for a chaos run, got {controllers}")
        if kraft_version not in (0, 1) or (kraft_version == 1 and controllers == 1):
            raise ValueError(f"--kraft-version must be 0, or 1 with a quorum (--controllers 3 or 5), got "
                             f"{kraft_version}")
        if not 1 <= partitions <= 50:
            raise ValueError(f"--partitions must be within 1..50, got {partitions}")
        if not 0 < duration_s <= 24 * 3600:
            raise ValueError(f"--duration must be within 1 s..24 h, got {duration_s} s")
        if not 0 < rate <= 10_000:
            raise ValueError(f"--rate must be within 1..10000 records/s, got {rate}")
        if story not in STORIES:
            raise ValueError(f"unknown --story {story!r} (expected one of: {', '.join(STORIES)})")
        if story == "last-replica-standing" and brokers < 3:
            raise ValueError("the last-replica-standing story needs at least 3 brokers")
        if kinds is not None:
            plan_faults(seed, brokers, 1, kinds, controllers, kraft_version)  # ValueError for an unknown kind
        self.ports_given = chaos_ports(port_base, brokers, controllers)
        #: 1, or the voters of a KRaft quorum (a fault on "the controller" hits the active one)
        self.controllers = controllers
        #: 0: static voters; 1: KIP-853's dynamic quorum (its plans lose the active controller's directory too)
        self.kraft_version = kraft_version
        self.kinds = kinds
        self.directory = os.path.abspath(directory)
        self.brokers, self.duration_s, self.seed = brokers, duration_s, seed
        self.level = level if level is not None else DEFAULT  # Level.CLASSIC is 0: falsy
        self.partitions, self.rate, self.story = partitions, rate, story
        self.progress = progress
        self.rf = min(3, brokers)
        self.min_isr = min(2, self.rf)
        self.lock = threading.Lock()
        self.acked: list[_Acked] = []
        #: each read-back record's (producer id, producer epoch, sequence), by partition and offset
        self.stamps: dict = {}
        #: what the KIP-320 consumer read and detected (checkers' shapes)
        self.reads = ConsumerRecorder(lambda: _now_ms(self.t0))
        self.events: list[dict] = []
        self.faults: list[Fault] = []
        self.t0 = time.monotonic()
        self.bootstrap = ""
        self.ports: dict = {}
        self.down_nodes: set = set()
        self.isolated: set = set()
        #: the fault verbs' backend (the scenario interpreter's operations on this cluster's processes)
        self.backend = _ChaosFaults(self)
        self.paused: set = self.backend.paused
        self._steps = 0
        self._heals: dict = {}  # id(fault) -> its heal actions, from its inject

    # ------------------------------------------------------------------ records (any thread)
    def record_ack(self, a: _Acked) -> None:
        with self.lock:
            self.acked.append(a)

    def event(self, text: str) -> None:
        with self.lock:
            self.events.append({"t_ms": _now_ms(self.t0), "text": text})
        self.progress(f"{_now_ms(self.t0) / 1000:7.1f}s  {text}")

    # ------------------------------------------------------------------ cluster helpers (main thread)
    def _reachable(self) -> list[int]:
        """Brokers a client can reach now: running, not paused, not isolated (an isolated node is cut
        from clients too); the others last, in case the harness's idea of them is behind."""
        gone = self.down_nodes | self.paused | self.isolated
        return ([b for b in range(self.brokers) if b not in gone]
                + [b for b in range(self.brokers) if b in self.isolated and b not in self.down_nodes | self.paused])

    def request(self, message, timeout_s: float = 3.0):
        """Send an admin request to the first reachable broker that answers; None when none does."""
        for b in self._reachable():
            try:
                with KafkaConnection(f"{HOST}:{self.ports[b]}", timeout_s=timeout_s) as k:
                    return k.request(message)
            except (OSError, ValueError):
                continue
        return None

    def describe(self) -> list | None:
        """DescribeTopicPartitions of TOPIC from a live broker, or None when none answers."""
        resp = self.request(m.DescribeTopicPartitionsRequest((TOPIC,)))
        if resp is None or not resp.topics or resp.topics[0].error_code != Errors.NONE:
            return None
        return list(resp.topics[0].partitions)

    def _isrs_complete(self) -> bool:
        parts = self.describe()
        return parts is not None and len(parts) == self.partitions and all(
            p.leader_id >= 0 and sorted(p.isr_nodes) == sorted(p.replica_nodes) for p in parts)

    def _recovered(self) -> bool:
        """Every ISR complete, and in a kraft.version 1 quorum every controller a voter again (a voter that lost
        its directory rejoins by auto-join once it caught up: KIP-853)."""
        return self._isrs_complete() and (self.kraft_version == 0 or self.voters_complete())

    def voters_complete(self) -> bool:
        """Every running controller of the quorum reports itself a voter (its run file, KIP-853)."""
        info = cl.load(self.directory)
        ids = cl.controller_ids(info)
        runs = [cl.run_file(self.directory, v) or {} for v in ids]
        return all(cl.node_alive(info, v) and (r.get("quorum") or {}).get("voter") for v, r in zip(ids, runs,
                                                                                                      strict=True))

    def _wait(self, what, timeout_s: float, step_s: float = 0.25) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if what():
                return True
            interruptible_sleep(step_s)
        return False

    # ------------------------------------------------------------------ faults (scenario steps)
    def _run_actions(self, actions) -> str:
        """Run fault actions through the scenario interpreter; what it logged, without the step labels."""
        self.backend.lines = []
        for action in actions:
            self._steps += 1
            run_step(self.backend, Step(self._steps, 0, None, 0, action))
        return "; ".join(line.split(": ", 1)[-1] for line in self.backend.lines)

    def inject(self, f: Fault) -> None:
        """Start fault ``f`` (main thread): its :func:`fault_steps` inject actions."""
        f.at_ms = _now_ms(self.t0)
        inject, heal = fault_steps(f, self.brokers, self.partitions, self.seed, len(self.faults))
        self._heals[id(f)] = heal
        self.backend.hit_voter = None
        f.detail = self._run_actions(inject)
        if self.backend.hit_voter is not None:  # a quorum: the fault hit the active voter
            f.detail += f"; the active controller was controller-{self.backend.hit_voter}"
        self.event(f"fault: {f.describe()}" + (f" ({f.detail})" if f.detail else ""))

    def heal(self, f: Fault) -> None:
        """End fault ``f`` (main thread): its :func:`fault_steps` heal actions (a restart, a resume, every
        link healed; after a full disk an operator's restart, a clean shutdown then a start: its log
        directory comes back only with a restart)."""
        detail = self._run_actions(self._heals.pop(id(f)))
        f.healed_ms = _now_ms(self.t0)
        self.event(f"healed: {f.describe()}" + (f" ({detail})" if "refused" in detail else ""))

    def _story_last_replica_standing(self, deadline: float) -> None:
        """KIP-966's motivating story on partition 0, with L its leader at the time and A, B its
        followers: B is killed (kept down), A is isolated until the ISR is [L], then L crashes losing what
        it had not fsynced and restarts; A is healed and B restarted. Below KIP-966 (``classic``,
        ``kip903``) L, the last ISR member, is elected again with the log it kept and A truncates to it:
        the records acknowledged since L's last fsync are lost. With the ELR (``elr``, ``urm``) A is an
        eligible leader replica and L's unclean shutdown removes L from it: A is elected once healed, and
        nothing is lost. Two unclean shutdowns of one partition's replicas: beyond the fault budget."""
        parts = None
        while parts is None and time.monotonic() < deadline:
            parts = self.describe()
        p0 = parts[0]
        leader = p0.leader_id
        followers = [r for r in p0.replica_nodes if r != leader]
        a, b = followers[0], followers[1]
        self.event(f"story last-replica-standing on {TOPIC}-0: leader {leader}, followers {a} and {b}")
        steps = [Fault("kill", b, 0, 0), Fault("isolate", a, 0, 0)]
        for f in steps:
            self.inject(f)
            self.faults.append(f)
            interruptible_sleep(1.0)
        shrunk = self._wait(lambda: (ps := self.describe()) is not None and list(ps[0].isr_nodes) == [leader],
                            timeout_s=30)
        self.event(f"ISR of {TOPIC}-0 is [{leader}]" if shrunk else f"ISR of {TOPIC}-0 did not shrink to [{leader}]")
        interruptible_sleep(2.0)  # acks=all records cannot be acknowledged now (ISR below min ISR): nothing new
        crash = Fault("lose_unflushed", leader, 0, 0)
        self.inject(crash)
        self.faults.append(crash)
        self._wait(lambda: (ps := self.describe()) is not None and ps[0].leader_id != leader, timeout_s=15)
        interruptible_sleep(2.0)
        self.heal(crash)
        cl.wait_ready(self.directory, [leader])
        interruptible_sleep(2.0)
        self.heal(steps[1])
        self.heal(steps[0])

    def _run_faults(self, end: float) -> None:
        if self.story == "last-replica-standing":
            interruptible_sleep(min(5.0, max(0.0, end - time.monotonic())))
            self._story_last_replica_standing(end)
            return
        plan = plan_faults(self.seed, self.brokers, kinds=self.kinds, controllers=self.controllers,
                           kraft_version=self.kraft_version)
        interruptible_sleep(min(STEADY_S, max(0.0, end - time.monotonic())))  # steady traffic first
        for f in plan:
            if time.monotonic() + f.hold_ms / 1000 + 1 > end:
                break
            self.inject(f)
            self.faults.append(f)
            interruptible_sleep(f.hold_ms / 1000)
            self.heal(f)
            recovered = self._wait(self._recovered, RECOVERY_WAIT_S)
            if recovered:
                f.recovered_ms = _now_ms(self.t0)
            else:
                self.event(f"ISRs not complete {RECOVERY_WAIT_S:.0f} s after healing {f.describe()}")
            rest = min(f.gap_ms / 1000, end - time.monotonic())
            if rest <= 0:
                break
            interruptible_sleep(rest)

    # ------------------------------------------------------------------ the run
    def run(self) -> dict:
        """Run it and return the verdict (see the module doc). Every node is stopped before this returns
        or raises (a clean shutdown, then SIGKILL by PID for any that remain)."""
        producers: list[_ProducerThread] = []
        consumer_loop = None
        group: ChaosGroup | None = None
        try:
            self.progress(f"starting a {self.brokers}-broker chaos-mode cluster in {self.directory} "
                          f"(level {self.level.label}, seed {self.seed})")
            cl.up(self.directory, self.brokers, level=self.level, seed=self.seed, config=dict(CHAOS_CONFIG),
                  chaos=True, owned=True, controllers=self.controllers, kraft_version=self.kraft_version,
                  **self.ports_given)
            self.client_logger = _file_logger(os.path.join(self.directory, "clients.log"))
            info = cl.load(self.directory)
            self.ports = {e["id"]: e["port"] for e in info["nodes"]}
            self.bootstrap = ",".join(f"{HOST}:{self.ports[b]}" for b in range(self.brokers))
            self._create_topic()
            self.t0 = time.monotonic()
            self.event(f"cluster ready: {self.brokers} brokers, "
                       + (f"a quorum of {self.controllers} controllers (kraft.version {self.kraft_version}), "
                          if self.controllers > 1 else "")
                       + f"level {self.level.label}, seed {self.seed}, "
                       f"topic {TOPIC} ({self.partitions} partitions, RF {self.rf}, min ISR {self.min_isr})")
            producers = [_ProducerThread(self, "producer-all", "all", self.rate),
                         _ProducerThread(self, "producer-1", "1", self.rate)]
            for p in producers:
                p.thread.start()
            consumer_loop = self._start_consumer()
            group = self.group = ChaosGroup(self.bootstrap, TOPIC, lambda: _now_ms(self.t0), self.seed,
                                            self.client_logger)
            group.start()
            end = self.t0 + self.duration_s
            ticker = threading.Thread(target=self._progress_loop, args=(end, producers), daemon=True)
            ticker.start()
            self._run_faults(end)
            interruptible_sleep(max(0.0, end - time.monotonic()))
            self._ticking = False
            completed = self._settle()
            for p in producers:
                p.stop.set()
            for p in producers:
                p.thread.join(FLUSH_S + 10)
            final_logs, hwms = self._read_back()
            self._catch_up(consumer_loop, hwms)
            consumer_loop.stop()
            group.close()
            described = self.describe()
            statuses = {str(s.id): {"alive": s.alive, "fenced": s.fenced, "epoch": s.broker_epoch}
                        for s in cl.status(self.directory) if s.role == "broker"}
            self.progress("shutting the cluster down cleanly to read every replica's disk")
            cl.down(self.directory)
            replica_logs, leos = self._read_disks()
            return self.verdict(completed, producers, final_logs, hwms, replica_logs, leos, described, statuses)
        finally:
            self._ticking = False
            for p in producers:
                p.stop.set()
            if consumer_loop is not None:
                consumer_loop.stop(2.0)
            if group is not None:
                group.close(5.0)
            try:
                cl.kill(self.directory)
            except cl.ClusterError:
                pass

    _ticking = True
    group: ChaosGroup | None = None

    def _group_metrics(self) -> dict:
        """The consumer group's figures: records delivered, commits, member restarts, client errors."""
        g = self.group
        if g is None:
            return {}
        return {"group": GROUP, "records_delivered": len(g.consumed), "commits": g.commits, "restarts": g.restarts,
                "errors": dict(g.errors)}

    def group_events(self) -> list:
        """What the consumer group's members were told (``kraftlog.check.groups.GroupEvent``)."""
        return [] if self.group is None else list(self.group.events)

    def group_consumed(self) -> list:
        """What the consumer group's members delivered (the checkers' Consumed)."""
        return [] if self.group is None else list(self.group.consumed)

    def _progress_loop(self, end: float, producers: list) -> None:
        while self._ticking and time.monotonic() < end + SETTLE_S:
            interruptible_sleep(PROGRESS_EVERY_S)
            if not self._ticking:
                return
            with self.lock:
                acks = Counter(a.acks for a in self.acked)
                consumed = len(self.reads.consumed)
            errors = sum(sum(p.errors.values()) for p in producers)
            phase = "faults" if time.monotonic() < end else "settling"
            self.progress(f"{_now_ms(self.t0) / 1000:7.1f}s  {phase}: acknowledged {acks['all']:,} acks=all, "
                          f"{acks['1']:,} acks=1 ({errors:,} failed sends); consumed {consumed:,}; "
                          f"faults {len(self.faults)}")

    def _create_topic(self) -> None:
        req = m.CreateTopicsRequest((m.CreatableTopic(TOPIC, self.partitions, self.rf, configs=(
            ("min.insync.replicas", str(self.min_isr)),)),))
        with KafkaConnection(self.bootstrap, timeout_s=20) as k:
            resp = k.request(req)
        err = resp.topics[0].error_code
        if err not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
            raise ChaosError(f"cannot create topic {TOPIC}: {Errors(err).name}")
        if not self._wait(self._isrs_complete, 30):
            raise ChaosError(f"topic {TOPIC} has no leader or incomplete ISRs 30 s after its creation")

    def _start_consumer(self) -> ClientLoop:
        from ..client.consumer import Consumer
        cons = Consumer("consumer", list(range(self.brokers)), [(TOPIC, p) for p in range(self.partitions)],
                        "earliest", Random(f"consumer:{self.seed}"), request_timeout_ms=10000)
        loop = ClientLoop(cons, lambda b: (HOST, self.ports[b]) if b in self.ports else None,
                          self.reads.observe)
        loop.start()
        return loop

    def _settle(self) -> bool:
        """Heal every link, resume and restart every node, and wait until every broker is unfenced and
        every ISR complete. Returns whether that happened within SETTLE_S."""
        self.event("heal: every link up, every node running")
        self.backend.heal(None)
        for node in sorted(self.paused, key=str):
            self.backend.resume(node)
        for node in sorted(self.down_nodes, key=lambda n: (n != CONTROLLER, str(n))):
            why = self.backend.restart(node)
            if why is not None:
                raise cl.ClusterError(why)
        try:
            cl.wait_ready(self.directory, list(range(self.brokers)), timeout_s=SETTLE_S)
        except cl.ClusterError as exc:
            self.event(f"settle: {str(exc).splitlines()[0]}")
            return False
        ok = self._wait(self._recovered, SETTLE_S)
        voters = " and every controller a voter again" if self.kraft_version == 1 else ""
        self.event(f"settled: every broker unfenced, every ISR complete{voters}" if ok
                   else f"not settled: ISRs incomplete{voters and ' or a controller not a voter'} after "
                        f"{SETTLE_S:.0f} s")
        return ok

    def _read_back(self) -> tuple[dict, dict]:
        self.stamps = {}
        return read_back(self.request, self.ports, {TOPIC: self.describe() or []}, self.stamps)

    def _catch_up(self, loop: ClientLoop, hwms: dict) -> None:
        def caught_up() -> bool:
            with self.reads.lock:
                last = {}
                for _, name, offset, *_ in self.reads.consumed:
                    last[name] = max(last.get(name, -1), offset)
            return all(last.get(name, -1) + 1 >= hwm for name, hwm in hwms.items())
        if not self._wait(caught_up, CATCH_UP_S):
            self.event(f"the consumer did not reach every HWM within {CATCH_UP_S:.0f} s")

    def _read_disks(self) -> tuple[dict, dict]:
        return read_replica_disks(self.directory, self.brokers, [(TOPIC, p) for p in range(self.partitions)])

    # ------------------------------------------------------------------ the verdict
    def _within_budget(self) -> bool:
        """No two unclean shutdowns overlapped: each one's broker was back in a complete ISR (the
        fault's ``recovered_ms``) before the next unclean shutdown. Faults never overlap in a random
        plan; the last-replica-standing story is beyond the budget by design (B killed, then L)."""
        unclean = [f for f in self.faults if f.kind in UNCLEAN]
        down = 0
        for f in unclean:
            if f.recovered_ms is None:
                down += 1
        return down <= max(0, self.min_isr - 1)

    def verdict(self, completed: bool, producers, final_logs, hwms, replica_logs, leos, described, statuses) -> dict:
        acked = [(a.producer, TOPIC, a.partition, a.value, a.acks) for a in self.acked]
        partitions = {}
        for p in described or []:
            name = f"{TOPIC}-{p.partition_index}"
            partitions[name] = {"leader": p.leader_id if p.leader_id >= 0 else None, "leader_epoch": p.leader_epoch,
                                "isr": list(p.isr_nodes), "elr": list(p.eligible_leader_replicas),
                                "last_known_elr": list(p.last_known_elr), "hwm": hwms.get(name),
                                "leo": leos.get(name, {})}
        counts = Counter(a.acks for a in self.acked)
        dup_causes, idempotence = checkers.duplicate_causes(final_logs, self.stamps)
        verdict = {
            "scenario": f"chaos:{self.story}", "level": self.level.label, "seed": self.seed,
            "sim_time_ms": _now_ms(self.t0),
            "acked": {"all": counts["all"], "1": counts["1"]},
            **checkers.judge(acked, final_logs, self.reads.consumed, self.reads.truncations, self.reads.hwms),
            **group_findings(self.group_events(), self.reads.consumed + self.group_consumed(), final_logs),
            "invariant_violations": end_state_violations(replica_logs, partitions) + idempotence,
            "failed_expectations": [] if completed else
            ["settle: the cluster did not heal (every broker unfenced, every ISR complete) within "
             f"{SETTLE_S:.0f} s of the end of the faults"],
            "metrics": {
                "records_consumed": len(self.reads.consumed),
                "consumer_group": self._group_metrics(),
                "acked_without_offset": sum(1 for a in self.acked if a.offset is None),
                # why each Jepsen duplicate is there (checkers.duplicate_causes): only
                # same_producer_epoch is the broker's fault (and an invariant violation)
                "duplicates_by_cause": dup_causes,
                # acks=1 promises nothing once the leader fails: counted, never judged
                "acks1_missing_from_final_log": _missing(self.acked, final_logs, "1"),
                "produce_errors": {p.name: dict(sorted(p.errors.items())) for p in producers},
                "producers_replaced": {p.name: p.fatal for p in producers},
                "unacknowledged_at_end": {p.name: p.unacked_at_end for p in producers},
                "sent": {p.name: p.sent for p in producers},
            },
            "final": {"partitions": partitions, "brokers": statuses},
            "client_sends": client_sends(producers, Counter(a.producer for a in self.acked)),
            "fault_budget": max(0, self.min_isr - 1),
            "within_budget": self._within_budget(),
            "faults": [{k: v for k, v in asdict(f).items()} for f in self.faults],
            "events": list(self.events),
        }
        verdict["passed"] = completed
        verdict["safe"] = is_safe(verdict)
        verdict["history_digest"] = None
        write_json(os.path.join(self.directory, "chaos.json"), verdict)
        self._write_acks(final_logs)
        return verdict

    def _write_acks(self, final_logs: dict) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq
        # librdkafka reports some acknowledgements without an offset (None: e.g. a retried batch the
        # broker answered as a duplicate); their offset is null
        rows = sorted(self.acked, key=lambda a: (a.partition, -1 if a.offset is None else a.offset))
        table = pa.table({
            "topic": pa.array([TOPIC] * len(rows), pa.string()),
            "partition": pa.array([a.partition for a in rows], pa.int32()),
            "offset": pa.array([a.offset for a in rows], pa.int64()),
            "leader_epoch": pa.array([_epoch_at(final_logs, a) for a in rows], pa.int32()),
            "value_sha256": pa.array([hashlib.sha256(a.value.encode()).hexdigest() for a in rows], pa.string()),
            "ack_time_ms": pa.array([a.ack_time_ms for a in rows], pa.int64()),
            "acks": pa.array([a.acks for a in rows], pa.string()),
            "producer": pa.array([a.producer for a in rows], pa.string()),
        })
        pq.write_table(table, os.path.join(self.directory, "acks.parquet"))


def _missing(acked: list, final_logs: dict, acks: str) -> int:
    """Acknowledged records with ``acks`` that the final log (below its HWM) does not hold."""
    present = {name: {v for v, _ in log.values()} for name, log in final_logs.items() if log is not None}
    return sum(1 for a in acked if a.acks == acks and f"{TOPIC}-{a.partition}" in present
               and a.value not in present[f"{TOPIC}-{a.partition}"])


def _epoch_at(final_logs: dict, a: _Acked) -> int | None:
    """The leader epoch of acknowledged record ``a`` in the final log, None when it is not at its offset."""
    log = final_logs.get(f"{TOPIC}-{a.partition}")
    entry = log.get(a.offset) if log else None
    return entry[1] if entry is not None and entry[0] == a.value else None





def run_chaos(directory: str, **kwargs) -> dict:
    """``ChaosRun(directory, **kwargs).run()``."""
    return ChaosRun(directory, **kwargs).run()
