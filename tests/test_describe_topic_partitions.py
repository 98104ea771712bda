"""DescribeTopicPartitions (KIP-966, API key 75 v0): kraftlog.broker.describe.describe_topic_partitions.

Rules proved here, each Kafka's (DescribeTopicPartitionsRequestHandler, KRaftMetadataCache):
partitions report leader (-1 when the leader is not registered), ISR, ELR, LastKnownELR and offline
replicas (unregistered or fenced brokers); an empty topic list lists every topic, sorted by name; an
unknown topic gets UNKNOWN_TOPIC_OR_PARTITION; the partition limit is
max(1, min(ResponsePartitionLimit, max.request.partition.size.limit)) and NextCursor resumes a paged
listing, across partitions and topics; a cursor whose topic is not requested, or with a negative
partition, answers INVALID_REQUEST for every requested topic; the messages cross Kafka's wire format.
"""

from __future__ import annotations

import uuid

from kafka.protocol.admin.topics import (
    DescribeTopicPartitionsRequest as KpDescribeTopicPartitionsRequest,
)
from kafka.protocol.admin.topics import (
    DescribeTopicPartitionsResponse as KpDescribeTopicPartitionsResponse,
)

from kraftlog.broker.describe import describe_topic_partitions
from kraftlog.metadata import records as mdr
from kraftlog.metadata.image import RESOURCE_BROKER, MetadataImage
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors

ORDERS = uuid.UUID("6f1c1a2e-0000-4000-8000-0000000000a1")
AUDIT = uuid.UUID("6f1c1a2e-0000-4000-8000-0000000000a2")
OFFSETS = uuid.UUID("6f1c1a2e-0000-4000-8000-0000000000a3")
ALPHA = uuid.UUID("6f1c1a2e-0000-4000-8000-0000000000b1")
BETA = uuid.UUID("6f1c1a2e-0000-4000-8000-0000000000b2")
INC = uuid.UUID("0b5e7c1d-1111-4222-8333-444455556666")
ZERO = uuid.UUID(int=0)

Req = m.DescribeTopicPartitionsRequest
Cursor = m.DescribeTopicPartitionsCursor


def _brokers() -> list:
    """Brokers 0 and 1 registered and unfenced, broker 2 registered and fenced, broker 3 unknown."""
    return [
        mdr.RegisterBrokerRecord(0, INC, 0, fenced=False),
        mdr.RegisterBrokerRecord(1, INC, 1, fenced=False),
        mdr.RegisterBrokerRecord(2, INC, 2, fenced=False),
        mdr.BrokerRegistrationChangeRecord(2, 2, fenced=True),
    ]


def _elr_image() -> MetadataImage:
    """``orders``: p0 has ISR [0], ELR [1], LastKnownELR [2] (after a PartitionChangeRecord); p1 is led
    by unregistered broker 3. ``audit`` has one healthy partition; ``__consumer_offsets`` is internal."""
    records = [
        *_brokers(),
        mdr.TopicRecord("orders", ORDERS),
        mdr.PartitionRecord(0, ORDERS, (0, 1, 2), (0, 1, 2), 0, leader_epoch=4, partition_epoch=7),
        mdr.PartitionRecord(1, ORDERS, (3, 2, 0), (3,), 3, leader_epoch=2),
        mdr.PartitionChangeRecord(0, ORDERS, isr=(0,), eligible_leader_replicas=(1,), last_known_elr=(2,)),
        mdr.TopicRecord("audit", AUDIT),
        mdr.PartitionRecord(0, AUDIT, (1, 0), (1, 0), 1, leader_epoch=1),
        mdr.TopicRecord("__consumer_offsets", OFFSETS),
        mdr.PartitionRecord(0, OFFSETS, (0,), (0,), 0),
    ]
    image, _ = MetadataImage().replay(records, 0)
    return image


def _paging_image(*extra) -> MetadataImage:
    """``alpha`` with 5 partitions and ``beta`` with 2, all on brokers 0 and 1."""
    records = [*_brokers(), mdr.TopicRecord("beta", BETA), mdr.TopicRecord("alpha", ALPHA)]
    records += [mdr.PartitionRecord(i, ALPHA, (0, 1), (0, 1), 0) for i in range(5)]
    records += [mdr.PartitionRecord(i, BETA, (1, 0), (1, 0), 1) for i in range(2)]
    image, _ = MetadataImage().replay([*records, *extra], 0)
    return image


def _listing(resp: m.DescribeTopicPartitionsResponse) -> list[tuple[str, tuple[int, ...]]]:
    return [(t.name, tuple(p.partition_index for p in t.partitions)) for t in resp.topics]


