"""A deterministic network of :class:`~kraftlog.raft.node.RaftNode` replicas for the Raft tests, and Raft's
safety invariants checked over it (Raft paper §5.2–5.4, Figure 3).

:class:`RaftNet` keeps a virtual clock and a queue of messages in flight, each delivered after a delay drawn
from its seeded rng (1–``max_delay_ms``); links can be cut (messages dropped), nodes crashed (their disk
loses what ``lose`` says: SimDisk's none/unflushed/all) and restarted, messages dropped at random
(``loss``), and the order of deliveries shuffled by the delays. A request to a node that is down fails at
once (``connection_failed``), as a refused TCP connection does.

:class:`RaftInvariants` checks after every step:

* **Election Safety** — at most one leader per epoch, ever;
* **Log Matching** — two logs with a batch of the same base offset and epoch are identical up to it;
* **Leader Completeness** — a leader's log holds every batch committed before its epoch;
* **State Machine Safety** — the committed batches of any two replicas are prefixes of one another;
* no replica stopped on an impossible message (``RaftSafetyError``).
"""

from __future__ import annotations

import heapq
import uuid
from random import Random

from kraftlog.protocol.node import Envelope
from kraftlog.protocol.raft_records import RaftBatch, Voter, VotersRecord
from kraftlog.raft.bootstrap import format_quorum
from kraftlog.raft.config import QuorumConfig
from kraftlog.raft.log import RaftLog
from kraftlog.raft.node import RaftNode
from kraftlog.storage.disk import SimDisk


class RaftNet:
    """``voters`` replicas (ids 1..n) of a static quorum (``kraft_version`` 0) or one formatted with every
    voter's directory id (``kraft_version`` 1), plus ``observers`` (ids 101..); seed → same history."""

    def __init__(self, voters: int = 3, *, seed: int = 0, kraft_version: int = 0, observers: int = 0,
                 config: QuorumConfig | None = None, max_delay_ms: int = 5, loss: float = 0.0,
                 auto_join: bool = False) -> None:
        self.rng = Random(seed)
        self.now = 0
        self.config = config or QuorumConfig(auto_join=auto_join)
        self.max_delay_ms = max_delay_ms
        self.loss = loss
        self.voter_ids = list(range(1, voters + 1))
        self.observer_ids = list(range(101, 101 + observers))
        self.kraft_version = kraft_version
        self.disks: dict[int, SimDisk] = {i: SimDisk() for i in self.voter_ids + self.observer_ids}
        self.directory_ids: dict[int, uuid.UUID] = {i: uuid.UUID(int=i << 64 | 1) for i in self.disks}
        if kraft_version == 1:
            record = VotersRecord(tuple(Voter(i, self.directory_ids[i]) for i in self.voter_ids))
            for i in self.voter_ids:
                format_quorum(self.disks[i], 0, record)
        self.nodes: dict[int, RaftNode | None] = {}
        self.cut: set[frozenset[int]] = set()
        self.queue: list[tuple[int, int, Envelope]] = []
        self._seq = 0
        self.invariants = RaftInvariants(self)
        for i in self.disks:
            self.start(i)

    # ------------------------------------------------------------------ nodes
    def start(self, node_id: int) -> RaftNode:
        """(Re)start ``node_id`` over its disk."""
        node = RaftNode(node_id, self.disks[node_id], Random(self.rng.getrandbits(32)), self.now,
                        config=self.config,
                        static_voters=self.voter_ids if self.kraft_version == 0 else None,
                        directory_id=self.directory_ids[node_id], bootstrap_servers=self.voter_ids,
                        can_become_voter=node_id in self.voter_ids)
        self.nodes[node_id] = node
        self._flush(node)
        return node

    def crash(self, node_id: int, lose: str = "none") -> None:
        """Kill ``node_id``; its disk keeps what ``lose`` says. With ``lose="all"`` at kraft.version 1 the node
        gets a new directory id and is formatted without initial voters (``--no-initial-controllers``)."""
        self.nodes[node_id] = None
        self.disks[node_id].crash(lose, self.now)
        if lose == "all" and self.kraft_version == 1:
            self.directory_ids[node_id] = uuid.UUID(int=self.rng.getrandbits(128))

    def node(self, node_id: int) -> RaftNode:
        node = self.nodes[node_id]
        assert node is not None, f"node {node_id} is down"
        return node

    def live(self) -> list[RaftNode]:
        return [n for _, n in sorted(self.nodes.items()) if n is not None]

    def leaders(self) -> list[RaftNode]:
        return [n for n in self.live() if n.raft.is_leader]

    def leader(self) -> RaftNode | None:
        """The live leader of the highest epoch, None when none."""
        leaders = sorted(self.leaders(), key=lambda n: n.raft.epoch)
        return leaders[-1] if leaders else None

    def partition(self, *groups: set[int]) -> None:
        """Cut every link between nodes of different ``groups`` (nodes in no group keep their links)."""
        for a_group in groups:
            for b_group in groups:
                if a_group is not b_group:
                    self.cut |= {frozenset((a, b)) for a in a_group for b in b_group}

    def heal(self) -> None:
        self.cut.clear()

    # ------------------------------------------------------------------ the network
    def _flush(self, node: RaftNode) -> None:
        for env in node.poll():
            self._seq += 1
            src, dst = int(env.src), int(env.dst)
            if frozenset((src, dst)) in self.cut or (self.loss and self.rng.random() < self.loss):
                continue
            heapq.heappush(self.queue, (self.now + self.rng.randint(1, self.max_delay_ms), self._seq, env))

    def step(self) -> bool:
        """Deliver the next message or run the next due timer; False when nothing is left to do."""
        due = [(d, i) for i, n in self.nodes.items() if n is not None and (d := n.next_deadline()) is not None]
        next_timer = min(due) if due else None
        if self.queue and (next_timer is None or self.queue[0][0] <= next_timer[0]):
            at, _, env = heapq.heappop(self.queue)
            self.now = max(self.now, at)
            dst = self.nodes.get(int(env.dst))
            src = self.nodes.get(int(env.src))
            if dst is None:
                if not env.is_response and src is not None:
                    src.connection_failed(self.now, env.correlation_id)
                    self._flush(src)
                return True
            if frozenset((int(env.src), int(env.dst))) in self.cut:
                return True
            dst.deliver(self.now, env)
            self._flush(dst)
        elif next_timer is not None:
            self.now = max(self.now, next_timer[0])
            node = self.node(next_timer[1])
            node.tick(self.now)
            self._flush(node)
        else:
            return False
        self.invariants.check()
        return True

    def run_for(self, ms: int) -> None:
        """Run until the clock passes now + ``ms`` (bounded: at most 200,000 steps)."""
        end = self.now + ms
        for _ in range(200_000):
            if not self.step() or self.now >= end:
                break
        self.now = max(self.now, end)

    def run_until(self, condition, timeout_ms: int = 30_000) -> bool:  # type: ignore[no-untyped-def]
        """Run until ``condition()`` holds (True) or ``timeout_ms`` passed (False)."""
        end = self.now + timeout_ms
        for _ in range(400_000):
            if condition():
                return True
            if not self.step() or self.now >= end:
                return bool(condition())
        return bool(condition())

    def commit(self, records: list[object], timeout_ms: int = 10_000) -> int:
        """Append ``records`` on the ready leader and run until they committed; returns the last offset. A leader
        that loses its epoch first may lose the append (it was never acknowledged): the records are appended
        again on the next leader, as a client retries. AssertionError when nothing commits in time."""
        end = self.now + timeout_ms
        while self.now < end:
            if not self.run_until(lambda: any(n.raft.ready_for_writes for n in self.live()), end - self.now):
                break
            leader = next(n for n in self.live() if n.raft.ready_for_writes)
            epoch = leader.raft.epoch
            offset = leader.append(records, self.now)
            self._flush(leader)

            def settled(node: RaftNode = leader, epoch: int = epoch, offset: int = offset) -> bool:
                return node.raft.high_watermark > offset or node.raft.epoch != epoch or self.nodes.get(
                    int(node.node_id)) is not node

            self.run_until(settled, max(1, end - self.now))
            if leader.raft.epoch == epoch and leader.raft.high_watermark > offset:
                return offset
        raise AssertionError(f"{records} did not commit within {timeout_ms} ms")


