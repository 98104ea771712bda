"""The election and Fetch APIs of :class:`~kraftlog.raft.client.KafkaRaftClient`, a part of it (Kafka's handlers
in ``KafkaRaftClient``): Vote (with KIP-996's pre-vote), BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum, the
metadata Fetch (leader and follower sides), and the error answers of every quorum API (``RaftUtil.errorResponse``)."""

from __future__ import annotations

import uuid
from typing import Any

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Envelope, Message
from .config import QuorumConfig
from .leader_state import LeaderState
from .log import OffsetAndEpoch, RaftLog
from .states import Candidate, Follower, Prospective, RaftSafetyError, Resigned, Unattached
from .voters import ControlRecordState, ReplicaKey

__all__ = ["QuorumApis", "error_response", "MAX_RECORDS_PER_FETCH"]

#: How many records one Fetch response carries at most (at least one batch).
MAX_RECORDS_PER_FETCH = 10_000


class QuorumApis:
    """The election request and response handlers; the client's state and transitions are its own."""

    cluster_id: str
    local: ReplicaKey
    log: RaftLog
    channel: Any
    config: QuorumConfig
    state: Any
    high_watermark: int
    control: ControlRecordState
    can_become_voter: bool
    snapshots: Any
    _parked: list[tuple[int, Envelope[m.MetadataFetchRequest], ReplicaKey]]

    def _on_leader_high_watermark(self, state: LeaderState, now_ms: int) -> None:
        raise NotImplementedError

    def is_voter(self) -> bool:
        raise NotImplementedError

    @property
    def epoch(self) -> int:
        raise NotImplementedError

    def _to_unattached(self, epoch: int, leader_id: int | None, now_ms: int) -> None:
        raise NotImplementedError

    def _to_candidate(self, now_ms: int) -> None:
        raise NotImplementedError

    def _to_leader(self, now_ms: int) -> None:
        raise NotImplementedError

    def _prospective_lost(self, state: Prospective, now_ms: int) -> None:
        raise NotImplementedError

    def _persist(self, state: Any, now_ms: int) -> None:
        raise NotImplementedError

    def _election_deadline(self, now_ms: int) -> int:
        raise NotImplementedError

    def _maybe_transition(self, leader_id: int | None, epoch: int, now_ms: int) -> None:
        raise NotImplementedError

    def _handle_common_response(self, error: int, leader_id: int | None, epoch: int, now_ms: int) -> bool | None:
        raise NotImplementedError

    def learn_endpoints(self, endpoints: Any) -> None:
        raise NotImplementedError

    def leader_endpoints(self, leader_id: int | None) -> tuple[m.RaftNodeEndpoint, ...]:
        raise NotImplementedError

    # ================================================================== Vote
    def _handle_vote(self, now_ms: int, env: Envelope[m.VoteRequest]) -> None:
        """Kafka's ``handleVoteRequest``."""
        req = env.message
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self.channel.send_response(env, _vote_response(self, Errors.INCONSISTENT_CLUSTER_ID, False, top=True))
            return
        illegal = req.last_offset_epoch > req.replica_epoch if req.pre_vote \
            else req.last_offset_epoch >= req.replica_epoch
        if req.last_offset < 0 or req.last_offset_epoch < 0 or illegal:
            self.channel.send_response(env, _vote_response(self, Errors.INVALID_REQUEST, False))
            return
        if req.replica_epoch < self.epoch:
            self.channel.send_response(env, _vote_response(self, Errors.FENCED_LEADER_EPOCH, False))
            return
        if req.replica_id < 0:
            self.channel.send_response(env, _vote_response(self, Errors.INVALID_REQUEST, False))
            return
        if req.replica_epoch > self.epoch:
            self._to_unattached(req.replica_epoch, None, now_ms)
        if not self._is_valid_voter_key(req.voter_id, req.voter_directory_id):
            self.channel.send_response(env, _vote_response(self, Errors.INVALID_VOTER_KEY, False))
            return
        candidate = ReplicaKey(req.replica_id, req.replica_directory_id)
        up_to_date = OffsetAndEpoch(req.last_offset_epoch, req.last_offset) >= self.log.end_offset_and_epoch()
        granted = self.state.can_grant_vote(candidate, up_to_date, req.pre_vote)
        state = self.state
        if granted and not req.pre_vote and isinstance(state, (Unattached, Prospective)) and state.voted_key is None:
            state.voted_key = candidate
            if isinstance(state, Unattached):
                state.election_deadline = self._election_deadline(now_ms)
            self._persist(state, now_ms)
        self.channel.send_response(env, _vote_response(self, Errors.NONE, granted))

    def _is_valid_voter_key(self, voter_id: int, directory_id: uuid.UUID | None) -> bool:
        """Kafka's ``isValidVoterKey``: a request meant for this replica (id, and directory when given)."""
        if voter_id < 0:
            return True
        return voter_id == self.local.id and (directory_id is None or directory_id == self.local.directory_id)

    def _handle_vote_response(self, now_ms: int, src: int, resp: m.VoteResponse) -> bool:
        """Kafka's ``handleVoteResponse``."""
        if resp.error_code != Errors.NONE:
            if resp.error_code == Errors.UNSUPPORTED_VERSION and isinstance(self.state, Prospective):
                self._to_candidate(now_ms)
                return True
            return False
        leader = resp.leader_id if resp.leader_id >= 0 else None
        handled = self._handle_common_response(resp.partition_error_code, leader, resp.leader_epoch, now_ms)
        if handled is not None:
            return handled
        if resp.partition_error_code != Errors.NONE:
            return False
        state = self.state
        if isinstance(state, (Prospective, Candidate)):
            state.election.record(src, resp.vote_granted)
            if state.election.is_vote_granted():
                if isinstance(state, Prospective):
                    self._to_candidate(now_ms)
                else:
                    self._to_leader(now_ms)
            elif state.election.is_vote_rejected() and isinstance(state, Prospective):
                self._prospective_lost(state, now_ms)
        return True

    # ================================================================== BeginQuorumEpoch / EndQuorumEpoch
    def _handle_begin_quorum_epoch(self, now_ms: int, env: Envelope[m.BeginQuorumEpochRequest]) -> None:
        """Kafka's ``handleBeginQuorumEpochRequest``."""
        req = env.message
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self.channel.send_response(env, _epoch_response(self, m.BeginQuorumEpochResponse,
                                                            Errors.INCONSISTENT_CLUSTER_ID, top=True))
            return
        error = self._validate_voter_only(req.leader_id, req.leader_epoch)
        if error is None:
            self._maybe_transition(req.leader_id, req.leader_epoch, now_ms)
            if not self._is_valid_voter_key(req.voter_id, req.voter_directory_id):
                error = Errors.INVALID_VOTER_KEY
        self.channel.send_response(env, _epoch_response(self, m.BeginQuorumEpochResponse, error or Errors.NONE))

    def _epoch_response_handled(self, now_ms: int,
                                resp: m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse) -> bool | None:
        """What BeginQuorumEpoch and EndQuorumEpoch answers share (Kafka's handlers): a top-level or partition
        error backs off, a newer epoch or leader is followed (True/False: dealt with); None: the answer is for
        this epoch and its API's own handling goes on."""
        if resp.error_code != Errors.NONE:
            return False
        leader = resp.leader_id if resp.leader_id >= 0 else None
        handled = self._handle_common_response(resp.partition_error_code, leader, resp.leader_epoch, now_ms)
        if handled is not None:
            return handled
        return False if resp.partition_error_code != Errors.NONE else None

    def _handle_begin_quorum_epoch_response(self, now_ms: int, src: int, resp: m.BeginQuorumEpochResponse) -> bool:
        handled = self._epoch_response_handled(now_ms, resp)
        if handled is not None:
            return handled
        if isinstance(self.state, LeaderState):
            self.state.add_acknowledgement_from(src)
        return True

    def _handle_end_quorum_epoch(self, now_ms: int, env: Envelope[m.EndQuorumEpochRequest]) -> None:
        """Kafka's ``handleEndQuorumEpochRequest``: a follower of the resigning leader shortens its fetch timeout
        by its place among the preferred candidates (the first starts an election at once)."""
        req = env.message
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self.channel.send_response(env, _epoch_response(self, m.EndQuorumEpochResponse,
                                                            Errors.INCONSISTENT_CLUSTER_ID, top=True))
            return
        error = self._validate_voter_only(req.leader_id, req.leader_epoch)
        if error is None:
            self._maybe_transition(req.leader_id, req.leader_epoch, now_ms)
            state = self.state
            if isinstance(state, Follower) and state.leader_id == req.leader_id:
                position = 0
                for cand in req.preferred_candidates:
                    if cand.candidate_id == self.local.id and cand.candidate_directory_id in (
                            None, self.local.directory_id):
                        break
                    position += 1
                state.fetch_deadline = now_ms + self._end_epoch_backoff(position, len(req.preferred_candidates))
        self.channel.send_response(env, _epoch_response(self, m.EndQuorumEpochResponse, error or Errors.NONE))

    def _end_epoch_backoff(self, position: int, total: int) -> int:
        """Kafka's ``strictExponentialElectionBackoffMs``."""
        if position == 0:
            return 0
        max_ms = self.config.election_backoff_max_ms
        if position < 0 or position >= total:
            return max_ms
        base = max_ms >> (total - 1)
        return min(max_ms, base << (position - 1))

    def _handle_end_quorum_epoch_response(self, now_ms: int, src: int, resp: m.EndQuorumEpochResponse) -> bool:
        handled = self._epoch_response_handled(now_ms, resp)
        if handled is not None:
            return handled
        if isinstance(self.state, Resigned):
            self.state.unacked.discard(src)
        return True

    def _validate_voter_only(self, remote_id: int, epoch: int) -> int | None:
        """Kafka's ``validateVoterOnlyRequest``."""
        if epoch < self.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if remote_id < 0:
            return Errors.INVALID_REQUEST
        return None

    # ================================================================== DescribeQuorum
    def _handle_describe_quorum(self, now_ms: int, env: Envelope[m.DescribeQuorumRequest]) -> None:
        """Kafka's ``handleDescribeQuorumRequest``: the leader's view of every voter and observer."""
        state = self.state
        if not isinstance(state, LeaderState):
            self.channel.send_response(env, error_response(env.message, Errors.NOT_LEADER_OR_FOLLOWER))
            return

        def describe(rs: Any) -> m.QuorumReplicaState:
            local = rs.key.id == self.local.id
            return m.QuorumReplicaState(
                replica_id=rs.key.id, replica_directory_id=rs.key.directory_id,
                log_end_offset=rs.end_offset if rs.end_offset is not None else -1,
                last_fetch_timestamp=now_ms if local else rs.last_fetch_ms,
                last_caught_up_timestamp=now_ms if local else rs.last_caught_up_ms)

        self.channel.send_response(env, m.DescribeQuorumResponse(
            error_code=Errors.NONE, error_message=None, partition_error_code=Errors.NONE,
            partition_error_message=None, leader_id=self.local.id, leader_epoch=state.epoch,
            high_watermark=state.high_watermark if state.high_watermark is not None else -1,
            current_voters=tuple(describe(state.voter_states[v]) for v in sorted(state.voter_states)),
            observers=tuple(describe(state.observer_states[k]) for k in sorted(state.observer_states))))

    # ================================================================== Fetch (follower side)
    def _handle_fetch_response(self, now_ms: int, src: int, resp: m.MetadataFetchResponse) -> bool:
        """Kafka's ``handleFetchResponse``: truncate on divergence, else append and take the leader's HWM."""
        if resp.error_code == Errors.INCONSISTENT_CLUSTER_ID or resp.error_code == Errors.BROKER_NOT_AVAILABLE:
            return False
        leader = resp.current_leader_id if resp.current_leader_id >= 0 else None
        if resp.node_endpoints:  # where the leader listens (KIP-853): how an observer of bootstrap servers finds it
            self.learn_endpoints(resp.node_endpoints)
        handled = self._handle_common_response(resp.error_code, leader, resp.current_leader_epoch, now_ms)
        if handled is not None:
            return handled
        state = self.state
        if not isinstance(state, Follower) or resp.error_code != Errors.NONE:
            return False
        if resp.diverging_epoch >= 0:
            diverging = OffsetAndEpoch(resp.diverging_epoch, resp.diverging_end_offset)
            if diverging.offset < self.high_watermark:
                raise RaftSafetyError(f"the leader asked for a truncation to {diverging.offset}, below the high "
                                      f"watermark {self.high_watermark}")
            end = self.log.truncate_to_end_offset(diverging, now_ms)
            self.log.flush(now_ms)
            self.control.truncate(end)
        elif resp.snapshot_end_offset >= 0 or resp.snapshot_epoch >= 0:
            # the leader no longer holds this position: fetch its snapshot (Kafka's setFetchingSnapshot)
            if not self.snapshots.start(state, resp.snapshot_end_offset, resp.snapshot_epoch):
                return False
        else:
            appended = self.log.append_as_follower(resp.batches, now_ms, max_epoch=self.epoch)
            for batch in appended:
                self.control.update(batch)
            if appended and (self.is_voter() or self.can_become_voter):
                self.log.flush(now_ms)  # a voter acknowledges only what it flushed (its next fetch offset)
            self._update_follower_high_watermark(state, resp.high_watermark)
        state.fetch_deadline = now_ms + self.config.fetch_timeout_ms
        state.has_fetched_from_leader = True
        return True

    def _update_follower_high_watermark(self, state: Follower, leader_hwm: int) -> None:
        if leader_hwm < 0:
            return
        new = min(leader_hwm, self.log.end_offset)
        if new > self.high_watermark:
            self.high_watermark = new
        state.high_watermark = self.high_watermark

    # ================================================================== Fetch (leader side)
    def _empty_fetch_response(self, error: int, *, diverging: OffsetAndEpoch | None = None) -> m.MetadataFetchResponse:
        state = self.state
        hwm = state.high_watermark if isinstance(state, LeaderState) and state.high_watermark is not None else -1
        return m.MetadataFetchResponse(
            error_code=error, high_watermark=hwm, base_offset=self.log.end_offset,
            current_leader_id=state.leader_id if state.leader_id is not None else -1,
            current_leader_epoch=state.epoch,
            diverging_epoch=diverging.epoch if diverging else -1,
            diverging_end_offset=diverging.offset if diverging else -1, log_start_offset=self.log.start_offset,
            node_endpoints=self.leader_endpoints(state.leader_id))

    def _fetch_response(self, now_ms: int, req: m.MetadataFetchRequest, key: ReplicaKey) -> m.MetadataFetchResponse:
        """Kafka's ``tryCompleteFetchRequest``."""
        state = self.state
        if req.current_leader_epoch < state.epoch:
            return self._empty_fetch_response(Errors.FENCED_LEADER_EPOCH)
        if req.current_leader_epoch > state.epoch:
            return self._empty_fetch_response(Errors.UNKNOWN_LEADER_EPOCH)
        if not isinstance(state, LeaderState):
            return self._empty_fetch_response(Errors.NOT_LEADER_OR_FOLLOWER)
        latest = self.log.files.latest
        valid = self.log.validate_offset_and_epoch(req.fetch_offset, req.last_fetched_epoch) \
            if req.fetch_offset != 0 or latest is None else None  # Kafka: an empty follower gets the snapshot
        if valid is None or valid.snapshot is not None:
            sid = valid.snapshot if valid is not None and valid.snapshot is not None else latest
            assert sid is not None
            response = self._empty_fetch_response(Errors.NONE)
            response.snapshot_end_offset, response.snapshot_epoch = sid.end_offset, sid.epoch
            return response
        if valid.diverging is not None:
            return self._empty_fetch_response(Errors.NONE, diverging=valid.diverging)
        if key.id >= 0 and key.id != self.local.id and state.update_replica(key, now_ms, req.fetch_offset,
                                                                             self.log.end_offset):
            self._on_leader_high_watermark(state, now_ms)
        batches = self.log.read(req.fetch_offset, MAX_RECORDS_PER_FETCH) if req.fetch_offset < self.log.end_offset \
            else ()
        response = self._empty_fetch_response(Errors.NONE)
        response.batches = batches
        response.base_offset = batches[0].base_offset if batches else req.fetch_offset
        return response

    def _handle_fetch(self, now_ms: int, env: Envelope[m.MetadataFetchRequest]) -> None:
        """Kafka's ``handleFetchRequest``: validate, answer at once when there is something to say, else park up
        to ``max_wait_ms``."""
        req = env.message
        if req.cluster_id is not None and req.cluster_id != self.cluster_id:
            self.channel.send_response(env, m.MetadataFetchResponse(Errors.INCONSISTENT_CLUSTER_ID, -1, -1))
            return
        if req.max_wait_ms < 0 or req.fetch_offset < 0 or req.last_fetched_epoch < 0 \
                or req.last_fetched_epoch > req.current_leader_epoch:
            self.channel.send_response(env, self._empty_fetch_response(Errors.INVALID_REQUEST))
            return
        key = ReplicaKey(req.replica_id, req.replica_directory_id)
        response = self._fetch_response(now_ms, req, key)
        if response.error_code != Errors.NONE or response.batches or req.max_wait_ms == 0 \
                or response.diverging_epoch >= 0 or response.snapshot_end_offset >= 0 \
                or req.high_watermark < response.high_watermark:
            self.channel.send_response(env, response)
        else:
            self._parked.append((now_ms + req.max_wait_ms, env, key))


