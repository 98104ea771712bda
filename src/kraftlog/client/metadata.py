"""Client-side cluster metadata (Kafka's ``Metadata`` / ``MetadataCache`` in the clients).

A client asks one broker for Metadata and learns, per partition, the leader and the leader epoch.
Which broker it asks is the client's choice (``NetworkClient.least_loaded_node``: Kafka's
``leastLoadedNode``, which skips brokers in reconnect backoff); ``nodes()`` lists the candidates.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from ..protocol import messages as m
from ..protocol.errors import Errors


@dataclass(slots=True)
class PartitionInfo:
    """Leader id (-1 none), leader epoch and topic id of a partition as the client last learned them."""

    leader: int
    leader_epoch: int
    topic_id: uuid.UUID


class ClientMetadata:
    """Metadata kept by a client. ``bootstrap``: broker ids to ask first."""

    def __init__(self, bootstrap: list[int]) -> None:
        self.bootstrap = list(bootstrap)
        self.brokers: list[int] = list(bootstrap)
        self.partitions: dict[tuple[str, int], PartitionInfo] = {}
        self.inflight = False
        self.stale = True
        self.next_refresh_ms = 0

    def nodes(self) -> list[int]:
        """The brokers a request may go to: those of the last Metadata response (sorted ids), else the
        bootstrap list (Kafka's ``metadataUpdater.fetchNodes``)."""
        return self.brokers or self.bootstrap

    def request(self, topics: list[str] | None) -> m.MetadataRequest:
        self.inflight = True
        return m.MetadataRequest(tuple(topics) if topics is not None else None)

    def update(self, resp: m.MetadataResponse) -> list[tuple[str, int]]:
        """Take a Metadata response; returns partitions whose leader epoch increased."""
        self.inflight = False
        bumped: list[tuple[str, int]] = []
        if resp.brokers:
            self.brokers = sorted(b.node_id for b in resp.brokers)
        complete = True
        for t in resp.topics:
            if t.error_code != Errors.NONE:
                complete = False
                continue
            for p in t.partitions:
                key = (t.name, p.partition_index)
                old = self.partitions.get(key)
                if old is not None and p.leader_epoch < old.leader_epoch:
                    continue  # stale metadata from a lagging broker (KIP-320: ignore older epochs)
                if old is None or p.leader_epoch > old.leader_epoch:
                    bumped.append(key)
                self.partitions[key] = PartitionInfo(p.leader_id, p.leader_epoch, t.topic_id)
                if p.leader_id < 0:
                    complete = False
        self.stale = not complete
        return bumped

    def failed(self, now_ms: int, backoff_ms: int) -> None:
        self.inflight = False
        self.stale = True
        self.next_refresh_ms = now_ms + backoff_ms

    def leader(self, key: tuple[str, int]) -> PartitionInfo | None:
        info = self.partitions.get(key)
        return info if info is not None and info.leader >= 0 else None
