"""What the group coordinator keeps in ``__consumer_offsets`` (Kafka's ``OffsetMetadataManager`` and the
storing and loading parts of ``GroupMetadataManager`` for classic groups), as a part of
:class:`~kraftlog.broker.group_coordinator.GroupCoordinator`:

* OffsetCommit writes one OffsetCommitKey/OffsetCommitValue record per partition and is answered when the HWM
  passes them; OffsetFetch reads the offsets at the HWM;
* a group's membership is stored as a GroupMetadataValue when its leader's SyncGroup assigns (the SyncGroups
  are answered once it is committed) and when it becomes Empty; a loaded group comes back Stable with its
  members, generation and assignment (its members' sessions restart), or Empty;
* DeleteGroups and OffsetDelete write tombstones and answer once they are committed; the offsets of deleted
  topics are tombstoned (``onPartitionsDeleted``); every ``offsets.retention.check.interval.ms`` the offsets of
  groups without members that are older than ``offsets.retention.minutes`` are tombstoned, and an Empty group
  left without offsets is deleted (``cleanupGroupMetadata``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Message
from .coordinator_runtime import (
    CoordinatorRuntime,
    GroupRecord,
    group_record,
    group_tombstone,
    offset_record,
    offset_tombstone,
)
from .group_metadata import (
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
    GroupMetadata,
    GroupTimers,
    MemberMetadata,
)
from .group_records import GroupMember, GroupValue, OffsetValue

T = TypeVar("T")
#: ``on_done(now_ms, error)`` of a write.
Done = Callable[[int, int], None]


def _ignore(now_ms: int, error: int) -> None:
    """A write nobody waits for (tombstones of deleted topics, expiry, an Empty group's record)."""


class GroupStorage(Generic[T]):
    """The storage half of the group coordinator (see the module doc); the coordinator supplies
    ``runtime``, ``_groups``, ``timers``, ``_respond``, ``_add_member`` and ``_schedule_heartbeat``."""

    runtime: CoordinatorRuntime
    _groups: dict[str, GroupMetadata[T]]
    timers: GroupTimers
    retention_ms: int
    retention_check_ms: int
    next_expiry_ms: int | None

    def _respond(self, token: T, response: Message) -> None:  # pragma: no cover - the coordinator's
        raise NotImplementedError

    def _add_member(self, group: GroupMetadata[T], member: MemberMetadata[T]) -> None:  # pragma: no cover
        raise NotImplementedError

    def _schedule_heartbeat(self, now_ms: int, group: GroupMetadata[T], member: MemberMetadata[T],
                            timeout_ms: int | None = None) -> None:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ offsets
    @staticmethod
    def _commit_error(req: m.OffsetCommitRequest, error: int) -> m.OffsetCommitResponse:
        return m.OffsetCommitResponse(tuple(m.OffsetCommitPartitionResponse(p.topic, p.partition, error)
                                            for p in req.partitions))

    def _offset_commit(self, now_ms: int, token: T, req: m.OffsetCommitRequest) -> None:
        """``GroupCoordinator.handleCommitOffsets`` / ``validateOffsetCommit`` / ``doCommitOffsets``.

        A commit with generation < 0 and no member id or instance id (a consumer using ``assign()``, or
        the admin client) is stored when the group has no members (Empty, or unknown: then an Empty
        group is created), else UNKNOWN_MEMBER_ID. Otherwise the committer must be a current member
        (UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID) of the current generation (ILLEGAL_GENERATION; also for
        an unknown group); during CompletingRebalance the answer is REBALANCE_IN_PROGRESS; in Stable and
        PreparingRebalance the commit restarts the member's session and is stored. Errors are per
        partition. Stored: answered once its records are committed (:meth:`_store_offsets`)."""
        group = self._groups.get(req.group_id)
        generation = req.generation_id_or_member_epoch
        if group is None:
            if generation >= 0:
                self._respond(token, self._commit_error(req, Errors.ILLEGAL_GENERATION))
                return
            group = self._groups[req.group_id] = GroupMetadata(req.group_id)
        error = None
        if generation < 0 and group.state == EMPTY:
            pass
        elif generation >= 0 or req.member_id != "" or req.group_instance_id is not None:
            error = group.validate_current_member(req.member_id, req.group_instance_id)
            if error is None and generation != group.generation_id:
                error = Errors.ILLEGAL_GENERATION
        elif group.state != EMPTY:
            error = Errors.UNKNOWN_MEMBER_ID
        if error is None and group.state == COMPLETING_REBALANCE:
            error = Errors.REBALANCE_IN_PROGRESS
        if error is not None:
            self._respond(token, self._commit_error(req, error))
            return
        if group.state in (STABLE, PREPARING_REBALANCE):
            self._schedule_heartbeat(now_ms, group, group.members[req.member_id])
        self._store_offsets(now_ms, token, req)

    def _store_offsets(self, now_ms: int, token: T, req: m.OffsetCommitRequest) -> None:
        """Write the commit's records (``OffsetMetadataManager.commitOffset``: commit timestamp ``now_ms``, a
        null metadata stored as ""), answered NONE per partition once committed, else the write's error."""
        records = [offset_record(req.group_id, p.topic, p.partition, OffsetValue(
            p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now_ms))
            for p in req.partitions]
        self.runtime.write(now_ms, req.group_id, records,
                           lambda now, error: self._respond(token, self._commit_error(req, error)))

    def fetch_offsets(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        """OffsetFetch at the HWM (no membership check, as Kafka's ``handleFetchOffsets``)."""
        return self.runtime.fetch(req)

    def delete_offsets(self, now_ms: int, group_id: str, keys: Iterable[tuple[str, int]], on_done: Done) -> None:
        """OffsetDelete (KIP-496): a tombstone per committed (topic, partition) of ``keys``."""
        committed = self.runtime.latest_offset_keys(group_id)
        records = [offset_tombstone(group_id, t, p) for t, p in sorted(set(keys) & committed)]
        self.runtime.write(now_ms, group_id, records, on_done)

    def on_topics_deleted(self, now_ms: int, topics: Iterable[str]) -> None:
        """Tombstone every committed offset of the deleted ``topics`` in the groups loaded here (Kafka's
        ``GroupCoordinator.onPartitionsDeleted``, called by the metadata publisher)."""
        gone = set(topics)
        for group_id, keys in self.runtime.all_offset_keys().items():
            records = [offset_tombstone(group_id, t, p) for t, p in sorted(keys) if t in gone]
            if records:
                self.runtime.write(now_ms, group_id, records, _ignore)

    # ------------------------------------------------------------------ groups
    @staticmethod
    def group_value(group: GroupMetadata[T]) -> GroupValue:
        """The GroupMetadataValue of ``group`` (``ClassicGroup`` to ``GroupMetadataValue``): each member's
        subscription for the chosen protocol and its assignment."""
        protocol = group.protocol_name
        members = tuple(GroupMember(
            mb.member_id, mb.group_instance_id, mb.client_id, mb.client_host, mb.rebalance_timeout_ms,
            mb.session_timeout_ms, dict(mb.protocols).get(protocol, b"") if protocol else b"", bytes(mb.assignment))
            for mb in group.members.values())
        return GroupValue(group.protocol_type or "", group.generation_id, protocol, group.leader,
                          group.state_timestamp, members)

    def _store_group(self, now_ms: int, group: GroupMetadata[T], on_done: Done = _ignore) -> None:
        self.runtime.write(now_ms, group.group_id, [group_record(group.group_id, self.group_value(group))],
                           on_done)

    def load_groups(self, now_ms: int, stored: dict[str, GroupValue]) -> None:
        """A shard was loaded: each stored group not already held comes back (``GroupMetadataManager.replay``
        and ``onLoaded``): Stable with its members, generation, protocol, leader and assignments (each
        member's session starts now), or Empty without members."""
        for group_id in sorted(stored):
            if group_id in self._groups:
                continue
            value = stored[group_id]
            group: GroupMetadata[T] = GroupMetadata(group_id)
            group.generation_id = value.generation
            group.protocol_type = value.protocol_type or None
            group.protocol_name = value.protocol
            group.state_timestamp = value.current_state_timestamp
            for mv in value.members:
                mb: MemberMetadata[T] = MemberMetadata(
                    mv.member_id, mv.group_instance_id, mv.client_id, mv.rebalance_timeout_ms,
                    mv.session_timeout_ms, value.protocol_type, ((value.protocol or "", mv.subscription),))
                mb.assignment = mv.assignment
                mb.client_host = mv.client_host
                self._add_member(group, mb)
            group.leader = value.leader if value.leader in group.members else next(iter(group.members), None)
            group.state = STABLE if group.members else EMPTY
            self._groups[group_id] = group
            for mb in group.members.values():
                self._schedule_heartbeat(now_ms, group, mb)
        if self.next_expiry_ms is None:
            self.next_expiry_ms = now_ms + self.retention_check_ms

    def delete_group(self, now_ms: int, group_id: str, on_done: Done) -> None:
        """DeleteGroups for ``group_id`` (``GroupMetadataManager.deleteGroup``): NON_EMPTY_GROUP while it has
        members; GROUP_ID_NOT_FOUND for a group neither in memory nor stored; otherwise the group is forgotten
        and tombstones for its offsets and its metadata are written, ``on_done`` once they are committed."""
        group = self._groups.get(group_id)
        if group is not None and group.members:
            on_done(now_ms, Errors.NON_EMPTY_GROUP)
            return
        if group is None and not self.runtime.known(group_id):
            on_done(now_ms, Errors.GROUP_ID_NOT_FOUND)
            return
        if group is not None:
            group.state = DEAD
            del self._groups[group_id]
            self.timers.drop_groups({group_id})
        records: list[GroupRecord] = [offset_tombstone(group_id, t, p)
                                      for t, p in sorted(self.runtime.latest_offset_keys(group_id))]
        records.append(group_tombstone(group_id))
        self.runtime.write(now_ms, group_id, records, on_done)

    def expire_offsets(self, now_ms: int) -> None:
        """``OffsetMetadataManager.cleanupExpiredOffsets`` for classic groups: in a group without members, an
        offset expires ``offsets.retention.minutes`` after the group became Empty (a group with a protocol
        type) or after its commit (a group only committing offsets); a group left Empty with no offset is
        deleted with a tombstone (``GroupMetadataManager.cleanupGroupMetadata``)."""
        self.next_expiry_ms = now_ms + self.retention_check_ms
        for group_id, keys in self.runtime.all_offset_keys().items():
            group = self._groups.get(group_id)
            if group is not None and group.members:
                continue
            committed = self.runtime.committed(group_id)
            base_state = group.state_timestamp if group is not None and group.protocol_type else -1
            expired = []
            for key in sorted(keys):
                value = committed.get(key)
                if value is None:
                    continue  # above the HWM: not yet committed
                base = base_state if base_state >= 0 else value.commit_timestamp
                if now_ms - base >= self.retention_ms:
                    expired.append(key)
            records = [offset_tombstone(group_id, t, p) for t, p in expired]
            if len(expired) == len(keys) and (group is None or group.state == EMPTY):
                records.append(group_tombstone(group_id))
                if group is not None:
                    group.state = DEAD
                    del self._groups[group_id]
                    self.timers.drop_groups({group_id})
            if records:
                self.runtime.write(now_ms, group_id, records, _ignore)
