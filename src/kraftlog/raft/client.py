"""KRaft's Raft, sans-I/O (Kafka's ``KafkaRaftClient``): elections with KIP-996 pre-vote, pull replication with
divergence detection, the high watermark as commit, check-quorum, and KIP-853's dynamic voters
(:mod:`.reconfig`).

The client is a part of a node (the controller, a broker, or :class:`~kraftlog.raft.node.RaftNode` in
tests), not a node itself. Its host

* hands it every request of the quorum APIs (:data:`RAFT_REQUESTS`: Vote, BeginQuorumEpoch, EndQuorumEpoch,
  the metadata Fetch, DescribeQuorum, Add/Remove/UpdateRaftVoter) through :meth:`KafkaRaftClient.handle_request`,
* routes the answers to the client's own requests (their context is a :data:`RaftContext`, first element
  ``"raft"``) to :meth:`~KafkaRaftClient.handle_response` / :meth:`~KafkaRaftClient.handle_timeout`,
* calls :meth:`~KafkaRaftClient.poll` after each of those and whenever ``now_ms`` reaches
  :meth:`~KafkaRaftClient.next_deadline`,
* reads what committed with :meth:`~KafkaRaftClient.take_committed`, and, on the leader, appends with
  :meth:`~KafkaRaftClient.append` once :attr:`~KafkaRaftClient.ready_for_writes`.

Requests leave through the host's :class:`RaftChannel` (a :class:`~kraftlog.protocol.node.NodeBase` is one).
Addresses are node ids: the drivers map a voter's id to its endpoint, so endpoints are not carried here.

Where kraftlog differs from Kafka, said where it happens: every append is its own (atomic) batch; a
metadata log or quorum-state write that fails stops the client (``fatal_error``), as Kafka's raft thread
dies on an I/O error; an impossible message (a leader telling a replica it leads, a truncation below the
high watermark) stops it too, as Kafka's IllegalStateException does, and is what the invariant checks look
for.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from random import Random
from typing import Any, Protocol, TypeAlias

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Address, Envelope, Message
from ..protocol.raft_records import KRaftVersionRecord, LeaderChangeMessage, RaftBatch, RaftEndpoint
from ..storage.disk import Disk
from ..storage.metadata_log import MetadataLogConfig
from ..storage.snapshot_files import LoadedSnapshot
from .bootstrap import read_bootstrap
from .config import QuorumConfig
from .leader_state import LeaderState
from .log import METADATA_LOG_DIR, RaftLog
from .quorum_apis import QuorumApis, error_response
from .snapshots import SnapshotFetching, control_from_snapshot
from .states import (
    NEVER,
    Candidate,
    ElectionState,
    EpochElection,
    Follower,
    Prospective,
    QuorumStateStore,
    RaftSafetyError,
    Resigned,
    Unattached,
    random_election_timeout,
)
from .voters import ControlRecordState, ReplicaKey, VoterSet

__all__ = ["KafkaRaftClient", "RaftChannel", "RaftContext", "NotLeaderError", "RAFT_REQUESTS",
           "MAX_RECORDS_PER_BATCH", "RaftSafetyError"]

#: Kafka's limit of records in one batch of the metadata log (``QuorumController``'s ``MAX_RECORDS_PER_BATCH``).
MAX_RECORDS_PER_BATCH = 10_000

#: The context of the client's requests: ("raft", destination node id, the client's sequence number).
RaftContext: TypeAlias = tuple[str, int, int]

EpochState: TypeAlias = Unattached | Prospective | Candidate | Follower | Resigned | LeaderState


class RaftChannel(Protocol):
    """How the client sends (a :class:`~kraftlog.protocol.node.NodeBase` is one)."""

    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int, context: Any) -> int: ...

    def send_response(self, request: Envelope, message: Message) -> None: ...

    def cancel_request(self, correlation_id: int) -> None: ...


class NotLeaderError(Exception):
    """An append while not the ready leader of the given epoch (Kafka's ``NotLeaderException``)."""


@dataclass(slots=True)
class _Connection:
    """Kafka's ``RequestManager.ConnectionState``: one request in flight per destination, backoff after an error."""

    inflight_seq: int | None = None
    inflight_corr: int | None = None
    backoff_until: int = 0
    sent_ms: int = 0
    #: the last request to it timed out (Kafka's ``hasRequestTimedOut``): a follower asks a bootstrap server next
    timed_out: bool = False


class KafkaRaftClient(QuorumApis):
    """The Raft of one node. ``node_id`` and ``directory_id`` make its :class:`ReplicaKey` (the directory id of
    its metadata log, KIP-853); ``static_voters``: ``controller.quorum.voters`` ids (kraft.version 0), or None
    to read the voter set from the bootstrap checkpoint written by :func:`~kraftlog.raft.bootstrap.format_quorum`
    (kraft.version 1; none there: no voter known until the log says; a snapshot's voters replace both).
    ``bootstrap_servers``: ``controller.quorum.bootstrap.servers`` as node ids (default: the voters).
    ``can_become_voter``: a controller (True) or a broker (False). ``log_config``: the metadata log's segment,
    retention and cleaning settings. ``local_listeners``: a controller's own endpoints (its controller listener;
    none in the simulator, where a node id is an address): what it tells the leader when it joins or updates
    itself (AddRaftVoter, UpdateRaftVoter) and what it names as the leader in a Fetch answer's NodeEndpoints.
    Times are ms; ``rng`` draws the election jitter and bootstrap choices.

    Raises ValueError when ``quorum-state`` cannot be read; OSError when the disk cannot be read;
    :class:`~kraftlog.storage.metadata_log.MetadataLogLoadError` when the log cannot be loaded whole."""

    def __init__(self, *, node_id: int, directory_id: uuid.UUID, cluster_id: str, config: QuorumConfig,
                 disk: Disk, rng: Random, now_ms: int, channel: RaftChannel,
                 static_voters: Sequence[int] | None = None, bootstrap_servers: Sequence[int] = (),
                 can_become_voter: bool = True, directory: str = METADATA_LOG_DIR,
                 log_config: MetadataLogConfig | None = None, local_listeners: Sequence[RaftEndpoint] = ()) -> None:
        self.local = ReplicaKey(node_id, directory_id)
        self.local_listeners = tuple(local_listeners)
        #: endpoints other nodes' answers named (Fetch's NodeEndpoints): node id -> (host, port)
        self._learned_endpoints: dict[int, tuple[str, int]] = {}
        self.cluster_id = cluster_id
        self.config = config
        self.rng = rng
        self.channel = channel
        self.can_become_voter = can_become_voter
        self.log = RaftLog(disk, now_ms, directory, log_config)
        if static_voters is not None:
            self.control = ControlRecordState(VoterSet.static(static_voters), 0)
        else:
            base = read_bootstrap(disk, directory)
            self.control = ControlRecordState(base if base is not None else VoterSet({}), 1)
        snapshot = self.log.latest_snapshot()
        if snapshot is not None:
            self.control = control_from_snapshot(snapshot, self.control)
        for batch in self.log.batches():
            self.control.update(batch)
        #: the snapshot the host loads next (Kafka's new listener loads the latest snapshot)
        self._pending_snapshot = snapshot
        self._bootstrap = tuple(sorted(bootstrap_servers))
        self.store = QuorumStateStore(disk, directory)
        #: why the client stopped (a failed write, an impossible message); None while it runs
        self.fatal_error: str | None = None
        #: the committed offset (exclusive) as far as this replica knows it; never goes back
        self.high_watermark = 0
        #: the offset the host reads next (take_committed)
        self._delivered = snapshot.snapshot_id.end_offset if snapshot is not None else self.log.start_offset
        self._connections: dict[int, _Connection] = {}
        self._seq = 0
        #: parked Fetch requests (leader): (deadline ms, request envelope, replica key)
        self._parked: list[tuple[int, Envelope[m.MetadataFetchRequest], ReplicaKey]] = []
        #: appends waiting for the linger (leader): (records, first append ms)
        self._accumulator: list[tuple[tuple[object, ...], int]] = []
        self._next_offset = self.log.end_offset
        #: elections this replica won, and the epochs it led (the invariant checks read it)
        self.leader_epochs: list[int] = []
        from .reconfig import Reconfig  # a part of this client: KIP-853's handlers
        self.reconfig = Reconfig(self)
        self.snapshots = SnapshotFetching(self)
        self.state: EpochState = self._initial_state(now_ms)
        if self.is_only_voter() and not isinstance(self.state, Candidate):
            self._to_prospective(now_ms)

    # ================================================================== what the host reads
    @property
    def epoch(self) -> int:
        """The current epoch."""
        return self.state.epoch

    @property
    def leader_id(self) -> int | None:
        """The current epoch's leader, None when unknown."""
        return self.state.leader_id

    @property
    def is_leader(self) -> bool:
        """This replica leads the current epoch."""
        return isinstance(self.state, LeaderState)

    @property
    def ready_for_writes(self) -> bool:
        """The leader committed its LeaderChangeMessage (the high watermark passed its epoch start offset):
        what Kafka's QuorumController waits for before it becomes active."""
        state = self.state
        return (isinstance(state, LeaderState) and state.high_watermark is not None
                and state.high_watermark > state.epoch_start_offset and self.fatal_error is None)

    @property
    def next_offset(self) -> int:
        """The offset the next appended record will have (the log end offset plus the appends waiting for the
        linger)."""
        return self._next_offset

    @property
    def kraft_version(self) -> int:
        """The ``kraft.version`` in force."""
        return self.control.last_kraft_version()

    def voter_set(self) -> VoterSet:
        """The voter set in force (the latest appended)."""
        return self.control.last_voter_set()

    def endpoint_of(self, node_id: int) -> tuple[str, int] | None:
        """Where ``node_id`` listens as far as this replica knows (KIP-853): its own listener, a voter's first
        endpoint in the voter set in force, or what an answer's NodeEndpoints said; None when unknown (then the
        driver's static map, ``controller.quorum.voters`` or the bootstrap servers, is all there is)."""
        if node_id == self.local.id and self.local_listeners:
            return self.local_listeners[0].host, self.local_listeners[0].port
        voter = self.voter_set().voters.get(node_id)
        if voter is not None and voter.endpoints:
            return voter.endpoints[0].host, voter.endpoints[0].port
        return self._learned_endpoints.get(node_id)

    def learn_endpoints(self, endpoints: Sequence[m.RaftNodeEndpoint]) -> None:
        """Remember the endpoints an answer named (Fetch's NodeEndpoints)."""
        for e in endpoints:
            self._learned_endpoints[e.node_id] = (e.host, e.port)

    def leader_endpoints(self, leader_id: int | None) -> tuple[m.RaftNodeEndpoint, ...]:
        """The NodeEndpoints of an answer naming ``leader_id`` as the leader: its endpoint when known, else ()."""
        if leader_id is None:
            return ()
        found = self.endpoint_of(leader_id)
        return () if found is None else (m.RaftNodeEndpoint(leader_id, found[0], found[1]),)

    def is_voter(self) -> bool:
        """This replica is a voter of the voter set in force."""
        return self.voter_set().is_voter(self.local)

    def is_only_voter(self) -> bool:
        """This replica is the one voter."""
        return self.voter_set().is_only_voter(self.local)

    @property
    def log_start_offset(self) -> int:
        """The log start offset (above 0 once the log was cleaned below a snapshot, or restarted at one)."""
        return self.log.start_offset

    def log_batches(self) -> Sequence[RaftBatch]:
        """The log's batches, in offset order (for the invariant checks)."""
        return self.log.batches()

    def take_snapshot(self) -> LoadedSnapshot | None:
        """The snapshot the host must load before it reads on (module :mod:`.snapshots`): the latest one when the
        client started, or one installed from the leader; None otherwise. The host's image becomes the
        snapshot's; :meth:`take_committed` goes on from its end offset."""
        snapshot, self._pending_snapshot = self._pending_snapshot, None
        return snapshot

    def on_log_restarted(self, snapshot: LoadedSnapshot) -> None:
        """The log restarted at ``snapshot`` (installed from the leader): appends go on from its end, and the host
        loads it before anything after it."""
        self._next_offset = self.log.end_offset
        self._delivered = self.log.start_offset
        self._pending_snapshot = snapshot

    def take_committed(self) -> list[RaftBatch]:
        """The batches that committed since the last call (data and control), in offset order (none while a
        snapshot waits for :meth:`take_snapshot`)."""
        if self._delivered >= self.high_watermark or self._pending_snapshot is not None:
            return []
        out = []
        for batch in self.log.read(self._delivered, 1 << 62):
            if batch.next_offset > self.high_watermark:
                break
            out.append(batch)
            self._delivered = batch.next_offset
        return out

    # ================================================================== leader writes
    def append(self, epoch: int, records: Sequence[object], now_ms: int) -> int:
        """Queue ``records`` as one atomic batch of leader epoch ``epoch``; returns the offset its last record
        will have. The batch is written after ``controller.quorum.append.linger.ms`` and commits when the high
        watermark passes it. Raises :class:`NotLeaderError` unless this replica is the ready leader of
        ``epoch``; ValueError for no records or more than :data:`MAX_RECORDS_PER_BATCH`."""
        if not records:
            raise ValueError("an append needs at least one record")
        if len(records) > MAX_RECORDS_PER_BATCH:
            raise ValueError(f"{len(records)} records in one batch: at most {MAX_RECORDS_PER_BATCH}")
        if not self.ready_for_writes or self.epoch != epoch:
            raise NotLeaderError(f"not the ready leader of epoch {epoch} (epoch {self.epoch}, {self.state.name})")
        self._accumulator.append((tuple(records), now_ms))
        self._next_offset += len(records)
        return self._next_offset - 1

    def resign(self, epoch: int) -> None:
        """Kafka's ``RaftClient.resign``: the leader of ``epoch`` gives up at its next poll (nothing otherwise)."""
        if isinstance(self.state, LeaderState) and self.state.epoch == epoch:
            self.state.resign_requested = True

    # ================================================================== inbound
    def handle_request(self, now_ms: int, env: Envelope) -> bool:
        """Serve ``env`` if it is a quorum API (:data:`RAFT_REQUESTS`); False otherwise. Answers go out through
        the channel (a Fetch may wait)."""
        req = env.message
        handler = _REQUEST_HANDLERS.get(type(req))
        if handler is None:
            return False
        if self.fatal_error is not None:
            self.channel.send_response(env, error_response(req, Errors.BROKER_NOT_AVAILABLE))
            return True
        try:
            handler(self, now_ms, env)
        except OSError as exc:
            self._fail(f"the metadata log or quorum-state cannot be written: {exc}")
        except RaftSafetyError as exc:
            self._fail(str(exc))
        return True

    def handle_response(self, now_ms: int, context: RaftContext, message: Message) -> None:
        """The answer to one of the client's requests."""
        _, dst, seq = context
        conn = self._connections.get(dst)
        if self.fatal_error is not None or conn is None or conn.inflight_seq != seq:
            return  # no longer expected (Kafka's RequestManager.isResponseExpected)
        try:
            handled = _RESPONSE_HANDLERS[type(message)](self, now_ms, dst, message)
        except OSError as exc:
            self._fail(f"the metadata log or quorum-state cannot be written: {exc}")
            return
        except RaftSafetyError as exc:
            self._fail(str(exc))
            return
        conn = self._connections.get(dst)
        if conn is not None and conn.inflight_seq == seq:
            if handled:
                del self._connections[dst]
            else:
                conn.inflight_seq = conn.inflight_corr = None
                conn.backoff_until = now_ms + self.config.retry_backoff_ms

    def handle_timeout(self, now_ms: int, context: RaftContext) -> None:
        """One of the client's requests got no answer. Kafka's ``RequestManager``: a request that timed out leaves
        the destination ready at once; one that failed before (a refused or reset connection: Kafka's error
        response) backs it off for ``controller.quorum.retry.backoff.ms``."""
        _, dst, seq = context
        conn = self._connections.get(dst)
        if conn is not None and conn.inflight_seq == seq:
            if now_ms - conn.sent_ms >= self.config.request_timeout_ms:
                conn.inflight_seq = conn.inflight_corr = None  # ready at once, but remembered as timed out
                conn.backoff_until = now_ms
                conn.timed_out = True
            else:
                conn.inflight_seq = conn.inflight_corr = None
                conn.backoff_until = now_ms + self.config.retry_backoff_ms
            self.reconfig.on_request_failed(dst)

    # ================================================================== the poll loop
    def poll(self, now_ms: int) -> None:
        """Run the current state's timers and send what is due (Kafka's ``pollCurrentState``), and answer parked
        fetches whose wait is over."""
        if self.fatal_error is not None:
            return
        try:
            self._poll(now_ms)
        except OSError as exc:
            self._fail(f"the metadata log or quorum-state cannot be written: {exc}")
        except RaftSafetyError as exc:
            self._fail(str(exc))

    def _poll(self, now_ms: int) -> None:
        self._poll_states(now_ms)
        # destinations whose backoff ended (or whose request timed out) are ready again: forgotten, so that
        # next_deadline names only backoffs still running
        ended = [d for d, c in self._connections.items() if c.inflight_seq is None and c.backoff_until <= now_ms]
        for dst in ended:
            del self._connections[dst]

    def _poll_states(self, now_ms: int) -> None:
        if self._parked:
            due = [p for p in self._parked if p[0] <= now_ms]
            if due:
                self._parked = [p for p in self._parked if p[0] > now_ms]
                for _, env, key in due:
                    self.channel.send_response(env, self._fetch_response(now_ms, env.message, key))
        for _ in range(8):  # a transition may make the next state due at once (bounded)
            before = self.state
            state = self.state
            if isinstance(state, LeaderState):
                self._poll_leader(state, now_ms)
            elif isinstance(state, Candidate):
                self._poll_candidate(state, now_ms)
            elif isinstance(state, Prospective):
                self._poll_prospective(state, now_ms)
            elif isinstance(state, Follower):
                self._poll_follower(state, now_ms)
            elif isinstance(state, Unattached):
                self._poll_unattached(state, now_ms)
            else:
                self._poll_resigned(state, now_ms)
            if self.state is before:
                return

    def next_deadline(self) -> int | None:
        """When :meth:`poll` has something to do next (ms); None when stopped. Request timeouts are the host's."""
        if self.fatal_error is not None:
            return None
        times = [p[0] for p in self._parked]
        state = self.state
        if isinstance(state, LeaderState):
            if self._accumulator:
                times.append(self._accumulator[0][1] + self.config.append_linger_ms)
            times.append(state.begin_quorum_epoch_deadline)
            cq = state.next_check_quorum_deadline()
            if cq is not None:
                times.append(cq)
            if state.resign_requested:
                times.append(0)
            times.extend(self.reconfig.deadlines())
        elif isinstance(state, Follower):
            if self.is_voter():
                times.append(state.fetch_deadline)
            if not self._connections:  # else an answer or the end of a backoff wakes the client first
                times.append(state.update_voter_deadline)
        elif isinstance(state, (Unattached, Prospective, Candidate, Resigned)):
            if state.election_deadline < NEVER:
                times.append(state.election_deadline)
        # a destination backing off is retried when its backoff ends (poll drops the ended ones)
        times.extend(c.backoff_until for c in self._connections.values() if c.inflight_seq is None)
        return min(times) if times else None

    def _poll_leader(self, state: LeaderState, now_ms: int) -> None:
        if state.resign_requested or state.check_quorum_expired(now_ms):
            self._to_resigned(state, now_ms)
            return
        self.reconfig.poll_leader(state, now_ms)
        if self._accumulator and now_ms >= self._accumulator[0][1] + self.config.append_linger_ms:
            self._drain(state, now_ms)
        for key in state.begin_quorum_epoch_due(now_ms):
            self._maybe_send(now_ms, key.id, m.BeginQuorumEpochRequest(
                cluster_id=self.cluster_id, voter_id=key.id, voter_directory_id=key.directory_id,
                leader_id=self.local.id, leader_epoch=state.epoch))

    def _poll_candidate(self, state: Candidate, now_ms: int) -> None:
        if now_ms >= state.election_deadline:
            self._to_prospective(now_ms)
        else:
            self._send_votes(state, now_ms, pre_vote=False)

    def _poll_prospective(self, state: Prospective, now_ms: int) -> None:
        if now_ms >= state.election_deadline:
            self._prospective_lost(state, now_ms)
        else:
            self._send_votes(state, now_ms, pre_vote=True)

    def _poll_follower(self, state: Follower, now_ms: int) -> None:
        if self.is_voter():
            if now_ms >= state.fetch_deadline:
                self._to_prospective(now_ms)
                return
            if now_ms >= state.update_voter_deadline:
                if self.reconfig.maybe_send_update_voter(state, now_ms):
                    return
        elif now_ms >= state.update_voter_deadline and self.reconfig.maybe_send_join(state, now_ms):
            return
        self._fetch_from_best_node(state, now_ms)

    def _poll_unattached(self, state: Unattached, now_ms: int) -> None:
        if self.is_voter() and now_ms >= state.election_deadline:
            self._to_prospective(now_ms)
            return
        self._fetch_from_any_bootstrap(now_ms)

    def _poll_resigned(self, state: Resigned, now_ms: int) -> None:
        for voter in sorted(state.unacked):
            self._maybe_send(now_ms, voter, m.EndQuorumEpochRequest(
                cluster_id=self.cluster_id, leader_id=self.local.id, leader_epoch=state.epoch,
                preferred_candidates=tuple(m.QuorumCandidate(candidate_id=k.id, candidate_directory_id=k.directory_id)
                                           for k in state.preferred_successors)))
        if now_ms >= state.election_deadline:
            self._to_unattached(state.epoch + 1, None, now_ms)

    # ================================================================== sending
    def _maybe_send(self, now_ms: int, dst: int, message: Message) -> bool:
        """Send ``message`` to ``dst`` unless a request to it is in flight or it is backing off."""
        conn = self._connections.get(dst)
        if conn is None:
            conn = self._connections[dst] = _Connection()
        if conn.inflight_seq is not None or now_ms < conn.backoff_until:
            return False
        self._seq += 1
        conn.inflight_seq = self._seq
        conn.sent_ms = now_ms
        conn.timed_out = False
        context: RaftContext = ("raft", dst, self._seq)
        conn.inflight_corr = self.channel.send_request(dst, message, now_ms, self.config.request_timeout_ms,
                                                       context)
        return True

    def _reset_connections(self) -> None:
        """Forget every request in flight (Kafka's ``resetConnections`` on a transition): their answers are ignored."""
        for conn in self._connections.values():
            if conn.inflight_corr is not None:
                self.channel.cancel_request(conn.inflight_corr)
        self._connections.clear()

    def _send_votes(self, state: Prospective | Candidate, now_ms: int, *, pre_vote: bool) -> None:
        if state.election.is_vote_rejected():
            return
        voters = self.voter_set()
        end = self.log.end_offset_and_epoch()
        for voter in state.election.unrecorded_voters():
            if voter == self.local.id:
                continue
            target = voters.voters.get(voter)
            self._maybe_send(now_ms, voter, m.VoteRequest(
                cluster_id=self.cluster_id, voter_id=voter,
                voter_directory_id=target.voter_directory_id if target else None,
                replica_id=self.local.id, replica_epoch=state.epoch, replica_directory_id=self.local.directory_id,
                last_offset_epoch=end.epoch, last_offset=end.offset, pre_vote=pre_vote))

    def _fetch_request(self) -> m.MetadataFetchRequest:
        return m.MetadataFetchRequest(
            replica_id=self.local.id, replica_epoch=-1, fetch_offset=self.log.end_offset,
            max_wait_ms=self.config.fetch_max_wait_ms, cluster_id=self.cluster_id,
            current_leader_epoch=self.epoch, last_fetched_epoch=self.log.last_fetched_epoch,
            replica_directory_id=self.local.directory_id, high_watermark=self.high_watermark)

    def _fetch_from_best_node(self, state: Follower, now_ms: int) -> None:
        """Kafka's ``maybeSendFetchToBestNode``: fetch from the leader; while it backs off, ask any bootstrap
        server (to find out about a new leader)."""
        conn = self._connections.get(state.leader_id)
        if conn is not None and conn.inflight_seq is None and conn.timed_out:
            del self._connections[state.leader_id]  # Kafka: hasRequestTimedOut -> reset, then any bootstrap
            self._fetch_from_any_bootstrap(now_ms)
        elif conn is not None and conn.inflight_seq is None and now_ms < conn.backoff_until:
            self._fetch_from_any_bootstrap(now_ms)
        elif not any(c.inflight_seq is not None for c in self._connections.values()):
            self._maybe_send(now_ms, state.leader_id, self.snapshots.request(state) if state.fetching_snapshot
                             else self._fetch_request())

    def _bootstrap_servers(self) -> list[int]:
        servers = self._bootstrap or self.voter_set().voter_ids
        return [s for s in servers if s != self.local.id]

    def _fetch_from_any_bootstrap(self, now_ms: int) -> None:
        """Kafka's ``maybeSendFetchToAnyBootstrap``: one Fetch at a time, to a random ready bootstrap server."""
        if any(c.inflight_seq is not None for c in self._connections.values()):
            return
        ready = [s for s in self._bootstrap_servers()
                 if now_ms >= self._connections.get(s, _Connection()).backoff_until]
        if ready:
            self._maybe_send(now_ms, self.rng.choice(ready), self._fetch_request())

    # ================================================================== transitions
    def _initial_state(self, now_ms: int) -> EpochState:
        """Kafka's ``QuorumState.initialize``."""
        election = self.store.read() or ElectionState(0)
        log_epoch = self.log.last_fetched_epoch
        timeout = self._election_deadline(now_ms)
        state: EpochState
        if election.epoch < log_epoch:
            state = Unattached(log_epoch, None, None, timeout)
        elif election.leader_id == self.local.id:
            # Kafka's QuorumState.initialize: a restarted leader resigns, telling every other voter
            others = {v for v in self.voter_set().voter_ids if v != self.local.id}
            state = Resigned(election.epoch, self.local.id, others, (), timeout)
        elif election.voted_key is not None and election.voted_key.id == self.local.id and self.is_voter():
            state = Candidate(election.epoch, self.local, self._new_election(), timeout)
            state.election.record(self.local.id, True)
        elif election.leader_id >= 0 and election.leader_id in self.voter_set().voters:
            state = Follower(election.epoch, election.leader_id, election.voted_key,
                             now_ms + self.config.fetch_timeout_ms,
                             update_voter_deadline=now_ms + self.config.fetch_timeout_ms)
        else:
            state = Unattached(election.epoch, election.leader_id if election.leader_id >= 0 else None,
                               election.voted_key, timeout)
        self._persist(state, now_ms)
        return state

    def _election_deadline(self, now_ms: int) -> int:
        if not self.is_voter():
            return NEVER
        return now_ms + random_election_timeout(self.rng, self.config.election_timeout_ms)

    def _new_election(self) -> EpochElection:
        return EpochElection(frozenset(self.voter_set().voter_ids))

    def _persist(self, state: EpochState, now_ms: int) -> None:
        leader = state.leader_id if state.leader_id is not None else -1
        self.store.write(ElectionState(state.epoch, leader, state.voted_key), self.kraft_version,
                         self.voter_set().voter_ids, now_ms)

    def _set_state(self, state: EpochState, now_ms: int, *, durable: bool = True) -> None:
        if durable:
            self._persist(state, now_ms)  # before the move (Kafka's durableTransitionTo)
        old = self.state
        self.state = state
        self._reset_connections()
        if isinstance(old, LeaderState) and not isinstance(state, LeaderState):
            self._accumulator.clear()
            self._next_offset = self.log.end_offset
            self._fail_parked(Errors.NOT_LEADER_OR_FOLLOWER, now_ms)
            self.reconfig.on_leadership_lost()

    def _to_unattached(self, epoch: int, leader_id: int | None, now_ms: int) -> None:
        """Kafka's ``transitionToUnattached``: a higher epoch, or the same one from Prospective."""
        cur = self.state
        if epoch < cur.epoch or (epoch == cur.epoch and not isinstance(cur, Prospective)):
            raise RaftSafetyError(f"cannot become Unattached in epoch {epoch} from {cur.name} {cur.epoch}")
        if not self.is_voter():
            deadline = NEVER
        elif isinstance(cur, (Candidate, Unattached, Resigned)) or (
                isinstance(cur, Prospective) and not cur.election.is_vote_rejected()):
            deadline = cur.election_deadline
        else:
            deadline = self._election_deadline(now_ms)
        voted = cur.voted_key if epoch == cur.epoch else None
        self._set_state(Unattached(epoch, leader_id, voted, deadline), now_ms)

    def _to_follower(self, epoch: int, leader_id: int, now_ms: int) -> None:
        """Kafka's ``transitionToFollower`` (then ``onBecomeFollower``)."""
        cur = self.state
        if leader_id == self.local.id:
            raise RaftSafetyError(f"told to follow itself in epoch {epoch}")
        if epoch < cur.epoch or (epoch == cur.epoch and isinstance(cur, (Follower, LeaderState))):
            raise RaftSafetyError(f"cannot follow {leader_id} in epoch {epoch} from {cur.name} {cur.epoch}"
                                  f" (leader {cur.leader_id})")
        voted = cur.voted_key if epoch == cur.epoch else None
        # Kafka's FollowerState: the update-voter period starts with the fetch timeout (fetch first)
        self._set_state(Follower(epoch, leader_id, voted, now_ms + self.config.fetch_timeout_ms,
                                 update_voter_deadline=now_ms + self.config.fetch_timeout_ms), now_ms)

    def _to_prospective(self, now_ms: int) -> None:
        cur = self.state
        if not self.is_voter() or isinstance(cur, (LeaderState, Prospective)):
            raise RaftSafetyError(f"cannot become Prospective from {cur.name} (voter: {self.is_voter()})")
        leader = cur.leader_id if cur.leader_id != self.local.id else None  # from Resigned (the only voter)
        state = Prospective(cur.epoch, leader, cur.voted_key, self._new_election(),
                            self._election_deadline(now_ms))
        state.election.record(self.local.id, True)
        self._set_state(state, now_ms, durable=False)
        if state.election.is_vote_granted():
            self._to_candidate(now_ms)

    def _to_candidate(self, now_ms: int) -> None:
        cur = self.state
        if not isinstance(cur, Prospective) or not self.is_voter():
            raise RaftSafetyError(f"cannot become Candidate from {cur.name}")
        state = Candidate(cur.epoch + 1, self.local, self._new_election(), self._election_deadline(now_ms))
        state.election.record(self.local.id, True)
        self._set_state(state, now_ms)
        if state.election.is_vote_granted():
            self._to_leader(now_ms)

    def _to_leader(self, now_ms: int) -> None:
        """Kafka's ``onBecomeLeader``: the LeaderChangeMessage (and, at kraft.version 1, a VotersRecord if the log
        has none yet) written at once as the epoch's first batch."""
        cur = self.state
        if not isinstance(cur, Candidate) or not cur.election.is_vote_granted():
            raise RaftSafetyError(f"cannot become Leader from {cur.name} without a majority")
        start = self.log.end_offset
        state = LeaderState(self.local, cur.epoch, start, self.voter_set(), frozenset(cur.election.granted),
                            self.config.fetch_timeout_ms, now_ms)
        self._set_state(state, now_ms)
        self.leader_epochs.append(cur.epoch)
        voters = self.voter_set()
        granting = tuple(sorted(cur.election.granted))
        control: list[object] = [LeaderChangeMessage(self.local.id, voters.voter_ids, granting)]
        if self.kraft_version >= 1 and self.control.last_voter_set_offset() == -1:
            control += [KRaftVersionRecord(1), voters.to_record()]
        self._write(state, [(tuple(control), True)], now_ms)

    def _to_resigned(self, state: LeaderState, now_ms: int) -> None:
        successors = state.voters_by_descending_fetch_offset()
        self._set_state(Resigned(state.epoch, self.local.id, {k.id for k in successors}, successors,
                                 self._election_deadline(now_ms) if self.is_voter()
                                 else now_ms + self.config.election_timeout_ms), now_ms, durable=False)

    def _prospective_lost(self, state: Prospective, now_ms: int) -> None:
        """Kafka's ``prospectiveTransitionAfterElectionLoss``."""
        if state.leader_id is not None and state.leader_id != self.local.id:
            self._set_state(Follower(state.epoch, state.leader_id, state.voted_key,
                                     now_ms + self.config.fetch_timeout_ms,
                                     update_voter_deadline=now_ms + self.config.fetch_timeout_ms), now_ms)
        else:
            self._to_unattached(state.epoch, state.leader_id, now_ms)

    def _maybe_transition(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        """Kafka's ``maybeTransition``: follow what a request or response says about a newer epoch or the
        current epoch's leader."""
        cur = self.state
        if leader_id is not None and leader_id == self.local.id:
            if not isinstance(cur, LeaderState) and epoch >= cur.epoch:
                raise RaftSafetyError(f"told it leads epoch {epoch} while {cur.name} in {cur.epoch}")
        elif epoch == cur.epoch and leader_id is not None and cur.leader_id is not None \
                and leader_id != cur.leader_id:
            raise RaftSafetyError(f"two leaders of epoch {epoch}: {leader_id} and {cur.leader_id}")
        if epoch > cur.epoch:
            if leader_id is not None:
                self._to_follower(epoch, leader_id, now_ms)
            else:
                self._to_unattached(epoch, None, now_ms)
        elif leader_id is not None and leader_id != self.local.id and epoch == cur.epoch and cur.leader_id is None:
            self._to_follower(epoch, leader_id, now_ms)

    def _handle_common_response(self, error: int, leader_id: int | None, epoch: int, now_ms: int) -> bool | None:
        """Kafka's ``maybeHandleCommonResponse``: True/False when the response is dealt with here (False: back
        off), None when the API's own handling goes on."""
        cur = self.state
        if epoch < cur.epoch or error == Errors.UNKNOWN_LEADER_EPOCH:
            return True
        if epoch > cur.epoch or error in (Errors.FENCED_LEADER_EPOCH, Errors.NOT_LEADER_OR_FOLLOWER):
            self._maybe_transition(leader_id, epoch, now_ms)
            return True
        if leader_id is not None and cur.leader_id is None and leader_id != self.local.id:
            self._to_follower(epoch, leader_id, now_ms)
            return None if error == Errors.NONE else True
        if error == Errors.BROKER_NOT_AVAILABLE:
            return False
        if error == Errors.INVALID_VOTER_KEY:
            return True
        if error == Errors.INVALID_REQUEST:
            raise RaftSafetyError("a quorum request was answered INVALID_REQUEST")
        return None

    # ================================================================== the log
    def _write(self, state: LeaderState, batches: list[tuple[tuple[object, ...], bool]], now_ms: int) -> None:
        """Append ``batches`` ((records, control)) as the leader, flush, and advance the leader's end offset."""
        for records, control in batches:
            batch = self.log.append_as_leader(records, state.epoch, now_ms, control=control)
            self.control.update(batch)
            if batch.control:
                state.update_voters(self.voter_set())
        self.log.flush(now_ms)
        self._next_offset = max(self._next_offset, self.log.end_offset)
        if state.update_local(self.log.end_offset):
            self._on_leader_high_watermark(state, now_ms)
        self._complete_parked(now_ms)

    def _drain(self, state: LeaderState, now_ms: int) -> None:
        pending, self._accumulator = self._accumulator, []
        self._write(state, [(records, False) for records, _ in pending], now_ms)

    def _on_leader_high_watermark(self, state: LeaderState, now_ms: int) -> None:
        assert state.high_watermark is not None
        if state.high_watermark > self.high_watermark:
            self.high_watermark = state.high_watermark
        self.reconfig.on_high_watermark(state, now_ms)
        # every parked fetch learns the new high watermark at once (Kafka's fetchPurgatory.completeAll)
        parked, self._parked = self._parked, []
        for _, env, key in parked:
            self.channel.send_response(env, self._fetch_response(now_ms, env.message, key))

    def _complete_parked(self, now_ms: int) -> None:
        if not self._parked:
            return
        end = self.log.end_offset
        keep = []
        for entry in self._parked:
            if entry[1].message.fetch_offset < end:
                self.channel.send_response(entry[1], self._fetch_response(now_ms, entry[1].message, entry[2]))
            else:
                keep.append(entry)
        self._parked = keep

    def _fail_parked(self, error: int, now_ms: int) -> None:
        parked, self._parked = self._parked, []
        for _, env, _key in parked:
            self.channel.send_response(env, self._empty_fetch_response(error))

    def _fail(self, reason: str) -> None:
        """Stop the client: nothing more is sent or written."""
        self.fatal_error = reason
        self._accumulator.clear()
        self._parked.clear()
        self._reset_connections()

_REQUEST_HANDLERS: dict[type, Any] = {
    m.MetadataFetchRequest: KafkaRaftClient._handle_fetch,
    m.FetchSnapshotRequest: lambda c, now, env: c.snapshots.handle_fetch_snapshot(now, env),
    m.VoteRequest: KafkaRaftClient._handle_vote,
    m.BeginQuorumEpochRequest: KafkaRaftClient._handle_begin_quorum_epoch,
    m.EndQuorumEpochRequest: KafkaRaftClient._handle_end_quorum_epoch,
    m.DescribeQuorumRequest: KafkaRaftClient._handle_describe_quorum,
    m.AddRaftVoterRequest: lambda c, now, env: c.reconfig.handle_add_voter(now, env),
    m.RemoveRaftVoterRequest: lambda c, now, env: c.reconfig.handle_remove_voter(now, env),
    m.UpdateRaftVoterRequest: lambda c, now, env: c.reconfig.handle_update_voter(now, env),
}

_RESPONSE_HANDLERS: dict[type, Any] = {
    m.MetadataFetchResponse: KafkaRaftClient._handle_fetch_response,
    m.FetchSnapshotResponse: lambda c, now, src, resp: c.snapshots.handle_response(now, src, resp),
    m.VoteResponse: KafkaRaftClient._handle_vote_response,
    m.BeginQuorumEpochResponse: KafkaRaftClient._handle_begin_quorum_epoch_response,
    m.EndQuorumEpochResponse: KafkaRaftClient._handle_end_quorum_epoch_response,
    m.AddRaftVoterResponse: lambda c, now, src, resp: c.reconfig.handle_add_voter_response(now, src, resp),
    m.RemoveRaftVoterResponse: lambda c, now, src, resp: c.reconfig.handle_remove_voter_response(now, src, resp),
    m.UpdateRaftVoterResponse: lambda c, now, src, resp: c.reconfig.handle_update_voter_response(now, src, resp),
}

#: The request types the client serves.
RAFT_REQUESTS: tuple[type, ...] = tuple(_REQUEST_HANDLERS)
