"""Issue 28 item 4 on a real cluster with an unmodified client: confluent-kafka's
``AdminClient.list_offsets(OffsetSpec.max_timestamp())`` (ListOffsets v7, KIP-734)."""

from __future__ import annotations

import pytest

from conftest import running_cluster
from kraftlog.net import cluster as cl

confluent_kafka = pytest.importorskip("confluent_kafka")


@pytest.mark.slow
def test_confluent_list_offsets_max_timestamp_answers_the_largest_timestamp_out_of_order(tmp_path):
    """KIP-734: records produced with out-of-order timestamps; list_offsets(max_timestamp) answers the
    offset and timestamp of the record with the largest timestamp (before: offset 0, -3 read as a time)."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

    directory = str(tmp_path / "c")
    with running_cluster(directory, 1):
        bootstrap = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("ts", 1, 1)])["ts"].result(30)
        base = 1_700_000_000_000
        stamps = [base + 1_000, base + 9_000, base + 2_000, base + 5_000]
        p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
        for ts in stamps:
            p.produce("ts", b"v", partition=0, timestamp=ts)
            assert p.flush(30) == 0
        got = admin.list_offsets({TopicPartition("ts", 0): OffsetSpec.max_timestamp()},
                                 request_timeout=30)[TopicPartition("ts", 0)].result(30)
        assert (got.offset, got.timestamp) == (1, base + 9_000)
