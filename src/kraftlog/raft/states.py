"""A replica's place in the quorum (Kafka's ``EpochState`` classes and ``QuorumState``).

One state at a time, each of one epoch:

* :class:`Unattached` — the epoch's leader is not known (``leader_id`` may be: a leader found out of
  date); a voter that has voted in the epoch remembers it (``voted_key``). A voter whose election timeout
  expires becomes Prospective; an observer never times out.
* :class:`Prospective` — KIP-996's pre-vote: the replica asks the voters whether they *would* vote for it
  in epoch + 1, without bumping its epoch, so a voter cut off from the leader cannot disturb the quorum
  by raising epochs. A majority of yes → Candidate; a majority of no or a timeout → back to Follower
  (leader known) or Unattached.
* :class:`Candidate` — epoch + 1, voted for itself, asks for votes. A majority → Leader; a timeout → Prospective.
* ``Leader`` (:class:`~kraftlog.raft.leader_state.LeaderState`).
* :class:`Follower` — fetches from the known leader; a voter whose fetch timeout
  (``controller.quorum.fetch.timeout.ms``) expires becomes Prospective.
* :class:`Resigned` — a leader that gave up (check-quorum, shutdown, removed from the voters): it sends
  EndQuorumEpoch and, after an election timeout, goes Unattached in epoch + 1.

:class:`QuorumState` holds the state, the rules for moving between them (a move that breaks them raises
:class:`RaftSafetyError`), and persists the election (epoch, leader, vote) in ``quorum-state`` before
the move takes effect, as Kafka's ``durableTransitionTo`` does: a voter that restarts never votes twice in
an epoch.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from random import Random

from ..metadata.snapshot import SnapshotId
from ..storage.disk import Disk
from .voters import ReplicaKey

__all__ = ["ElectionState", "EpochElection", "Unattached", "Prospective", "Candidate", "Follower", "Resigned",
           "RaftSafetyError", "QuorumStateStore", "kafka_uuid", "parse_kafka_uuid"]

NEVER = 1 << 62


class RaftSafetyError(AssertionError):
    """A message no correct quorum sends (Kafka's IllegalStateException in the raft thread): the client stops."""


def kafka_uuid(value: uuid.UUID) -> str:
    """A UUID as Kafka's ``Uuid.toString`` writes it: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """Inverse of :func:`kafka_uuid`; ValueError for anything else."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid")
    return uuid.UUID(bytes=raw)


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What ``quorum-state`` keeps (Kafka's ``ElectionState``): the epoch, its leader (-1 unknown) and the
    replica voted for in it (None: no vote)."""

    epoch: int
    leader_id: int = -1
    voted_key: ReplicaKey | None = None


class QuorumStateStore:
    """``quorum-state`` on the node's metadata disk (Kafka's ``FileQuorumStateStore``), JSON as Kafka writes it:
    data version 0 (kraft.version 0: ``leaderId``, ``leaderEpoch``, ``votedId``, ``appliedOffset``,
    ``currentVoters``) or 1 (kraft.version 1: ``leaderId``, ``leaderEpoch``, ``votedId``, ``votedDirectoryId``).
    Written atomically (tmp + fsync + rename). A file that cannot be read raises ValueError naming it."""

    def __init__(self, disk: Disk, directory: str) -> None:
        self.disk = disk
        self.path = f"{directory}/quorum-state"

    def read(self) -> ElectionState | None:
        """The stored election state, None when there is no file."""
        raw = self.disk.read_value(self.path)
        if raw is None:
            return None
        try:
            doc = json.loads(str(raw))
            if doc.get("data_version") not in (0, 1):
                raise ValueError(f"data_version {doc.get('data_version')!r} is not 0 or 1")
            voted_dir = doc.get("votedDirectoryId")
            directory = None if voted_dir in (None, "", kafka_uuid(uuid.UUID(int=0))) \
                else parse_kafka_uuid(voted_dir)
            voted_id = int(doc.get("votedId", -1))
            return ElectionState(int(doc["leaderEpoch"]), int(doc.get("leaderId", -1)),
                                 ReplicaKey(voted_id, directory) if voted_id >= 0 else None)
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self.path}: not a quorum-state file: {exc}") from exc

    def write(self, election: ElectionState, kraft_version: int, voter_ids: Iterable[int], now_ms: int) -> None:
        """Store ``election`` (OSError when the disk fails: the transition must not happen)."""
        voted = election.voted_key
        doc: dict[str, object]
        if kraft_version == 0:
            doc = {"clusterId": "", "leaderId": election.leader_id, "leaderEpoch": election.epoch,
                   "votedId": voted.id if voted else -1, "appliedOffset": 0,
                   "currentVoters": [{"voterId": v} for v in sorted(voter_ids)], "data_version": 0}
        else:
            directory = voted.directory_id if voted and voted.directory_id else uuid.UUID(int=0)
            doc = {"leaderId": election.leader_id, "leaderEpoch": election.epoch,
                   "votedId": voted.id if voted else -1, "votedDirectoryId": kafka_uuid(directory),
                   "data_version": 1}
        self.disk.write_atomic(self.path, json.dumps(doc, separators=(",", ":")), now_ms)


@dataclass(slots=True)
class EpochElection:
    """The votes of one election (Kafka's ``EpochElection``): the voters (ids), who granted, who rejected.
    The local voter grants itself."""

    voters: frozenset[int]
    granted: set[int] = field(default_factory=set)
    rejected: set[int] = field(default_factory=set)

    def majority(self) -> int:
        """Votes needed to win."""
        return len(self.voters) // 2 + 1

    def record(self, voter: int, granted: bool) -> None:
        """A voter's answer (ignored for a non-voter; a voter's first answer counts)."""
        if voter not in self.voters or voter in self.granted or voter in self.rejected:
            return
        (self.granted if granted else self.rejected).add(voter)

    def is_vote_granted(self) -> bool:
        """A majority granted."""
        return len(self.granted) >= self.majority()

    def is_vote_rejected(self) -> bool:
        """So many rejected that a majority can no longer grant."""
        return len(self.voters) - len(self.rejected) < self.majority()

    def unrecorded_voters(self) -> list[int]:
        """The voters that have not answered, sorted."""
        return sorted(self.voters - self.granted - self.rejected)


@dataclass(slots=True)
class Unattached:
    """No known leader in ``epoch`` (or one known only by id); ``election_deadline`` (ms): when a voter
    starts an election (NEVER for an observer)."""

    epoch: int
    leader_id: int | None
    voted_key: ReplicaKey | None
    election_deadline: int
    high_watermark: int | None = None
    name = "Unattached"

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """Kafka's ``unattachedOrProspectiveCanGrantVote``."""
        return _unattached_or_prospective_grant(self.leader_id, self.voted_key, key, log_up_to_date, pre_vote)


