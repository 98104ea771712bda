"""KIP-320 clients: the consumer's position validation paths, LogTruncationError, and the checker that
catches a consumer that skips validation."""

from __future__ import annotations

import dataclasses
import random
import uuid
from pathlib import Path

import pytest

from kraftlog.client.consumer import Consumer, LogTruncationError, OffsetOutOfRangeError, Position
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.sim.runner import run_scenario
from kraftlog.sim.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]
TID = uuid.UUID(int=5)


def metadata(leader: int, epoch: int) -> m.MetadataResponse:
    return m.MetadataResponse(
        brokers=(m.MetadataBroker(0, "b0", 9092), m.MetadataBroker(1, "b1", 9092)), controller_id=-1,
        topics=(m.MetadataTopic(Errors.NONE, "t", TID, (m.MetadataPartition(Errors.NONE, 0, leader, epoch, (0, 1),
                                                                            (0, 1)),)),))


def respond(c: Consumer, now: int, make):
    """Answer every request the consumer has queued with ``make(request)`` (None: leave unanswered)."""
    for env in c.poll():
        resp = make(env.message)
        if resp is not None:
            c.deliver(now, m.Envelope(env.dst, env.src, env.correlation_id, resp, True))


def consumer_at(position: int, epoch: int, reset: str = "none", validate: bool = True) -> Consumer:
    c = Consumer("c", [0, 1], [("t", 0)], reset, random.Random(0), validate_positions=validate)
    c.tick(0)
    respond(c, 1, lambda req: metadata(0, 3))
    respond(c, 1, lambda req: m.ListOffsetsResponse((m.ListOffsetsPartitionResponse("t", 0, Errors.NONE, -2, 0, 3),))
            if isinstance(req, m.ListOffsetsRequest) else None)
    c.poll()  # drop the first fetch: tests drive their own
    c.cancel_request(c._next_correlation)
    st = c.state[("t", 0)]
    st.inflight = False
    st.position = Position(position, epoch)
    st.awaiting_validation = False
    return c


def sent(c: Consumer):
    return [env.message for env in c._outbox]


def fetch_error(error):
    return lambda req: m.FetchResponse(Errors.NONE, (m.FetchPartitionResponse(TID, 0, error),)) \
        if isinstance(req, m.FetchRequest) else None


@pytest.mark.parametrize("error", [Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH])
def test_fenced_or_unknown_leader_epoch_triggers_validation_before_the_next_fetch(error):
    """KIP-320: FENCED_LEADER_EPOCH (our epoch is old) and UNKNOWN_LEADER_EPOCH (the broker's is old)
    both stop fetching; after a metadata refresh the position is validated with OffsetForLeaderEpoch."""
    c = consumer_at(20, 3)
    c.tick(2)
    req = [x for x in sent(c) if isinstance(x, m.FetchRequest)][0]
    assert req.partitions[0].current_leader_epoch == 3
    respond(c, 3, fetch_error(error))
    assert c.state[("t", 0)].awaiting_validation
    c.tick(500)
    respond(c, 501, lambda req: metadata(1, 4) if isinstance(req, m.MetadataRequest) else None)
    c.tick(600)
    queued = sent(c)
    assert any(isinstance(x, m.OffsetForLeaderEpochRequest) for x in queued)
    assert not any(isinstance(x, m.FetchRequest) for x in queued)
    ofle = [x for x in queued if isinstance(x, m.OffsetForLeaderEpochRequest)][0]
    assert ofle.partitions[0].current_leader_epoch == 4 and ofle.partitions[0].leader_epoch == 3


def validate_with(c: Consumer, answer: m.OffsetForLeaderEpochPartitionResponse, now=10):
    c.state[("t", 0)].awaiting_validation = True
    c.tick(now)
    respond(c, now + 1, lambda req: m.OffsetForLeaderEpochResponse((answer,))
            if isinstance(req, m.OffsetForLeaderEpochRequest) else None)


def test_divergence_found_raises_log_truncation_error_at_the_divergence_offset():
    """The leader's end offset for our epoch (12) is below our position (20): LogTruncationError with
    the partition and divergence offset; the position moves there."""
    c = consumer_at(20, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, 3, 12))
    with pytest.raises(LogTruncationError) as exc:
        c.poll_records()
    assert exc.value.partition == ("t", 0)
    assert exc.value.divergence_offset == 12
    assert exc.value.position == 20
    assert c.state[("t", 0)].position == Position(12, 3)
    assert c.poll_records() == []  # raised once


def test_divergence_with_reset_earliest_seeks_to_the_divergence_offset_without_raising():
    c = consumer_at(20, 3, reset="earliest")
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, 2, 15))
    assert c.poll_records() == []
    assert c.state[("t", 0)].position == Position(15, 2)
    assert [(t.position, t.divergence_offset) for t in c.take_truncations()] == [(20, 15)]


def test_no_divergence_keeps_the_position():
    c = consumer_at(20, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, 3, 25))
    assert c.poll_records() == []
    assert c.state[("t", 0)].position == Position(20, 3)
    assert not c.state[("t", 0)].awaiting_validation
    assert c.take_truncations() == []


def test_undefined_epoch_answer_keeps_the_position():
    """An undefined answer (-1, -1): the leader knows no epoch <= ours; nothing to truncate to."""
    c = consumer_at(20, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, -1, -1))
    assert c.poll_records() == []
    assert c.state[("t", 0)].position == Position(20, 3)


def test_validation_error_is_retried():
    c = consumer_at(20, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.FENCED_LEADER_EPOCH))
    assert c.state[("t", 0)].awaiting_validation


def test_skipping_validation_fetches_straight_away():
    c = consumer_at(20, 3, validate=False)
    c.tick(2)
    respond(c, 3, fetch_error(Errors.FENCED_LEADER_EPOCH))
    assert not c.state[("t", 0)].awaiting_validation