# ------------------------------------------------------------------------------ fields
def test_partition_fields_report_isr_elr_last_known_elr_and_offline_replicas() -> None:
    """KIP-966: ELR and LastKnownELR as the image holds them; offline = fenced (2) or unregistered."""
    resp = describe_topic_partitions(_elr_image(), Req(topics=("orders",)), {})
    assert resp.next_cursor is None
    (topic,) = resp.topics
    assert (topic.error_code, topic.name, topic.topic_id, topic.is_internal) == (
        Errors.NONE, "orders", ORDERS, False)
    p0, p1 = topic.partitions
    assert p0 == m.DescribeTopicPartitionsResponsePartition(
        error_code=Errors.NONE, partition_index=0, leader_id=0, leader_epoch=4,
        replica_nodes=(0, 1, 2), isr_nodes=(0,), eligible_leader_replicas=(1,),
        last_known_elr=(2,), offline_replicas=(2,),
    )
    # The leader (3) is not registered: Kafka's NO_LEADER_ID; replicas and ISR are not filtered.
    assert p1 == m.DescribeTopicPartitionsResponsePartition(
        error_code=Errors.NONE, partition_index=1, leader_id=-1, leader_epoch=2,
        replica_nodes=(3, 2, 0), isr_nodes=(3,), eligible_leader_replicas=(),
        last_known_elr=(), offline_replicas=(3, 2),
    )


def test_empty_topic_list_describes_every_topic_sorted_by_name() -> None:
    resp = describe_topic_partitions(_elr_image(), Req(topics=()), {})
    assert _listing(resp) == [("__consumer_offsets", (0,)), ("audit", (0,)), ("orders", (0, 1))]
    assert [t.is_internal for t in resp.topics] == [True, False, False]
    assert resp.next_cursor is None


def test_requested_topics_are_sorted_and_deduplicated() -> None:
    resp = describe_topic_partitions(_elr_image(), Req(topics=("orders", "audit", "orders")), {})
    assert _listing(resp) == [("audit", (0,)), ("orders", (0, 1))]


def test_unknown_topic_gets_unknown_topic_or_partition() -> None:
    resp = describe_topic_partitions(_elr_image(), Req(topics=("orders", "missing", "bad/name")), {})
    by_name = {t.name: t for t in resp.topics}
    assert [t.name for t in resp.topics] == ["bad/name", "missing", "orders"]
    assert by_name["missing"] == m.DescribeTopicPartitionsResponseTopic(
        Errors.UNKNOWN_TOPIC_OR_PARTITION, "missing", ZERO, False, ())
    # An illegal name is Kafka's INVALID_TOPIC_EXCEPTION (Topic.validate).
    assert by_name["bad/name"].error_code == Errors.INVALID_TOPIC_EXCEPTION
    assert by_name["orders"].error_code == Errors.NONE and len(by_name["orders"].partitions) == 2


# ------------------------------------------------------------------------- pagination
def _pages(image: MetadataImage, topics: tuple[str, ...], limit: int, static: dict | None = None):
    pages, cursor = [], None
    while True:
        resp = describe_topic_partitions(
            image, Req(topics=topics, response_partition_limit=limit, cursor=cursor), static or {})
        pages.append(resp)
        cursor = resp.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 20, "pagination does not terminate"


def test_pagination_across_partitions_and_topics_with_the_cursor() -> None:
    """5 + 2 partitions, limit 3: three pages, chained through next_cursor until it is None."""
    pages = _pages(_paging_image(), ("beta", "alpha"), 3)
    assert [_listing(p) for p in pages] == [
        [("alpha", (0, 1, 2))],
        [("alpha", (3, 4)), ("beta", (0,))],
        [("beta", (1,))],
    ]
    assert [p.next_cursor for p in pages] == [Cursor("alpha", 3), Cursor("beta", 1), None]


def test_pagination_of_all_topics() -> None:
    pages = _pages(_paging_image(), (), 3)
    assert [_listing(p) for p in pages] == [
        [("alpha", (0, 1, 2))],
        [("alpha", (3, 4)), ("beta", (0,))],
        [("beta", (1,))],
    ]


def test_limit_used_up_at_a_topic_end_points_the_cursor_at_the_next_topic() -> None:
    """Kafka: all of alpha fitted exactly, so NextCursor = (beta, 0) and beta is not in this page."""
    resp = describe_topic_partitions(_paging_image(), Req(("alpha", "beta"), 5), {})
    assert _listing(resp) == [("alpha", (0, 1, 2, 3, 4))]
    assert resp.next_cursor == Cursor("beta", 0)
    last = describe_topic_partitions(_paging_image(), Req(("alpha", "beta"), 5, resp.next_cursor), {})
    assert _listing(last) == [("beta", (0, 1))] and last.next_cursor is None


def test_cursor_skips_topics_before_it_and_partitions_below_its_index() -> None:
    resp = describe_topic_partitions(_paging_image(), Req(("alpha", "beta"), 10, Cursor("beta", 1)), {})
    assert _listing(resp) == [("beta", (1,))]
    past_end = describe_topic_partitions(_paging_image(), Req(("beta",), 10, Cursor("beta", 9)), {})
    assert _listing(past_end) == [("beta", ())] and past_end.next_cursor is None


