"""KIP-320's position rule alone (kraftlog.client.position.validate_position, Kafka's
SubscriptionState.maybeCompleteValidation with OffsetsForLeaderEpochUtils.handleResponse's errors): each
outcome for the cases KIP-320 names, as properties over positions and OffsetForLeaderEpoch answers.
The consumer (tests/test_consumer.py) and the Spark source (tests/test_spark_source.py) show what each
caller does with the outcome."""

from __future__ import annotations

import tempfile

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.client.position import EpochEndOffset, FetchPosition, PositionValidation, Validation, validate_position
from kraftlog.protocol.errors import Errors

offsets = st.integers(min_value=0, max_value=10**12)
epochs = st.integers(min_value=0, max_value=2**31 - 1)
positions = st.builds(FetchPosition, offsets, epochs)
policies = st.booleans()
#: errors an OffsetForLeaderEpoch answer can carry (Kafka retries them: OffsetsForLeaderEpochUtils)
errors = st.sampled_from([Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_LEADER_EPOCH,
                          Errors.REPLICA_NOT_AVAILABLE, Errors.KAFKA_STORAGE_ERROR, Errors.OFFSET_NOT_AVAILABLE,
                          Errors.LEADER_NOT_AVAILABLE, Errors.UNKNOWN_TOPIC_OR_PARTITION])


@given(positions, epochs, st.integers(min_value=0, max_value=10**6), policies)
def test_a_leader_whose_epoch_ends_at_or_above_the_position_holds_it_valid(position, epoch, above, policy):
    """KIP-320: no truncation when the leader's end offset for the position's epoch is at or above the
    position (equal: the log ends right after the last record read). The position is kept, whatever the
    reset policy (Kafka's completeValidation)."""
    answer = EpochEndOffset(Errors.NONE, epoch, position.offset + above)
    assert validate_position(position, answer, reset_policy=policy) == PositionValidation(Validation.VALID, position)


@given(positions, epochs, policies, st.data())
def test_an_end_offset_below_the_position_is_a_truncation_diverging_at_that_offset(position, epoch, policy, data):
    """KIP-320: "truncation detected" when the leader's end offset for the position's epoch is below the
    position: the first offset known to diverge is that end offset, in the answer's epoch. With an auto
    reset policy the consumer seeks there (TRUNCATED, Kafka's seekValidated); without one it reports the
    LogTruncationException with that divergent offset (LOG_TRUNCATION). The divergent offset is always
    below the position: the rule never moves a position forward."""
    if position.offset == 0:
        return  # no offset below 0
    end = data.draw(st.integers(min_value=0, max_value=position.offset - 1))
    outcome = validate_position(position, EpochEndOffset(Errors.NONE, epoch, end), reset_policy=policy)
    assert outcome.validation is (Validation.TRUNCATED if policy else Validation.LOG_TRUNCATION)
    assert outcome.truncated and outcome.position == position and outcome.error_code == Errors.NONE
    assert outcome.divergent == FetchPosition(end, epoch) and outcome.divergent.offset < position.offset


@pytest.mark.parametrize("reset_policy, validation", [(True, Validation.TRUNCATED),
                                                       (False, Validation.LOG_TRUNCATION)],
                         ids=["auto-reset", "reset-none"])
def test_one_record_lost_below_the_position_is_a_truncation_at_exactly_that_record(reset_policy, validation):
    """The boundary: position 20 in epoch 3, the leader's epoch 3 ends at 19 (record 19, the last one
    read, is gone): divergence at 19; at 20 there is none."""
    outcome = validate_position(FetchPosition(20, 3), EpochEndOffset(Errors.NONE, 3, 19), reset_policy=reset_policy)
    assert (outcome.validation, outcome.divergent) == (validation, FetchPosition(19, 3))
    assert validate_position(FetchPosition(20, 3), EpochEndOffset(Errors.NONE, 3, 20),
                             reset_policy=reset_policy).validation is Validation.VALID


@given(positions, st.sampled_from([(-1, -1), (-1, 7), (4, -1)]), policies)
def test_an_undefined_answer_is_a_truncation_with_no_divergent_offset(position, answer, policy):
    """Kafka's hasUndefinedEpochOrOffset (end offset or epoch -1: the leader knows no epoch at or below the
    position's): everything read may be gone and no divergent offset is known. With an auto reset
    policy the offset is reset by the policy (RESET, Kafka's requestOffsetReset); without one
    LogTruncationException carries no divergent offset (LOG_TRUNCATION, divergent None)."""
    epoch, end = answer
    outcome = validate_position(position, EpochEndOffset(Errors.NONE, epoch, end), reset_policy=policy)
    assert outcome == PositionValidation(Validation.RESET if policy else Validation.LOG_TRUNCATION, position)
    assert outcome.truncated and outcome.divergent is None


