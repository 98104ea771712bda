"""A node that is only a KRaft replica (:class:`RaftNode`) and what its committed log looks like.

:class:`RaftNode` hosts a :class:`~kraftlog.raft.client.KafkaRaftClient` behind the node contract
(``deliver`` / ``tick`` / ``poll`` / ``next_deadline``) with a state machine that only keeps what committed:
the Raft tests, the invariant checks and the simulator's quorum tests drive it. The controller hosts the
same client the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from random import Random

from ..metadata.snapshot import SnapshotId
from ..protocol.node import Envelope, Message, NodeBase, earliest
from ..protocol.raft_records import RaftBatch
from ..storage.disk import Disk
from .client import KafkaRaftClient, RaftContext
from .config import QuorumConfig

__all__ = ["RaftNode"]

class RaftNode(NodeBase[RaftContext]):
    """A KRaft replica as a node: ``committed`` is its state machine (every data record that committed, in
    offset order, as (offset, record); a snapshot's records, loaded, as (-1, record)); ``committed_batches`` every
    batch handed to it. Arguments as
    :class:`~kraftlog.raft.client.KafkaRaftClient`'s; ``directory_id`` defaults to one drawn from ``rng``."""

    def __init__(self, node_id: int, disk: Disk, rng: Random, now_ms: int, *, cluster_id: str = "kraftlog",
                 config: QuorumConfig | None = None, static_voters: Sequence[int] | None = None,
                 directory_id: uuid.UUID | None = None, bootstrap_servers: Sequence[int] = (),
                 can_become_voter: bool = True) -> None:
        super().__init__(node_id)
        self.disk = disk
        if directory_id is None:
            directory_id = uuid.UUID(int=rng.getrandbits(128), version=4)
        self.raft = KafkaRaftClient(node_id=node_id, directory_id=directory_id, cluster_id=cluster_id,
                                    config=config or QuorumConfig(), disk=disk, rng=rng, now_ms=now_ms, channel=self,
                                    static_voters=static_voters, bootstrap_servers=bootstrap_servers,
                                    can_become_voter=can_become_voter)
        self.committed: list[tuple[int, object]] = []
        self.committed_batches: list[RaftBatch] = []
        #: the snapshots loaded (at start, or fetched from the leader), in order
        self.loaded_snapshots: list[SnapshotId] = []
        self.raft.poll(now_ms)
        self._collect()

    def append(self, records: Sequence[object], now_ms: int) -> int:
        """Append ``records`` as the leader (:meth:`KafkaRaftClient.append` in the current epoch)."""
        offset = self.raft.append(self.raft.epoch, records, now_ms)
        self.raft.poll(now_ms)
        return offset

    def _collect(self) -> None:
        snapshot = self.raft.take_snapshot()
        if snapshot is not None:  # the state machine becomes the snapshot's records (offset -1: before its end)
            self.loaded_snapshots.append(snapshot.snapshot_id)
            self.committed = [(-1, r) for r in snapshot.records]
        for batch in self.raft.take_committed():
            self.committed_batches.append(batch)
            if not batch.control:
                self.committed.extend((batch.base_offset + i, r) for i, r in enumerate(batch.records))

    # ------------------------------------------------------------------ node contract
    def on_request(self, now_ms: int, envelope: Envelope) -> None:
        self.raft.handle_request(now_ms, envelope)  # other APIs: no answer (a controller listener's way)
        self.raft.poll(now_ms)
        self._collect()

    def on_response(self, now_ms: int, context: RaftContext, message: Message) -> None:
        self.raft.handle_response(now_ms, context, message)
        self.raft.poll(now_ms)
        self._collect()

    def on_timeout(self, now_ms: int, context: RaftContext) -> None:
        self.raft.handle_timeout(now_ms, context)
        self.raft.poll(now_ms)
        self._collect()

    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)
        self.raft.poll(now_ms)
        self._collect()

    def next_deadline(self) -> int | None:
        return earliest(self._request_deadline(), self.raft.next_deadline())
