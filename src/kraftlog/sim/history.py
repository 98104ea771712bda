"""The event history of a simulation run and its digest.

Every delivered message (time, source, destination, correlation id, type) and every recorded event
(faults, acknowledgements, consumed records, metadata changes) feeds a running SHA-256, so the same
scenario, level and seed give the same ``history_digest`` byte for byte.

Each kind of recorded event has its fields typed below (one TypedDict per kind, keys in the order they
are hashed: a field added, removed or reordered moves every digest). Node ids are recorded as text
(``str(node)``), client ids as the client's node id.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Literal, TypedDict, overload

#: Lines buffered before they are hashed. SHA-256 of a concatenation equals the digest of feeding its
#: parts in order, so buffering changes the cost, never the digest.
FLUSH_LINES = 4096


# ---------------------------------------------------------------- the fault injector (SimCluster)
class NodeEvent(TypedDict):
    """``restart``, ``exit`` (a broker's fatal error), ``shutdown`` (begun), ``pause``, ``disk_space``."""

    node: str


class CrashEvent(TypedDict):
    """``crash``: ``lose`` is the disk's loss (``none``, ``unflushed``, ``all``)."""

    node: str
    lose: str


class RefusedEvent(TypedDict):
    """``refused``: the node refused to start on its disk (the reason, one line)."""

    node: str
    reason: str


class DiskFullEvent(TypedDict):
    """``disk_full``: every write fails with ENOSPC for ``for_ms`` ms."""

    node: str
    for_ms: int


class CorruptEvent(TypedDict):
    """``corrupt``: bytes flipped in item ``index`` of ``path`` (``done`` False: no such item)."""

    node: str
    path: str
    index: int
    done: bool


class ResumeEvent(TypedDict):
    """``resume``: ``waiting`` deliveries and calls had waited for the node."""

    node: str
    waiting: int


class IsolateEvent(TypedDict):
    """``isolate``."""

    nodes: list[str]


class PartitionEvent(TypedDict):
    """``partition`` (of the network into groups)."""

    groups: list[list[str]]


class CutEvent(TypedDict):
    """``cut``: the directed link src -> dst."""

    src: str
    dst: str


class HealEvent(TypedDict):
    """``heal``: ``nodes`` None heals every link."""

    nodes: list[str] | None


class HoldEvent(TypedDict):
    """``hold``: ``api`` None is every API; ``src``/``dst`` ``"None"`` any node."""

    api: str | None
    src: str
    dst: str


class ReleaseEvent(TypedDict):
    """``release``: as ``hold``, and ``count`` messages released."""

    api: str | None
    src: str
    dst: str
    count: int


# ---------------------------------------------------------------- the scenario run (the recorder)
class ReadyEvent(TypedDict):
    """``ready``: whether the cluster became ready (scenario time 0)."""

    ok: bool


class StepEvent(TypedDict):
    """``step``: a scenario step ended."""

    index: int
    verb: str


class AckEvent(TypedDict):
    """``ack``: a producer's record acknowledged at ``offset`` (``acks`` ``all``, ``1`` or ``0``)."""

    client: str
    partition: str
    value: str
    acks: str
    offset: int


class ProduceFailedEvent(TypedDict):
    """``produce_failed``: a producer's record failed with Kafka error code ``error``."""

    client: str
    partition: str
    value: str
    error: int


class ConsumeEvent(TypedDict):
    """``consume``: a consumer returned the record at ``offset`` (``epoch``: its batch's leader epoch)."""

    client: str
    partition: str
    offset: int
    epoch: int
    value: str | None


class GroupEvent(TypedDict):
    """``group``: what a consumer's group coordinator told it: ``kind`` commit (an OffsetCommit of ``offset``
    acknowledged), fetched (an OffsetFetch answer, -1 nothing) or position (its position set to ``offset``)."""

    client: str
    group: str
    partition: str
    kind: str
    offset: int


class OffsetOutOfRangeEvent(TypedDict):
    """``offset_out_of_range``: a consumer's position ``offset`` was out of range (no reset policy)."""

    client: str
    partition: str
    offset: int


class LogTruncationEvent(TypedDict):
    """``log_truncation``: a consumer detected a truncation (KIP-320) at ``position``, diverged at
    ``divergence``."""

    client: str
    partition: str
    position: int
    divergence: int


class TextEvent(TypedDict):
    """``metadata`` (a committed record as its timeline line), ``alter_partition_error``."""

    text: str


class RecoveryEvent(TypedDict):
    """``recovery``: an unclean recovery's step (KIP-966, level urm)."""

    partition: str
    step: str
    detail: str


class StorageEvent(TypedDict):
    """``storage``: a broker's storage fault line."""

    node: str
    detail: str


class ErrorEvent(TypedDict):
    """``alter_config``: the admin request's Kafka error code."""

    error: int


class ElectEvent(TypedDict):
    """``elect``: an ElectLeaders request (``type`` preferred or unclean) and its Kafka error code."""

    partition: str
    type: str
    error: int


class History:
    """``recorded``: how many events were recorded (an event's sequence number is the count before it);
    ``digest()``: ``sha256:<hex>``.

    The digest is SHA-256 over one line per entry, in the order the entries happened:
    ``{ms}|{src}>{dst}|{correlation id}|{message type}`` for a delivered message and
    ``{ms}|{kind}|{fields!r}`` for a recorded event, each ending in ``\n``. The simulator's event loop
    appends message lines to ``lines`` itself (its hot path) and calls :meth:`flush` once
    ``FLUSH_LINES`` are pending."""

    __slots__ = ("recorded", "_hash", "lines")

    def __init__(self) -> None:
        self.recorded = 0
        self._hash = hashlib.sha256()
        self.lines: list[str] = []

    @overload
    def record(self, now_ms: int, kind: Literal["restart", "exit", "shutdown", "pause", "disk_space"],
               fields: NodeEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["crash"], fields: CrashEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["refused"], fields: RefusedEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["disk_full"], fields: DiskFullEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["corrupt"], fields: CorruptEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["resume"], fields: ResumeEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["isolate"], fields: IsolateEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["partition"], fields: PartitionEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["cut"], fields: CutEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["heal"], fields: HealEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["hold"], fields: HoldEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["release"], fields: ReleaseEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["ready"], fields: ReadyEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["step"], fields: StepEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["ack"], fields: AckEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["produce_failed"], fields: ProduceFailedEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["consume"], fields: ConsumeEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["offset_out_of_range"], fields: OffsetOutOfRangeEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["group"], fields: GroupEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["log_truncation"], fields: LogTruncationEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["metadata", "alter_partition_error"], fields: TextEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["recovery"], fields: RecoveryEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["storage"], fields: StorageEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["alter_config"], fields: ErrorEvent) -> None: ...
    @overload
    def record(self, now_ms: int, kind: Literal["elect"], fields: ElectEvent) -> None: ...

    def record(self, now_ms: int, kind: str, fields: Mapping[str, object]) -> None:
        """Record an event of ``kind`` with its ``fields`` (the TypedDict of that kind, above): it feeds
        the digest (events are not kept; the timeline and the verdict are the run's readable record).
        ``fields`` must be deterministic (no sets, no object ids); its keys are hashed in their order."""
        self.recorded += 1
        lines = self.lines
        lines.append(f"{now_ms}|{kind}|{fields!r}\n")
        if len(lines) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        """Hash the pending ``lines``."""
        # Strings are not tracked by the GC (a buffer of tuples would be, and costs more than it saves).
        self._hash.update("".join(self.lines).encode())
        self.lines.clear()

    def digest(self) -> str:
        """``sha256:<hex>`` of everything fed so far (recording may continue afterwards)."""
        self.flush()
        return "sha256:" + self._hash.hexdigest()
