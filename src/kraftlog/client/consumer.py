"""A sans-I/O consumer with KIP-320 position validation (Kafka's ``KafkaConsumer`` fetch path).

Each assigned partition has a position (offset, leader epoch of the last consumed record). Fetches
carry CurrentLeaderEpoch. When the leader epoch in metadata increases, or a fetch answers
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH, the position is validated with OffsetForLeaderEpoch
before fetching again (KIP-320). If the leader's end offset for the position's epoch is below the
position, the log was truncated under the consumer:

* ``reset="none"``: the next ``poll_records()`` raises :class:`LogTruncationError` carrying the partition and
  the divergence offset (Kafka's ``LogTruncationException``); the position is moved to the divergence
  offset, as an application catching it would seek;
* ``reset="earliest"``/``"latest"``: the consumer seeks to the divergence offset and logs it.

The position (:class:`~kraftlog.client.position.FetchPosition`) and that rule
(:func:`~kraftlog.client.position.validate_position`) are :mod:`kraftlog.client.position`'s, shared with
the Spark source.

``validate_positions=False`` skips validation, as some real clients do: a truncation then goes
unnoticed (the checker reports it as undetected and as poll-skip).

Connections follow Kafka's ``NetworkClient`` (:mod:`kraftlog.client.network`): a partition whose
leader is in reconnect backoff is skipped until the backoff ends (Kafka's fetcher: "awaiting reconnect
backoff"); Metadata and FindCoordinator go to the least-loaded node not in backoff; a group
coordinator in backoff is forgotten and looked up again (Kafka's ``coordinatorUnknown``).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from random import Random
from typing import Literal

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Message, earliest
from .metadata import ClientMetadata, PartitionInfo
from .network import NetworkClient
from .position import EpochEndOffset, FetchPosition, Validation, validate_position

#: Kafka's NONE error code, bound once (attribute access on the enum class is slow on hot paths).
NONE = Errors.NONE

#: What a request waits under in NodeBase's in-flight table (the partitions as (topic, index) keys):
#: a Fetch with its leader, partitions and the offsets sent; a ListOffsets or an OffsetForLeaderEpoch
#: (with the position validated) for one partition; Metadata; the group's requests (an OffsetCommit
#: with the partitions committed).
FetchContext = tuple[Literal["fetch"], int, tuple[tuple[str, int], ...], tuple[int, ...]]
ListOffsetsContext = tuple[Literal["list_offsets"], int, tuple[tuple[str, int], ...]]
ValidateContext = tuple[Literal["validate"], int, tuple[tuple[str, int], ...], FetchPosition]
GroupContext = (tuple[Literal["find_coordinator"]] | tuple[Literal["offset_fetch"]]
                | tuple[Literal["offset_commit"], tuple[m.OffsetCommitPartition, ...]])
ConsumerContext = tuple[Literal["metadata"]] | FetchContext | ListOffsetsContext | ValidateContext | GroupContext


@dataclass(slots=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    value: bytes | None
    time_ms: int
    #: the record's headers, (key, value) pairs as Kafka's ConsumerRecord has them
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True)
class LogTruncation:
    """A detected truncation: the consumer was at ``position`` and the log diverged at ``divergence_offset``."""

    topic: str
    partition: int
    position: int
    divergence_offset: int
    time_ms: int
    reset: str


class LogTruncationError(Exception):
    """KIP-320's ``LogTruncationException``: the log was truncated below the consumer's position.

    ``partition``: (topic, index); ``divergence_offset``: the first offset that diverged (the leader's
    end offset for the position's epoch), -1 when the leader's answer was undefined (Kafka's
    LogTruncationException without a divergent offset); ``position``: where the consumer was."""

    def __init__(self, truncations: list[LogTruncation]) -> None:
        self.truncations = list(truncations)
        first = self.truncations[0]
        self.partition = (first.topic, first.partition)
        self.divergence_offset = first.divergence_offset
        self.position = first.position
        super().__init__(f"log truncation detected on {first.topic}-{first.partition}: position "
                         f"{first.position}, diverged at offset {first.divergence_offset}")


class OffsetOutOfRangeError(Exception):
    """Fetch position out of range with ``auto.offset.reset=none`` (Kafka's OffsetOutOfRangeException)."""

    def __init__(self, partitions: list[tuple[str, int, int]]) -> None:
        self.partitions = list(partitions)
        super().__init__(f"offsets out of range with no reset policy: {self.partitions}")


@dataclass(slots=True)
class PartitionFetchState:
    position: FetchPosition | None = None
    awaiting_validation: bool = False
    awaiting_reset: bool = True
    inflight: bool = False
    backoff_until: int = 0


class Consumer(NetworkClient[ConsumerContext]):
    """Consumer ``client_id`` assigned ``partitions``; ``reset`` is auto.offset.reset (none/earliest/latest).

    Kafka's configs and defaults, in ms: ``fetch.max.wait.ms`` 500, ``request.timeout.ms`` 30000,
    ``retry.backoff.ms`` 100, ``auto.commit.interval.ms`` 5000; ``connection_configs`` are
    NetworkClient's (``reconnect.backoff.ms`` 50, ``reconnect.backoff.max.ms`` 1000,
    ``socket.connection.setup.timeout.ms`` 10000, ``socket.connection.setup.timeout.max.ms`` 30000).
    ``rng`` (seeded) draws backoff jitter and the start of the least-loaded-node scan."""

    metadata: ClientMetadata

    def __init__(self, client_id: str, bootstrap: list[int], partitions: list[tuple[str, int]], reset: str,
                 rng: Random, *, validate_positions: bool = True, fetch_max_wait_ms: int = 500,
                 request_timeout_ms: int = 30000, retry_backoff_ms: int = 100, group_id: str | None = None,
                 auto_commit_interval_ms: int = 5000, **connection_configs: int) -> None:
        super().__init__(client_id, rng, request_timeout_ms=request_timeout_ms, **connection_configs)
        #: Kafka's ``group.id``: committed offsets (with their leader epochs) live at its coordinator.
        self.group_id = group_id
        self.auto_commit_interval_ms = auto_commit_interval_ms
        self.coordinator: int | None = None
        self.group_inflight = False
        self.group_ready = group_id is None  # committed offsets fetched (or no group)
        self.group_backoff_until = 0
        self.next_commit_ms = auto_commit_interval_ms
        self.committed: dict[tuple[str, int], FetchPosition] = {}
        #: what the group's coordinator said, for the group checkers: (kind, topic, partition, offset) with kind
        #: "commit" (an OffsetCommit acknowledged), "fetched" (an OffsetFetch answer, -1: nothing committed) or
        #: "position" (the position set from a committed offset or by auto.offset.reset); see take_group_events
        self.group_events: list[tuple[str, str, int, int]] = []
        self.metadata = ClientMetadata(bootstrap)
        self.reset = reset
        self.validate_positions = validate_positions
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.state: dict[tuple[str, int], PartitionFetchState] = {p: PartitionFetchState() for p in partitions}
        self.records: list[ConsumedRecord] = []
        self.truncations: list[LogTruncation] = []
        self._unreported: list[LogTruncation] = []  # raised by the next poll() (reset none)
        self._out_of_range: list[tuple[str, int, int]] = []
        self.hwms: list[tuple[int, str, int, int]] = []  # (time, topic, partition, HWM) from fetches
        self._worked_ms = -1  # when _work last looked at every partition

    # ---------------------------------------------------------------- API
    def seek(self, topic: str, partition: int, offset: int, leader_epoch: int = -1) -> None:
        """Set the position; with a leader epoch (>= 0; -1: none) the position is validated before the next
        fetch."""
        st = self.state.setdefault((topic, partition), PartitionFetchState())
        st.position = FetchPosition.from_wire(offset, leader_epoch)
        st.awaiting_reset = False
        st.awaiting_validation = st.position.offset_epoch is not None and self.validate_positions

    def poll_records(self) -> list[ConsumedRecord]:
        """Records fetched since the last call — Kafka's ``KafkaConsumer.poll()`` (named apart from the
        node contract's ``poll()``, which returns messages to send): raises LogTruncationError (once) when
        a truncation below the position was detected with ``reset="none"`` — the consumer has already
        moved its position to the divergence offset, so polling again resumes there — and
        OffsetOutOfRangeError when a position fell out of range with ``reset="none"``."""
        if self._unreported:
            found, self._unreported = self._unreported, []
            raise LogTruncationError(found)
        if self._out_of_range:
            out_of_range, self._out_of_range = self._out_of_range, []
            raise OffsetOutOfRangeError(out_of_range)
        return self.take_records()

    @property
    def has_errors(self) -> bool:
        """True when the next poll_records() raises."""
        return bool(self._unreported or self._out_of_range)

    def take_records(self) -> list[ConsumedRecord]:
        out = self.records
        self.records = []
        return out

    def take_group_events(self) -> list[tuple[str, str, int, int]]:
        """The group events (:attr:`group_events`) since the last call, oldest first."""
        out = self.group_events
        self.group_events = []
        return out

    def take_truncations(self) -> list[LogTruncation]:
        out = self.truncations
        self.truncations = []
        return out

    # ---------------------------------------------------------------- node contract
    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)
        self._work(now_ms)

    def next_deadline(self) -> int | None:
        """The earliest request or connection setup timeout, reconnect backoff, metadata refresh,
        partition backoff or group action (ms)."""
        d = self._network_deadline()
        if self.metadata.stale and not self.metadata.inflight:
            d = earliest(d, self.metadata.next_refresh_ms)
        for st in self.state.values():
            # A backoff that ended before the last pass over the partitions no longer wakes us: that
            # pass found the partition blocked on something an answer will bring (metadata, group).
            if not st.inflight and st.backoff_until > self._worked_ms:
                d = earliest(d, st.backoff_until)
        if self.group_id is not None and not self.group_inflight:
            # a commit waits for a running group backoff too (see _group_work)
            d = earliest(d, self.group_backoff_until if not self.group_ready
                         else max(self.next_commit_ms, self.group_backoff_until))
        return d

    def on_request(self, now_ms: int, envelope: m.Envelope) -> None:
        pass

    def on_response(self, now_ms: int, context: ConsumerContext, message: Message) -> None:
        if context[0] == "metadata":
            assert isinstance(message, m.MetadataResponse), message
            for key in self.metadata.update(message):
                st = self.state.get(key)
                if st is not None and st.position is not None and self.validate_positions:
                    st.awaiting_validation = True
        elif context[0] == "fetch":
            assert isinstance(message, m.FetchResponse), message
            self._on_fetch(now_ms, context, message)
        elif context[0] == "list_offsets":
            assert isinstance(message, m.ListOffsetsResponse), message
            self._on_list_offsets(now_ms, context, message)
        elif context[0] == "validate":
            assert isinstance(message, m.OffsetForLeaderEpochResponse), message
            self._on_validate(now_ms, context, message)
        else:
            self._on_group(now_ms, context, message)
        self._work(now_ms)

    def on_timeout(self, now_ms: int, context: ConsumerContext) -> None:
        if context[0] == "metadata":
            self.metadata.failed(now_ms, self.retry_backoff_ms)
        elif context[0] == "find_coordinator" or context[0] == "offset_fetch" or context[0] == "offset_commit":
            self._group_failed(now_ms)
        else:
            for key in context[2]:
                self._fail(now_ms, key)
        self._work(now_ms)

    # ---------------------------------------------------------------- internals
    def _fail(self, now_ms: int, key: tuple[str, int]) -> None:
        st = self.state[key]
        st.inflight = False
        st.backoff_until = now_ms + self.retry_backoff_ms
        self.metadata.stale = True

    # ---------------------------------------------------------------- group offsets
    def commit(self, now_ms: int) -> None:
        """Commit every position (offset and the leader epoch of the last consumed record, KIP-320)."""
        self.next_commit_ms = now_ms
        self._work(now_ms)

    def _group_failed(self, now_ms: int) -> None:
        self.group_inflight = False
        self.coordinator = None
        self.group_backoff_until = now_ms + self.retry_backoff_ms
        self.next_commit_ms = min(self.next_commit_ms, self.group_backoff_until)

    def _group_work(self, now_ms: int) -> None:
        if self.group_id is None or self.group_inflight or now_ms < self.group_backoff_until:
            return
        if self.coordinator is not None and self.is_unavailable(self.coordinator, now_ms):
            self.coordinator = None  # Kafka's coordinatorUnknown(): a coordinator in reconnect backoff is unknown
        if self.coordinator is None:
            node = self.least_loaded_node(now_ms)
            if node is None:
                self.group_backoff_until = self.reconnect_at_earliest()
                return
            self.group_inflight = True
            self.send_request(node, m.FindCoordinatorRequest((self.group_id,)), now_ms,
                              self.request_timeout_ms, ("find_coordinator",))
        elif not self.group_ready:
            self.group_inflight = True
            self.send_request(self.coordinator, m.OffsetFetchRequest(self.group_id, tuple(sorted(self.state))),
                              now_ms, self.request_timeout_ms, ("offset_fetch",))
        elif now_ms >= self.next_commit_ms:
            self.next_commit_ms = now_ms + self.auto_commit_interval_ms
            parts = tuple(m.OffsetCommitPartition(k[0], k[1], st.position.offset, st.position.wire_epoch)
                          for k, st in sorted(self.state.items())
                          if st.position is not None and self.committed.get(k) != st.position)
            if parts:
                self.group_inflight = True
                self.send_request(self.coordinator, m.OffsetCommitRequest(self.group_id, parts), now_ms,
                                  self.request_timeout_ms, ("offset_commit", parts))

    def _on_group(self, now_ms: int, context: GroupContext, resp: object) -> None:
        self.group_inflight = False
        if context[0] == "find_coordinator":
            assert isinstance(resp, m.FindCoordinatorResponse), resp
            c = resp.coordinators[0] if resp.coordinators else None
            if c is None or c.error_code != NONE or c.node_id < 0:
                self._group_failed(now_ms)
            else:
                self.coordinator = c.node_id
        elif context[0] == "offset_fetch":
            assert isinstance(resp, m.OffsetFetchResponse), resp
            if resp.error_code != NONE:
                self._group_failed(now_ms)
                return
            for p in resp.partitions:
                key = (p.topic, p.partition)
                if key in self.state and p.error_code == NONE:
                    self.group_events.append(("fetched", p.topic, p.partition, p.committed_offset))
                if key in self.state and p.error_code == NONE and p.committed_offset >= 0:
                    # KIP-320: a committed position carries its leader epoch and is validated first.
                    self.seek(p.topic, p.partition, p.committed_offset, p.committed_leader_epoch)
                    self.committed[key] = FetchPosition.from_wire(p.committed_offset, p.committed_leader_epoch)
                    self.group_events.append(("position", p.topic, p.partition, p.committed_offset))
            self.group_ready = True
        else:
            assert isinstance(resp, m.OffsetCommitResponse), resp
            if any(p.error_code != NONE for p in resp.partitions):
                self._group_failed(now_ms)
                return
            for cp in context[1]:
                self.committed[(cp.topic, cp.partition)] = FetchPosition.from_wire(cp.committed_offset,
                                                                                   cp.committed_leader_epoch)
                if self.group_id is not None:
                    self.group_events.append(("commit", cp.topic, cp.partition, cp.committed_offset))

    def _work(self, now_ms: int) -> None:
        self._worked_ms = now_ms
        self._wake_ms = None
        self._group_work(now_ms)
        fetch_by_leader: dict[int, list[tuple[tuple[str, int], PartitionInfo]]] = {}
        for key in sorted(self.state):
            st = self.state[key]
            if st.inflight or st.backoff_until > now_ms or not self.group_ready:
                continue
            info = self.metadata.leader(key)
            if info is None:
                self.metadata.stale = True
                continue
            if self.is_unavailable(info.leader, now_ms):
                continue  # Kafka's fetcher skips a node awaiting reconnect backoff
            if st.awaiting_reset or st.position is None:
                ts = m.EARLIEST_TIMESTAMP if self.reset in ("earliest", "none") else m.LATEST_TIMESTAMP
                st.inflight = True
                self.send_request(info.leader, m.ListOffsetsRequest(
                    -1, (m.ListOffsetsPartition(key[0], key[1], ts, info.leader_epoch),)),
                    now_ms, self.request_timeout_ms, ("list_offsets", info.leader, (key,)))
            elif st.awaiting_validation and st.position.offset_epoch is not None:
                if self.metadata.stale:
                    continue  # validate against the refreshed leader and epoch, not the stale ones
                st.inflight = True
                self.send_request(info.leader, m.OffsetForLeaderEpochRequest(
                    -1, (m.OffsetForLeaderEpochPartition(key[0], key[1], info.leader_epoch,
                                                         st.position.offset_epoch),)),
                    now_ms, self.request_timeout_ms, ("validate", info.leader, (key,), st.position))
            else:
                st.awaiting_validation = False
                fetch_by_leader.setdefault(info.leader, []).append((key, info))
        for leader, parts in fetch_by_leader.items():
            fps = []
            sent: list[int] = []
            for key, info in parts:
                st = self.state[key]
                st.inflight = True
                assert st.position is not None  # fetched only with a position (above)
                fps.append(m.FetchPartition(info.topic_id, key[1], info.leader_epoch, st.position.offset))
                sent.append(st.position.offset)
            keys = tuple([k for k, _ in parts])
            offsets = tuple(sent)
            self.send_request(leader, m.FetchRequest(-1, -1, self.fetch_max_wait_ms, 1, tuple(fps)), now_ms,
                              self.request_timeout_ms + self.fetch_max_wait_ms, ("fetch", leader, keys, offsets))
        if self.metadata.stale and not self.metadata.inflight and now_ms >= self.metadata.next_refresh_ms:
            node = self._metadata_node(now_ms)
            if node is not None:
                topics = sorted({k[0] for k in self.state})
                self.send_request(node, self.metadata.request(topics), now_ms, self.request_timeout_ms,
                                  ("metadata",))

    def _on_fetch(self, now_ms: int, context: FetchContext, resp: m.FetchResponse) -> None:
        _, leader, keys, offsets = context
        state = self.state
        for key in keys:
            state[key].inflight = False
        if resp.error_code != NONE:
            for key in keys:
                self._fail(now_ms, key)
            return
        sent = dict(zip(keys, offsets, strict=True))
        by_id: dict[tuple[uuid.UUID, int], tuple[str, int]] = {}
        for key in keys:
            info = self.metadata.partitions.get(key)
            if info is not None:
                by_id[(info.topic_id, key[1])] = key
        for pr in resp.partitions:
            answered = by_id.get((pr.topic_id, pr.partition))
            if answered is None:
                continue
            key = answered
            st = state[key]
            if pr.error_code != NONE:
                self._on_fetch_error(now_ms, key, st, pr.error_code, sent[key])
                continue
            position = st.position
            if position is None or position.offset != sent[key]:
                continue
            hwm = pr.high_watermark
            self.hwms.append((now_ms, key[0], key[1], hwm))
            next_offset = position.offset
            last_epoch = None
            for batch in pr.records:
                epoch = batch.partition_leader_epoch
                for off, rec in zip(batch.record_offsets(), batch.records, strict=True):
                    if off < next_offset or off >= hwm:
                        continue
                    self.records.append(ConsumedRecord(key[0], key[1], off, epoch, rec.value, now_ms, rec.headers))
                    next_offset = off + 1
                    last_epoch = epoch
                end = min(batch.next_offset, hwm)
                if end > next_offset:
                    # a batch the log cleaner emptied or cut at its end: the position moves past it (Kafka's
                    # consumer goes on from the batch's nextOffset)
                    next_offset, last_epoch = end, epoch
            if last_epoch is not None:
                # KIP-320: the position carries the leader epoch of the last consumed record
                st.position = FetchPosition.from_wire(next_offset, last_epoch)

    def _on_fetch_error(self, now_ms: int, key: tuple[str, int], st: PartitionFetchState, error: int,
                        sent_offset: int) -> None:
        """A partition error in a Fetch response: validate the position after a leader change
        (FENCED/UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER), reset or report an out-of-range
        position, back off and refresh metadata otherwise."""
        if error in (Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
            if self.validate_positions and st.position is not None and st.position.offset_epoch is not None:
                st.awaiting_validation = True
            self._fail(now_ms, key)
        elif error == Errors.OFFSET_OUT_OF_RANGE:
            if self.reset == "none":
                # Kafka raises OffsetOutOfRangeException; the position stays, we retry later.
                self._out_of_range.append((key[0], key[1], sent_offset))
                self._fail(now_ms, key)
            else:
                st.awaiting_reset = True
        else:
            self._fail(now_ms, key)

    def _single_answer(self, now_ms: int, context: ListOffsetsContext,
                       resp: m.ListOffsetsResponse) -> m.ListOffsetsPartitionResponse | None:
        """The one partition answer of a ListOffsets request, or None after an
        error (which backs the partition off and refreshes metadata)."""
        key = context[2][0]
        self.state[key].inflight = False
        pr = resp.partitions[0]
        if pr.error_code != NONE:
            self._fail(now_ms, key)
            return None
        return pr

    def _on_list_offsets(self, now_ms: int, context: ListOffsetsContext, resp: m.ListOffsetsResponse) -> None:
        pr = self._single_answer(now_ms, context, resp)
        if pr is None:
            return
        key = context[2][0]
        st = self.state[key]
        st.position = FetchPosition(pr.offset, None)
        st.awaiting_reset = False
        st.awaiting_validation = False
        if self.group_id is not None:
            self.group_events.append(("position", key[0], key[1], pr.offset))

    def _on_validate(self, now_ms: int, context: ValidateContext, resp: m.OffsetForLeaderEpochResponse) -> None:
        """An OffsetForLeaderEpoch answer for the position sent (``context[3]``), judged by KIP-320's
        rule (:func:`~kraftlog.client.position.validate_position`; ``reset`` other than none is an auto
        reset policy). An answer for a position that has moved since (another offset) is dropped, as
        Kafka's ``maybeCompleteValidation`` skips it. A truncation is recorded in ``truncations`` either
        way and, with reset none, raised by the next poll_records()."""
        key = context[2][0]
        st = self.state[key]
        st.inflight = False
        pr = resp.partitions[0]
        outcome = validate_position(context[3], EpochEndOffset(pr.error_code, pr.leader_epoch, pr.end_offset),
                                    reset_policy=self.reset != "none")
        if outcome.validation is Validation.RETRIABLE:
            self._fail(now_ms, key)
            return
        if st.position is None or st.position.offset != outcome.position.offset:
            return
        st.awaiting_validation = False
        if not outcome.truncated:
            return
        divergent = outcome.divergent
        truncation = LogTruncation(key[0], key[1], st.position.offset, -1 if divergent is None else divergent.offset,
                                   now_ms, self.reset)
        self.truncations.append(truncation)
        if outcome.validation is Validation.LOG_TRUNCATION:
            self._unreported.append(truncation)
        if divergent is not None:
            # TRUNCATED seeks to the divergent offset; after LOG_TRUNCATION the consumer moves there too,
            # as an application catching LogTruncationError would seek.
            st.position = divergent
        else:
            # RESET: the divergence is unknown, everything read may be gone: reset by the policy. After
            # LOG_TRUNCATION without a divergent offset this consumer, like an application that seeks to
            # the beginning, resets to the earliest offset (reset none lists the earliest offset).
            st.position = None
            st.awaiting_reset = True
