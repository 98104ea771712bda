"""The group admin APIs a broker serves over its group coordinator (Kafka's ``KafkaApis`` handlers of
``kafka-consumer-groups.sh``'s requests): ListGroups, DescribeGroups, DeleteGroups and OffsetDelete.

Routing as Kafka's: ListGroups is answered by every broker for the groups it coordinates (an admin client
asks every broker and merges the answers); DescribeGroups and DeleteGroups answer NOT_COORDINATOR per group
this broker does not coordinate (``coordinator_for``); OffsetDelete, for one group, at the top level. A
broker whose log directory is offline coordinates nothing (its committed offsets are there): NOT_COORDINATOR,
and ListGroups COORDINATOR_NOT_AVAILABLE. A group this coordinator knows only by its committed offsets (its
members left, or the coordinator restarted: membership is not persisted) is Empty, protocol type "".
"""

from __future__ import annotations

from collections.abc import Callable

from ...protocol import messages as m
from ...protocol.errors import Errors
from ...protocol.listeners import error_response
from ...protocol.node import Envelope
from ..channel import BrokerChannel, LogDirFailureHandler
from ..group_coordinator import EMPTY, GroupCoordinator, GroupSummary, coordinator_for
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
                 member_hosts: Callable[[], dict[tuple[str, str], str]] = dict) -> None:
        self.broker_id = broker_id
        self._member_hosts = member_hosts
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

    def _coordinates(self, group_id: str) -> bool:
        return not self._logs.offline and coordinator_for(group_id, self._cache.image) == self.broker_id

    def _summary(self, group_id: str) -> GroupSummary | None:
        """The group in memory, else an Empty one known by its committed offsets, else None."""
        summary = self.groups.describe(group_id)
        if summary is None and group_id in self.groups.offsets.groups:
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
        image = self._cache.image
        ids = sorted(set(self.groups.groups()) | set(self.groups.offsets.groups))
        out = []
        for gid in ids:
            if coordinator_for(gid, image) != self.broker_id:
                continue  # offsets of a group another broker coordinates now (it moved): not ours to list
            summary = self._summary(gid)
            if summary is None or (states and summary.state.lower() not in states) or (types and CLASSIC not in types):
                continue
            out.append(m.ListedGroup(gid, summary.protocol_type or "", summary.state, CLASSIC))
        self._channel.send_response(env, m.ListGroupsResponse(Errors.NONE, tuple(out)))

    def describe_groups(self, now_ms: int, env: Envelope[m.DescribeGroupsRequest]) -> None:
        """Each group's state, protocol and members (Kafka's ``GroupCoordinator.handleDescribeGroup``): a group
        this coordinator does not know is Dead with no error, as Kafka answers; a member's client host is
        the address its JoinGroup came from (``"/127.0.0.1"``; "" in the simulator)."""
        hosts = self._member_hosts()
        out = []
        for gid in env.message.groups:
            if not self._coordinates(gid):
                out.append(m.DescribedGroup(Errors.NOT_COORDINATOR, gid))
                continue
            summary = self._summary(gid)
            if summary is None:
                out.append(m.DescribedGroup(Errors.NONE, gid, "Dead"))
                continue
            members = tuple(m.DescribedGroupMember(d.member_id, d.client_id, hosts.get((gid, d.member_id), ""),
                                                   d.metadata, d.assignment, d.group_instance_id)
                            for d in summary.member_details)
            out.append(m.DescribedGroup(Errors.NONE, gid, summary.state, summary.protocol_type or "",
                                        summary.protocol_name or "", members))
        self._channel.send_response(env, m.DescribeGroupsResponse(tuple(out)))

    def delete_groups(self, now_ms: int, env: Envelope[m.DeleteGroupsRequest]) -> None:
        """Delete each group with its committed offsets (:meth:`GroupCoordinator.delete_group`: NON_EMPTY_GROUP
        while it has members, GROUP_ID_NOT_FOUND for one it does not know); INVALID_GROUP_ID for "";
        NOT_COORDINATOR for a group another broker coordinates."""
        out = []
        for gid in env.message.groups_names:
            if not gid:
                error: int = Errors.INVALID_GROUP_ID
            elif not self._coordinates(gid):
                error = Errors.NOT_COORDINATOR
            else:
                try:
                    error = self.groups.delete_group(now_ms, gid)
                except OSError as exc:  # the offset file's deletion: the directory goes offline
                    self._fail(now_ms, exc, f"deleting group {gid}")
                    error = Errors.NOT_COORDINATOR
            out.append(m.DeletableGroupResult(gid, error))
        self._channel.send_response(env, m.DeleteGroupsResponse(tuple(out)))

    def offset_delete(self, now_ms: int, env: Envelope[m.OffsetDeleteRequest]) -> None:
        """Forget the group's committed offsets of the partitions asked for (KIP-496, Kafka's
        ``GroupCoordinator.handleDeleteOffsets``): INVALID_GROUP_ID for "", NOT_COORDINATOR, GROUP_ID_NOT_FOUND
        for a group this coordinator does not know; per partition GROUP_SUBSCRIBED_TO_TOPIC while a member of a
        ``consumer`` group is subscribed to its topic (those offsets are kept), NONE otherwise."""
        req = env.message
        gid = req.group_id
        if not gid:
            self._channel.send_response(env, error_response(req, Errors.INVALID_GROUP_ID))
            return
        if not self._coordinates(gid):
            self._channel.send_response(env, error_response(req, Errors.NOT_COORDINATOR))
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
        try:
            self.groups.offsets.delete_offsets(now_ms, gid, deletable)
        except OSError as exc:
            self._fail(now_ms, exc, f"deleting offsets of group {gid}")
            self._channel.send_response(env, error_response(req, Errors.NOT_COORDINATOR))
            return
        self._channel.send_response(env, m.OffsetDeleteResponse(Errors.NONE, tuple(results)))
