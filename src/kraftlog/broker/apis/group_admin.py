"""The group admin APIs a broker serves over its group coordinator (Kafka's ``KafkaApis`` handlers of
``kafka-consumer-groups.sh``'s requests): ListGroups, DescribeGroups, DeleteGroups and OffsetDelete.

Routing as Kafka's: ListGroups is answered by every broker for the groups it coordinates (an admin client
asks every broker and merges the answers); DescribeGroups and DeleteGroups answer NOT_COORDINATOR per group
this broker does not coordinate (it does not lead the group's ``__consumer_offsets`` partition) and
COORDINATOR_LOAD_IN_PROGRESS while it loads it; OffsetDelete, for one group, at the top level. A broker whose
log directory is offline coordinates nothing: NOT_COORDINATOR, and ListGroups COORDINATOR_NOT_AVAILABLE. A
group this coordinator knows only by its committed offsets is Empty, protocol type "". DeleteGroups and
OffsetDelete write tombstones and are answered once the HWM passes them.
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol import messages as m
from ...protocol.errors import Errors
from ...protocol.listeners import error_response
from ...protocol.node import Envelope
from ..channel import BrokerChannel, LogDirFailureHandler
from ..group_coordinator import EMPTY, GroupCoordinator, GroupSummary
from ..group_metadata import subscribed_topics
from ..log_manager import LogManager
from ..metadata_cache import MetadataCache
from .table import HandlerTable, entry

#: ListedGroup's group type of every kraftlog group (KIP-848's ``classic``; ``consumer`` groups are not built).
CLASSIC = "classic"
#: DescribedGroup.authorized_operations when the client did not ask (Kafka's Integer.MIN_VALUE).
NO_AUTHORIZED_OPERATIONS = -2147483648


class GroupAdminApis:
    """ListGroups, DescribeGroups, DeleteGroups and OffsetDelete for broker ``broker_id``, over its group
    coordinator ``groups``; ``fail``: the broker's log-directory failure handler (an offset file's write)."""

    def __init__(self, broker_id: int, cache: MetadataCache, groups: GroupCoordinator[Envelope], logs: LogManager,
                 channel: BrokerChannel, fail: LogDirFailureHandler,
) -> None:
        self.broker_id = broker_id
        self._cache = cache
        self.groups = groups
        self._logs = logs
        self._channel = channel
        self._fail = fail

    def handlers(self) -> HandlerTable:
        """This family's rows of the dispatch table."""
        return dict((entry(m.ListGroupsRequest, self.list_groups),
                     entry(m.DescribeGroupsRequest, self.describe_groups),
                     entry(m.DeleteGroupsRequest, self.delete_groups),
                     entry(m.OffsetDeleteRequest, self.offset_delete)))

    def _status(self, group_id: str) -> int:
        """NONE when this broker coordinates ``group_id``, else NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS."""
        return Errors.NOT_COORDINATOR if self._logs.offline else self.groups.runtime.status(group_id)

    def _summary(self, group_id: str) -> GroupSummary | None:
        """The group in memory, else an Empty one known by its committed offsets, else None."""
        summary = self.groups.describe(group_id)
        if summary is None and self.groups.runtime.known(group_id):
            summary = GroupSummary(group_id, EMPTY, 0, None, None, "", ())
        return summary

    def list_groups(self, now_ms: int, env: Envelope[m.ListGroupsRequest]) -> None:
        """The groups this broker coordinates, with their state and type (Kafka's
        ``GroupCoordinator.handleListGroups``): the KIP-518 ``states_filter`` and KIP-848 ``types_filter`` match
        case-insensitively; an empty filter matches every group; COORDINATOR_NOT_AVAILABLE while the log
        directory is offline."""
        req = env.message
        if self._logs.offline:
            self._channel.send_response(env, m.ListGroupsResponse(Errors.COORDINATOR_NOT_AVAILABLE))
            return
        states = {s.lower() for s in req.states_filter}
        types = {t.lower() for t in req.types_filter}
        ids = sorted(set(self.groups.groups()) | set(self.groups.runtime.group_ids()))
        out = []
        for gid in ids:
            if self._status(gid) != Errors.NONE:
                continue
            summary = self._summary(gid)
            if summary is None or (states and summary.state.lower() not in states) or (types and CLASSIC not in types):
                continue
            out.append(m.ListedGroup(gid, summary.protocol_type or "", summary.state, CLASSIC))
        self._channel.send_response(env, m.ListGroupsResponse(Errors.NONE, tuple(out)))

    def describe_groups(self, now_ms: int, env: Envelope[m.DescribeGroupsRequest]) -> None:
        """Each group's state, protocol and members (Kafka's ``GroupCoordinator.handleDescribeGroup``): a group
        this coordinator does not know is Dead with no error, as Kafka answers; a member's client host is
        the address its JoinGroup came from (``"/127.0.0.1"``; "" in the simulator)."""
        out = []
        for gid in env.message.groups:
            status = self._status(gid)
            if status != Errors.NONE:
                out.append(m.DescribedGroup(status, gid))
                continue
            summary = self._summary(gid)
            if summary is None:
                out.append(m.DescribedGroup(Errors.NONE, gid, "Dead"))
                continue
            members = tuple(m.DescribedGroupMember(d.member_id, d.client_id, d.client_host,
                                                   d.metadata, d.assignment, d.group_instance_id)
                            for d in summary.member_details)
            out.append(m.DescribedGroup(Errors.NONE, gid, summary.state, summary.protocol_type or "",
                                        summary.protocol_name or "", members))
        self._channel.send_response(env, m.DescribeGroupsResponse(tuple(out)))

    def delete_groups(self, now_ms: int, env: Envelope[m.DeleteGroupsRequest]) -> None:
        """Delete each group with its committed offsets (:meth:`GroupCoordinator.delete_group`: NON_EMPTY_GROUP
        while it has members, GROUP_ID_NOT_FOUND for one it does not know, else the write's result once
        committed); INVALID_GROUP_ID for ""; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a group this
        broker does not coordinate. Answered when every group's result is known."""
        names = list(env.message.groups_names)
        results: dict[int, int] = {}

        def answer_when_done() -> None:
            if len(results) == len(names):
                self._channel.send_response(env, m.DeleteGroupsResponse(tuple(
                    m.DeletableGroupResult(gid, results[i]) for i, gid in enumerate(names))))

        def done(i: int) -> Callable[[int, int], None]:
            def on_done(now: int, error: int) -> None:
                results[i] = error
                answer_when_done()
            return on_done

        for i, gid in enumerate(names):
            if not gid:
                results[i] = Errors.INVALID_GROUP_ID
            elif (status := self._status(gid)) != Errors.NONE:
                results[i] = status
            else:
                self.groups.delete_group(now_ms, gid, done(i))
        answer_when_done()

    def offset_delete(self, now_ms: int, env: Envelope[m.OffsetDeleteRequest]) -> None:
        """Forget the group's committed offsets of the partitions asked for (KIP-496, Kafka's
        ``GroupCoordinator.handleDeleteOffsets``): INVALID_GROUP_ID for "", NOT_COORDINATOR (or
        COORDINATOR_LOAD_IN_PROGRESS), GROUP_ID_NOT_FOUND for a group this coordinator does not know; per
        partition GROUP_SUBSCRIBED_TO_TOPIC while a member of a ``consumer`` group is subscribed to its topic
        (those offsets are kept), NONE otherwise, answered once the tombstones are committed (a failed write:
        its error at the top level)."""
        req = env.message
        gid = req.group_id
        if not gid:
            self._channel.send_response(env, error_response(req, Errors.INVALID_GROUP_ID))
            return
        status = self._status(gid)
        if status != Errors.NONE:
            self._channel.send_response(env, error_response(req, status))
            return
        summary = self._summary(gid)
        if summary is None:
            self._channel.send_response(env, error_response(req, Errors.GROUP_ID_NOT_FOUND))
            return
        subscribed: set[str] = set()
        if summary.protocol_type == "consumer":
            for d in summary.member_details:
                subscribed |= subscribed_topics(d.metadata) or set()
        results = []
        deletable = []
        for p in req.partitions:
            if p.topic in subscribed:
                results.append(m.OffsetDeleteResponsePartition(p.topic, p.partition, Errors.GROUP_SUBSCRIBED_TO_TOPIC))
            else:
                deletable.append((p.topic, p.partition))
                results.append(m.OffsetDeleteResponsePartition(p.topic, p.partition, Errors.NONE))

        def on_done(now: int, error: int) -> None:
            self._channel.send_response(env, error_response(req, error) if error != Errors.NONE
                                        else m.OffsetDeleteResponse(Errors.NONE, tuple(results)))

        self.groups.delete_offsets(now_ms, gid, deletable, on_done)
