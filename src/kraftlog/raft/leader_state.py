"""The leader's view of the quorum (Kafka's ``LeaderState``): each replica's fetch position, the high watermark,
check-quorum and the BeginQuorumEpoch timer.

* **High watermark** (Raft's commit index): the largest offset that a majority of the voters (the leader
  counts, while it is a voter) has fetched, and only once it is above ``epoch_start_offset``: the leader
  commits an entry of its own epoch (its LeaderChangeMessage) before anything of an earlier epoch is
  exposed (Raft §5.4.2). It never goes back.
* **Check-quorum** (KIP-595): the leader resigns when a majority of the voters (itself included) has not
  fetched within 1.5 × ``controller.quorum.fetch.timeout.ms``: a leader cut off from the voters stops
  being one, so it commits nothing more and its brokers look elsewhere.
* **BeginQuorumEpoch**: sent to every voter that has not fetched for ``fetch.timeout.ms / 2``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .voters import ReplicaKey, VoterSet

__all__ = ["LeaderState", "ReplicaState", "CHECK_QUORUM_TIMEOUT_FACTOR"]

#: Kafka's ``LeaderState.CHECK_QUORUM_TIMEOUT_FACTOR``.
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5
#: An observer counts as caught up for AddRaftVoter when it has fetched within this long (Kafka: an hour).
CAUGHT_UP_WINDOW_MS = 3_600_000


@dataclass(slots=True)
class ReplicaState:
    """A replica as the leader sees it: its key, fetched end offset (None: not yet), when it last fetched and
    when it was last caught up with the leader's end offset (ms, -1 never), whether it acknowledged the
    leader (BeginQuorumEpoch answered or a fetch in this epoch)."""

    key: ReplicaKey
    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    last_fetch_leader_end_offset: int = -1
    has_acknowledged_leader: bool = False

    def update_follower(self, now_ms: int, fetch_offset: int, leader_end_offset: int) -> None:
        """Kafka's ``ReplicaState.updateFollowerState``: a fetch at ``fetch_offset`` when the leader's log ended
        at ``leader_end_offset``."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif self.last_fetch_leader_end_offset > 0 and fetch_offset >= self.last_fetch_leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.end_offset = fetch_offset
        self.last_fetch_ms = now_ms
        self.last_fetch_leader_end_offset = leader_end_offset
        self.has_acknowledged_leader = True


