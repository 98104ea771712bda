"""Issue 28 item 1: the group admin APIs on the group coordinator, with Kafka's rules (``GroupCoordinator``'s
handleListGroups, handleDescribeGroup, handleDeleteGroups, handleDeleteOffsets), and the consumer protocol
parsers the CLI and OffsetDelete rely on."""

from __future__ import annotations

import struct

from coordinator_fakes import MemoryWriter, coordinator_over
from kraftlog.broker.apis.group_admin import GroupAdminApis
from kraftlog.broker.group_coordinator import EMPTY, STABLE
from kraftlog.broker.group_metadata import offsets_partition_for, subscribed_topics
from kraftlog.metadata.image import BrokerRegistration, MetadataImage
from kraftlog.net.groups_cli import assignment_partitions
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.node import Envelope
from test_group_coordinator import G, coordinator, stable_group


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0: version, topics, user data."""
    body = struct.pack(">hi", 0, len(topics))
    for t in topics:
        body += struct.pack(">h", len(t)) + t.encode()
    return body + struct.pack(">i", -1)


def assignment(parts: dict[str, list[int]]) -> bytes:
    body = struct.pack(">hi", 0, len(parts))
    for t, ps in parts.items():
        body += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps)) + b"".join(
            struct.pack(">i", p) for p in ps)
    return body + struct.pack(">i", -1)


def test_consumer_protocol_subscription_and_assignment_parse():
    assert subscribed_topics(subscription("orders", "payments")) == {"orders", "payments"}
    assert subscribed_topics(b"\x00") is None and subscribed_topics(b"range-meta") is None
    assert assignment_partitions(assignment({"orders": [0, 2], "payments": [1]})) == [
        ("orders", 0), ("orders", 2), ("payments", 1)]
    assert assignment_partitions(b"a-0") == []


class _Channel:
    def __init__(self) -> None:
        self.sent: list[m.Message] = []

    def send_response(self, request, message) -> None:
        self.sent.append(message)


class _Cache:
    def __init__(self, brokers: int) -> None:
        self.image = MetadataImage()
        for b in range(brokers):
            self.image.brokers[b] = BrokerRegistration(b, 10 + b, __import__("uuid").UUID(int=b), fenced=False)


class _Logs:
    offline = False


def admin(gc, brokers: int = 1) -> tuple[GroupAdminApis, _Channel]:
    channel = _Channel()
    return GroupAdminApis(0, _Cache(brokers), gc, _Logs(), channel, lambda *a: None), channel


def ask(apis: GroupAdminApis, channel: _Channel, msg) -> m.Message:
    apis.handlers()[type(msg)](0, Envelope("client", 0, 1, msg))
    return channel.sent.pop()


def test_list_describe_delete_a_stable_group_and_an_offsets_only_one():
    """A Stable group is listed with its state and type and described with its members and their
    assignments; a group known only by committed offsets is Empty; DeleteGroups refuses the group with
    members (NON_EMPTY_GROUP), deletes the other with its offsets, then GROUP_ID_NOT_FOUND; an unknown
    group is described as Dead; the states filter matches case-insensitively, the types filter "consumer"
    (KIP-848's) matches nothing."""
    gc = coordinator()
    ids, generation, now = stable_group(gc, 2)
    gc.handle(now, object(), "c", m.OffsetCommitRequest("offsets-only", (m.OffsetCommitPartition("t", 0, 5),)))
    apis, channel = admin(gc)
    listed = ask(apis, channel, m.ListGroupsRequest())
    assert [(g.group_id, g.group_state, g.protocol_type, g.group_type) for g in listed.groups] == [
        (G, STABLE, "consumer", "classic"), ("offsets-only", EMPTY, "", "classic")]
    assert [g.group_id for g in ask(apis, channel, m.ListGroupsRequest(("stable",))).groups] == [G]
    assert ask(apis, channel, m.ListGroupsRequest((), ("consumer",))).groups == ()
    described = ask(apis, channel, m.DescribeGroupsRequest((G, "offsets-only", "nobody")))
    g, offsets_only, nobody = described.groups
    assert (g.error_code, g.group_state, g.protocol_type, g.protocol_data) == (Errors.NONE, STABLE, "consumer", "range")
    assert [(mb.member_id, mb.member_assignment) for mb in g.members] == [(ids[0], b"a-0"), (ids[1], b"a-1")]
    assert (offsets_only.group_state, offsets_only.members) == (EMPTY, ())
    assert (nobody.error_code, nobody.group_state) == (Errors.NONE, "Dead")
    deleted = ask(apis, channel, m.DeleteGroupsRequest((G, "offsets-only", "offsets-only", "")))
    assert [(r.group_id, r.error_code) for r in deleted.results] == [
        (G, Errors.NON_EMPTY_GROUP), ("offsets-only", Errors.NONE), ("offsets-only", Errors.GROUP_ID_NOT_FOUND),
        ("", Errors.INVALID_GROUP_ID)]
    assert not gc.runtime.known("offsets-only")


def test_group_requests_for_a_group_another_broker_coordinates_are_not_coordinator():
    """Three ``__consumer_offsets`` partitions of which this broker leads only partition 0: a group id hashing to
    another partition gets NOT_COORDINATOR from DescribeGroups and DeleteGroups, OffsetDelete at the top level."""
    writer = MemoryWriter(partitions=3)
    writer.leaders = {0: 0}
    gc = coordinator_over(writer)
    apis, channel = admin(gc, brokers=3)
    other = next(f"g{i}" for i in range(100) if offsets_partition_for(f"g{i}", 3) != 0)
    assert ask(apis, channel, m.DescribeGroupsRequest((other,))).groups[0].error_code == Errors.NOT_COORDINATOR
    assert ask(apis, channel, m.DeleteGroupsRequest((other,))).results[0].error_code == Errors.NOT_COORDINATOR
    assert ask(apis, channel, m.OffsetDeleteRequest(other, ())).error_code == Errors.NOT_COORDINATOR


def test_offset_delete_keeps_the_offsets_of_subscribed_topics():
    """KIP-496: a Stable group subscribed to "orders": its offsets of "orders" are kept with
    GROUP_SUBSCRIBED_TO_TOPIC, those of "audit" deleted; an unknown group is GROUP_ID_NOT_FOUND."""
    gc = coordinator()
    ids, generation, now = stable_group(gc, 1, protocols=(("range", subscription("orders")),))
    gc.handle(now, object(), "c", m.OffsetCommitRequest(G, (m.OffsetCommitPartition("orders", 0, 5),
                                                            m.OffsetCommitPartition("audit", 0, 7)),
                                                        generation, ids[0]))
    apis, channel = admin(gc)
    resp = ask(apis, channel, m.OffsetDeleteRequest(G, (m.OffsetDeleteRequestPartition("orders", 0),
                                                       m.OffsetDeleteRequestPartition("audit", 0))))
    assert resp.error_code == Errors.NONE
    assert [(p.topic, p.error_code) for p in resp.partitions] == [
        ("orders", Errors.GROUP_SUBSCRIBED_TO_TOPIC), ("audit", Errors.NONE)]
    assert set(gc.runtime.committed(G)) == {("orders", 0)}
    assert ask(apis, channel, m.OffsetDeleteRequest("nobody", ())).error_code == Errors.GROUP_ID_NOT_FOUND
