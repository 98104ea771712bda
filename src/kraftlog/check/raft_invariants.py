"""Raft's safety properties (the Raft paper's Figure 3), checked online over the replicas of a KRaft quorum:
controllers (voters) and brokers (observers) alike. Each finding is ``(key, message)`` as
:mod:`.invariants`' are; the key names the property and the replica.

* ``RaftElectionSafety`` — at most one leader per epoch, ever.
* ``RaftLogMatching`` — two logs holding a batch of the same base offset and epoch hold the same batches up
  to it (checked when asked, over all pairs: the end of a run).
* ``RaftLeaderCompleteness`` — a leader's log holds every batch committed before its epoch began
  (checked when a replica is first seen leading an epoch).
* ``RaftStateMachineSafety`` — what one replica applied as committed is a prefix of what another applied, or
  the other way round: committed metadata never diverges between voters or brokers.

Batches are compared by base offset: a replica's log may start above offset 0 (KIP-630: its prefix is in a
snapshot, of committed data only), so each property reads the batches a log holds, from its log start on.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Protocol

from ..protocol.raft_records import RaftBatch

__all__ = ["RaftReplica", "RaftInvariantChecker", "ELECTION_SAFETY", "LOG_MATCHING", "LEADER_COMPLETENESS",
           "STATE_MACHINE_SAFETY", "log_matching"]

ELECTION_SAFETY = "RaftElectionSafety"
LOG_MATCHING = "RaftLogMatching"
LEADER_COMPLETENESS = "RaftLeaderCompleteness"
STATE_MACHINE_SAFETY = "RaftStateMachineSafety"

Finding = tuple[str, str]


class RaftReplica(Protocol):
    """What the checker reads of a replica (a :class:`~kraftlog.raft.client.KafkaRaftClient` is one)."""

    @property
    def epoch(self) -> int: ...

    @property
    def is_leader(self) -> bool: ...

    @property
    def leader_epochs(self) -> list[int]: ...

    @property
    def high_watermark(self) -> int: ...

    def log_batches(self) -> Sequence[RaftBatch]: ...


def _log_start(replica: RaftReplica, batches: Sequence[RaftBatch]) -> int:
    """The replica's log start offset (a KafkaRaftClient's ``log_start_offset``; else its first batch's)."""
    start = getattr(replica, "log_start_offset", None)
    return int(start) if start is not None else (batches[0].base_offset if batches else 0)


class RaftInvariantChecker:
    """Raft's invariants over replicas observed one at a time (:meth:`observe`), by node id. It keeps the
    leader of every epoch and the longest committed prefix any replica reported."""

    def __init__(self) -> None:
        self.leader_of: dict[int, object] = {}
        #: every batch a replica reported committed, by base offset
        self.committed: dict[int, RaftBatch] = {}
        self._seen_leaders: set[tuple[int, object]] = set()
        self._checked_epochs: dict[object, int] = {}
        #: node id -> (the replica object's id, the offset up to which its committed batches were checked)
        self._checked_batches: dict[object, tuple[int | None, int]] = {}

    def observe(self, node_id: object, replica: RaftReplica, now_ms: int) -> list[Finding]:
        """Check one replica after an event of its: its elections, its committed prefix, and (once per
        epoch it leads) its log against what committed before."""
        found: list[Finding] = []
        seen = self._checked_epochs.get(node_id, 0)
        epochs = replica.leader_epochs
        for epoch in epochs[seen:]:
            other = self.leader_of.setdefault(epoch, node_id)
            if other != node_id:
                found.append((f"{ELECTION_SAFETY} epoch {epoch}",
                              f"t={now_ms}ms {ELECTION_SAFETY} epoch-{epoch}: two leaders, {other} and {node_id}"))
        self._checked_epochs[node_id] = len(epochs)
        batches = replica.log_batches()
        # only the batches this replica committed since the last look (a new process starts over)
        incarnation, checked = self._checked_batches.get(node_id, (None, 0))
        if incarnation != id(replica):
            checked = 0
        hwm = replica.high_watermark
        first = bisect_left([b.base_offset for b in batches], checked) if checked else 0
        end = first
        while end < len(batches) and batches[end].next_offset <= hwm:
            end += 1
        found += self._state_machine(node_id, batches[first:end], now_ms)
        self._checked_batches[node_id] = (id(replica), batches[end - 1].next_offset if end > first else checked)
        if replica.is_leader and (replica.epoch, node_id) not in self._seen_leaders:
            self._seen_leaders.add((replica.epoch, node_id))
            start = _log_start(replica, batches)
            mine = {(b.base_offset, b.epoch): b for b in batches}
            for base in sorted(self.committed):
                batch = self.committed[base]
                if base >= start and batch.epoch < replica.epoch \
                        and mine.get((batch.base_offset, batch.epoch)) != batch:
                    found.append((f"{LEADER_COMPLETENESS} {node_id}",
                                  f"t={now_ms}ms {LEADER_COMPLETENESS} {node_id}: leads epoch {replica.epoch} without "
                                  f"the batch committed at offset {batch.base_offset} (epoch {batch.epoch})"))
                    break
        return found

    def _state_machine(self, node_id: object, batches: Sequence[RaftBatch], now_ms: int) -> list[Finding]:
        """``node_id``'s newly committed ``batches`` against what any replica committed at the same offsets."""
        known = self.committed
        for batch in batches:
            other = known.setdefault(batch.base_offset, batch)
            if other != batch:
                return [(f"{STATE_MACHINE_SAFETY} {node_id}",
                         f"t={now_ms}ms {STATE_MACHINE_SAFETY} {node_id}: committed the batch at offset "
                         f"{batch.base_offset} (epoch {batch.epoch}) where another replica committed "
                         f"the one at {other.base_offset} (epoch {other.epoch})")]
        return []

    def log_matching(self, logs: Iterable[tuple[object, Sequence[RaftBatch]]], now_ms: int) -> list[Finding]:
        """``RaftLogMatching`` over every pair of ``logs`` ((node id, batches))."""
        items = list(logs)
        found: list[Finding] = []
        for i, (a, la) in enumerate(items):
            for b, lb in items[i + 1:]:
                if not log_matching(la, lb):
                    found.append((f"{LOG_MATCHING} {a} {b}",
                                  f"t={now_ms}ms {LOG_MATCHING} {a}-{b}: the logs of {a} and {b} share a batch but "
                                  "differ before it"))
        return found


def log_matching(a: Sequence[RaftBatch], b: Sequence[RaftBatch]) -> bool:
    """Raft's Log Matching for two logs: if both hold a batch at the same base offset with the same epoch, every
    batch before it that both logs still hold (from the later of their starts) is the same in both."""
    by_base = {x.base_offset: x for x in a}
    match = -1
    for y in b:
        hit = by_base.get(y.base_offset)
        if hit is not None and hit.epoch == y.epoch:
            match = y.base_offset
    if match < 0:
        return True
    low = max(a[0].base_offset, b[0].base_offset)
    return [x for x in a if low <= x.base_offset <= match] == [y for y in b if low <= y.base_offset <= match]