class LeaderState:
    """The leader of ``epoch``: ``local`` is its key, ``epoch_start_offset`` the offset of its first batch
    (the LeaderChangeMessage), ``voters`` the voter set in force, ``granting_voters`` who voted for it.
    Times are ms."""

    name = "Leader"

    def __init__(self, local: ReplicaKey, epoch: int, epoch_start_offset: int, voters: VoterSet,
                 granting_voters: frozenset[int], fetch_timeout_ms: int, now_ms: int) -> None:
        self.local = local
        self.epoch = epoch
        self.leader_id: int | None = local.id
        self.voted_key: ReplicaKey | None = None  # Kafka's leader writes votedId -1 in quorum-state
        self.epoch_start_offset = epoch_start_offset
        self.granting_voters = granting_voters
        self.high_watermark: int | None = None
        self.voter_states: dict[int, ReplicaState] = {}
        self.observer_states: dict[ReplicaKey, ReplicaState] = {}
        self.check_quorum_timeout_ms = int(fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)
        self.check_quorum_deadline = now_ms + self.check_quorum_timeout_ms
        self.fetched_voters: set[int] = set()
        self.begin_quorum_epoch_timeout_ms = fetch_timeout_ms // 2
        self.begin_quorum_epoch_deadline = now_ms
        self.resign_requested = False
        self.update_voters(voters)
        for state in self.voter_states.values():
            if state.key.id == local.id:
                state.has_acknowledged_leader = True

    # ------------------------------------------------------------------ voters and observers
    def update_voters(self, voters: VoterSet) -> None:
        """The voter set changed (a VotersRecord appended or truncated): voters that left become observers,
        observers that joined become voters, keeping what the leader knows of them."""
        old = self.voter_states
        self.voter_states = {}
        for key in voters.voter_keys():
            state = old.get(key.id)
            if state is None or (key.directory_id is not None and state.key.directory_id not in
                                 (None, key.directory_id)):
                state = self.observer_states.pop(key, None) or ReplicaState(key)
            state.key = key if key.directory_id is not None else state.key
            self.voter_states[key.id] = state
        for vid, state in old.items():
            if vid not in self.voter_states and vid != self.local.id:
                self.observer_states[state.key] = state
        self.voters = voters

    def is_voter(self, key: ReplicaKey) -> bool:
        """``key`` is a voter of the voter set in force."""
        return self.voters.is_voter(key)

    def replica_state(self, key: ReplicaKey) -> ReplicaState:
        """The state of ``key`` (a voter's by id when it matches, else an observer's, created on first use)."""
        state = self.voter_states.get(key.id)
        if state is not None and self.voters.is_voter(key):
            return state
        state = self.observer_states.get(key)
        if state is None:
            state = self.observer_states[key] = ReplicaState(key)
        return state

    # ------------------------------------------------------------------ positions and the high watermark
    def update_local(self, end_offset: int) -> bool:
        """The leader's log now ends at ``end_offset`` (after a flush); True when the high watermark moved."""
        state = self.voter_states.get(self.local.id)
        if state is None:
            state = self.observer_states.setdefault(self.local, ReplicaState(self.local))
        if state.end_offset is not None and end_offset < state.end_offset:
            raise AssertionError(f"the leader's end offset went back: {state.end_offset} -> {end_offset}")
        state.end_offset = end_offset
        return self._maybe_update_high_watermark()

    def update_replica(self, key: ReplicaKey, now_ms: int, fetch_offset: int, leader_end_offset: int) -> bool:
        """A Fetch from ``key`` at ``fetch_offset`` (a position the leader validated); True when the high
        watermark moved. Fetches of replica id < 0 (not a replica) change nothing."""
        if key.id < 0:
            return False
        if key.id == self.local.id:
            raise AssertionError(f"a fetch from the leader itself: {key}")
        state = self.replica_state(key)
        state.update_follower(now_ms, fetch_offset, leader_end_offset)
        self.update_check_quorum(key, now_ms)
        return self.voters.is_voter(key) and self._maybe_update_high_watermark()

    def _maybe_update_high_watermark(self) -> bool:
        offsets = sorted((s.end_offset if s.end_offset is not None else -1 for s in self.voter_states.values()),
                         reverse=True)
        if not offsets:
            return False
        candidate = offsets[len(offsets) // 2]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is None or candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False  # smaller: a voter lost committed data, or the voter set changed; the HWM never goes back

    def voters_by_descending_fetch_offset(self) -> tuple[ReplicaKey, ...]:
        """The voters other than the leader, most caught up first (ties by id): the preferred successors."""
        others = [s for vid, s in self.voter_states.items() if vid != self.local.id]
        others.sort(key=lambda s: (-(s.end_offset if s.end_offset is not None else -1), s.key.id))
        return tuple(s.key for s in others)

    # ------------------------------------------------------------------ check-quorum and BeginQuorumEpoch
    def update_check_quorum(self, key: ReplicaKey, now_ms: int) -> None:
        """Kafka's ``updateCheckQuorumForFollowingVoter``: count a voter's fetch; once a majority (the leader
        implicitly, when a voter) fetched in this interval, restart the check-quorum timer."""
        if self.voters.is_voter(key):
            self.fetched_voters.add(key.id)
        majority = len(self.voter_states) // 2 + 1
        if self.local.id in self.voter_states:
            majority -= 1
        if len(self.fetched_voters) >= majority:
            self.fetched_voters.clear()
            self.check_quorum_deadline = now_ms + self.check_quorum_timeout_ms

    def check_quorum_expired(self, now_ms: int) -> bool:
        """A majority has not fetched within 1.5 × fetch timeout (never for the only voter)."""
        if len(self.voter_states) == 1 and self.local.id in self.voter_states:
            return False
        return now_ms >= self.check_quorum_deadline

    def next_check_quorum_deadline(self) -> int | None:
        """When check-quorum next decides (ms), None for the only voter."""
        if len(self.voter_states) == 1 and self.local.id in self.voter_states:
            return None
        return self.check_quorum_deadline

    def begin_quorum_epoch_due(self, now_ms: int) -> list[ReplicaKey]:
        """The voters (not the leader) that have not fetched for ``fetch.timeout.ms / 2`` when the timer is due,
        sorted; the timer restarts."""
        if now_ms < self.begin_quorum_epoch_deadline:
            return []
        self.begin_quorum_epoch_deadline = now_ms + self.begin_quorum_epoch_timeout_ms
        return sorted(s.key for vid, s in self.voter_states.items()
                      if vid != self.local.id and (s.last_fetch_ms < 0
                                                   or now_ms - s.last_fetch_ms >= self.begin_quorum_epoch_timeout_ms))

    def add_acknowledgement_from(self, voter_id: int) -> None:
        """A voter answered BeginQuorumEpoch."""
        state = self.voter_states.get(voter_id)
        if state is not None:
            state.has_acknowledged_leader = True

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """A leader votes for nobody (Kafka's ``LeaderState.canGrantVote``)."""
        return False

    def is_replica_caught_up(self, key: ReplicaKey, now_ms: int) -> bool:
        """Kafka's ``isReplicaCaughtUp`` (AddRaftVoter): the observer ``key`` has been caught up once and fetched
        within the last hour."""
        state = self.observer_states.get(key)
        return (state is not None and state.last_caught_up_ms >= 0 and state.last_fetch_ms >= 0
                and state.last_fetch_ms > now_ms - CAUGHT_UP_WINDOW_MS)
