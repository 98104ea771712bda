"""Who votes (KIP-853): :class:`ReplicaKey`, :class:`VoterSet` and :class:`ControlRecordState`, the history of
the voter set and ``kraft.version`` along the log (Kafka's ``ReplicaKey``, ``VoterSet``,
``KRaftControlRecordStateMachine``).

At ``kraft.version`` 0 the voters are ``controller.quorum.voters`` (static, no directory ids: any
directory of a voter's id counts as that voter, so a voter that lost its disk votes as if it had its log).
At ``kraft.version`` 1 the voter set is the latest :class:`~kraftlog.protocol.raft_records.VotersRecord` in
the log (or the bootstrap one written when the storage was formatted), and a voter is the pair (node id,
directory id): a voter that lost its disk comes back with a new directory id, is an observer, and must be
added again (AddRaftVoter) before it votes. A voter set takes effect when its record is appended, and a
truncation of the log reverts to the one before (Raft's one-at-a-time membership change).
"""

from __future__ import annotations

import uuid
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from ..protocol.raft_records import KRaftVersionRecord, RaftBatch, Voter, VotersRecord

__all__ = ["ReplicaKey", "VoterSet", "ControlRecordState"]


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: its node id and the directory id of its metadata log (None: unknown, kraft.version 0)."""

    id: int
    directory_id: uuid.UUID | None = None


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters, by node id (:class:`~kraftlog.protocol.raft_records.Voter`: id, directory id, endpoints,
    supported ``kraft.version`` range)."""

    voters: Mapping[int, Voter]

    @classmethod
    def static(cls, voter_ids: Iterable[int]) -> VoterSet:
        """The voter set of ``controller.quorum.voters`` (kraft.version 0): no directory ids."""
        return cls({v: Voter(v, None) for v in sorted(set(voter_ids))})

    @classmethod
    def of(cls, record: VotersRecord) -> VoterSet:
        """The voter set a VotersRecord states."""
        return cls({v.voter_id: v for v in sorted(record.voters, key=lambda v: v.voter_id)})

    def to_record(self) -> VotersRecord:
        """This voter set as a VotersRecord (voters by id)."""
        return VotersRecord(tuple(self.voters[v] for v in sorted(self.voters)))

    @property
    def voter_ids(self) -> tuple[int, ...]:
        """The voters' node ids, sorted."""
        return tuple(sorted(self.voters))

    def voter_keys(self) -> tuple[ReplicaKey, ...]:
        """The voters' replica keys, by id."""
        return tuple(ReplicaKey(v, self.voters[v].voter_directory_id) for v in sorted(self.voters))

    def is_voter(self, key: ReplicaKey) -> bool:
        """Kafka's ``VoterSet.isVoter``: ``key``'s id is a voter's, and, when the voter has a directory id, ``key``
        has the same one (a replica that does not say its directory is no voter of a kraft.version 1 set)."""
        voter = self.voters.get(key.id)
        if voter is None:
            return False
        return voter.voter_directory_id is None or voter.voter_directory_id == key.directory_id

    def is_only_voter(self, key: ReplicaKey) -> bool:
        """``key`` is the one voter."""
        return len(self.voters) == 1 and self.is_voter(key)

    def majority(self) -> int:
        """How many voters make a majority (⌊n/2⌋ + 1)."""
        return len(self.voters) // 2 + 1

    def add_voter(self, voter: Voter) -> VoterSet | None:
        """A copy with ``voter`` added; None when its id already votes (DUPLICATE_VOTER)."""
        if voter.voter_id in self.voters:
            return None
        return VoterSet({**self.voters, voter.voter_id: voter})

    def remove_voter(self, key: ReplicaKey) -> VoterSet | None:
        """A copy without the voter ``key`` (id and directory id must match); None when it is not a voter or
        is the last one (VOTER_NOT_FOUND)."""
        voter = self.voters.get(key.id)
        if voter is None or voter.voter_directory_id != key.directory_id or len(self.voters) == 1:
            return None
        return VoterSet({k: v for k, v in self.voters.items() if k != key.id})

    def update_voter(self, voter: Voter) -> VoterSet | None:
        """A copy with the voter of ``voter``'s id and directory id replaced (endpoints, kraft.version range);
        None when no such voter."""
        current = self.voters.get(voter.voter_id)
        if current is None or current.voter_directory_id != voter.voter_directory_id:
            return None
        return VoterSet({**self.voters, voter.voter_id: voter})

    def with_directory_ids(self, directory_ids: Mapping[int, uuid.UUID]) -> VoterSet:
        """A copy in which each voter named in ``directory_ids`` has that directory id (the upgrade to
        kraft.version 1 records the directories the voters have then)."""
        return VoterSet({k: replace(v, voter_directory_id=directory_ids.get(k, v.voter_directory_id))
                         for k, v in self.voters.items()})


class ControlRecordState:
    """The voter set and ``kraft.version`` at every offset of the log (Kafka's
    ``KRaftControlRecordStateMachine``): a base (the static voters, or the bootstrap checkpoint's VotersRecord
    and version) and the VotersRecord / KRaftVersionRecord control records read from the log, by offset.

    ``last_voter_set()`` is the voter set in force (the latest, committed or not: a voter set takes effect
    when appended); :meth:`truncate` drops what a log truncation removed."""

    def __init__(self, base_voters: VoterSet, base_kraft_version: int) -> None:
        self._base_voters = base_voters
        self._base_version = base_kraft_version
        #: (offset, voter set) of every VotersRecord read, by offset
        self._voter_offsets: list[int] = []
        self._voter_sets: list[VoterSet] = []
        #: (offset, version) of every KRaftVersionRecord read, by offset
        self._version_offsets: list[int] = []
        self._versions: list[int] = []

    def update(self, batch: RaftBatch) -> None:
        """Read ``batch``'s control records (a batch appended to the log, as leader or follower)."""
        if not batch.control:
            return
        for i, record in enumerate(batch.records):
            offset = batch.base_offset + i
            if isinstance(record, VotersRecord):
                self._voter_offsets.append(offset)
                self._voter_sets.append(VoterSet.of(record))
            elif isinstance(record, KRaftVersionRecord):
                self._version_offsets.append(offset)
                self._versions.append(record.kraft_version)

    def truncate(self, end_offset: int) -> None:
        """The log was truncated to ``end_offset``: forget the records at or after it."""
        keep = bisect_right(self._voter_offsets, end_offset - 1)
        del self._voter_offsets[keep:], self._voter_sets[keep:]
        keep = bisect_right(self._version_offsets, end_offset - 1)
        del self._version_offsets[keep:], self._versions[keep:]

    def last_voter_set(self) -> VoterSet:
        """The voter set in force: the latest VotersRecord appended, else the base."""
        return self._voter_sets[-1] if self._voter_sets else self._base_voters

    def last_voter_set_offset(self) -> int:
        """The offset of the latest VotersRecord, -1 when the voters are the base set."""
        return self._voter_offsets[-1] if self._voter_offsets else -1

    def voter_set_at(self, offset: int) -> VoterSet:
        """The voter set in force at ``offset`` (the latest VotersRecord at or before it)."""
        i = bisect_right(self._voter_offsets, offset)
        return self._voter_sets[i - 1] if i else self._base_voters

    def last_kraft_version(self) -> int:
        """The ``kraft.version`` in force (0: static voters; 1: dynamic voters)."""
        return self._versions[-1] if self._versions else self._base_version