class RaftInvariants:
    """Raft's safety properties over a :class:`RaftNet`, checked online (see the module docstring)."""

    def __init__(self, net: RaftNet) -> None:
        self.net = net
        #: epoch -> the replica that led it
        self.leader_of: dict[int, int] = {}
        #: the committed batches, as the replicas reported them (the longest prefix seen)
        self.committed: list[RaftBatch] = []
        self._seen_leaders: set[tuple[int, int]] = set()
        #: set when a disk-loss story broke a property: the first violation, for tests that expect one
        self.violations: list[str] = []
        self.strict = True

    def _violation(self, what: str) -> None:
        self.violations.append(what)
        if self.strict:
            raise AssertionError(what)

    def check(self) -> None:
        for node in self.net.live():
            raft = node.raft
            if raft.fatal_error is not None:
                self._violation(f"node {node.node_id} stopped: {raft.fatal_error}")
            for epoch in raft.leader_epochs:
                other = self.leader_of.setdefault(epoch, int(node.node_id))
                if other != node.node_id:
                    self._violation(f"Election Safety: epoch {epoch} led by {other} and {node.node_id}")
            # State Machine Safety
            mine = node.committed_batches
            shorter, longer = (mine, self.committed) if len(mine) <= len(self.committed) else (self.committed, mine)
            if longer[:len(shorter)] != shorter:
                self._violation(f"State Machine Safety: node {node.node_id} committed a different history")
            elif len(mine) > len(self.committed):
                self.committed = list(mine)
            # Leader Completeness, once per new leadership
            if raft.is_leader and (raft.epoch, int(node.node_id)) not in self._seen_leaders:
                self._seen_leaders.add((raft.epoch, int(node.node_id)))
                log = raft.log.batches()
                for batch in self.committed:
                    if batch.epoch < raft.epoch and log[:len(self.committed)].count(batch) == 0:
                        self._violation(f"Leader Completeness: leader {node.node_id} of epoch {raft.epoch} "
                                        f"lacks committed batch at {batch.base_offset}")
                        break
        logs = {int(n.node_id): n.raft.log for n in self.net.live()}
        ids = sorted(logs)
        for i, a in enumerate(ids):
            for b in ids[i + 1:]:
                if not log_matching(logs[a], logs[b]):
                    self._violation(f"Log Matching: the logs of {a} and {b} agree on a batch but not before it")


def log_matching(a: RaftLog, b: RaftLog) -> bool:
    """Raft's Log Matching property for two logs: the last batch (base offset, epoch) they share is preceded
    by identical batches."""
    ab, bb = a.batches(), b.batches()
    n = min(len(ab), len(bb))
    last_same = -1
    for i in range(n):
        if ab[i].base_offset == bb[i].base_offset and ab[i].epoch == bb[i].epoch:
            last_same = i
    return all(ab[i] == bb[i] for i in range(last_same + 1))
