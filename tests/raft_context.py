"""One :class:`~kraftlog.raft.node.RaftNode` driven message by message, for the request-level Raft tests (Kafka's
``RaftClientTestContext``): the test hands it hand-built request and response Envelopes, moves its clock, and
reads what it sent with ``node.poll()``.

The context is built as Kafka's ``RaftClientTestContext.Builder`` builds one: a log of (epoch, records)
batches written before start, a ``quorum-state`` (:class:`~kraftlog.raft.states.ElectionState`) written before
start, a static voter set (``kraft.version`` 0, ``controller.quorum.voters``) or a bootstrap checkpoint naming
the voters with their directory ids (``kraft.version`` 1). Timeouts are Kafka's test context's: election
10 s, fetch 50 s, request 5 s, retry backoff 50 ms, election backoff max 100 ms, linger 0; the clock starts at
:data:`START_MS`, as Kafka's MockTime starts at the wall clock (``start_ms`` says otherwise).

Replica ``n``'s directory id is :func:`dir_id` ``(n)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from random import Random
from typing import Any

from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.node import Envelope, Message
from kraftlog.protocol.raft_records import RaftBatch, Voter, VotersRecord
from kraftlog.raft.bootstrap import format_quorum
from kraftlog.raft.client import KafkaRaftClient
from kraftlog.raft.config import QuorumConfig
from kraftlog.raft.log import METADATA_LOG_DIR, RaftLog
from kraftlog.raft.node import RaftNode
from kraftlog.raft.states import ElectionState, QuorumStateStore
from kraftlog.raft.voters import ReplicaKey
from kraftlog.storage.disk import SimDisk

CLUSTER_ID = "kraftlog-test-cluster"

#: Kafka's RaftClientTestContext timeouts (ms)
CONFIG = QuorumConfig(election_timeout_ms=10_000, fetch_timeout_ms=50_000, election_backoff_max_ms=100,
                      request_timeout_ms=5_000, retry_backoff_ms=50, append_linger_ms=0)


#: where the clock starts (ms): Kafka's MockTime starts at the wall clock, far from 0
START_MS = 1_000_000


def dir_id(node_id: int) -> uuid.UUID:
    """Replica ``node_id``'s directory id in these tests."""
    return uuid.UUID(int=(node_id + 1) << 64 | 0xABC)


def key(node_id: int, with_directory: bool = True) -> ReplicaKey:
    """Replica ``node_id``'s key (with its directory id, or none: a pre-KIP-853 sender)."""
    return ReplicaKey(node_id, dir_id(node_id) if with_directory else None)


