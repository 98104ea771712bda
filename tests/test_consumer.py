"""KIP-320 clients: the consumer's position validation paths, LogTruncationError, and the checker that
catches a consumer that skips validation."""

from __future__ import annotations

import dataclasses
import random
import uuid
from pathlib import Path

import pytest

from kraftlog.client.consumer import Consumer, LogTruncationError, OffsetOutOfRangeError
from kraftlog.client.position import FetchPosition
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.scenario import load_scenario
from kraftlog.scenario.result import RunResult
from kraftlog.sim.runner import ScenarioRun

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
    st.position = FetchPosition.from_wire(position, epoch)
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
    assert c.state[("t", 0)].position == FetchPosition(12, 3)
    assert c.poll_records() == []  # raised once


def test_divergence_with_reset_earliest_seeks_to_the_divergence_offset_without_raising():
    c = consumer_at(20, 3, reset="earliest")
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, 2, 15))
    assert c.poll_records() == []
    assert c.state[("t", 0)].position == FetchPosition(15, 2)
    assert [(t.position, t.divergence_offset) for t in c.take_truncations()] == [(20, 15)]


# ------------------------------------------------------------------ KIP-320 boundaries, Kafka's rule
# SubscriptionState.maybeCompleteValidation: with the leader's answer (epoch, end offset) for the
# position's epoch, the log was truncated below the position iff end offset < position offset; the
# divergence offset is exactly that end offset (LogTruncationException's divergent offset, or the
# position an auto reset policy seeks to). An end offset equal to the position is no truncation.
POSITION = 20


@pytest.mark.parametrize("reset", ["none", "earliest", "latest"])
def test_end_offset_one_below_the_position_is_a_truncation_at_exactly_that_offset(reset):
    """End offset = position - 1 (the last consumed record is gone): truncation detected, divergence
    offset = position - 1 exactly; reset none raises LogTruncationError once, an auto reset policy seeks
    there without raising; either way the position becomes (position - 1, the answer's epoch)."""
    c = consumer_at(POSITION, 3, reset=reset)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, 3, POSITION - 1))
    if reset == "none":
        with pytest.raises(LogTruncationError) as exc:
            c.poll_records()
        assert (exc.value.partition, exc.value.position, exc.value.divergence_offset) == (
            ("t", 0), POSITION, POSITION - 1)
    assert c.poll_records() == []  # raised once (reset none), never (auto reset)
    assert [(t.position, t.divergence_offset, t.reset) for t in c.take_truncations()] == [
        (POSITION, POSITION - 1, reset)]
    assert c.state[("t", 0)].position == FetchPosition(POSITION - 1, 3)
    assert not c.state[("t", 0)].awaiting_validation


@pytest.mark.parametrize("end_offset, answer_epoch", [
    (POSITION, 3),       # the boundary: the leader's log for epoch 3 ends exactly at the position
    (POSITION + 1, 3),   # it went further
    (POSITION + 5, 3),
    (POSITION, 2),       # another epoch answered (ours is unknown to the leader) but not below us
], ids=["end=position", "end=position+1", "end=position+5", "other-epoch-end=position"])
def test_end_offset_at_or_above_the_position_is_not_a_truncation(end_offset, answer_epoch):
    """End offset >= position: validation completes, the position is kept as it was (offset and epoch), no
    truncation is reported and the next request is a Fetch from the position."""
    c = consumer_at(POSITION, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, answer_epoch, end_offset))
    assert c.poll_records() == []
    assert c.take_truncations() == []
    st = c.state[("t", 0)]
    assert st.position == FetchPosition(POSITION, 3) and not st.awaiting_validation
    c.tick(20)
    fetches = [x for x in sent(c) if isinstance(x, m.FetchRequest)]
    assert [p.fetch_offset for p in fetches[0].partitions] == [POSITION]


