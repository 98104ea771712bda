"""KIP-966 part 2: the Unclean Recovery Manager (URM) and its Broker Request Sender, level ``urm``.

Kafka shipped KIP-966's ELR and stopped; this is the half it never shipped, as the later revision of the
KIP describes it ("Unclean Recovery", "Unclean Recovery Manager", "Broker Request Sender"), with the rules
kraftlog issue 25 decided where that text is loose. Sans-I/O: the controller owns one
:class:`UncleanRecoveryManager`, hands it time, its metadata image and the answers, and sends the
GetReplicaLogInfo requests the manager asks for.

**Decision order** for a partition without a leader (:func:`recovery_decision`, KIP-966 "Unclean
Recovery"): an ISR member; else an unfenced ELR member (both clean elections, made by
``build_partition_change``); else, with fenced ELR members only, ``Aggressive`` recovers and the other
strategies wait for them; with no ELR member, ``Aggressive`` recovers, ``Balanced`` recovers once every
LastKnownELR member is unfenced (at once when LastKnownELR is empty; until then it is pending, counted as
a live recovery by KIP-966's gauge), ``None`` waits for an operator (ElectLeaders). The controller
reconsiders on every broker heartbeat, registration, unfencing, answer and due timer.

**A recovery** (:class:`RecoveryTask`) asks every assigned replica, fenced ones included (a fenced broker
may still be running), for its log: GetReplicaLogInfo (API key 93 v0) answers with the replica's last
written leader epoch, log end offset (LEO), the partition's leader epoch in its metadata cache, and its
broker epoch. An answer is rejected, and that replica asked again after :data:`RETRY_BACKOFF_MS`, when its
broker epoch no longer matches the broker's registration (the broker restarted since it answered: its log
may be gone) or its current leader epoch differs from the controller's (a stale metadata cache). Answers
kept from earlier are checked again at election time. Only the answers of replicas unfenced now count
(KIP-966 Clarifications: "Only the unfenced replicas can be counted into the quorum"). Each recovery reads
``unclean.recovery.timeout.ms`` when it starts (``RecoveryTask.timeout_ms``: the cluster's dynamic value,
else the static one), so a dynamic change applies to the recoveries started after it. The election:

* ``Balanced``: once every LastKnownELR member has answered, and either every assigned replica has
  answered or the timeout has passed since the recovery started ("all the LastKnownELR members have
  replied, plus the replicas replied within the timeout");
* ``Aggressive``: once every assigned replica has answered, or once the timeout has passed and at least one
  has (the best of them); if none has by then, the first to answer ("any replicas replied within a fixed
  amount of time OR the first response received after the timeout" — the fixed time being
  ``unclean.recovery.timeout.ms``, the earlier revision's fixed 5 s having been dropped).

The choice (:func:`choose_leader`): among answering replicas unfenced at election time, the highest last
written leader epoch, then the longest LEO, then assignment order (the preferred replica first). The new
leader gets ISR [it] and LeaderRecoveryState RECOVERING; ELR and LastKnownELR are cleared. Nothing is
persisted: a controller failover drops every recovery and the new controller starts them again.

**Broker Request Sender**: one queue of partitions per broker; one GetReplicaLogInfo in flight per broker,
carrying every partition queued for it (at most :data:`MAX_PARTITIONS_PER_REQUEST`), so that recoveries of
many partitions share requests. A request that fails (its timeout — ``unclean.recovery.timeout.ms`` when
it was sent —, connection refused or reset) is sent again on the next heartbeat of that broker. A question
still outstanding is dropped and asked again at once (:meth:`UncleanRecoveryManager.reask`) when its
broker is unfenced or registers again, or heartbeats after the question's timeout (KIP-966: "when a replica
gets unfenced, URM should check if it can be elected"; "the controller will trigger the recovery again when
handling heartbeats"): a question lost on the way would otherwise hold that broker's answer for the whole
timeout.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from ..metadata.image import MetadataImage, PartitionRegistration
from ..metadata.records import NO_LEADER
from ..protocol import messages as m
from ..protocol.errors import Errors

#: Wait before asking a replica again after its answer was rejected (ms; Kafka's ``retry.backoff.ms``).
RETRY_BACKOFF_MS = 100
#: Partitions per GetReplicaLogInfo request (KIP-966: the broker answers the first 1,000).
MAX_PARTITIONS_PER_REQUEST = 1000

BALANCED, AGGRESSIVE, NONE = "Balanced", "Aggressive", "None"

PartitionKey = tuple[str, int]


class Decision(enum.Enum):
    """What a leaderless partition waits for (:func:`recovery_decision`)."""

    CLEAN = "clean"  # an ISR or unfenced ELR member: a clean election, no recovery
    WAIT = "wait"  # fenced ELR members only, strategy not Aggressive: wait for them
    PENDING = "pending"  # Balanced, no ELR member: the recovery starts once every LastKnownELR member is unfenced
    RECOVER = "recover"  # an unclean recovery (Aggressive; Balanced with every LastKnownELR member unfenced)
    MANUAL = "manual"  # strategy None and no ELR member: wait for an operator's ElectLeaders


def recovery_decision(part: PartitionRegistration, strategy: str, is_unfenced: Callable[[int], bool]) -> Decision:
    """KIP-966's decision order for a leaderless partition under ``strategy`` (``None``/``Balanced``/
    ``Aggressive``); ``is_unfenced(broker)``: registered and unfenced (may lead). Balanced recovers only
    when every LastKnownELR member is unfenced (KIP-966: "the controller will do the unclean recovery when
    all the LastKnownELR are unfenced"), at once when LastKnownELR is empty (issue 25, rule 1)."""
    if part.isr or any(is_unfenced(r) for r in part.elr):
        return Decision.CLEAN
    if part.elr:
        return Decision.RECOVER if strategy == AGGRESSIVE else Decision.WAIT
    if strategy == NONE:
        return Decision.MANUAL
    if strategy == BALANCED and not all(is_unfenced(r) for r in part.last_known_elr):
        return Decision.PENDING
    return Decision.RECOVER


@dataclass(slots=True, frozen=True)
class ReplicaLogInfo:
    """One replica's answer: its broker epoch when it answered, the last leader epoch in its log
    (-1: empty log), its LEO (offsets) and the partition's leader epoch in its metadata cache."""

    broker_epoch: int
    last_written_leader_epoch: int
    log_end_offset: int
    current_leader_epoch: int


def choose_leader(part: PartitionRegistration, answers: dict[int, ReplicaLogInfo],
                  is_unfenced: Callable[[int], bool]) -> int:
    """The replica an unclean recovery elects (KIP-966 "Unclean Recovery Manager": "filters the replicas
    with the highest partition leader epoch, then it elects the one with the longest log end offset"):
    among the replicas in ``answers`` that are unfenced now, the highest last written leader epoch, then
    the longest LEO; ties go to the earlier replica in assignment order. -1 when none is unfenced."""
    best, best_key = NO_LEADER, None
    for rank, r in enumerate(part.replicas):
        info = answers.get(r)
        if info is None or not is_unfenced(r):
            continue
        key = (info.last_written_leader_epoch, info.log_end_offset, -rank)
        if best_key is None or key > best_key:
            best, best_key = r, key
    return best


def ready_to_elect(strategy: str, part: PartitionRegistration, answered: Callable[[int], bool],
                   timed_out: bool) -> bool:
    """May a recovery under ``strategy`` elect now (issue 25, rules 1 and 2)? ``answered(r)``: replica
    ``r`` has a valid answer and is unfenced (only those count); ``timed_out``: ``unclean.recovery.timeout.ms``
    has passed since the recovery started.

    * Balanced: every LastKnownELR member answered, and every assigned replica answered or timed out;
    * Aggressive: every assigned replica answered, or timed out and at least one answered (after the
      timeout that is the first answer to come).

    The caller then elects :func:`choose_leader` over the answers."""
    enough = all(answered(r) for r in part.replicas) or (timed_out and any(answered(r) for r in part.replicas))
    if strategy == BALANCED:
        return enough and all(answered(r) for r in part.last_known_elr)
    return enough


@dataclass(slots=True)
class RecoveryTask:
    """One partition's unclean recovery in progress (in memory only; KIP-966: nothing is persisted).

    ``strategy``: Balanced or Aggressive; ``manual``: started by an ElectLeaders LONGEST_LOG_* / UNCLEAN
    request (kept whatever the topic's strategy); ``started_ms``: when it began; ``timeout_ms``:
    ``unclean.recovery.timeout.ms`` read when it began; ``answers``: valid answers by replica; ``failed``:
    replicas whose request failed, asked again on their next heartbeat."""

    key: PartitionKey
    strategy: str
    manual: bool
    started_ms: int
    timeout_ms: int
    answers: dict[int, ReplicaLogInfo] = field(default_factory=dict)
    failed: set[int] = field(default_factory=set)
    #: the timeout has passed (set by :meth:`UncleanRecoveryManager.ready_leader`: no more deadline for it)
    timed_out: bool = False

    @property
    def name(self) -> str:
        return f"{self.key[0]}-{self.key[1]}"

    @property
    def deadline_ms(self) -> int:
        """When the recovery's timeout passes (ms)."""
        return self.started_ms + self.timeout_ms


@dataclass(slots=True, frozen=True)
class Question:
    """A GetReplicaLogInfo request in flight: the partitions asked, when it was sent (ms), its timeout
    (ms) and the correlation id the controller sent it with (to cancel it when it is asked again)."""

    keys: tuple[PartitionKey, ...]
    sent_ms: int
    timeout_ms: int
    correlation_id: int


@dataclass(slots=True)
class RecoveryEvent:
    """A step of a recovery, for timelines and logs: ``kind`` is started, queried, answered, rejected,
    failed, reasked, elected or abandoned; ``detail`` says what (brokers, offsets, the reason)."""

    at_ms: int
    kind: str
    partition: str
    detail: str


class UncleanRecoveryManager:
    """The controller's URM with its Broker Request Sender (module docstring)."""

    def __init__(self) -> None:
        self.tasks: dict[PartitionKey, RecoveryTask] = {}
        #: Broker Request Sender: broker -> partitions queued for its next request (insertion-ordered).
        self.queued: dict[int, dict[PartitionKey, None]] = {}
        #: broker -> its question in flight (None between requests_due and sent)
        self.inflight: dict[int, Question | None] = {}
        #: broker -> no request before this time (ms): the backoff after a rejected answer
        self.not_before: dict[int, int] = {}
        #: recoveries that elected a leader (Kafka's unclean_recovery_finished_count; 0 after a failover)
        self.finished_count = 0
        self.events: list[RecoveryEvent] = []

    # ------------------------------------------------------------------ tasks
    def start(self, now_ms: int, key: PartitionKey, part: PartitionRegistration, strategy: str, timeout_ms: int,
              manual: bool = False) -> RecoveryTask:
        """Begin (or, for ``manual``, take over) the recovery of ``key`` with ``timeout_ms``
        (``unclean.recovery.timeout.ms`` now): every replica is queued. A recovery taken over keeps its
        start, timeout and answers."""
        task = self.tasks.get(key)
        if task is not None:
            if manual:
                task.manual, task.strategy = True, strategy
            return task
        task = self.tasks[key] = RecoveryTask(key, strategy, manual, now_ms, timeout_ms)
        self._event(now_ms, "started", task, f"{strategy}{' (ElectLeaders)' if manual else ''}, "
                                              f"asking replicas {list(part.replicas)}")
        for r in part.replicas:
            self._queue(r, key)
        return task

    def drop(self, now_ms: int, key: PartitionKey, reason: str) -> None:
        """Forget ``key``'s recovery (it has a leader now, was deleted, or no longer needs one)."""
        task = self.tasks.pop(key, None)
        if task is None:
            return
        for q in self.queued.values():
            q.pop(key, None)
        self._event(now_ms, "abandoned", task, reason)

    def retry_failed(self, broker: int) -> None:
        """``broker`` heartbeated: ask it again for every recovery whose request to it failed."""
        for key in sorted(self.tasks):
            task = self.tasks[key]
            if broker in task.failed:
                task.failed.discard(broker)
                self._queue(broker, key)

    def question_overdue(self, now_ms: int, broker: int) -> bool:
        """Has ``broker``'s question been outstanding for its whole timeout (issue 25, rule 3)?"""
        q = self.inflight.get(broker)
        return q is not None and now_ms - q.sent_ms >= q.timeout_ms

    def reask(self, now_ms: int, broker: int, reason: str) -> int | None:
        """Drop ``broker``'s outstanding question and ask it again at once, backoff or not (issue 25, rule
        3: the broker was unfenced, registered again, or heartbeated after the question's timeout). Returns
        the correlation id of the dropped request, for the controller to cancel (its answer, should it
        come, is not read), or None when nothing was outstanding."""
        q = self.inflight.get(broker)
        if q is None:
            return None
        del self.inflight[broker]
        self.not_before.pop(broker, None)
        for key in q.keys:
            task = self.tasks.get(key)
            if task is not None and broker not in task.answers:
                self._queue(broker, key)
                self._event(now_ms, "reasked", task, f"broker {broker} {reason}: its question is dropped and "
                                                      "asked again")
        return q.correlation_id

    def forget_answers(self, now_ms: int, broker: int, reason: str) -> None:
        """Drop ``broker``'s kept answers (a new incarnation of it tried to register: the process that
        answered is gone, and its log may be too) and ask it again on its next heartbeat, which comes once
        the new incarnation is registered."""
        for key in sorted(self.tasks):
            task = self.tasks[key]
            if task.answers.pop(broker, None) is not None:
                task.failed.add(broker)
                self._event(now_ms, "rejected", task, f"broker {broker}'s earlier answer: {reason}; asking again "
                                                      "once it is registered")

    def revalidate(self, now_ms: int, task: RecoveryTask, image: MetadataImage, part: PartitionRegistration) -> None:
        """Drop answers that no longer hold (the broker re-registered, or the partition's leader epoch
        moved) and ask those replicas again (KIP-966: a rejected answer starts the query again)."""
        for r in sorted(task.answers):
            reason = self._stale(task.answers[r], r, image, part)
            if reason is not None:
                del task.answers[r]
                self._event(now_ms, "rejected", task, f"broker {r}'s earlier answer: {reason}; asking again")
                self._queue(r, task.key, now_ms + RETRY_BACKOFF_MS)

    # ------------------------------------------------------------------ the request sender
    def _queue(self, broker: int, key: PartitionKey, not_before_ms: int | None = None) -> None:
        self.queued.setdefault(broker, {})[key] = None
        if not_before_ms is not None:
            self.not_before[broker] = max(self.not_before.get(broker, 0), not_before_ms)

    def requests_due(self, now_ms: int) -> list[tuple[int, tuple[PartitionKey, ...]]]:
        """The GetReplicaLogInfo requests to send now, as (broker, partitions to ask), brokers in id
        order: one per broker with queued partitions of live recoveries, none in flight and its backoff
        over; the controller reports each as :meth:`sent` (or :meth:`not_sent`), and it counts as in flight
        until :meth:`on_answer`, :meth:`on_failure` or :meth:`reask`."""
        out = []
        for broker in sorted(self.queued):
            queue = self.queued[broker]
            if not queue or broker in self.inflight or self.not_before.get(broker, 0) > now_ms:
                continue
            taken = list(itertools.islice(queue, MAX_PARTITIONS_PER_REQUEST))
            for k in taken:
                del queue[k]
            keys = tuple(k for k in taken if k in self.tasks)
            if not keys:
                continue
            self.inflight[broker] = None
            out.append((broker, keys))
        return out

    def sent(self, broker: int, keys: tuple[PartitionKey, ...], now_ms: int, timeout_ms: int,
             correlation_id: int) -> None:
        """The controller sent ``broker`` the question about ``keys`` (from :meth:`requests_due`)."""
        self.inflight[broker] = Question(keys, now_ms, timeout_ms, correlation_id)

    def not_sent(self, broker: int) -> None:
        """The question from :meth:`requests_due` was not sent (every partition's topic is gone)."""
        self.inflight.pop(broker, None)

    def next_deadline(self) -> int | None:
        """The earliest time (ms) the URM has something to do: a backoff ending with partitions queued,
        or a recovery's timeout passing."""
        best = None
        for broker, queue in self.queued.items():
            if queue and broker not in self.inflight:
                t = self.not_before.get(broker, 0)
                best = t if best is None or t < best else best
        for task in self.tasks.values():
            if not task.timed_out:
                t = task.deadline_ms
                best = t if best is None or t < best else best
        return best

    def on_failure(self, now_ms: int, broker: int, keys: tuple[PartitionKey, ...]) -> None:
        """The request to ``broker`` timed out or its connection failed: ask again on its next heartbeat."""
        self.inflight.pop(broker, None)
        for key in keys:
            task = self.tasks.get(key)
            if task is not None and broker not in task.answers:
                task.failed.add(broker)
                self._event(now_ms, "failed", task,
                            f"no answer from broker {broker}; asking again on its next heartbeat")

    def on_answer(self, now_ms: int, broker: int, keys: tuple[PartitionKey, ...],
                  resp: m.GetReplicaLogInfoResponse, image: MetadataImage) -> None:
        """Validate ``broker``'s answer for the partitions ``keys`` it was asked about (KIP-966: reject a
        stale broker epoch or a mismatched current leader epoch, and ask again)."""
        self.inflight.pop(broker, None)
        by_key: dict[PartitionKey, m.PartitionLogInfo] = {}
        for answered in resp.partitions:
            name = image.topic_name(answered.topic_id)
            if name is not None:
                by_key[(name, answered.partition)] = answered
        for key in keys:
            task = self.tasks.get(key)
            part = image.partitions.get(key)
            if task is None or part is None:
                continue
            info = by_key.get(key)
            if info is None:  # not answered (HasMoreData): ask again at once
                self._queue(broker, key)
                continue
            if info.error_code != Errors.NONE:
                self._event(now_ms, "rejected", task, f"broker {broker} answered {Errors(info.error_code).name}; "
                                                      "asking again")
                self._queue(broker, key, now_ms + RETRY_BACKOFF_MS)
                continue
            answer = ReplicaLogInfo(resp.broker_epoch, info.last_written_leader_epoch, info.log_end_offset,
                                    info.current_leader_epoch)
            reason = self._stale(answer, broker, image, part)
            if reason is not None:
                self._event(now_ms, "rejected", task, f"broker {broker}: {reason}; asking again")
                self._queue(broker, key, now_ms + RETRY_BACKOFF_MS)
                continue
            task.answers[broker] = answer
            task.failed.discard(broker)
            self._event(now_ms, "answered", task, f"broker {broker}: last written epoch "
                                                  f"{answer.last_written_leader_epoch}, LEO {answer.log_end_offset}")

    @staticmethod
    def _stale(answer: ReplicaLogInfo, broker: int, image: MetadataImage, part: PartitionRegistration) -> str | None:
        reg = image.brokers.get(broker)
        if reg is None or reg.broker_epoch != answer.broker_epoch:
            return (f"broker epoch {answer.broker_epoch} is not the registered "
                    f"{reg.broker_epoch if reg is not None else 'none'} (it restarted)")
        if answer.current_leader_epoch != part.leader_epoch:
            return (f"current leader epoch {answer.current_leader_epoch} is not the controller's "
                    f"{part.leader_epoch}")
        return None

    # ------------------------------------------------------------------ election
    def ready_leader(self, now_ms: int, task: RecoveryTask, part: PartitionRegistration,
                     is_unfenced: Callable[[int], bool]) -> int:
        """The replica to elect now, or -1 while the recovery must wait (:func:`ready_to_elect`, then
        :func:`choose_leader`)."""
        if now_ms >= task.deadline_ms:
            task.timed_out = True
        answers = task.answers
        if not ready_to_elect(task.strategy, part, lambda r: r in answers and is_unfenced(r), task.timed_out):
            return NO_LEADER
        return choose_leader(part, answers, is_unfenced)

    def elected(self, now_ms: int, task: RecoveryTask, leader: int) -> None:
        """Record that ``task`` elected ``leader`` and forget it."""
        self.tasks.pop(task.key, None)
        for q in self.queued.values():
            q.pop(task.key, None)
        self.finished_count += 1
        a = task.answers[leader]
        self._event(now_ms, "elected", task, f"broker {leader} (last written epoch {a.last_written_leader_epoch}, "
                                             f"LEO {a.log_end_offset}) from answers of {sorted(task.answers)}")

    def _event(self, now_ms: int, kind: str, task: RecoveryTask, detail: str) -> None:
        self.events.append(RecoveryEvent(now_ms, kind, task.name, detail))

    def take_events(self) -> list[RecoveryEvent]:
        """The recovery steps since the last call (for the driver's timeline / log)."""
        out, self.events = self.events, []
        return out