class RaftContext:
    """A RaftNode ``local_id`` among ``voters`` (ids). ``log``: (epoch, records) batches written before start;
    ``election``: the quorum-state written before start; ``kraft_version`` 0 (static voters) or 1 (bootstrap
    checkpoint with directory ids)."""

    def __init__(self, local_id: int, voters: Iterable[int], *, kraft_version: int = 0,
                 election: ElectionState | None = None, log: Sequence[tuple[int, Sequence[object]]] = (),
                 config: QuorumConfig = CONFIG, seed: int = 0, can_become_voter: bool = True,
                 start_ms: int = START_MS) -> None:
        self.local_id = local_id
        self.local = key(local_id)
        self.voters = sorted(voters)
        self.kraft_version = kraft_version
        self.config = config
        self.now = start_ms
        self.disk = SimDisk()
        if log:
            pre = RaftLog(self.disk, start_ms)
            for epoch, records in log:
                pre.append_as_leader(list(records), epoch, start_ms)
            pre.flush(start_ms)
        if kraft_version == 1:
            format_quorum(self.disk, start_ms, VotersRecord(tuple(Voter(v, dir_id(v)) for v in self.voters)))
        if election is not None:
            QuorumStateStore(self.disk, METADATA_LOG_DIR).write(election, kraft_version, self.voters, start_ms)
        self.node = RaftNode(local_id, self.disk, Random(seed), start_ms, cluster_id=CLUSTER_ID, config=config,
                             static_voters=self.voters if kraft_version == 0 else None,
                             directory_id=dir_id(local_id), can_become_voter=can_become_voter)
        #: what the node sent and the test has not taken yet, oldest first
        self.pending: list[Envelope] = []
        self._corr = 10_000

    # ------------------------------------------------------------------ what the node is
    @property
    def raft(self) -> KafkaRaftClient:
        return self.node.raft

    @property
    def state(self) -> Any:
        return self.node.raft.state

    @property
    def epoch(self) -> int:
        return self.node.raft.epoch

    def stored(self) -> ElectionState | None:
        """The quorum-state file's election state."""
        return self.raft.store.read()

    # ------------------------------------------------------------------ the clock
    def advance(self, ms: int) -> None:
        """Move the clock ``ms`` on and let the node run its timers."""
        self.now += ms
        self.node.tick(self.now)

    def poll(self) -> None:
        """Let the node run at the current time (Kafka's ``client.poll()``)."""
        self.node.tick(self.now)

    # ------------------------------------------------------------------ what the node sent
    def _collect(self) -> None:
        self.pending.extend(self.node.poll())

    def requests(self, cls: type | None = None) -> list[Envelope]:
        """Take the requests the node sent (of ``cls`` only, when given), oldest first."""
        self._collect()
        taken = [e for e in self.pending if not e.is_response and (cls is None or isinstance(e.message, cls))]
        self.pending = [e for e in self.pending if e not in taken]
        return taken

    def responses(self, cls: type | None = None) -> list[Envelope]:
        """Take the responses the node sent (of ``cls`` only, when given), oldest first."""
        self._collect()
        taken = [e for e in self.pending if e.is_response and (cls is None or isinstance(e.message, cls))]
        self.pending = [e for e in self.pending if e not in taken]
        return taken

    def clear(self) -> None:
        """Forget whatever the node sent so far."""
        self._collect()
        self.pending.clear()

    # ------------------------------------------------------------------ delivering
    def request(self, src: int, message: Message) -> Message | None:
        """Deliver ``message`` from ``src``; the node's answer to it if it answered at once, else None."""
        self._corr += 1
        corr = self._corr
        self.node.deliver(self.now, Envelope(src, self.local_id, corr, message))
        self._collect()
        for env in self.pending:
            if env.is_response and env.correlation_id == corr and env.dst == src:
                self.pending.remove(env)
                return env.message
        return None

    def answer_of(self, src: int, corr: int) -> Message | None:
        """Take the (later) answer to a request ``src`` sent with correlation id ``corr``."""
        self._collect()
        for env in self.pending:
            if env.is_response and env.correlation_id == corr and env.dst == src:
                self.pending.remove(env)
                return env.message
        return None

    def park(self, src: int, message: Message) -> int:
        """Deliver ``message`` from ``src`` expecting no answer yet; returns its correlation id."""
        self._corr += 1
        self.node.deliver(self.now, Envelope(src, self.local_id, self._corr, message))
        return self._corr

    def respond(self, request: Envelope, message: Message) -> None:
        """Deliver ``message`` as the answer to the node's ``request``."""
        self.node.deliver(self.now, Envelope(request.dst, self.local_id, request.correlation_id, message, True))

    # ------------------------------------------------------------------ messages, as Kafka's context builds them
    def vote_request(self, src: ReplicaKey, epoch: int, last_epoch: int, last_offset: int, *, pre_vote: bool = False,
                     cluster_id: str | None = CLUSTER_ID, voter: ReplicaKey | None = None) -> m.VoteRequest:
        to = voter if voter is not None else self.local
        return m.VoteRequest(cluster_id=cluster_id, voter_id=to.id, voter_directory_id=to.directory_id,
                             replica_id=src.id, replica_epoch=epoch, replica_directory_id=src.directory_id,
                             last_offset_epoch=last_epoch, last_offset=last_offset, pre_vote=pre_vote)

    def fetch_request(self, src: ReplicaKey, epoch: int, fetch_offset: int, last_fetched_epoch: int,
                      max_wait_ms: int = 0, *, high_watermark: int = 1 << 62,
                      cluster_id: str | None = CLUSTER_ID) -> m.MetadataFetchRequest:
        """Kafka's ``fetchRequest``: the fetcher's high watermark defaults to Long.MAX_VALUE (never behind)."""
        return m.MetadataFetchRequest(replica_id=src.id, replica_epoch=-1, fetch_offset=fetch_offset,
                                      max_wait_ms=max_wait_ms, cluster_id=cluster_id, current_leader_epoch=epoch,
                                      last_fetched_epoch=last_fetched_epoch, replica_directory_id=src.directory_id,
                                      high_watermark=high_watermark)

    def begin_epoch_request(self, leader: int, epoch: int, *, cluster_id: str | None = CLUSTER_ID,
                            voter: ReplicaKey | None = None) -> m.BeginQuorumEpochRequest:
        to = voter if voter is not None else self.local
        return m.BeginQuorumEpochRequest(cluster_id=cluster_id, voter_id=to.id, voter_directory_id=to.directory_id,
                                         leader_id=leader, leader_epoch=epoch)

    def end_epoch_request(self, leader: int, epoch: int, preferred: Sequence[ReplicaKey], *,
                          cluster_id: str | None = CLUSTER_ID) -> m.EndQuorumEpochRequest:
        return m.EndQuorumEpochRequest(
            cluster_id=cluster_id, leader_id=leader, leader_epoch=epoch,
            preferred_candidates=tuple(m.QuorumCandidate(candidate_id=k.id, candidate_directory_id=k.directory_id)
                                       for k in preferred))

    @staticmethod
    def vote_response(granted: bool, epoch: int, leader: int = -1, error: int = Errors.NONE) -> m.VoteResponse:
        return m.VoteResponse(error_code=Errors.NONE, partition_error_code=error, leader_id=leader,
                              leader_epoch=epoch, vote_granted=granted)

    @staticmethod
    def fetch_response(epoch: int, leader: int, batches: Sequence[RaftBatch] = (), high_watermark: int = -1, *,
                       error: int = Errors.NONE, diverging: tuple[int, int] | None = None,
                       base_offset: int = 0) -> m.MetadataFetchResponse:
        """A leader's Fetch answer; ``diverging``: (epoch, end offset)."""
        return m.MetadataFetchResponse(
            error_code=error, high_watermark=high_watermark, base_offset=base_offset, current_leader_id=leader,
            current_leader_epoch=epoch, diverging_epoch=diverging[0] if diverging else -1,
            diverging_end_offset=diverging[1] if diverging else -1, log_start_offset=0, batches=tuple(batches))

    # ------------------------------------------------------------------ stories (Kafka's context helpers)
    def to_prospective(self) -> list[Envelope]:
        """Let the election timeout pass (2 x election.timeout.ms, as Kafka's tests sleep); returns the PreVote
        requests sent."""
        self.advance(2 * self.config.election_timeout_ms)
        return [e for e in self.requests(m.VoteRequest) if e.message.pre_vote]

    def to_candidate(self) -> list[Envelope]:
        """Kafka's ``unattachedToCandidate``: time out, grant every PreVote; returns the Vote requests sent."""
        epoch = self.epoch
        for req in self.to_prospective():
            self.respond(req, self.vote_response(True, epoch))
        votes = [e for e in self.requests(m.VoteRequest) if not e.message.pre_vote]
        assert self.state.name == "Candidate" and self.epoch == epoch + 1, self.state
        return votes

    def to_leader(self) -> None:
        """Kafka's ``unattachedToLeader``: a PreVote and a Vote round won, BeginQuorumEpoch answered."""
        epoch = self.epoch + 1
        for req in self.to_candidate():
            self.respond(req, self.vote_response(True, epoch))
        assert self.raft.is_leader and self.epoch == epoch, self.state
        for req in self.requests(m.BeginQuorumEpochRequest):
            self.respond(req, m.BeginQuorumEpochResponse(error_code=Errors.NONE, partition_error_code=Errors.NONE,
                                                         leader_id=self.local_id, leader_epoch=epoch))
        self.clear()

    def follower_fetch(self) -> Envelope:
        """The Fetch a follower sends its leader next; an UpdateRaftVoter sent before it (kraftlog sends one to
        every new leader at once at kraft.version 0) is answered NONE first."""
        for _ in range(3):
            for req in self.requests(m.UpdateRaftVoterRequest):
                self.respond(req, m.UpdateRaftVoterResponse(error_code=Errors.NONE, current_leader_id=int(req.dst),
                                                            current_leader_epoch=req.message.current_leader_epoch))
            fetches = self.requests(m.MetadataFetchRequest)
            if fetches:
                assert len(fetches) == 1, fetches
                return fetches[0]
            self.poll()
        raise AssertionError(f"no Fetch sent ({self.state})")
