"""The state of one classic consumer group: Kafka's ``GroupMetadata`` and ``MemberMetadata`` (membership part),
the group states, and the group coordinator's configs. The :class:`~kraftlog.broker.group_coordinator.GroupCoordinator`
drives the state machine; what reads or changes one group alone lives here.

``T`` is the type of the tokens the coordinator's caller hands in with a request (the broker: the request's
envelope), kept by a member while its JoinGroup or SyncGroup is parked.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Generic, TypeAlias, TypeVar

from ..metadata import config as _config
from ..metadata.image import MetadataImage
from ..protocol import messages as m
from ..protocol.errors import Errors

T = TypeVar("T")
#: A member's protocols, ``((name, metadata), ...)`` in its order of preference.
Protocols: TypeAlias = tuple[tuple[str, bytes], ...]

#: Kafka's ``GroupCoordinator.NewMemberJoinTimeoutMs`` (ms): how long a new member's JoinGroup may wait
#: in a rebalance before the member is dropped (its session timeout does not apply until it has joined).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

# Group states (Kafka's ``GroupState`` names, as DescribeGroups reports them).
EMPTY = "Empty"
PREPARING_REBALANCE = "PreparingRebalance"
COMPLETING_REBALANCE = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

#: Kafka's ``PreparingRebalance.validPreviousStates`` (``GroupMetadata.canRebalance``).
CAN_REBALANCE = frozenset((STABLE, COMPLETING_REBALANCE, EMPTY))

#: The group coordinator's configs (Kafka's names; defaults in ``kraftlog.metadata.config.DEFAULTS``:
#: 6000, 1800000, 3000 and Int.MaxValue, Kafka's).
GROUP_CONFIGS = ("group.min.session.timeout.ms", "group.max.session.timeout.ms",
                 "group.initial.rebalance.delay.ms", "group.max.size")


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit wrap), as Kafka uses for group ids."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


#: Kafka's ``Topic.GROUP_METADATA_TOPIC_NAME``.
OFFSETS_TOPIC = "__consumer_offsets"


def offsets_partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``Utils.abs(groupId.hashCode()) %
    numPartitions``, where ``Utils.abs(Integer.MIN_VALUE)`` is 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % max(1, num_partitions)


def offsets_partitions(image: MetadataImage, static: dict[str, str] | None = None) -> int:
    """How many partitions ``__consumer_offsets`` has in ``image``, else ``offsets.topic.num.partitions``."""
    topic = image.topics.get(OFFSETS_TOPIC)
    return topic.partition_count if topic is not None else int(image.config("offsets.topic.num.partitions",
                                                                            static=static))


def coordinator_for(group_id: str, image: MetadataImage, static: dict[str, str] | None = None) -> int:
    """The broker id coordinating ``group_id`` in ``image``: the leader of its ``__consumer_offsets`` partition
    (Kafka's ``KafkaApis.getCoordinator``), or -1 while the topic does not exist or the partition has no
    leader."""
    if OFFSETS_TOPIC not in image.topics:
        return -1
    reg = image.partition(OFFSETS_TOPIC, offsets_partition_for(group_id, offsets_partitions(image, static)))
    return reg.leader if reg is not None and reg.has_leader else -1


def group_config(name: str, config: dict[str, str] | None) -> int:
    """An int group-coordinator config (one of :data:`GROUP_CONFIGS`): ``config[name]`` if set, else
    Kafka's default (``kraftlog.metadata.config.lookup``)."""
    return int(_config.lookup(name, config))


@dataclass(slots=True, frozen=True)
class MemberSummary:
    """One member as DescribeGroups shows it (Kafka's ``MemberSummary``): ``metadata`` its subscription
    for the group's chosen protocol (b"" while none is chosen), ``assignment`` what the leader gave it."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    metadata: bytes
    assignment: bytes
    client_host: str = ""


@dataclass(slots=True, frozen=True)
class GroupSummary:
    """A read-only view of one group (the shape of Kafka's ``GroupMetadata.summary``): ``state`` one of
    the state names above, ``members`` the member ids in join order, ``leader`` "" when none,
    ``member_details`` each member's :class:`MemberSummary` in the same order."""

    group_id: str
    state: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    members: tuple[str, ...]
    member_details: tuple[MemberSummary, ...] = ()


class MemberMetadata(Generic[T]):
    """Kafka's ``MemberMetadata``: one member of a classic group. Times are ms.

    ``protocols``: ``((name, metadata), ...)`` in the member's order of preference. A parked JoinGroup
    (``awaiting_join``, Kafka's ``awaitingJoinCallback``) or SyncGroup (``awaiting_sync``) keeps the
    driver's token until it is answered."""

    __slots__ = ("member_id", "group_instance_id", "client_id", "rebalance_timeout_ms", "session_timeout_ms",
                 "protocol_type", "protocols", "assignment", "awaiting_join", "join_token", "awaiting_sync",
                 "sync_token", "is_new", "client_host")

    def __init__(self, member_id: str, group_instance_id: str | None, client_id: str, rebalance_timeout_ms: int,
                 session_timeout_ms: int, protocol_type: str, protocols: Protocols) -> None:
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.client_id = client_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.protocol_type = protocol_type
        self.protocols = protocols
        self.assignment = b""
        self.awaiting_join = False
        self.join_token: T | None = None
        self.awaiting_sync = False
        self.sync_token: T | None = None
        self.is_new = False
        #: the address its last JoinGroup came from ("" unknown): stored in GroupMetadataValue
        self.client_host = ""

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for ``protocol`` (``MemberMetadata.metadata``)."""
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise ValueError(f"member {self.member_id} does not support protocol {protocol}")  # pragma: no cover

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates`` (``MemberMetadata.vote``)."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(  # pragma: no cover - supportsProtocols admits members with a common protocol
            f"member {self.member_id} does not support any of the candidates {sorted(candidates)}")


class GroupMetadata(Generic[T]):
    """Kafka's ``GroupMetadata`` (membership part) of one classic group.

    ``members`` is in join order (dicts keep insertion order): the leader's JoinGroup response lists the
    members in that order and a new leader is the first remaining member. ``pending_members`` (KIP-394)
    and ``pending_sync`` (KAFKA-13213) are ordered sets (dicts with None values)."""

    __slots__ = ("group_id", "state", "generation_id", "protocol_type", "protocol_name", "leader", "members",
                 "static_members", "pending_members", "pending_sync", "protocol_counts", "new_member_added",
                 "initial_join", "initial_delay_ms", "initial_remaining_ms", "sync_generation", "state_timestamp")

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.state = EMPTY
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader: str | None = None
        self.members: dict[str, MemberMetadata[T]] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, None] = {}
        self.pending_sync: dict[str, None] = {}
        #: protocol name -> how many members support it (``GroupMetadata.supportedProtocols``)
        self.protocol_counts: dict[str, int] = {}
        #: a member joined while the first rebalance (generation 0) waits (``newMemberAdded``)
        self.new_member_added = False
        #: the running join timer is an InitialDelayedJoin (which never completes early) with these
        #: ``delayMs`` and ``remainingMs``
        self.initial_join = False
        self.initial_delay_ms = 0
        self.initial_remaining_ms = 0
        #: the generation the DelayedSync timer was started for
        self.sync_generation = -1
        #: when the group entered its state (ms; Kafka's ``currentStateTimestamp``), -1 unknown
        self.state_timestamp = -1

    # ---------------------------------------------------------------- GroupMetadata
    def rebalance_timeout_ms(self) -> int:
        """Max of the members' rebalance timeouts, 0 without members (``GroupMetadata.rebalanceTimeoutMs``)."""
        return max((mb.rebalance_timeout_ms for mb in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """``GroupMetadata.supportsProtocols``: an Empty group takes any non-empty protocol type with at
        least one protocol; otherwise the type must match and one protocol be supported by every member."""
        if self.state == EMPTY:
            return bool(protocol_type) and bool(names)
        size = len(self.members)
        return self.protocol_type == protocol_type and any(self.protocol_counts.get(n, 0) == size for n in names)

    def all_joined(self) -> bool:
        """``GroupMetadata.hasAllMembersJoined``: every member has a JoinGroup parked and no KIP-394 pending
        member is still expected."""
        return not self.pending_members and all(mb.awaiting_join for mb in self.members.values())

    def select_protocol(self) -> str:
        """``GroupMetadata.selectProtocol``: the candidates are the protocols every member supports; each
        member votes for its most preferred candidate and the most votes win. Kafka breaks a tie by
        HashMap order; here the protocol first voted for (in join order) wins, deterministically."""
        size = len(self.members)
        candidates = {name for name, count in self.protocol_counts.items() if count == size}
        votes: dict[str, int] = {}
        for mb in self.members.values():
            choice = mb.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best = max(votes.values())
        return next(name for name, count in votes.items() if count == best)

    def count_protocols(self, member: MemberMetadata[T], delta: int) -> None:
        for name, _ in member.protocols:
            self.protocol_counts[name] = self.protocol_counts.get(name, 0) + delta

    def current_member_metadata(self) -> tuple[m.JoinGroupResponseMember, ...]:
        """The leader's member list (``GroupMetadata.currentMemberMetadata``): every member with its
        metadata for the chosen protocol, in join order."""
        name = self.protocol_name or ""
        return tuple(m.JoinGroupResponseMember(mb.member_id, mb.metadata(name), mb.group_instance_id)
                     for mb in self.members.values())

    def validate_current_member(self, member_id: str, group_instance_id: str | None) -> int | None:
        """``GroupCoordinator.validateCurrentMember``: a static member's instance id must map to
        ``member_id`` (else FENCED_INSTANCE_ID, or UNKNOWN_MEMBER_ID when unmapped); a member id must
        be known (UNKNOWN_MEMBER_ID)."""
        if group_instance_id is not None:
            current = self.static_members.get(group_instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return Errors.FENCED_INSTANCE_ID
            return None
        return None if member_id in self.members else Errors.UNKNOWN_MEMBER_ID

    def join_result(self, member_id: str, with_members: bool,
                     leader: str | None = None, skip_assignment: bool = False) -> m.JoinGroupResponse:
        """A successful JoinGroup response for the current generation (``JoinGroupResult``)."""
        return m.JoinGroupResponse(
            Errors.NONE, member_id, self.generation_id, self.protocol_type, self.protocol_name,
            (self.leader if leader is None else leader) or "",
            self.current_member_metadata() if with_members else (), skip_assignment)

    def maybe_elect_new_joined_leader(self) -> bool:
        """``GroupMetadata.maybeElectNewJoinedLeader``: keep the leader if it rejoined, else the first
        member that did; False when none did."""
        leader = self.members.get(self.leader) if self.leader is not None else None
        if leader is not None and leader.awaiting_join:
            return True
        for mb in self.members.values():
            if mb.awaiting_join:
                self.leader = mb.member_id
                return True
        return False

    def summary(self) -> GroupSummary:
        chosen = self.protocol_name
        details = tuple(MemberSummary(mb.member_id, mb.group_instance_id, mb.client_id,
                                      dict(mb.protocols).get(chosen, b"") if chosen else b"", bytes(mb.assignment),
                                      mb.client_host)
                        for mb in self.members.values())
        return GroupSummary(self.group_id, self.state, self.generation_id, self.protocol_type, self.protocol_name,
                            self.leader or "", tuple(self.members), details)


def join_error(member_id: str, error: int) -> m.JoinGroupResponse:
    """Kafka's ``JoinGroupResult(memberId, error)``: no generation (-1), protocol or leader."""
    return m.JoinGroupResponse(error, member_id)


def protocols_of(req: m.JoinGroupRequest) -> Protocols:
    """The request's protocols as ``((name, metadata), ...)``, first occurrence of a name kept (Kafka's
    ``JoinGroupRequestProtocolCollection`` is keyed by name)."""
    seen: dict[str, bytes] = {}
    for p in req.protocols:
        seen.setdefault(p.name, bytes(p.metadata))
    return tuple(seen.items())


#: A group coordinator timer's key: ``(kind, group id)`` or ``(kind, group id, member id)``.
TimerKey: TypeAlias = tuple[str, ...]


class GroupTimers:
    """The group coordinator's timers (Kafka's join, sync and heartbeat purgatories): one deadline (ms) per
    key; setting a key again replaces its deadline. ``entries``: key -> (deadline ms, sequence number); the
    heap holds (deadline, seq, key) entries, an entry being live while ``entries[key]`` still equals its
    (deadline, seq): due timers fire in deadline order, ties in the order they were set."""

    def __init__(self) -> None:
        self.entries: dict[TimerKey, tuple[int, int]] = {}
        self._heap: list[tuple[int, int, TimerKey]] = []
        self._seq = 0

    def schedule(self, key: TimerKey, deadline: int) -> None:
        """Fire ``key`` at ``deadline`` (ms), replacing the deadline it had."""
        self._seq += 1
        self.entries[key] = (deadline, self._seq)
        heapq.heappush(self._heap, (deadline, self._seq, key))

    def cancel(self, key: TimerKey) -> None:
        """Forget ``key``'s timer, if any."""
        self.entries.pop(key, None)

    def next_deadline(self) -> int | None:
        """The earliest live deadline (ms), None when no timer is set."""
        heap = self._heap
        timers = self.entries
        while heap:
            deadline, seq, key = heap[0]
            if timers.get(key) == (deadline, seq):
                return deadline
            heapq.heappop(heap)  # cancelled or rescheduled
        return None

    def pop_due(self, now_ms: int) -> TimerKey | None:
        """The key of the earliest timer due at ``now_ms`` (deadline <= now_ms), removed; None when none is."""
        deadline = self.next_deadline()
        if deadline is None or deadline > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        del self.entries[key]
        return key

    def clear(self) -> None:
        """Forget every timer."""
        self.entries.clear()
        self._heap.clear()

    def drop_groups(self, gone: set[str]) -> None:
        """Cancel every timer of the groups ``gone``."""
        for key in [k for k in self.entries if k[1] in gone]:
            del self.entries[key]


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """The topics of a consumer's subscription (the ``consumer`` protocol type's member metadata, Kafka's
    ``ConsumerProtocolSubscription``: every version starts with an int16 version and the topics as an int32
    count of int16-length strings), None when it does not parse. Kafka's ``GroupMetadata.isSubscribedToTopic``
    reads it for OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC."""
    if len(metadata) < 6:
        return None
    try:
        pos = 2
        count = int.from_bytes(metadata[pos:pos + 4], "big", signed=True)
        pos += 4
        if count < 0 or count > len(metadata):
            return None
        topics = set()
        for _ in range(count):
            size = int.from_bytes(metadata[pos:pos + 2], "big", signed=True)
            pos += 2
            if size < 0 or pos > len(metadata) or pos + size > len(metadata):
                return None
            topics.add(metadata[pos:pos + size].decode("utf-8"))
            pos += size
        return topics
    except (UnicodeDecodeError, ValueError):
        return None
