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
"""

from __future__ import annotations

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


class RaftInvariantChecker:
    """Raft's invariants over replicas observed one at a time (:meth:`observe`), by node id. It keeps the
    leader of every epoch and the longest committed prefix any replica reported."""

    def __init__(self) -> None:
        self.leader_of: dict[int, object] = {}
        self.committed: list[RaftBatch] = []
        self._seen_leaders: set[tuple[int, object]] = set()
        self._checked_epochs: dict[object, int] = {}
        #: node id -> (the replica object's id, how many of its committed batches were checked)
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
        end = checked
        while end < len(batches) and batches[end].next_offset <= hwm:
            end += 1
        found += self._state_machine(node_id, batches, checked, end, now_ms)
        self._checked_batches[node_id] = (id(replica), end)
        if replica.is_leader and (replica.epoch, node_id) not in self._seen_leaders:
            self._seen_leaders.add((replica.epoch, node_id))
            mine = {(b.base_offset, b.epoch): b for b in batches}
            for batch in self.committed:
                if batch.epoch < replica.epoch and mine.get((batch.base_offset, batch.epoch)) != batch:
                    found.append((f"{LEADER_COMPLETENESS} {node_id}",
                                  f"t={now_ms}ms {LEADER_COMPLETENESS} {node_id}: leads epoch {replica.epoch} without "
                                  f"the batch committed at offset {batch.base_offset} (epoch {batch.epoch})"))
                    break
        return found

    def _state_machine(self, node_id: object, batches: Sequence[RaftBatch], start: int, end: int,
                       now_ms: int) -> list[Finding]:
        """The committed batches ``batches[start:end]`` of ``node_id`` against the longest committed prefix."""
        known = self.committed
        for i in range(start, min(end, len(known))):
            if batches[i] != known[i]:
                return [(f"{STATE_MACHINE_SAFETY} {node_id}",
                         f"t={now_ms}ms {STATE_MACHINE_SAFETY} {node_id}: committed the batch at offset "
                         f"{batches[i].base_offset} (epoch {batches[i].epoch}) where another replica committed "
                         f"the one at {known[i].base_offset} (epoch {known[i].epoch})")]
        if end > len(known):
            known.extend(batches[len(known):end])
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
    batch before it is the same in both."""
    by_base = {x.base_offset: (i, x) for i, x in enumerate(a)}
    last_a = last_b = -1
    for j, y in enumerate(b):
        hit = by_base.get(y.base_offset)
        if hit is not None and hit[1].epoch == y.epoch:
            last_a, last_b = hit[0], j
    if last_a < 0:
        return True
    return last_a == last_b and list(a[:last_a + 1]) == list(b[:last_b + 1])