@pytest.mark.parametrize("answer", [(-1, -1), (-1, POSITION + 5), (3, -1)], ids=["undefined", "epoch-1", "offset-1"])
def test_undefined_answer_with_reset_none_is_a_truncation_without_divergence_offset(answer):
    """Kafka: an answer with UNDEFINED_EPOCH_OFFSET or UNDEFINED_EPOCH (the leader knows no epoch at or
    below ours: everything we read may be gone) is a truncation; with reset none poll() raises
    LogTruncationException for the partition at its position, with no divergent offset."""
    c = consumer_at(POSITION, 3)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, *answer))
    with pytest.raises(LogTruncationError) as exc:
        c.poll_records()
    assert exc.value.partition == ("t", 0) and exc.value.position == POSITION


@pytest.mark.parametrize("reset, timestamp", [("earliest", m.EARLIEST_TIMESTAMP), ("latest", m.LATEST_TIMESTAMP)])
def test_undefined_answer_with_auto_reset_resets_the_offset(reset, timestamp):
    """Kafka: with an auto reset policy an undefined answer requests an offset reset (requestOffsetReset):
    the next request is a ListOffsets with the policy's timestamp, not a Fetch from the old position."""
    c = consumer_at(POSITION, 3, reset=reset)
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, -1, -1))
    assert c.poll_records() == []
    c.tick(20)
    queued = sent(c)
    assert not [x for x in queued if isinstance(x, m.FetchRequest)]
    lists = [x for x in queued if isinstance(x, m.ListOffsetsRequest)]
    assert [p.timestamp for p in lists[0].partitions] == [timestamp]


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
    assert c.state[("t", 0)].position == FetchPosition(20, 3)


def test_fetched_records_carry_their_leader_epoch_into_the_position():
    c = consumer_at(0, -1)
    c.tick(2)
    batch = RecordBatch(0, 7, (Record(0, None, b"a"), Record(0, None, b"b")))
    respond(c, 3, lambda req: m.FetchResponse(Errors.NONE, (m.FetchPartitionResponse(
        TID, 0, Errors.NONE, high_watermark=2, records=(batch,)),)) if isinstance(req, m.FetchRequest) else None)
    assert [(r.offset, r.leader_epoch, r.value) for r in c.poll_records()] == [(0, 7, b"a"), (1, 7, b"b")]
    assert c.state[("t", 0)].position == FetchPosition(2, 7)


# --------------------------------------------------------------------------- the KIP-320 story
STORY = ROOT / "scenarios" / "unclean-election-below-consumer.yaml"


def story(reset: str, validate: bool) -> tuple[ScenarioRun, RunResult]:
    s = load_scenario(str(STORY))
    s = dataclasses.replace(s, clients=tuple(dataclasses.replace(c, reset=reset) if c.kind == "consumer" else c
                                             for c in s.clients))
    run = ScenarioRun(s, validate_positions=validate)
    return run, run.run()


@pytest.mark.parametrize("reset", ["none", "earliest"])
def test_unclean_election_below_the_position_is_detected_at_the_exact_divergence_offset(reset):
    """KIP-320 end to end: the consumer read acks=1 records that an unclean election then cut away. It
    detects the truncation once, at a divergence offset that is exactly the first offset where what it
    had read differs from the final committed log, and that is where the new leader's next leader epoch
    starts (the new leader's end offset for the consumer's epoch). It resumes there: reset none by
    raising LogTruncationError, earliest by seeking; the verdict counts one detected truncation and no
    consumer anomaly."""
    run, r = story(reset, True)
    v = r.verdict
    assert r.exit_code == 0
    assert v["detected_truncations"] == 1 and v["undetected_truncations"] == 0
    ((client, name, position, divergence, _, seq),) = run.truncations
    read_before = {o: val for (c, n, o, val, _, s) in run.consumed if (c, n) == (client, name) and s < seq}
    assert position == max(read_before) + 1
    _, final_logs, _ = run.final_state()
    final = final_logs[name]
    first_difference = min(o for o, val in read_before.items() if final.get(o, (None,))[0] != val)
    assert divergence == first_difference
    assert 0 < divergence < position
    leader = v["final"]["partitions"][name]["leader"]
    epochs = run.sim.broker(leader).partitions[("t", 0)].log.epoch_cache.entries()
    assert divergence in [start for _, start in epochs[1:]], epochs
    read_after = sorted(o for (c, n, o, _, _, s) in run.consumed if (c, n) == (client, name) and s > seq)
    assert read_after[0] == divergence
    how = "raised LogTruncationError" if reset == "none" else "reset to it: earliest"
    assert sum("LogTruncation" in x for x in r.timeline) == 1
    assert any(f"position {position}, diverged at {divergence} ({how})" in x for x in r.timeline)
    for k in ("poll-skip", "nonmonotonic-poll", "inconsistent-offsets"):
        assert v["anomalies"][k] == 0


