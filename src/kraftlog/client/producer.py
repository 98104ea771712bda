"""A sans-I/O producer (Kafka's ``KafkaProducer``/``Sender``).

With ``acks=all`` the producer is idempotent, as Kafka's is by default (``enable.idempotence=true``
needs acks=all): it gets a producer id with InitProducerId and numbers its batches per partition; a
retried batch keeps its sequence, so a leader that already holds it answers with the original offsets
instead of appending it twice. OUT_OF_ORDER_SEQUENCE_NUMBER / INVALID_PRODUCER_EPOCH /
UNKNOWN_PRODUCER_ID (the log lost some of the producer's batches but kept older ones, so its sequences
have a gap; a log that kept none accepts any sequence) make it take a new producer id and restart its
sequences (KIP-360's recovery, simplified). With acks 0/1 it is not idempotent.

Records are queued per partition and sent to the partition leader in batches, one request in flight
per partition (``max.in.flight.requests.per.connection=1``, so order is kept). Retriable errors
(NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, request
timeouts, ...) refresh metadata and retry after ``retry.backoff.ms`` until ``delivery.timeout.ms``
from the first send; then the record fails. ``acks=0`` records count as acknowledged when sent.

Connections follow Kafka's ``NetworkClient`` (:mod:`kraftlog.client.network`): a partition whose
leader is in reconnect backoff waits (Kafka's ``Sender`` sends only to ready nodes), and Metadata and
InitProducerId go to the least-loaded node that is not in backoff.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from random import Random
from typing import Literal

from ..protocol import messages as m
from ..protocol.errors import Errors, is_retriable
from ..protocol.node import Message, earliest
from ..protocol.records import Record, RecordBatch
from .metadata import ClientMetadata
from .network import NetworkClient

#: Kafka's NONE error code, bound once (attribute access on the enum class is slow on hot paths).
NONE = Errors.NONE
#: The header that carries a tombstone's identity (its record value is null): the simulator's producers.
TOMBSTONE_ID_HEADER = "kraftlog-id"


def record_identity(value: bytes | None, headers: tuple[tuple[str, bytes | None], ...] = ()) -> str | None:
    """The identity the simulator's producers give a record: its value, or for a tombstone (a null value) its
    ``kraftlog-id`` header (:data:`TOMBSTONE_ID_HEADER`); None for a null value without one."""
    if value is not None:
        return value.decode()
    for key, header in headers:
        if key == TOMBSTONE_ID_HEADER and header is not None:
            return header.decode()
    return None


@dataclass(slots=True)
class PendingRecord:
    """A record handed to ``send``; ``created_ms`` starts its delivery timeout."""

    topic: str
    partition: int
    value: bytes
    created_ms: int
    #: the CreateTime its record carries once put in a batch (ms; -1 before)
    timestamp_ms: int = -1
    #: the record's key (None: no key)
    key: bytes | None = None
    #: a tombstone: the record goes with a null value, ``value`` in its ``kraftlog-id`` header (the simulator's
    #: identity of each record)
    tombstone: bool = False


@dataclass(slots=True)
class Completion:
    """The outcome of one record: ``error`` 0 when acknowledged; ``offset`` -1 when unknown (acks=0)."""

    topic: str
    partition: int
    value: bytes
    acks: int
    error: int
    offset: int
    time_ms: int
    #: the record's CreateTime (ms; -1 when it was never put in a batch)
    timestamp_ms: int = -1


#: What a request waits under in NodeBase's in-flight table: a Metadata or InitProducerId request, or a
#: Produce request with its partition and the records of its batch.
ProduceContext = tuple[Literal["produce"], tuple[str, int], list[PendingRecord]]
ProducerContext = tuple[Literal["metadata"]] | tuple[Literal["init"]] | ProduceContext


class Producer(NetworkClient[ProducerContext]):
    """Producer ``client_id`` with ``acks`` in {0, 1, -1}; times in ms. Kafka's configs and defaults:
    ``request.timeout.ms`` 30000, ``delivery.timeout.ms`` 120000, ``retry.backoff.ms`` 100;
    ``connection_configs`` are NetworkClient's (``reconnect.backoff.ms`` 50, ``reconnect.backoff.max.ms``
    1000, ``socket.connection.setup.timeout.ms`` 10000, ``socket.connection.setup.timeout.max.ms``
    30000). ``rng`` (seeded) draws backoff jitter and the start of the least-loaded-node scan."""

    metadata: ClientMetadata

    def __init__(self, client_id: str, bootstrap: list[int], acks: int, rng: Random, *,
                 request_timeout_ms: int = 30000, delivery_timeout_ms: int = 120000,
                 retry_backoff_ms: int = 100, batch_size: int = 100, **connection_configs: int) -> None:
        super().__init__(client_id, rng, request_timeout_ms=request_timeout_ms, **connection_configs)
        self.acks = acks
        self.metadata = ClientMetadata(bootstrap)
        self.delivery_timeout_ms = delivery_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.batch_size = batch_size
        self.queues: dict[tuple[str, int], deque[PendingRecord]] = {}
        self.inflight: set[tuple[str, int]] = set()
        self.retry_at: dict[tuple[str, int], int] = {}
        self.completions: list[Completion] = []
        self.idempotent = acks == -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.init_inflight = False
        self.next_sequence: dict[tuple[str, int], int] = {}
        #: the batch being sent per partition, kept with its sequence until it is answered for good
        self.current: dict[tuple[str, int], tuple[RecordBatch, list[PendingRecord]]] = {}
        #: the keys of ``queues``, sorted (the order partitions are served in); updated when one is added
        self._keys: list[tuple[str, int]] = []
        self._drained_ms = -1  # when _drain last looked at every partition

    # ---------------------------------------------------------------- API
    def send(self, topic: str, partition: int, value: bytes, now_ms: int, key: bytes | None = None,
             tombstone: bool = False) -> None:
        """Queue one record for (topic, partition), with ``key`` (None: no key); a ``tombstone`` goes with a null
        value and ``value`` in its ``kraftlog-id`` header."""
        self._queue((topic, partition)).append(PendingRecord(topic, partition, value, now_ms, key=key,
                                                             tombstone=tombstone))
        self._drain(now_ms)

    def _queue(self, key: tuple[str, int]) -> deque[PendingRecord]:
        q = self.queues.get(key)
        if q is None:
            q = self.queues[key] = deque()
            self._keys = sorted(self.queues)
        return q

    def take_completions(self) -> list[Completion]:
        """Outcomes since the last call, in completion order."""
        out = self.completions
        self.completions = []
        return out

    @property
    def idle(self) -> bool:
        """No record waiting or in flight."""
        return not self.inflight and not self.current and not any(self.queues.values())

    # ---------------------------------------------------------------- node contract
    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)
        self._drain(now_ms)

    def next_deadline(self) -> int | None:
        """The earliest request or connection setup timeout, reconnect or retry backoff, delivery timeout
        or metadata refresh (ms)."""
        d = self._network_deadline()
        current = self.current
        inflight = self.inflight
        waiting = False
        for k, q in self.queues.items():
            if k in inflight:
                continue
            cur = current.get(k)
            if cur is not None:
                first = cur[1][0]
            elif q:
                first = q[0]
            else:
                continue
            waiting = True
            due = first.created_ms + self.delivery_timeout_ms
            retry = self.retry_at.get(k, 0)
            # A retry time already passed at the last drain no longer wakes us: that drain found the
            # partition blocked on something an answer will bring (metadata, a producer id).
            if self._drained_ms < retry < due:
                due = retry
            if d is None or due < d:
                d = due
        if waiting and self.metadata.stale and not self.metadata.inflight and not (
                self.idempotent and self.producer_id < 0):  # _drain waits for the producer id first
            d = earliest(d, self.metadata.next_refresh_ms)
        return d

    def on_request(self, now_ms: int, envelope: m.Envelope) -> None:
        pass

    def on_response(self, now_ms: int, context: ProducerContext, message: Message) -> None:
        if context[0] == "metadata":
            assert isinstance(message, m.MetadataResponse), message
            self.metadata.update(message)
        elif context[0] == "init":
            assert isinstance(message, m.InitProducerIdResponse), message
            self.init_inflight = False
            if message.error_code == NONE:
                self.producer_id, self.producer_epoch = message.producer_id, message.producer_epoch
                self.next_sequence.clear()
            else:
                self.metadata.stale = True
        else:
            assert isinstance(message, m.ProduceResponse), message
            self._on_produce(now_ms, context, message)
        self._drain(now_ms)

    def on_timeout(self, now_ms: int, context: ProducerContext) -> None:
        if context[0] == "metadata":
            self.metadata.failed(now_ms, self.retry_backoff_ms)
        elif context[0] == "init":
            self.init_inflight = False
        else:
            _, key, records = context
            self._retry(now_ms, key, records, Errors.REQUEST_TIMED_OUT)
        self._drain(now_ms)

    # ---------------------------------------------------------------- internals
    def _drain(self, now_ms: int) -> None:
        """Expire records past ``delivery.timeout.ms``, then send one batch to each partition that has
        records, no request in flight, no retry backoff running and a leader not in reconnect backoff;
        refresh metadata when needed."""
        self._drained_ms = now_ms
        self._wake_ms = None
        queues = self.queues
        current = self.current
        inflight = self.inflight
        timeout = self.delivery_timeout_ms
        keys = self._keys
        for key in keys:
            if key in inflight:
                continue
            q = queues[key]
            cur = current.get(key)
            if cur is not None and now_ms - cur[1][0].created_ms >= timeout:
                expired = current.pop(key)[1]
            elif q and now_ms - q[0].created_ms >= timeout:
                expired = []
            else:
                continue
            while q and now_ms - q[0].created_ms >= timeout:
                expired.append(q.popleft())
            for r in expired:
                self.completions.append(Completion(r.topic, r.partition, r.value, self.acks,
                                                   Errors.REQUEST_TIMED_OUT, -1, now_ms))
        need_metadata = False
        if self.idempotent and self.producer_id < 0:
            if not self.init_inflight and any(q for q in queues.values()) or current:
                node = self.least_loaded_node(now_ms) if not self.init_inflight else None
                if node is not None:
                    self.init_inflight = True
                    self.send_request(node, m.InitProducerIdRequest(), now_ms, self.request_timeout_ms, ("init",))
            return
        for key in keys:
            if key in inflight:
                continue
            q = queues[key]
            if (not q and key not in current) or self.retry_at.get(key, 0) > now_ms:
                continue
            info = self.metadata.leader(key)
            if info is None:
                need_metadata = True
                continue
            if self.is_unavailable(info.leader, now_ms):
                continue  # Kafka's Sender sends only to ready nodes: wait for the reconnect backoff
            cur = current.get(key)
            if cur is not None:
                batch, batch_records = cur
                if self.idempotent and batch.producer_id != self.producer_id:
                    batch = self._numbered(key, batch.records)  # new producer id: renumber from 0
                    current[key] = (batch, batch_records)
            else:
                batch_records = [q.popleft() for _ in range(min(self.batch_size, len(q)))]
                for r in batch_records:
                    r.timestamp_ms = now_ms
                records = tuple([Record(now_ms, r.key, None, ((TOMBSTONE_ID_HEADER, r.value),)) if r.tombstone
                                 else Record(now_ms, r.key, r.value) for r in batch_records])
                if self.idempotent:
                    batch = self._numbered(key, records)
                    current[key] = (batch, batch_records)
                else:
                    batch = RecordBatch(-1, -1, records)
            req = m.ProduceRequest(self.acks, self.request_timeout_ms, (m.ProducePartition(key[0], key[1], (batch,)),))
            if self.acks == 0:
                self.send_without_response(info.leader, req, now_ms)
                for r in batch_records:
                    self.completions.append(Completion(r.topic, r.partition, r.value, 0, NONE, -1, now_ms))
                continue
            inflight.add(key)
            self.send_request(info.leader, req, now_ms, self.request_timeout_ms, ("produce", key, batch_records))
        if (need_metadata or self.metadata.stale) and not self.metadata.inflight and (
                any(q for q in queues.values()) or current) and now_ms >= self.metadata.next_refresh_ms:
            node = self._metadata_node(now_ms)
            if node is not None:
                topics = sorted({k[0] for k, q in queues.items() if q} | {k[0] for k in current})
                self.send_request(node, self.metadata.request(topics), now_ms, self.request_timeout_ms,
                                  ("metadata",))

    def _numbered(self, key: tuple[str, int], records: tuple[Record, ...]) -> RecordBatch:
        """A batch of ``records`` stamped with the producer id, epoch and the partition's next sequence."""
        seq = self.next_sequence.get(key, 0)
        self.next_sequence[key] = seq + len(records)
        return RecordBatch(-1, -1, records, self.producer_id, self.producer_epoch, seq)

    def _on_produce(self, now_ms: int, context: ProduceContext, resp: m.ProduceResponse) -> None:
        _, key, records = context
        self.inflight.discard(key)
        pr = resp.partitions[0]
        if pr.error_code == NONE:
            self.current.pop(key, None)
            for i, r in enumerate(records):
                self.completions.append(Completion(r.topic, r.partition, r.value, self.acks, NONE,
                                                   pr.base_offset + i, now_ms, r.timestamp_ms))
        else:
            self._retry(now_ms, key, records, pr.error_code)

    def _retry(self, now_ms: int, key: tuple[str, int], records: list[PendingRecord], error: int) -> None:
        self.inflight.discard(key)
        if self.idempotent and error in (Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.INVALID_PRODUCER_EPOCH,
                                         Errors.UNKNOWN_PRODUCER_ID):
            # The log lost our earlier batches: take a new producer id and renumber (KIP-360, simplified).
            self.producer_id = -1
            self.retry_at[key] = now_ms + self.retry_backoff_ms
            return
        if is_retriable(error):
            self.metadata.stale = True
            self.retry_at[key] = now_ms + self.retry_backoff_ms
            if not self.idempotent:
                self._queue(key).extendleft(reversed(records))
            return
        self.current.pop(key, None)
        for r in records:
            self.completions.append(Completion(r.topic, r.partition, r.value, self.acks, error, -1, now_ms))