@dataclass(slots=True)
class Prospective:
    """KIP-996 pre-vote in ``epoch`` (not bumped); ``election`` counts the pre-votes."""

    epoch: int
    leader_id: int | None
    voted_key: ReplicaKey | None
    election: EpochElection
    election_deadline: int
    high_watermark: int | None = None
    name = "Prospective"

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """Kafka's ``unattachedOrProspectiveCanGrantVote``."""
        return _unattached_or_prospective_grant(self.leader_id, self.voted_key, key, log_up_to_date, pre_vote)


@dataclass(slots=True)
class Candidate:
    """A candidate of ``epoch`` (voted for itself, ``voted_key``); ``election`` counts the votes."""

    epoch: int
    voted_key: ReplicaKey
    election: EpochElection
    election_deadline: int
    high_watermark: int | None = None
    leader_id: int | None = None
    name = "Candidate"

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """A candidate grants a pre-vote to an up-to-date log and no vote (its own is implicit)."""
        return pre_vote and log_up_to_date


@dataclass(slots=True)
class Follower:
    """Follows ``leader_id`` in ``epoch``; ``fetch_deadline`` (ms): when a voter gives up on the leader."""

    epoch: int
    leader_id: int
    voted_key: ReplicaKey | None
    fetch_deadline: int
    high_watermark: int | None = None
    has_fetched_from_leader: bool = False
    #: when a voter next checks whether it must send UpdateRaftVoter, or an observer AddRaftVoter (ms)
    update_voter_deadline: int = 0
    has_updated_leader: bool = False
    #: the snapshot being fetched from the leader (Kafka's ``fetchingSnapshot``) and its bytes so far
    fetching_snapshot: SnapshotId | None = None
    snapshot_bytes: bytearray = field(default_factory=bytearray)
    name = "Follower"

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """A follower grants a pre-vote only while it has not fetched from its leader (KIP-996); no vote."""
        return pre_vote and not self.has_fetched_from_leader and log_up_to_date


@dataclass(slots=True)
class Resigned:
    """A leader of ``epoch`` that resigned: it tells the voters (``unacked``) with EndQuorumEpoch, naming
    ``preferred_successors`` (voters by fetch offset, most caught up first)."""

    epoch: int
    leader_id: int
    unacked: set[int]
    preferred_successors: tuple[ReplicaKey, ...]
    election_deadline: int
    high_watermark: int | None = None
    voted_key: ReplicaKey | None = None
    name = "Resigned"

    def can_grant_vote(self, key: ReplicaKey, log_up_to_date: bool, pre_vote: bool) -> bool:
        """A resigned leader grants a pre-vote to an up-to-date log and no vote in its epoch (Kafka's
        ``ResignedState.canGrantVote``)."""
        return pre_vote and log_up_to_date


def _unattached_or_prospective_grant(leader_id: int | None, voted_key: ReplicaKey | None, key: ReplicaKey,
                                     log_up_to_date: bool, pre_vote: bool) -> bool:
    """Kafka's ``QuorumState.unattachedOrProspectiveCanGrantVote``: a pre-vote needs an up-to-date log only;
    a vote goes again to the replica already voted for (same id, and same directory unless unknown), never to
    another one, never when the epoch's leader is known, and only to an up-to-date log."""
    if pre_vote:
        return log_up_to_date
    if voted_key is not None:
        return voted_key.id == key.id and (voted_key.directory_id is None
                                           or voted_key.directory_id == key.directory_id)
    if leader_id is not None:
        return False
    return log_up_to_date


def random_election_timeout(rng: Random, election_timeout_ms: int) -> int:
    """Kafka's ``randomElectionTimeoutMs``: the timeout plus a uniform jitter below it (0 stays 0), from the
    injected ``rng``."""
    if election_timeout_ms == 0:
        return 0
    return election_timeout_ms + rng.randrange(election_timeout_ms)