def test_out_of_range_with_reset_none_raises_and_keeps_the_position():
    c = consumer_at(20, 3)
    c.tick(2)
    respond(c, 3, fetch_error(Errors.OFFSET_OUT_OF_RANGE))
    with pytest.raises(OffsetOutOfRangeError):
        c.poll_records()
    assert c.state[("t", 0)].position == Position(20, 3)


def test_fetched_records_carry_their_leader_epoch_into_the_position():
    c = consumer_at(0, -1)
    c.tick(2)
    batch = RecordBatch(0, 7, (Record(0, None, b"a"), Record(0, None, b"b")))
    respond(c, 3, lambda req: m.FetchResponse(Errors.NONE, (m.FetchPartitionResponse(
        TID, 0, Errors.NONE, high_watermark=2, records=(batch,)),)) if isinstance(req, m.FetchRequest) else None)
    assert [(r.offset, r.leader_epoch, r.value) for r in c.poll_records()] == [(0, 7, b"a"), (1, 7, b"b")]
    assert c.state[("t", 0)].position == Position(2, 7)


# --------------------------------------------------------------------------- the KIP-320 story
STORY = ROOT / "scenarios" / "unclean-election-below-consumer.yaml"


def story(reset: str, validate: bool):
    s = load_scenario(str(STORY))
    s = dataclasses.replace(s, clients=tuple(dataclasses.replace(c, reset=reset) if c.kind == "consumer" else c
                                             for c in s.clients))
    return run_scenario(s, validate_positions=validate)


def test_unclean_election_below_the_position_is_reported_as_log_truncation():
    """reset none: LogTruncation at the divergence offset (the new leader's end offset for the
    consumer's epoch); the verdict counts it as detected, nothing undetected, no anomaly."""
    r = story("none", True)
    v = r.verdict
    assert r.exit_code == 0
    assert v["detected_truncations"] == 1 and v["undetected_truncations"] == 0
    lines = [x for x in r.timeline if "LogTruncation" in x]
    assert len(lines) == 1 and "raised LogTruncationError" in lines[0]
    divergence = int(lines[0].split("diverged at ")[1].split()[0])
    # the divergence point is where the new leader's log starts differing from what was consumed
    leader_epoch2_start = v["final"]["partitions"]["t-0"]
    assert divergence > 0 and divergence < int(lines[0].split("position ")[1].split(",")[0])
    assert leader_epoch2_start["leader"] in (1, 2)
    for k in ("poll-skip", "nonmonotonic-poll", "inconsistent-offsets"):
        assert v["anomalies"][k] == 0


def test_unclean_election_with_reset_earliest_resumes_at_the_divergence_offset():
    r = story("earliest", True)
    v = r.verdict
    assert v["detected_truncations"] == 1 and v["undetected_truncations"] == 0
    assert any("reset to it: earliest" in x for x in r.timeline)
    assert v["anomalies"]["poll-skip"] == 0 and v["anomalies"]["inconsistent-offsets"] == 0


def test_skipping_validation_is_reported_as_undetected_truncation_and_poll_skip():
    """The checker catches a consumer that does not validate its position (as some real clients)."""
    v = story("none", False).verdict
    assert v["detected_truncations"] == 0
    assert v["undetected_truncations"] == 1
    assert v["anomalies"]["poll-skip"] >= 1


@pytest.mark.parametrize("name", ["steady-replication", "leader-failover", "controlled-shutdown",
                                  "controller-failover"])
def test_steady_state_and_failover_with_producer_and_consumer_report_no_anomalies(name):
    v = run_scenario(load_scenario(str(ROOT / "scenarios" / f"{name}.yaml"))).verdict
    assert v["undetected_truncations"] == 0 and v["hwm_regressions"] == 0
    assert all(n == 0 for n in v["anomalies"].values()), v["anomalies"]


# ------------------------------------------------------------------------------ checker rules
def _final(values):
    return {"t-0": {o: (v, 0) for o, v in enumerate(values)}}


def test_checker_counts_a_consumer_that_reads_on_past_a_truncation_it_was_not_told_of():
    """KIP-320's broken promise: reads 0-2, then 3-4 that were truncated away, then the new log's 5:
    undetected; and 3-4 of the final log were never read: poll-skip."""
    from kraftlog.check.checkers import consumer_anomalies
    final = _final(["a", "b", "c", "x", "y", "z"])
    consumed = [("c", "t-0", o, v, o) for o, v in enumerate(["a", "b", "c", "OLD3", "OLD4"])]
    consumed.append(("c", "t-0", 5, "z", 10))
    r = consumer_anomalies(consumed, [], final)
    assert r["undetected_truncations"] == 1 and r["poll-skip"] == 1


def test_checker_does_not_count_a_reported_truncation_or_a_stalled_consumer():
    from kraftlog.check.checkers import consumer_anomalies
    final = _final(["a", "b", "c", "x", "y", "z"])
    read_old = [("c", "t-0", o, v, o) for o, v in enumerate(["a", "b", "c", "OLD3", "OLD4"])]
    # told at t=6 that the log diverged at 3, then reads the new log from 3 on
    resumed = [("c", "t-0", o, v, 7 + o) for o, v in [(3, "x"), (4, "y"), (5, "z")]]
    r = consumer_anomalies(read_old + resumed, [("c", "t-0", 5, 3, 6)], final)
    assert r["undetected_truncations"] == 0 and r["poll-skip"] == 0 and r["inconsistent-offsets"] == 0
    assert r["detected_truncations"] == 1
    # read truncated records, then nothing more (still waiting when the run ended): not a broken promise
    r = consumer_anomalies(read_old, [], final)
    assert r["undetected_truncations"] == 0