def _vote_response(client: Any, error: int, granted: bool, *, top: bool = False) -> m.VoteResponse:
    state = client.state
    return m.VoteResponse(error_code=error if top else Errors.NONE, partition_error_code=Errors.NONE if top else error,
                          leader_id=state.leader_id if state.leader_id is not None else -1,
                          leader_epoch=state.epoch, vote_granted=granted)


def _epoch_response(client: Any, cls: Any, error: int, *, top: bool = False) -> Any:
    state = client.state
    return cls(error_code=error if top else Errors.NONE, partition_error_code=Errors.NONE if top else error,
               leader_id=state.leader_id if state.leader_id is not None else -1, leader_epoch=state.epoch)


def error_response(req: Message, error: int) -> Message:
    """The error answer to a quorum request (``RaftUtil.errorResponse``)."""
    if isinstance(req, m.MetadataFetchRequest):
        return m.MetadataFetchResponse(error, -1, req.fetch_offset)
    if isinstance(req, m.VoteRequest):
        return m.VoteResponse(error_code=error, partition_error_code=Errors.NONE, leader_id=-1, leader_epoch=-1,
                              vote_granted=False)
    if isinstance(req, m.BeginQuorumEpochRequest):
        return m.BeginQuorumEpochResponse(error_code=error, partition_error_code=Errors.NONE, leader_id=-1,
                                          leader_epoch=-1)
    if isinstance(req, m.EndQuorumEpochRequest):
        return m.EndQuorumEpochResponse(error_code=error, partition_error_code=Errors.NONE, leader_id=-1,
                                        leader_epoch=-1)
    if isinstance(req, m.DescribeQuorumRequest):
        return m.DescribeQuorumResponse(error_code=Errors.NONE, error_message=None, partition_error_code=error,
                                        partition_error_message=None, leader_id=-1, leader_epoch=-1,
                                        high_watermark=-1, current_voters=(), observers=())
    if isinstance(req, m.AddRaftVoterRequest):
        return m.AddRaftVoterResponse(error_code=error, error_message=None)
    if isinstance(req, m.RemoveRaftVoterRequest):
        return m.RemoveRaftVoterResponse(error_code=error, error_message=None)
    assert isinstance(req, m.UpdateRaftVoterRequest), req
    return m.UpdateRaftVoterResponse(error_code=error)