def test_cursor_topic_not_requested_is_invalid_request() -> None:
    """Kafka throws InvalidRequestException; getErrorResponse names every requested topic with it."""
    resp = describe_topic_partitions(_paging_image(), Req(("beta", "alpha"), 10, Cursor("gamma", 0)), {})
    assert resp == m.DescribeTopicPartitionsResponse(
        topics=(
            m.DescribeTopicPartitionsResponseTopic(Errors.INVALID_REQUEST, "beta", ZERO, False, ()),
            m.DescribeTopicPartitionsResponseTopic(Errors.INVALID_REQUEST, "alpha", ZERO, False, ()),
        ),
        next_cursor=None,
    )
    # The cursor topic sorts before a requested one but is not itself requested.
    resp = describe_topic_partitions(_paging_image(), Req(("beta",), 10, Cursor("alpha", 0)), {})
    assert [(t.name, t.error_code) for t in resp.topics] == [("beta", Errors.INVALID_REQUEST)]


def test_negative_cursor_partition_is_invalid_request() -> None:
    resp = describe_topic_partitions(_paging_image(), Req(("alpha",), 10, Cursor("alpha", -1)), {})
    assert [(t.name, t.error_code, t.partitions) for t in resp.topics] == [
        ("alpha", Errors.INVALID_REQUEST, ())]
    everything = describe_topic_partitions(_paging_image(), Req((), 10, Cursor("alpha", -1)), {})
    assert everything.topics == () and everything.next_cursor is None


# -------------------------------------------------------------------- broker-side limit
def test_max_request_partition_size_limit_caps_a_bigger_request_limit() -> None:
    """Static config max.request.partition.size.limit=2 wins over a request limit of 2000."""
    pages = _pages(_paging_image(), ("alpha", "beta"), 2000, {"max.request.partition.size.limit": "2"})
    assert [_listing(p) for p in pages] == [
        [("alpha", (0, 1))], [("alpha", (2, 3))], [("alpha", (4,)), ("beta", (0,))], [("beta", (1,))],
    ]


def test_cluster_default_limit_overrides_static_and_smaller_request_limit_wins() -> None:
    image = _paging_image(mdr.ConfigRecord(RESOURCE_BROKER, "", "max.request.partition.size.limit", "4"))
    resp = describe_topic_partitions(image, Req(("alpha",)), {"max.request.partition.size.limit": "1"})
    assert _listing(resp) == [("alpha", (0, 1, 2, 3))] and resp.next_cursor == Cursor("alpha", 4)
    resp = describe_topic_partitions(image, Req(("alpha",), 3), {})
    assert _listing(resp) == [("alpha", (0, 1, 2))]


def test_limit_is_at_least_one_partition() -> None:
    resp = describe_topic_partitions(_paging_image(), Req(("alpha",), 0), {})
    assert _listing(resp) == [("alpha", (0,))] and resp.next_cursor == Cursor("alpha", 1)


def test_default_broker_limit_is_2000() -> None:
    records = [*_brokers(), mdr.TopicRecord("wide", ALPHA)]
    records += [mdr.PartitionRecord(i, ALPHA, (0,), (0,), 0) for i in range(2001)]
    image, _ = MetadataImage().replay(records, 0)
    resp = describe_topic_partitions(image, Req(("wide",), 5000), {})
    assert len(resp.topics[0].partitions) == 2000 and resp.next_cursor == Cursor("wide", 2000)


# -------------------------------------------------------------------------------- wire
def test_request_and_response_cross_the_wire_unchanged() -> None:
    request = Req(("orders", "audit", "missing"), 3, Cursor("audit", 0))
    assert wire.roundtrip(request, correlation_id=9) == request
    response = describe_topic_partitions(_elr_image(), request, {})
    assert any(p.eligible_leader_replicas for t in response.topics for p in t.partitions)
    assert wire.roundtrip(response, correlation_id=9) == response
    paged = describe_topic_partitions(_paging_image(), Req((), 3), {})
    assert paged.next_cursor is not None and wire.roundtrip(paged) == paged


def test_wire_is_api_key_75_v0_and_elr_lists_are_sent_not_null() -> None:
    data = wire.encode_request(Req(()), 5)
    assert wire.peek_request_header(data) == (75, 0, 5)
    entity = wire.to_kio(describe_topic_partitions(_elr_image(), Req(("audit",)), {}))
    (partition,) = entity.topics[0].partitions
    assert partition.eligible_leader_replicas == () and partition.last_known_elr == ()


def test_kafka_python_decodes_and_reencodes_our_bytes_identically() -> None:
    response = describe_topic_partitions(_elr_image(), Req(("orders", "missing")), {})
    for msg, kp_type, is_request in (
        (Req(("orders",), 7, Cursor("orders", 1)), KpDescribeTopicPartitionsRequest, True),
        (response, KpDescribeTopicPartitionsResponse, False),
    ):
        data = wire.encode_request(msg, 31) if is_request else wire.encode_response(msg, 31)
        decoded = kp_type.decode(data, version=0, header=True)
        assert decoded.header.correlation_id == 31
        decoded.with_header(correlation_id=31, **({"client_id": "kraftlog"} if is_request else {}))
        assert decoded.encode(header=True) == data
