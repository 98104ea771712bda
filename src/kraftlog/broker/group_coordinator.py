"""The group coordinator: Kafka's classic consumer-group protocol, stored in ``__consumer_offsets``.

Which broker coordinates a group: the leader of its ``__consumer_offsets`` partition
(``kafka_abs(groupId.hashCode) % offsets.topic.num.partitions``; :func:`coordinator_for`), once that broker has
loaded the partition (:mod:`kraftlog.broker.coordinator_runtime`). Committed offsets and group metadata are
records of that partition, written through the replication path and answered once the HWM passes them
(:mod:`kraftlog.broker.group_storage`).

Group membership (:class:`GroupCoordinator`) follows Kafka's classic protocol (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup; ``kafka.coordinator.group.GroupCoordinator`` / ``GroupMetadata`` of Kafka 3.x,
which Kafka 4.x's ``GroupMetadataManager.classicGroup*`` keeps), sans-I/O: time comes in as int ms,
randomness (member ids) from an injected ``random.Random``, and the requests Kafka parks in its join
and sync purgatories (and the writes it awaits) come back later through :meth:`GroupCoordinator.take_responses`.
A group's membership is stored when its leader assigns and when it becomes Empty: a coordinator that loads the
partition takes the group over Stable, with its members, generation and assignment (no forced rebalance).
One group's state: :mod:`kraftlog.broker.group_metadata`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from random import Random
from typing import ClassVar, Generic, TypeAlias, TypeVar

from ..metadata import config as _config
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Message
from .coordinator_runtime import CoordinatorRuntime
from .group_metadata import (
    CAN_REBALANCE,
    COMPLETING_REBALANCE,
    DEAD,
    EMPTY,
    GROUP_CONFIGS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    PREPARING_REBALANCE,
    STABLE,
    GroupMetadata,
    GroupSummary,
    GroupTimers,
    MemberMetadata,
    Protocols,
    coordinator_for,
    group_config,
    java_string_hash,
    join_error,
    protocols_of,
)
from .group_storage import GroupStorage

__all__ = [  # what callers import from here
    "GroupCoordinator", "coordinator_for", "java_string_hash",
    "GroupSummary", "GROUP_CONFIGS", "group_config", "NEW_MEMBER_JOIN_TIMEOUT_MS", "EMPTY", "PREPARING_REBALANCE",
    "COMPLETING_REBALANCE", "STABLE", "DEAD",
]

T = TypeVar("T")
#: The requests the group coordinator handles.
GroupRequest: TypeAlias = (m.JoinGroupRequest | m.SyncGroupRequest | m.HeartbeatRequest | m.LeaveGroupRequest
                           | m.OffsetCommitRequest | m.OffsetFetchRequest)

# timer kinds (the first element of a timer key)
_JOIN = "join"  # (kind, group): DelayedJoin / InitialDelayedJoin of a group in PreparingRebalance
_SYNC = "sync"  # (kind, group): DelayedSync (KAFKA-13213) after a join completed
_HEARTBEAT = "heartbeat"  # (kind, group, member): DelayedHeartbeat, the member's session
_PENDING = "pending"  # (kind, group, member id): DelayedHeartbeat(isPending) of a KIP-394 pending member


class GroupCoordinator(GroupStorage[T], Generic[T]):
    """Kafka's classic consumer-group coordinator (``kafka.coordinator.group.GroupCoordinator``), sans-I/O.

    Driver interface (the broker's):

    * ``handle(now_ms, token, client_id, request, version=None) -> response | None`` for JoinGroup,
      SyncGroup, Heartbeat, LeaveGroup, OffsetCommit and OffsetFetch requests (``kraftlog.protocol.
      messages``). ``token`` is opaque (the request envelope) and comes back with a parked response;
      ``client_id`` is the request header's client id (new member ids are ``f"{client_id}-{uuid}"``);
      ``version`` is the request's API version (default: the message class's ``VERSION``). Returns the
      response, or None when the request is parked: a JoinGroup waiting for the rebalance to complete,
      a SyncGroup waiting for the leader's assignment.
    * ``take_responses() -> [(token, response), ...]``: the parked requests answered since the last call,
      oldest first.
    * ``tick(now_ms)`` once ``now_ms >= next_deadline()``: session expiry, rebalance and sync timeouts,
      the initial rebalance delay. ``next_deadline() -> ms | None``.
    * ``resign(now_ms, group_ids=None)``: this broker no longer coordinates the groups (all when None):
      their parked requests are answered NOT_COORDINATOR and their membership is dropped (it is stored).
    * ``runtime``: the ``__consumer_offsets`` shards (:class:`CoordinatorRuntime`); its loads and unloads call
      :meth:`load_groups` and :meth:`resign` (the broker wires them).

    The caller checks that this broker coordinates the group (``runtime.status``) before ``handle``:
    Kafka's NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS are the caller's.

    Configs (``config``, by Kafka name, Kafka's defaults): ``group.min.session.timeout.ms``,
    ``group.max.session.timeout.ms``, ``group.initial.rebalance.delay.ms``, ``group.max.size``,
    ``offsets.retention.minutes``, ``offsets.retention.check.interval.ms``.
    """

    #: The API versions whose semantics ``handle`` applies by default (the message classes' ``VERSION``).
    VERSION: ClassVar[dict[type[GroupRequest], int]] = {
        m.JoinGroupRequest: m.JoinGroupRequest.VERSION,
        m.SyncGroupRequest: m.SyncGroupRequest.VERSION,
        m.HeartbeatRequest: m.HeartbeatRequest.VERSION,
        m.LeaveGroupRequest: m.LeaveGroupRequest.VERSION,
        m.OffsetCommitRequest: m.OffsetCommitRequest.VERSION,
        m.OffsetFetchRequest: m.OffsetFetchRequest.VERSION,
    }

    def __init__(self, runtime: CoordinatorRuntime, config: dict[str, str] | None, rng: Random) -> None:
        self.runtime = runtime
        self.rng = rng
        self.retention_ms = int(_config.lookup("offsets.retention.minutes", config)) * 60_000
        self.retention_check_ms = int(_config.lookup("offsets.retention.check.interval.ms", config))
        self.next_expiry_ms: int | None = None
        self._joining_host = ""  # the address of the JoinGroup being handled (a new member's client host)
        self.min_session_timeout_ms = group_config("group.min.session.timeout.ms", config)
        self.max_session_timeout_ms = group_config("group.max.session.timeout.ms", config)
        self.initial_rebalance_delay_ms = group_config("group.initial.rebalance.delay.ms", config)
        self.max_size = group_config("group.max.size", config)
        self._groups: dict[str, GroupMetadata[T]] = {}
        self._responses: list[tuple[T, Message]] = []
        self.timers = GroupTimers()

    # ================================================================== driver interface
    def handle(self, now_ms: int, token: T, client_id: str, request: GroupRequest,
               version: int | None = None, client_host: str = "") -> Message | None:
        """Handle one group request at ``now_ms``; the response, or None if parked (see the class doc).
        ``client_host``: the address the request came from (a joining member's, stored with the group).
        Raises TypeError for another request."""
        kind = type(request)
        if kind not in self.VERSION:
            raise TypeError(f"not a group request: {kind.__name__}")
        if version is None:
            version = self.VERSION[kind]
        if isinstance(request, m.OffsetFetchRequest):
            return self.fetch_offsets(request)  # GroupCoordinator.handleFetchOffsets: no membership check
        if isinstance(request, m.HeartbeatRequest):
            return self._heartbeat(now_ms, request)
        if isinstance(request, m.LeaveGroupRequest):
            return self._leave_group(now_ms, request, version)
        start = len(self._responses)
        if isinstance(request, m.OffsetCommitRequest):
            self._offset_commit(now_ms, token, request)
        elif isinstance(request, m.JoinGroupRequest):
            self._joining_host = client_host
            self._join_group(now_ms, token, client_id or "", request, version)
        else:
            self._sync_group(now_ms, token, request, version)
        # answered during this call (an error, or a rebalance it completed): hand it back directly
        for i in range(start, len(self._responses)):
            if self._responses[i][0] is token:
                return self._responses.pop(i)[1]
        return None

    def take_responses(self) -> list[tuple[T, Message]]:
        """``[(token, response), ...]`` for parked requests answered since the last call, oldest first."""
        out = self._responses
        self._responses = []
        return out

    def next_deadline(self) -> int | None:
        """The earliest time (ms) at which :meth:`tick` has a timer to fire, None when none is set."""
        d = self.timers.next_deadline()
        for other in (self.next_expiry_ms, self.runtime.next_deadline()):
            if other is not None and (d is None or other < d):
                d = other
        return d

    def tick(self, now_ms: int) -> None:
        """Fire every timer due at ``now_ms`` (deadline <= now_ms), in deadline order (ties: the order
        they were set); shards waiting to load; writes past ``offsets.commit.timeout.ms``; the offsets'
        expiry. OSError from a shard's load (the caller's directory goes offline)."""
        if self.runtime.loading:
            self.runtime.load_pending(now_ms)
        self.runtime.tick(now_ms)
        if self.next_expiry_ms is not None and now_ms >= self.next_expiry_ms:
            self.expire_offsets(now_ms)
        while (key := self.timers.pop_due(now_ms)) is not None:
            group = self._groups.get(key[1])
            if group is None:  # pragma: no cover - timers are cancelled with their group
                continue
            if key[0] == _HEARTBEAT:
                self._on_expire_heartbeat(now_ms, group, key[2])
            elif key[0] == _PENDING:
                self._on_expire_pending_member(now_ms, group, key[2])
            elif key[0] == _JOIN:
                self._on_expire_join(now_ms, group)
            else:
                self._on_expire_pending_sync(now_ms, group)

    def resign(self, now_ms: int, group_ids: Iterable[str] | None = None) -> None:
        """Stop coordinating ``group_ids`` (every group when None): ``GroupCoordinator.onGroupUnloaded``.
        A group in PreparingRebalance answers its parked JoinGroups NOT_COORDINATOR, one in
        CompletingRebalance or Stable its parked SyncGroups; then the group is Dead and forgotten (its
        timers with it). What is stored stays in ``__consumer_offsets``."""
        ids = list(self._groups) if group_ids is None else [g for g in group_ids if g in self._groups]
        for gid in ids:
            group = self._groups.pop(gid)
            previous = group.state
            group.state = DEAD
            for mb in group.members.values():
                if previous == PREPARING_REBALANCE and mb.awaiting_join:
                    self._answer_join(mb, join_error(mb.member_id, Errors.NOT_COORDINATOR))
                elif previous in (STABLE, COMPLETING_REBALANCE) and mb.awaiting_sync:
                    self._answer_sync(mb, m.SyncGroupResponse(Errors.NOT_COORDINATOR))
        if group_ids is None:
            self.timers.clear()
        else:
            self.timers.drop_groups(set(ids))

    @property
    def busy(self) -> bool:
        """Whether the coordinator holds a group, a loaded shard or an unsent response (the broker skips it
        otherwise: most simulated brokers never coordinate a group)."""
        return bool(self._groups or self._responses or self.runtime.shards)

    def groups(self) -> list[str]:
        """The ids of the groups this coordinator holds (in creation order)."""
        return list(self._groups)

    def describe(self, group_id: str) -> GroupSummary | None:
        """A snapshot of ``group_id``, None when this coordinator holds no such group."""
        group = self._groups.get(group_id)
        return None if group is None else group.summary()

    # ======================================================================= timers
    def _schedule_heartbeat(self, now_ms: int, group: GroupMetadata[T], member: MemberMetadata[T],
                            timeout_ms: int | None = None) -> None:
        """``GroupCoordinator.completeAndScheduleNextExpiration``: the member's session restarts, expiring
        ``timeout_ms`` (default: its session timeout) from now. A member (not new) with a JoinGroup or
        SyncGroup parked satisfies its heartbeat (``MemberMetadata.hasSatisfiedHeartbeat``), so Kafka's
        expiration would do nothing: no timer is set; it is set again when the parked request is answered."""
        key = (_HEARTBEAT, group.group_id, member.member_id)
        if not member.is_new and (member.awaiting_join or member.awaiting_sync):
            self.timers.cancel(key)
        else:
            self.timers.schedule(key, now_ms + (member.session_timeout_ms if timeout_ms is None else timeout_ms))

    # ================================================================= answering parked requests
    def _respond(self, token: T, response: Message) -> None:
        self._responses.append((token, response))

    def _answer_join(self, member: MemberMetadata[T], response: m.JoinGroupResponse) -> None:
        """``GroupMetadata.maybeInvokeJoinCallback``."""
        if member.awaiting_join:
            token = member.join_token
            assert token is not None  # a parked JoinGroup keeps its token
            member.awaiting_join = False
            member.join_token = None
            self._respond(token, response)

    def _answer_sync(self, member: MemberMetadata[T], response: m.SyncGroupResponse) -> bool:
        """``GroupMetadata.maybeInvokeSyncCallback``: True when a SyncGroup was parked."""
        if not member.awaiting_sync:
            return False
        token = member.sync_token
        assert token is not None  # a parked SyncGroup keeps its token
        member.awaiting_sync = False
        member.sync_token = None
        self._respond(token, response)
        return True

    # ======================================================================= membership
    def _add_member(self, group: GroupMetadata[T], member: MemberMetadata[T]) -> None:
        """``GroupMetadata.add``: the first member sets the group's protocol type; the leader is the first
        member; the member is no longer pending."""
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        if not group.members:
            group.protocol_type = member.protocol_type
        if group.leader is None:
            group.leader = member.member_id
        group.members[member.member_id] = member
        member.client_host = member.client_host or self._joining_host
        group.count_protocols(member, 1)
        group.pending_members.pop(member.member_id, None)
        self.timers.cancel((_PENDING, group.group_id, member.member_id))

    def _remove(self, group: GroupMetadata[T], member_id: str) -> None:
        """``GroupMetadata.remove`` (and the end of the member's heartbeat): a removed leader is replaced
        by the first remaining member."""
        member = group.members.pop(member_id, None)
        if member is not None:
            group.count_protocols(member, -1)
            if member.group_instance_id is not None:
                group.static_members.pop(member.group_instance_id, None)
            self.timers.cancel((_HEARTBEAT, group.group_id, member_id))
        if group.leader == member_id:
            group.leader = next(iter(group.members), None)
        if member_id in group.pending_members:
            del group.pending_members[member_id]
            self.timers.cancel((_PENDING, group.group_id, member_id))
        self._remove_pending_sync(group, member_id)

    def _update_member(self, now_ms: int, group: GroupMetadata[T], member: MemberMetadata[T], protocols: Protocols,
                       rebalance_timeout_ms: int,
                       session_timeout_ms: int, token: T) -> None:
        """``GroupMetadata.updateMember``: new protocols and timeouts; the JoinGroup is parked."""
        group.count_protocols(member, -1)
        member.protocols = protocols
        group.count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = True
        member.join_token = token
        self._schedule_heartbeat(now_ms, group, member)  # parked: satisfied (unless new)

    def _new_member_id(self, prefix: str) -> str:
        """``GroupMetadata.generateMemberId``: ``f"{client id or group.instance.id}-{uuid4}"``, the uuid
        drawn from the injected rng."""
        return f"{prefix}-{uuid.UUID(int=self.rng.getrandbits(128), version=4)}"

    # ======================================================================= JoinGroup
    def _join_group(self, now_ms: int, token: T, client_id: str, req: m.JoinGroupRequest, version: int) -> None:
        """``GroupCoordinator.handleJoinGroup`` (and ``KafkaApis.handleJoinGroupRequest``'s version rules:
        v0 has no rebalance timeout, so the session timeout is used; MEMBER_ID_REQUIRED only from v4).

        Order of checks: empty group id → INVALID_GROUP_ID; session timeout outside
        [group.min.session.timeout.ms, group.max.session.timeout.ms] → INVALID_SESSION_TIMEOUT; a member
        id for a group this coordinator does not hold → UNKNOWN_MEMBER_ID; group full
        (``acceptJoiningMember``) → GROUP_MAX_SIZE_REACHED; then a new member (empty member id) or a
        current one."""
        member_id = req.member_id
        if not req.group_id:
            self._respond(token, join_error(member_id, Errors.INVALID_GROUP_ID))
            return
        session = req.session_timeout_ms
        if session < self.min_session_timeout_ms or session > self.max_session_timeout_ms:
            self._respond(token, join_error(member_id, Errors.INVALID_SESSION_TIMEOUT))
            return
        rebalance = req.rebalance_timeout_ms if version >= 1 and req.rebalance_timeout_ms >= 0 else session
        protocols = protocols_of(req)
        is_unknown = member_id == ""
        group = self._groups.get(req.group_id)
        if group is None:
            if not is_unknown:  # GroupMetadataManager.getOrMaybeCreateGroup
                self._respond(token, join_error(member_id, Errors.UNKNOWN_MEMBER_ID))
                return
            group = self._groups[req.group_id] = GroupMetadata(req.group_id)
        if not self._accept_joining_member(group, member_id):
            self._remove(group, member_id)
            self._respond(token, join_error("", Errors.GROUP_MAX_SIZE_REACHED))
        elif is_unknown:
            self._join_new_member(now_ms, token, client_id, group, req, version, protocols, rebalance)
        else:
            self._join_current_member(now_ms, token, client_id, group, req, protocols, rebalance)
        if group.state == PREPARING_REBALANCE:
            self._try_complete_join(now_ms, group)

    def _accept_joining_member(self, group: GroupMetadata[T], member_id: str) -> bool:
        """``GroupCoordinator.acceptJoiningMember`` (group.max.size): Empty accepts all; PreparingRebalance
        a member already rejoined, or anyone while fewer than max have rejoined; CompletingRebalance and
        Stable a current member, or anyone while the group is smaller than max."""
        if group.state in (EMPTY, DEAD):
            return True
        member = group.members.get(member_id)
        if group.state == PREPARING_REBALANCE:
            awaiting = sum(1 for mb in group.members.values() if mb.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < self.max_size
        return member is not None or len(group.members) < self.max_size

    def _join_new_member(self, now_ms: int, token: T, client_id: str, group: GroupMetadata[T], req: m.JoinGroupRequest,
                         version: int, protocols: Protocols, rebalance: int) -> None:
        """``GroupCoordinator.doNewMemberJoinGroup``: a static member (group.instance.id) joins at once; a
        dynamic one from JoinGroup v4+ (KIP-394) gets MEMBER_ID_REQUIRED with its new id, remembered as
        pending for a session timeout (``doDynamicNewMemberJoinGroup``); before v4 it joins at once."""
        names = [name for name, _ in protocols]
        if group.state == DEAD:  # pragma: no cover - a Dead group is never held
            self._respond(token, join_error("", Errors.COORDINATOR_NOT_AVAILABLE))
        elif not group.supports_protocols(req.protocol_type, names):
            self._respond(token, join_error("", Errors.INCONSISTENT_GROUP_PROTOCOL))
        elif req.group_instance_id is not None:
            new_id = self._new_member_id(req.group_instance_id)
            old_id = group.static_members.get(req.group_instance_id)
            if old_id is None:
                self._add_member_and_rebalance(now_ms, token, group, new_id, req, client_id, protocols, rebalance)
            else:
                self._update_static_member_and_rebalance(now_ms, token, group, old_id, new_id, req, protocols,
                                                         rebalance, version)
        elif version >= 4:
            new_id = self._new_member_id(client_id)
            group.pending_members[new_id] = None
            self.timers.schedule((_PENDING, group.group_id, new_id), now_ms + req.session_timeout_ms)
            self._respond(token, join_error(new_id, Errors.MEMBER_ID_REQUIRED))
        else:
            new_id = self._new_member_id(client_id)
            self._add_member_and_rebalance(now_ms, token, group, new_id, req, client_id, protocols, rebalance)

    def _join_current_member(self, now_ms: int, token: T, client_id: str, group: GroupMetadata[T],
                             req: m.JoinGroupRequest, protocols: Protocols, rebalance: int) -> None:
        """``GroupCoordinator.doCurrentMemberJoinGroup``: a pending member (KIP-394) is added; a current
        member rejoins: in PreparingRebalance it is counted as joined; in CompletingRebalance, with
        unchanged protocols, it gets the current generation again (the leader with the member list), else
        a rebalance starts; in Stable the leader or a member with changed protocols starts a rebalance
        and any other member gets the current generation; an Empty group does not know it."""
        member_id = req.member_id
        names = [name for name, _ in protocols]
        if group.state == DEAD:  # pragma: no cover - a Dead group is never held
            self._respond(token, join_error(member_id, Errors.COORDINATOR_NOT_AVAILABLE))
            return
        if not group.supports_protocols(req.protocol_type, names):
            self._respond(token, join_error(member_id, Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:  # Kafka: IllegalStateException
                self._respond(token, join_error(member_id, Errors.UNKNOWN_SERVER_ERROR))
                return
            self._add_member_and_rebalance(now_ms, token, group, member_id, req, client_id, protocols, rebalance)
            return
        error = group.validate_current_member(member_id, req.group_instance_id)
        if error is not None:
            self._respond(token, join_error(member_id, error))
            return
        member = group.members[member_id]
        state = group.state
        if state == PREPARING_REBALANCE:
            self._update_member_and_rebalance(now_ms, token, group, member, protocols, rebalance, req)
        elif state == COMPLETING_REBALANCE:
            if member.protocols == protocols:
                # the member missed its JoinGroup response: the current generation again
                leader = group.leader == member_id
                self._respond(token, group.join_result(member_id, with_members=leader))
            else:
                self._update_member_and_rebalance(now_ms, token, group, member, protocols, rebalance, req)
        elif state == STABLE:
            if group.leader == member_id or member.protocols != protocols:
                # the leader rejoins to rebalance on changes its metadata does not show (topic metadata)
                self._update_member_and_rebalance(now_ms, token, group, member, protocols, rebalance, req)
            else:
                self._respond(token, group.join_result(member_id, with_members=False))
        else:  # pragma: no cover - Empty holds no member to validate ("Group reaches unexpected state")
            self._respond(token, join_error(member_id, Errors.UNKNOWN_MEMBER_ID))

    def _add_member_and_rebalance(self, now_ms: int, token: T, group: GroupMetadata[T], member_id: str,
                                  req: m.JoinGroupRequest, client_id: str, protocols: Protocols,
                                  rebalance: int) -> None:
        """``GroupCoordinator.addMemberAndRebalance``: the member joins with its JoinGroup parked; while it
        is new its session is ``NEW_MEMBER_JOIN_TIMEOUT_MS``; a join during the first rebalance
        (generation 0) extends the initial delay (``newMemberAdded``)."""
        member: MemberMetadata[T] = MemberMetadata(member_id, req.group_instance_id, client_id, rebalance,
                                                   req.session_timeout_ms, req.protocol_type, protocols)
        member.is_new = True
        if group.state == PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        self._add_member(group, member)
        member.awaiting_join = True
        member.join_token = token
        self._schedule_heartbeat(now_ms, group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(now_ms, group)

    def _update_member_and_rebalance(self, now_ms: int, token: T, group: GroupMetadata[T], member: MemberMetadata[T],
                                     protocols: Protocols, rebalance: int, req: m.JoinGroupRequest) -> None:
        """``GroupCoordinator.updateMemberAndRebalance``."""
        self._update_member(now_ms, group, member, protocols, rebalance, req.session_timeout_ms, token)
        self._maybe_prepare_rebalance(now_ms, group)

    def _update_static_member_and_rebalance(self, now_ms: int, token: T, group: GroupMetadata[T], old_id: str,
                                            new_id: str, req: m.JoinGroupRequest, protocols: Protocols, rebalance: int,
                                            version: int) -> None:
        """``GroupCoordinator.updateStaticMemberAndRebalance`` (KIP-345): a known group.instance.id rejoins
        with an empty member id. The old member id is replaced by ``new_id`` (a request parked under the
        old id is answered FENCED_INSTANCE_ID, ``GroupMetadata.replaceStaticMember``). In Stable, if the
        group's protocol would not change, the member gets the current generation without a rebalance
        (from JoinGroup v9 a leader is told so by ``skip_assignment``; before, the old leader id is
        returned so it does not assign); otherwise, and in CompletingRebalance, a rebalance starts.

        The member keeps its place in join order, and a SyncGroup still owed under the old id is owed
        under the new one (Kafka leaves the old id among the pending-sync members)."""
        current_leader = group.leader
        member = group.members[old_id]
        self.timers.cancel((_HEARTBEAT, group.group_id, old_id))
        self._answer_join(member, join_error(old_id, Errors.FENCED_INSTANCE_ID))
        self._answer_sync(member, m.SyncGroupResponse(Errors.FENCED_INSTANCE_ID))
        member.member_id = new_id
        group.members = {(new_id if mid == old_id else mid): mb for mid, mb in group.members.items()}
        if group.leader == old_id:
            group.leader = new_id
        assert req.group_instance_id is not None  # a static member rejoins
        group.static_members[req.group_instance_id] = new_id
        if old_id in group.pending_sync:
            group.pending_sync = {(new_id if mid == old_id else mid): None for mid in group.pending_sync}
        self._schedule_heartbeat(now_ms, group, member)
        self._update_member(now_ms, group, member, protocols, rebalance, req.session_timeout_ms, token)
        if group.state == STABLE:
            if group.protocol_name == group.select_protocol():
                if version >= 9:
                    is_leader = group.leader == new_id
                    response = group.join_result(new_id, with_members=is_leader, skip_assignment=is_leader)
                else:
                    response = group.join_result(new_id, with_members=False, leader=current_leader)
                self._answer_join(member, response)
                self._schedule_heartbeat(now_ms, group, member)
            else:
                self._maybe_prepare_rebalance(now_ms, group)
        elif group.state == COMPLETING_REBALANCE:
            self._prepare_rebalance(now_ms, group)
        # PreparingRebalance: the member is counted as joined; Empty cannot hold a static member

    # ===================================================================== rebalance
    def _maybe_prepare_rebalance(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.maybePrepareRebalance``: only from Stable, CompletingRebalance or Empty."""
        if group.state in CAN_REBALANCE:
            self._prepare_rebalance(now_ms, group)

    def _prepare_rebalance(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.prepareRebalance``: parked SyncGroups are answered REBALANCE_IN_PROGRESS
        (``resetAndPropagateAssignmentError``), the sync expiration is cancelled, and the group enters
        PreparingRebalance with a join timer: from Empty Kafka's ``InitialDelayedJoin``
        (group.initial.rebalance.delay.ms, extended by later joins up to the rebalance timeout), otherwise
        a ``DelayedJoin`` of the group's rebalance timeout, which completes as soon as every member has
        rejoined (``tryCompleteElseWatch``)."""
        if group.state == COMPLETING_REBALANCE:
            for mb in group.members.values():
                mb.assignment = b""
            self._propagate_assignment(now_ms, group, Errors.REBALANCE_IN_PROGRESS)
        self._clear_pending_sync(group)
        key = (_JOIN, group.group_id)
        if group.state == EMPTY:
            delay = self.initial_rebalance_delay_ms
            group.initial_join = True
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            self.timers.schedule(key, now_ms + delay)
            group.state = PREPARING_REBALANCE
        else:
            group.initial_join = False
            self.timers.schedule(key, now_ms + group.rebalance_timeout_ms())
            group.state = PREPARING_REBALANCE
            self._try_complete_join(now_ms, group)

    def _try_complete_join(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.tryCompleteJoin`` (a ``DelayedJoin``'s ``tryComplete``; an
        ``InitialDelayedJoin`` never completes early)."""
        if group.state == PREPARING_REBALANCE and not group.initial_join and group.all_joined():
            self._complete_join(now_ms, group)

    def _on_expire_join(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """The join timer fired. ``InitialDelayedJoin.onComplete``: if members joined during the delay and
        rebalance time remains, wait ``min(delay, remaining)`` more; otherwise (and for a ``DelayedJoin``)
        the join completes without the members that did not rejoin."""
        if group.initial_join and group.new_member_added and group.initial_remaining_ms != 0:
            group.new_member_added = False
            delay = min(self.initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            self.timers.schedule((_JOIN, group.group_id), now_ms + delay)
        else:
            self._complete_join(now_ms, group)

    def _complete_join(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.onCompleteJoin``: dynamic members that did not rejoin are removed; if no
        member rejoined (only static ones remain) another DelayedJoin waits; otherwise the next
        generation starts (``GroupMetadata.initNextGeneration``: generation + 1, the protocol chosen by
        vote, CompletingRebalance; Empty without members) and every parked JoinGroup is answered, the
        leader's with every member's metadata. Every member must then send SyncGroup within the
        rebalance timeout (``schedulePendingSync``)."""
        self.timers.cancel((_JOIN, group.group_id))
        group.initial_join = False
        for mb in [mb for mb in group.members.values() if not mb.awaiting_join and mb.group_instance_id is None]:
            self._remove(group, mb.member_id)
        if group.members and not group.maybe_elect_new_joined_leader():
            self.timers.schedule((_JOIN, group.group_id), now_ms + group.rebalance_timeout_ms())
            return
        group.generation_id += 1
        self._clear_pending_sync(group)
        if not group.members:
            group.protocol_name = None
            group.state = EMPTY
            group.state_timestamp = now_ms
            self._store_group(now_ms, group)  # GroupMetadataManager.completeClassicGroupJoin: an Empty group
            return
        group.protocol_name = group.select_protocol()
        group.state = COMPLETING_REBALANCE
        group.state_timestamp = now_ms
        for mb in group.members.values():
            self._answer_join(mb, group.join_result(mb.member_id, with_members=group.leader == mb.member_id))
            self._schedule_heartbeat(now_ms, group, mb)
            mb.is_new = False
            group.pending_sync[mb.member_id] = None
        group.sync_generation = group.generation_id
        self.timers.schedule((_SYNC, group.group_id), now_ms + group.rebalance_timeout_ms())

    def _remove_member_and_update_group(self, now_ms: int, group: GroupMetadata[T], member: MemberMetadata[T]) -> None:
        """``GroupCoordinator.removeMemberAndUpdateGroup``: a parked JoinGroup is answered
        UNKNOWN_MEMBER_ID (member id ""), the member removed, and the group rebalances (from Stable or
        CompletingRebalance) or checks whether its join can now complete (PreparingRebalance)."""
        self._answer_join(member, join_error("", Errors.UNKNOWN_MEMBER_ID))
        self._remove(group, member.member_id)
        if group.state in (STABLE, COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(now_ms, group)
        elif group.state == PREPARING_REBALANCE:
            self._try_complete_join(now_ms, group)

    def _remove_pending_member(self, now_ms: int, group: GroupMetadata[T], member_id: str) -> None:
        """``GroupCoordinator.removePendingMemberAndUpdateGroup``."""
        self._remove(group, member_id)
        if group.state == PREPARING_REBALANCE:
            self._try_complete_join(now_ms, group)

    def _on_expire_heartbeat(self, now_ms: int, group: GroupMetadata[T], member_id: str) -> None:
        """``GroupCoordinator.onExpireHeartbeat``: a member that neither heartbeat within its session
        timeout nor has a request parked (a new member: within ``NEW_MEMBER_JOIN_TIMEOUT_MS``) is removed
        and the group rebalances."""
        member = group.members.get(member_id)
        if member is None:  # pragma: no cover - the timer is cancelled on removal
            return
        if member.is_new or not (member.awaiting_join or member.awaiting_sync):
            self._remove_member_and_update_group(now_ms, group, member)

    def _on_expire_pending_member(self, now_ms: int, group: GroupMetadata[T], member_id: str) -> None:
        """``onExpireHeartbeat(isPending = true)``: a KIP-394 pending member that did not rejoin within
        its session timeout is forgotten (a rebalance waiting for it can complete)."""
        self._remove_pending_member(now_ms, group, member_id)

    # ========================================================================= SyncGroup
    def _clear_pending_sync(self, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.removeSyncExpiration``."""
        group.pending_sync.clear()
        self.timers.cancel((_SYNC, group.group_id))

    def _remove_pending_sync(self, group: GroupMetadata[T], member_id: str) -> None:
        """``GroupCoordinator.removePendingSyncMember``: the DelayedSync completes once all have synced."""
        if member_id in group.pending_sync:
            del group.pending_sync[member_id]
            if not group.pending_sync:
                self.timers.cancel((_SYNC, group.group_id))

    def _on_expire_pending_sync(self, now_ms: int, group: GroupMetadata[T]) -> None:
        """``GroupCoordinator.onExpirePendingSync`` (KAFKA-13213): members that have not sent SyncGroup
        within the rebalance timeout after the join completed are removed and the group rebalances."""
        if group.sync_generation != group.generation_id or group.state not in (COMPLETING_REBALANCE, STABLE):
            return  # pragma: no cover - the timer is cancelled on these transitions
        late = list(group.pending_sync)
        for member_id in late:
            self._remove(group, member_id)
        if late:
            self._prepare_rebalance(now_ms, group)

    def _propagate_assignment(self, now_ms: int, group: GroupMetadata[T], error: int) -> None:
        """``GroupCoordinator.propagateAssignment``: answer every parked SyncGroup with its member's
        assignment (or ``error``) and restart those members' sessions."""
        for mb in group.members.values():
            if error == Errors.NONE:
                response = m.SyncGroupResponse(error, mb.assignment, group.protocol_type, group.protocol_name)
            else:
                response = m.SyncGroupResponse(error, mb.assignment)
            if self._answer_sync(mb, response):
                self._schedule_heartbeat(now_ms, group, mb)

    def _sync_group(self, now_ms: int, token: T, req: m.SyncGroupRequest, version: int) -> None:
        """``GroupCoordinator.handleSyncGroup`` / ``doSyncGroup``. Errors: empty group id →
        INVALID_GROUP_ID; from v5 a missing protocol type or name → INCONSISTENT_GROUP_PROTOCOL
        (``KafkaApis``); unknown group or member → UNKNOWN_MEMBER_ID; static member fenced →
        FENCED_INSTANCE_ID; another generation → ILLEGAL_GENERATION; protocol type or name not the
        group's → INCONSISTENT_GROUP_PROTOCOL; PreparingRebalance → REBALANCE_IN_PROGRESS. In
        CompletingRebalance the request is parked; the leader's carries every member's assignment
        (members it omits get b""), whereupon every parked SyncGroup is answered and the group is Stable.
        In Stable the member's current assignment is returned."""
        if not req.group_id:
            self._respond(token, m.SyncGroupResponse(Errors.INVALID_GROUP_ID))
            return
        if version >= 5 and (req.protocol_type is None or req.protocol_name is None):
            self._respond(token, m.SyncGroupResponse(Errors.INCONSISTENT_GROUP_PROTOCOL))
            return
        group = self._groups.get(req.group_id)
        if group is None:
            self._respond(token, m.SyncGroupResponse(Errors.UNKNOWN_MEMBER_ID))
            return
        error = group.validate_current_member(req.member_id, req.group_instance_id)
        if error is None:
            if req.generation_id != group.generation_id:
                error = Errors.ILLEGAL_GENERATION
            elif req.protocol_type is not None and req.protocol_type != group.protocol_type:
                error = Errors.INCONSISTENT_GROUP_PROTOCOL
            elif req.protocol_name is not None and req.protocol_name != group.protocol_name:
                error = Errors.INCONSISTENT_GROUP_PROTOCOL
            elif group.state == EMPTY:  # pragma: no cover - an Empty group has no members to validate
                error = Errors.UNKNOWN_MEMBER_ID
            elif group.state == PREPARING_REBALANCE:
                error = Errors.REBALANCE_IN_PROGRESS
        if error is not None:
            self._respond(token, m.SyncGroupResponse(error))
            return
        member = group.members[req.member_id]
        if group.state == STABLE:
            self._remove_pending_sync(group, member.member_id)
            self._respond(token, m.SyncGroupResponse(Errors.NONE, member.assignment, group.protocol_type,
                                                     group.protocol_name))
            self._schedule_heartbeat(now_ms, group, member)
            return
        # CompletingRebalance
        member.awaiting_sync = True
        member.sync_token = token
        self._schedule_heartbeat(now_ms, group, member)  # parked: satisfied
        self._remove_pending_sync(group, member.member_id)
        if group.leader == member.member_id:
            assignment = {a.member_id: bytes(a.assignment) for a in req.assignments}
            for mb in group.members.values():
                mb.assignment = assignment.get(mb.member_id, b"")
            generation = group.generation_id

            def stored(now: int, error: int) -> None:
                # GroupMetadataManager.classicGroupSyncGroup's append future: only if nothing moved meanwhile
                if (self._groups.get(group.group_id) is not group or group.state != COMPLETING_REBALANCE
                        or group.generation_id != generation):
                    return
                if error != Errors.NONE:
                    for mb in group.members.values():
                        mb.assignment = b""
                    self._propagate_assignment(now, group, error)
                    self._maybe_prepare_rebalance(now, group)
                    return
                self._propagate_assignment(now, group, Errors.NONE)
                group.state = STABLE
                group.state_timestamp = now

            self._store_group(now_ms, group, stored)

    # ========================================================================= Heartbeat
    def _heartbeat(self, now_ms: int, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        """``GroupCoordinator.handleHeartbeat``: empty group id → INVALID_GROUP_ID; unknown group or
        member → UNKNOWN_MEMBER_ID; fenced static member → FENCED_INSTANCE_ID; another generation →
        ILLEGAL_GENERATION; else the member's session restarts and the answer is REBALANCE_IN_PROGRESS in
        PreparingRebalance (the member must rejoin), NONE in CompletingRebalance and Stable."""
        if not req.group_id:
            return m.HeartbeatResponse(Errors.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        if group is None:
            return m.HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        error = group.validate_current_member(req.member_id, req.group_instance_id)
        if error is None and req.generation_id != group.generation_id:
            error = Errors.ILLEGAL_GENERATION
        if error is not None:
            return m.HeartbeatResponse(error)
        if group.state == EMPTY:  # pragma: no cover - an Empty group has no members to validate
            return m.HeartbeatResponse(Errors.UNKNOWN_MEMBER_ID)
        self._schedule_heartbeat(now_ms, group, group.members[req.member_id])
        if group.state == PREPARING_REBALANCE:
            return m.HeartbeatResponse(Errors.REBALANCE_IN_PROGRESS)
        return m.HeartbeatResponse(Errors.NONE)

    # ======================================================================== LeaveGroup
    def _leave_group(self, now_ms: int, req: m.LeaveGroupRequest, version: int) -> m.LeaveGroupResponse:
        """``GroupCoordinator.handleLeaveGroup``: each listed member leaves (a static one may be named by
        group.instance.id alone; a KIP-394 pending member is forgotten) or gets its own error
        (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); every leave rebalances the group
        (``removeMemberAndUpdateGroup``). LeaveGroup v0-v2 carry one member and only a top-level error:
        the member's (``LeaveGroupResponse``'s constructor)."""
        if not req.group_id:
            return m.LeaveGroupResponse(Errors.INVALID_GROUP_ID)
        group = self._groups.get(req.group_id)
        results = []
        for ident in req.members:
            error: int | None
            if group is None:
                error = Errors.UNKNOWN_MEMBER_ID
            elif ident.member_id == "":
                current = group.static_members.get(ident.group_instance_id) \
                    if ident.group_instance_id is not None else None
                if current is None:
                    error = Errors.UNKNOWN_MEMBER_ID
                else:
                    self._remove_member_and_update_group(now_ms, group, group.members[current])
                    error = Errors.NONE
            elif ident.member_id in group.pending_members:
                self._remove_pending_member(now_ms, group, ident.member_id)
                error = Errors.NONE
            else:
                error = group.validate_current_member(ident.member_id, ident.group_instance_id)
                if error is None:
                    self._remove_member_and_update_group(now_ms, group, group.members[ident.member_id])
                    error = Errors.NONE
            results.append(m.LeaveGroupMemberResponse(ident.member_id, error, ident.group_instance_id))
        if version <= 2:
            top = next((r.error_code for r in results if r.error_code != Errors.NONE), Errors.NONE)
            return m.LeaveGroupResponse(top)
        return m.LeaveGroupResponse(Errors.NONE, tuple(results))