def test_skipping_validation_is_reported_as_undetected_truncation_and_poll_skip():
    """The checker catches a consumer that does not validate its position (as some real clients)."""
    run, r = story("none", False)
    v = r.verdict
    assert run.truncations == []
    assert v["detected_truncations"] == 0
    assert v["undetected_truncations"] == 1
    assert v["anomalies"]["poll-skip"] >= 1


@pytest.mark.parametrize("name", ["steady-replication", "leader-failover", "controlled-shutdown",
                                  "controller-failover"])
def test_steady_state_and_failover_with_producer_and_consumer_report_no_anomalies(library, name):
    """The library's consumer stories without data loss (one session run each, conftest.py): acks=all
    records were acknowledged, the consumer was never told of a truncation (and none went unnoticed),
    never saw the HWM go back, and the Jepsen checkers find nothing (lost-write, duplicate,
    inconsistent-offsets, nonmonotonic-poll, poll-skip)."""
    v = library[name].verdict
    assert v["acked"]["all"] > 0
    assert v["detected_truncations"] == 0 and v["undetected_truncations"] == 0
    assert v["hwm_regressions"] == 0
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



def test_checker_counts_an_undetected_truncation_when_the_consumer_rereads_exactly_at_the_divergence_offset():
    """Issue 39 rule 9 (KIP-320's promise, ``checkers.consumer_anomalies``: a consumer that read records
    truncated away and then reads the new log *at or past* the divergence without a truncation report
    was silently wrong). Reads 0-2, then OLD3 and OLD4 (truncated away: the final log holds x at 3), then,
    never told, x at exactly offset 3: one undetected truncation. Told first (a report diverging at 3),
    the same re-read is fine.

    Shown to fail when ``off >= truncated_at[key]`` in ``consumer_anomalies`` is flipped to ``>``
    (only reads past the divergence offset would count)."""
    from kraftlog.check.checkers import consumer_anomalies
    final = _final(["a", "b", "c", "x", "y"])
    read_old = [("c", "t-0", o, v, o) for o, v in enumerate(["a", "b", "c", "OLD3", "OLD4"])]
    reread = [("c", "t-0", 3, "x", 10)]
    r = consumer_anomalies(read_old + reread, [], final)
    assert r["undetected_truncations"] == 1 and r["detected_truncations"] == 0
    r = consumer_anomalies(read_old + reread, [("c", "t-0", 5, 3, 9)], final)
    assert r["undetected_truncations"] == 0 and r["detected_truncations"] == 1

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


def test_a_position_below_the_log_start_offset_resets_by_auto_offset_reset_and_is_no_truncation():
    """Issue 30: retention or DeleteRecords moved the log start offset past the consumer's position; the Fetch
    answer is OFFSET_OUT_OF_RANGE and the consumer resets by ``auto.offset.reset`` (earliest: ListOffsets
    EARLIEST, the new log start) without reporting a truncation (KIP-320 reports only diverging epochs)."""
    c = consumer_at(3, 0, reset="earliest")
    c.tick(2)
    respond(c, 3, fetch_error(Errors.OFFSET_OUT_OF_RANGE))
    assert c.state[("t", 0)].awaiting_reset
    c.tick(4)
    asked = [x for x in sent(c) if isinstance(x, m.ListOffsetsRequest)]
    assert [p.timestamp for p in asked[0].partitions] == [m.EARLIEST_TIMESTAMP]
    respond(c, 5, lambda req: m.ListOffsetsResponse((m.ListOffsetsPartitionResponse("t", 0, Errors.NONE, -2, 7, 0),))
            if isinstance(req, m.ListOffsetsRequest) else None)
    assert c.state[("t", 0)].position.offset == 7
    assert c.take_truncations() == [] and c.poll_records() == []
