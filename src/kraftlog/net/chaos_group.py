"""``kraftlog chaos``'s consumer group (issue 32): two confluent-kafka consumers of group :data:`GROUP` reading
the chaos topic beside the producers, each committing its positions synchronously every :data:`COMMIT_EVERY`
records and restarted every 15-30 s (a close, then a new consumer of the group, which resumes from the group's
committed offsets), while brokers — the group's coordinator among them — crash and come back.

What they were told is recorded in the shapes of :mod:`kraftlog.check.groups`: ``commit`` (a commit librdkafka
returned without error), ``fetched`` (the committed offsets a member read after an assignment: an OffsetFetch)
and ``position`` (where it starts: the committed offset, else the log start); the records each incarnation
delivered (client ``<member>#<n>``). The chaos verdict judges them with the simulator's checkers:
``committed_offset_regressions`` and ``skipped_by_group``.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from random import Random

#: The group's id, its members and how often each commits (records).
GROUP = "chaos-group"
MEMBERS = 2
COMMIT_EVERY = 100
#: Each incarnation of a member lives this long (s, drawn uniformly) before it is restarted.
RESTART_AFTER_S = (15.0, 30.0)
#: librdkafka's "no committed offset" (RD_KAFKA_OFFSET_INVALID).
_OFFSET_INVALID = -1001


class ChaosGroup:
    """The group's members (threads). ``bootstrap``: the cluster's address list; ``topic``; ``now_ms()``: the run's
    clock (ms from cluster ready); ``seed``: draws the restart times; ``logger``: librdkafka's log."""

    def __init__(self, bootstrap: str, topic: str, now_ms: Callable[[], int], seed: int, logger=None) -> None:
        self.bootstrap, self.topic, self.now_ms, self.logger = bootstrap, topic, now_ms, logger
        self.rng = Random(f"chaos-group:{seed}")
        self.lock = threading.Lock()
        self.stop = threading.Event()
        #: (group, client, partition name, kind, offset, time ms): kraftlog.check.groups.GroupEvent
        self.events: list[tuple[str, str, str, str, int, int]] = []
        #: (client, partition name, offset, value, time ms, seq): the checkers' Consumed
        self.consumed: list[tuple[str, str, int, str | None, int, int]] = []
        self.errors: Counter = Counter()
        self.commits = 0
        self.restarts = 0
        self._seq = 0
        self.threads = [threading.Thread(target=self._member, args=(f"member-{i}", self.rng.random()),
                                         name=f"group-member-{i}", daemon=True) for i in range(MEMBERS)]

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop every member (a last commit, then a clean close) and wait for them."""
        self.stop.set()
        for t in self.threads:
            t.join(timeout_s)

    # ------------------------------------------------------------------ one member
    def _event(self, client: str, partition: int, kind: str, offset: int) -> None:
        with self.lock:
            self.events.append((GROUP, client, f"{self.topic}-{partition}", kind, offset, self.now_ms()))

    def _consumer(self, client: str):
        from confluent_kafka import Consumer
        conf = {"bootstrap.servers": self.bootstrap, "group.id": GROUP, "client.id": client,
                "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 1000, "topic.metadata.refresh.interval.ms": 5000}
        if self.logger is not None:
            conf["logger"] = self.logger
        return Consumer(conf)

    def _on_assign(self, client: str, consumer, partitions) -> None:
        """An assignment: the group's committed offsets of the partitions (OffsetFetch) and the start."""
        try:
            committed = consumer.committed(partitions, timeout=10)
        except Exception as exc:  # noqa: BLE001 - librdkafka's KafkaException: counted, the member goes on
            self.errors[f"committed: {exc}"] += 1
            return
        for tp in committed:
            offset = tp.offset if tp.offset >= 0 else -1
            self._event(client, tp.partition, "fetched", offset)
            self._event(client, tp.partition, "position", max(offset, 0))

    def _commit(self, client: str, consumer) -> None:
        from confluent_kafka import KafkaException
        try:
            parts = consumer.commit(asynchronous=False)
        except KafkaException as exc:
            self.errors[f"commit: {exc.args[0].name() if exc.args else exc}"] += 1
            return
        for tp in parts or ():
            if tp.error is None and tp.offset >= 0:
                self._event(client, tp.partition, "commit", tp.offset)
        self.commits += 1

    def _member(self, name: str, draw: float) -> None:
        rng = Random(f"{name}:{draw}")
        incarnation = 0
        while not self.stop.is_set():
            client = f"{name}#{incarnation}"
            consumer = self._consumer(client)
            consumer.subscribe([self.topic],
                               on_assign=lambda c, parts, client=client: self._on_assign(client, c, parts))
            until = time.monotonic() + rng.uniform(*RESTART_AFTER_S)
            read = 0
            while not self.stop.is_set() and time.monotonic() < until:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error() is not None:
                    self.errors[msg.error().name()] += 1
                    continue
                with self.lock:
                    self._seq += 1
                    value = msg.value()
                    self.consumed.append((client, f"{self.topic}-{msg.partition()}", msg.offset(),
                                          value.decode() if value is not None else None, self.now_ms(), self._seq))
                read += 1
                if read % COMMIT_EVERY == 0:
                    self._commit(client, consumer)
            if self.stop.is_set():
                self._commit(client, consumer)  # the run's end: a last commit
            else:
                self.restarts += 1
            try:
                consumer.close()
            except Exception as exc:  # noqa: BLE001 - a close during a fault: counted
                self.errors[f"close: {exc}"] += 1
            incarnation += 1
