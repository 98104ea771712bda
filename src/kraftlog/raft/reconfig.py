"""KIP-853's dynamic voters, a part of :class:`~kraftlog.raft.client.KafkaRaftClient` (Kafka's
``AddVoterHandler``, ``RemoveVoterHandler``, ``UpdateVoterHandler`` and the follower's auto-join).

Only at ``kraft.version`` 1, one change at a time, each a VotersRecord the leader appends (in force at once)
and answers when it commits:

* **AddRaftVoter** — the new voter (id + directory id) must be an observer that has caught up with the
  leader's log (Kafka's ``isReplicaCaughtUp``) and whose id is not a voter already (DUPLICATE_VOTER).
  Kafka first asks the new voter's ApiVersions for its ``kraft.version`` range; every kraftlog controller
  supports 0..1, so that round trip is left out.
* **RemoveRaftVoter** — the voter (id + directory id) must be in the set (VOTER_NOT_FOUND); a leader that
  removed itself resigns once the change commits.
* **UpdateRaftVoter** — a voter's endpoints or supported versions changed: the leader records them.

Errors as Kafka's: NOT_LEADER_OR_FOLLOWER off the leader, UNSUPPORTED_VERSION at ``kraft.version`` 0,
REQUEST_TIMED_OUT while another change is pending or uncommitted, before the leader committed in its epoch,
or when the change does not commit within ``controller.quorum.request.timeout.ms``.

A controller with ``controller.quorum.auto.join.enable`` whose (id, directory) is not a voter sends the
change itself every ``controller.quorum.fetch.timeout.ms``: RemoveRaftVoter of its id's old directory first
(a voter that lost its disk), then AddRaftVoter of itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Envelope
from ..protocol.raft_records import Voter
from .leader_state import LeaderState
from .states import Follower
from .voters import ReplicaKey, VoterSet

if TYPE_CHECKING:
    from .client import KafkaRaftClient

__all__ = ["Reconfig"]


@dataclass(slots=True)
class _Pending:
    """The leader's one voter change in progress: the request to answer, the VotersRecord's offset, the
    deadline (ms), and the voter a removal took out."""

    env: Envelope
    last_offset: int
    deadline_ms: int
    removed: ReplicaKey | None = None


class Reconfig:
    """KIP-853's requests, on the leader and on a joining controller."""

    def __init__(self, client: KafkaRaftClient) -> None:
        self.client = client
        self.pending: _Pending | None = None

    # ------------------------------------------------------------------ leader
    def deadlines(self) -> list[int]:
        """When a pending change times out (ms)."""
        return [self.pending.deadline_ms] if self.pending is not None else []

    def poll_leader(self, state: LeaderState, now_ms: int) -> None:
        """A pending change that has not committed by its deadline is answered REQUEST_TIMED_OUT (the record
        stays in the log: it still commits or is truncated away)."""
        if self.pending is not None and now_ms >= self.pending.deadline_ms:
            self._answer(Errors.REQUEST_TIMED_OUT, "the voter change did not commit in time")

    def on_high_watermark(self, state: LeaderState, now_ms: int) -> None:
        """The leader's high watermark moved: a pending change it passed is answered NONE; a leader that removed
        itself resigns."""
        pending = self.pending
        if pending is None or state.high_watermark is None or state.high_watermark <= pending.last_offset:
            return
        self._answer(Errors.NONE, None)
        if pending.removed is not None and pending.removed.id == self.client.local.id:
            state.resign_requested = True

    def on_leadership_lost(self) -> None:
        """The leader lost its epoch: a pending change is answered NOT_LEADER_OR_FOLLOWER."""
        if self.pending is not None:
            self._answer(Errors.NOT_LEADER_OR_FOLLOWER, "the leader lost its epoch")

    def on_request_failed(self, dst: int) -> None:
        """One of the client's own AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter requests got no answer: it is
        sent again at the next period."""

    def _answer(self, error: int, message: str | None) -> None:
        pending, self.pending = self.pending, None
        assert pending is not None
        req = pending.env.message
        if isinstance(req, m.AddRaftVoterRequest):
            self.client.channel.send_response(pending.env,
                                              m.AddRaftVoterResponse(error_code=error, error_message=message))
        else:
            self.client.channel.send_response(pending.env,
                                              m.RemoveRaftVoterResponse(error_code=error, error_message=message))

    def _precheck(self, cluster_id: str | None, voter_id: int,
                  directory_id: uuid.UUID | None) -> tuple[LeaderState | None, int, str | None]:
        """The checks AddRaftVoter and RemoveRaftVoter share, in Kafka's order: (leader state, error, message)."""
        client = self.client
        if cluster_id is not None and cluster_id != client.cluster_id:
            return None, Errors.INCONSISTENT_CLUSTER_ID, None
        state = client.state
        if not isinstance(state, LeaderState):
            return None, Errors.NOT_LEADER_OR_FOLLOWER, None
        if voter_id < 0 or directory_id is None:
            return None, Errors.INVALID_REQUEST, "a voter needs an id and a directory id"
        if self.pending is not None:
            return None, Errors.REQUEST_TIMED_OUT, "another voter change is in progress"
        if state.high_watermark is None or state.high_watermark <= state.epoch_start_offset:
            return None, Errors.REQUEST_TIMED_OUT, "the leader has not committed in its epoch yet"
        if client.kraft_version < 1:
            return None, Errors.UNSUPPORTED_VERSION, "kraft.version 0 has static voters"
        if client.control.last_voter_set_offset() >= state.high_watermark:
            return None, Errors.REQUEST_TIMED_OUT, "the last voter change has not committed yet"
        return state, Errors.NONE, None

    def _append_voters(self, state: LeaderState, voters: VoterSet, env: Envelope, now_ms: int,
                       removed: ReplicaKey | None = None) -> None:
        client = self.client
        client._write(state, [((voters.to_record(),), True)], now_ms)
        self.pending = _Pending(env, client.log.end_offset - 1, now_ms + client.config.request_timeout_ms, removed)

    def handle_add_voter(self, now_ms: int, env: Envelope[m.AddRaftVoterRequest]) -> None:
        """Kafka's ``AddVoterHandler.handleAddVoterRequest``."""
        req = env.message
        state, error, message = self._precheck(req.cluster_id, req.voter_id, req.voter_directory_id)
        if state is not None:
            key = ReplicaKey(req.voter_id, req.voter_directory_id)
            voters = self.client.voter_set()
            if req.voter_id in voters.voters:
                error, message = Errors.DUPLICATE_VOTER, f"voter {req.voter_id} is already a voter"
            elif not state.is_replica_caught_up(key, now_ms):
                error, message = Errors.REQUEST_TIMED_OUT, f"replica {key} has not caught up with the leader"
            else:
                added = voters.add_voter(Voter(req.voter_id, req.voter_directory_id, tuple(req.listeners)))
                assert added is not None
                self._append_voters(state, added, env, now_ms)
                return
        self.client.channel.send_response(env, m.AddRaftVoterResponse(error_code=error, error_message=message))

    def handle_remove_voter(self, now_ms: int, env: Envelope[m.RemoveRaftVoterRequest]) -> None:
        """Kafka's ``RemoveVoterHandler.handleRemoveVoterRequest``."""
        req = env.message
        state, error, message = self._precheck(req.cluster_id, req.voter_id, req.voter_directory_id)
        if state is not None:
            key = ReplicaKey(req.voter_id, req.voter_directory_id)
            removed = self.client.voter_set().remove_voter(key)
            if removed is None:
                error, message = Errors.VOTER_NOT_FOUND, f"{key} is not a voter (or the last one)"
            else:
                self._append_voters(state, removed, env, now_ms, removed=key)
                return
        self.client.channel.send_response(env, m.RemoveRaftVoterResponse(error_code=error, error_message=message))

    def handle_update_voter(self, now_ms: int, env: Envelope[m.UpdateRaftVoterRequest]) -> None:
        """Kafka's ``UpdateVoterHandler``: at kraft.version 1 a changed voter is written in a VotersRecord; at 0
        the leader only acknowledges (it keeps nothing: the voters are static)."""
        client = self.client
        req = env.message
        state = client.state
        leader = state.leader_id if state.leader_id is not None else -1

        def answer(error: int) -> None:
            client.channel.send_response(env, m.UpdateRaftVoterResponse(
                error_code=error, current_leader_id=leader, current_leader_epoch=state.epoch))

        if req.cluster_id is not None and req.cluster_id != client.cluster_id:
            answer(Errors.INCONSISTENT_CLUSTER_ID)
        elif req.current_leader_epoch < state.epoch:
            answer(Errors.FENCED_LEADER_EPOCH)
        elif req.current_leader_epoch > state.epoch:
            answer(Errors.UNKNOWN_LEADER_EPOCH)
        elif not isinstance(state, LeaderState):
            answer(Errors.NOT_LEADER_OR_FOLLOWER)
        elif req.voter_id < 0 or req.voter_directory_id is None:
            answer(Errors.INVALID_REQUEST)
        elif client.kraft_version < 1:
            answer(Errors.NONE)
        else:
            voters = client.voter_set()
            current = voters.voters.get(req.voter_id)
            if current is None or current.voter_directory_id != req.voter_directory_id:
                answer(Errors.VOTER_NOT_FOUND)
                return
            updated_voter = Voter(req.voter_id, req.voter_directory_id, tuple(req.listeners),
                                  req.kraft_version_min, req.kraft_version_max)
            if updated_voter == current:
                answer(Errors.NONE)
            elif self.pending is not None or client.control.last_voter_set_offset() >= (state.high_watermark or 0):
                answer(Errors.REQUEST_TIMED_OUT)
            else:
                updated = voters.update_voter(updated_voter)
                assert updated is not None
                client._write(state, [((updated.to_record(),), True)], now_ms)
                answer(Errors.NONE)

    # ------------------------------------------------------------------ follower / observer
    def maybe_send_update_voter(self, state: Follower, now_ms: int) -> bool:
        """A voter following a new leader sends UpdateRaftVoter once (kraft.version 0: every new leader; 1: when
        the leader's record of it differs, never here since kraftlog's voters keep their endpoints). True
        when it is due (sent, or sent once the request in flight is answered)."""
        client = self.client
        if client.kraft_version >= 1 or state.has_updated_leader:
            state.update_voter_deadline = now_ms + client.config.fetch_timeout_ms
            return False
        sent = client._maybe_send(now_ms, state.leader_id, m.UpdateRaftVoterRequest(
            cluster_id=client.cluster_id, current_leader_epoch=state.epoch, voter_id=client.local.id,
            voter_directory_id=client.local.directory_id, listeners=client.local_listeners, kraft_version_min=0,
            kraft_version_max=1))
        if sent:  # Kafka resets the period only when sent; until then no Fetch goes out (the request goes first)
            state.update_voter_deadline = now_ms + client.config.fetch_timeout_ms
        return True

    def maybe_send_join(self, state: Follower, now_ms: int) -> bool:
        """``controller.quorum.auto.join.enable``: an observer controller at kraft.version 1 removes its id's old
        directory, then adds itself. True when the join is due (sent, or sent once the request in flight is answered;
        no Fetch meanwhile)."""
        client = self.client
        if not (client.kraft_version >= 1 and client.can_become_voter and client.config.auto_join):
            state.update_voter_deadline = now_ms + client.config.fetch_timeout_ms
            return False
        voters = client.voter_set()
        old = voters.voters.get(client.local.id)
        message: Any
        if old is not None:
            message = m.RemoveRaftVoterRequest(cluster_id=client.cluster_id, voter_id=old.voter_id,
                                               voter_directory_id=old.voter_directory_id)
        else:
            message = m.AddRaftVoterRequest(cluster_id=client.cluster_id, timeout_ms=client.config.request_timeout_ms,
                                            voter_id=client.local.id, voter_directory_id=client.local.directory_id,
                                            listeners=client.local_listeners)
        if client._maybe_send(now_ms, state.leader_id, message):
            state.update_voter_deadline = now_ms + client.config.fetch_timeout_ms
        return True  # sent, or sent once the request in flight is answered: no Fetch meanwhile (Kafka's order)

    def handle_add_voter_response(self, now_ms: int, src: int, resp: m.AddRaftVoterResponse) -> bool:
        """Kafka's ``handleAddVoterResponse``: whatever the answer, the next attempt waits a period."""
        return resp.error_code != Errors.BROKER_NOT_AVAILABLE

    def handle_remove_voter_response(self, now_ms: int, src: int, resp: m.RemoveRaftVoterResponse) -> bool:
        """Kafka's ``handleRemoveVoterResponse``."""
        return resp.error_code != Errors.BROKER_NOT_AVAILABLE

    def handle_update_voter_response(self, now_ms: int, src: int, resp: m.UpdateRaftVoterResponse) -> bool:
        """Kafka's ``handleUpdateVoterResponse``: the leader has this voter's information (NONE or
        UNSUPPORTED_VERSION); a newer epoch or leader is followed."""
        client = self.client
        leader = resp.current_leader_id if resp.current_leader_id >= 0 else None
        handled = client._handle_common_response(resp.error_code, leader, resp.current_leader_epoch, now_ms)
        if handled is not None:
            return handled
        state = client.state
        if resp.error_code in (Errors.NONE, Errors.UNSUPPORTED_VERSION) and isinstance(state, Follower):
            state.has_updated_leader = True
            state.fetch_deadline = now_ms + client.config.fetch_timeout_ms
            return True
        return False