@given(positions, errors, epochs, offsets, policies)
def test_an_error_answer_is_retriable_and_says_nothing_of_truncation(position, error, epoch, end, policy):
    """KIP-320: FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH (and a leader that moved) are retried after a
    metadata refresh (OffsetsForLeaderEpochUtils.handleResponse); the answer's offsets are not read, so
    an error never reports a truncation, whatever they say."""
    outcome = validate_position(position, EpochEndOffset(error, epoch, end), reset_policy=policy)
    assert outcome == PositionValidation(Validation.RETRIABLE, position, None, error)
    assert not outcome.truncated


def test_a_position_without_an_epoch_is_not_validated():
    """KIP-320: without the epoch of the last consumed record (a seek to an offset alone, a reset) the
    consumer skips validation; asking the rule anyway is a caller's error."""
    with pytest.raises(ValueError, match="no leader epoch"):
        validate_position(FetchPosition(5, None), EpochEndOffset(Errors.NONE, 0, 3), reset_policy=True)


@given(offsets, st.integers(min_value=-1, max_value=2**31 - 1))
def test_the_wire_epoch_minus_one_is_no_epoch(offset, wire_epoch):
    """OffsetFetch/OffsetCommit and record batches carry -1 for "no epoch" (Kafka's
    NO_PARTITION_LEADER_EPOCH); a position holds None, and gives -1 back."""
    position = FetchPosition.from_wire(offset, wire_epoch)
    assert position.offset_epoch == (None if wire_epoch < 0 else wire_epoch)
    assert position.wire_epoch == wire_epoch
    assert FetchPosition.from_wire(offset, wire_epoch) == position and hash(FetchPosition(offset, None)) == hash(
        FetchPosition.from_wire(offset, -1))


# ---------------------------------------------------------------- one rule, two callers
@given(st.integers(min_value=1, max_value=500), st.integers(min_value=0, max_value=9),
       st.integers(min_value=-1, max_value=9), st.integers(min_value=-1, max_value=505), policies)
@settings(max_examples=60, deadline=None)
def test_the_consumer_and_the_spark_source_read_an_answer_alike(offset, epoch, answer_epoch, end, policy):
    """The consumer (auto.offset.reset earliest = an auto reset policy, none = none) and the Spark
    source's planner (failOnDataLoss=false = an auto reset policy, true = none) given the same position
    and OffsetForLeaderEpoch answer: both find a truncation or neither; at the same divergence offset
    (unknown: -1 for the consumer, None for the source); the consumer raises LogTruncationError exactly
    when the source raises DataLossError; with a policy and a known divergence both go on from it."""
    from kraftlog.client.consumer import LogTruncationError
    from kraftlog.protocol import messages as m
    from kraftlog.spark.offsets import DataLossError
    from test_consumer import consumer_at, validate_with
    from test_spark_source import K, _FakeClient, _stream_reader

    c = consumer_at(offset, epoch, reset="earliest" if policy else "none")
    validate_with(c, m.OffsetForLeaderEpochPartitionResponse("t", 0, Errors.NONE, answer_epoch, end))
    try:
        c.poll_records()
        consumer_raised = False
    except LogTruncationError:
        consumer_raised = True
    consumer_found = [t.divergence_offset for t in c.take_truncations()]

    with tempfile.TemporaryDirectory() as events:
        reader = _stream_reader(eventsPath=events, failOnDataLoss="false" if policy else "true")
        reader._client = _FakeClient({K: (answer_epoch, end)})
        try:
            resumed = reader.validate({K: FetchPosition(offset, epoch)})[K]
            source_raised, source_found = False, [t.divergence_offset for t in reader._truncations.values()]
        except DataLossError as exc:
            resumed, source_raised = None, True
            source_found = [t.divergence_offset for t in exc.truncations]

    assert consumer_raised == source_raised == (not policy and bool(consumer_found))
    assert consumer_found == [-1 if d is None else d for d in source_found]
    if policy and consumer_found and consumer_found[0] >= 0:
        assert c.state[K].position.offset == resumed.offset == consumer_found[0]
