"""Idempotent producer (Kafka's default with acks=all): ProducerStateManager rules and the
duplicate-free retries they buy."""

from __future__ import annotations

from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.scenario import parse_scenario
from kraftlog.sim.runner import ScenarioRun
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog
from kraftlog.storage.producer_state import ProducerStateManager


def batch(seq: int, n: int = 2, pid: int = 7, epoch: int = 0, base: int = -1) -> RecordBatch:
    return RecordBatch(base, -1, tuple(Record(0, None, b"v") for _ in range(n)), producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def test_a_producer_the_log_does_not_know_is_accepted_at_any_sequence():
    """Kafka's ProducerAppendInfo.checkSequence (KIP-360, Kafka 2.5+): with no current producer epoch
    (a new producer id, or one whose batches this replica never got or truncated away) any sequence is
    accepted; brokers before 2.5 answered UNKNOWN_PRODUCER_ID."""
    psm = ProducerStateManager()
    assert psm.check(batch(0)) == (Errors.NONE, -1)
    assert psm.check(batch(5)) == (Errors.NONE, -1)
    psm.update(batch(5, base=40))
    assert psm.check(batch(5)) == (Errors.NONE, 40)  # and from then on it is tracked
    assert psm.check(batch(9))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_new_epoch_of_a_known_producer_must_start_at_sequence_zero():
    """checkSequence: "Invalid sequence number for new epoch" when a known producer's bumped epoch does
    not start at 0."""
    psm = ProducerStateManager()
    psm.update(batch(0, epoch=1, base=0))
    assert psm.check(batch(2, epoch=2))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert psm.check(batch(0, epoch=2)) == (Errors.NONE, -1)


def test_sequences_wrap_after_integer_max_value():
    """Kafka's inSequence and DefaultRecordBatch.lastSequence: after Integer.MAX_VALUE comes 0."""
    top = 2**31 - 1
    psm = ProducerStateManager()
    psm.update(batch(top - 1, n=2, base=0))  # sequences MAX-1, MAX
    assert psm.check(batch(0)) == (Errors.NONE, -1)
    assert psm.check(batch(5))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    psm.update(batch(top, n=3, base=2))  # MAX, 0, 1: its last sequence is 1
    assert psm.producers[7].last_sequence == 1
    assert psm.check(batch(2)) == (Errors.NONE, -1)


def test_retried_batch_is_a_duplicate_answered_with_its_original_offset():
    """Kafka: a batch matching one of the last five of its producer is not appended again."""
    psm = ProducerStateManager()
    psm.update(batch(0, base=10))
    psm.update(batch(2, base=12))
    assert psm.check(batch(0)) == (Errors.NONE, 10)
    assert psm.check(batch(2)) == (Errors.NONE, 12)
    assert psm.check(batch(4)) == (Errors.NONE, -1)
    assert psm.check(batch(6))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_older_producer_epoch_is_fenced_and_a_newer_one_restarts_sequences():
    psm = ProducerStateManager()
    psm.update(batch(0, epoch=3, base=0))
    assert psm.check(batch(2, epoch=2))[0] == Errors.INVALID_PRODUCER_EPOCH
    assert psm.check(batch(0, epoch=4)) == (Errors.NONE, -1)



def test_after_an_epoch_bump_the_new_epoch_is_kept_and_the_old_epoch_is_fenced():
    """Issue 39 rule 3 (KIP-360; Kafka's ``ProducerStateManager.update`` / ``ProducerAppendInfo``: an
    append of a bumped epoch replaces the producer's entry): epoch 0 appended sequences 0-3, the producer
    bumps to epoch 1 and appends sequence 0-1; from then on epoch 1's next sequence (2) is accepted, its
    retried batch is a duplicate, and a batch of the fenced epoch 0 (even its next sequence, 4) is
    INVALID_PRODUCER_EPOCH.

    Shown to fail when ``or batch.producer_epoch > entry.epoch`` is dropped from
    ``ProducerStateManager.update`` (the entry keeps epoch 0: epoch 1's sequence 2 becomes
    OUT_OF_ORDER_SEQUENCE_NUMBER, epoch 1's retry would be appended twice, and the fenced epoch 0's
    sequence 0 is answered as a duplicate instead of INVALID_PRODUCER_EPOCH)."""
    psm = ProducerStateManager()
    psm.update(batch(0, epoch=0, base=0))
    psm.update(batch(2, epoch=0, base=2))
    assert psm.check(batch(0, epoch=1)) == (Errors.NONE, -1)
    psm.update(batch(0, epoch=1, base=4))
    assert psm.producers[7].epoch == 1
    assert psm.check(batch(2, epoch=1)) == (Errors.NONE, -1)
    assert psm.check(batch(0, epoch=1)) == (Errors.NONE, 4)
    assert psm.check(batch(4, epoch=0))[0] == Errors.INVALID_PRODUCER_EPOCH
    assert psm.check(batch(0, epoch=0))[0] == Errors.INVALID_PRODUCER_EPOCH

def test_log_rebuilds_producer_state_on_truncation_and_reload():
    """Producer state follows the log: truncating a batch away forgets it; a reload rebuilds it."""
    disk = SimDisk(None)
    log = PartitionLog(disk, "d/t-0", LogConfig(flush_interval_messages=1), 0)
    log.append_as_leader(batch(0), 0, 1)
    log.append_as_leader(batch(2), 0, 2)
    assert log.producer_state.check(batch(2)) == (Errors.NONE, 2)
    log.truncate_to(2, 3)
    assert log.producer_state.check(batch(2)) == (Errors.NONE, -1)  # in sequence again, not a duplicate
    reloaded = PartitionLog(disk, "d/t-0", LogConfig(), 4)
    assert reloaded.producer_state.check(batch(0)) == (Errors.NONE, 0)


RETRIED_PRODUCE = """
name: retried-produce
seed: 5
cluster: {brokers: 3, config: {min.insync.replicas: 2}}
topics: [{name: t, assignment: [[0, 1, 2]]}]
clients:
  - {id: p1, producer: t, acks: all, interval: 100ms}
steps:
  - {at: 2s, hold: {api: Produce, from: 0}}
  - {run_for: 35s}
  - {release: {api: Produce, from: 0}}
  - {run_for: 5s}
"""


def leader_values(run: ScenarioRun) -> list[bytes]:
    p = run.sim.broker(0).partitions[("t", 0)]
    assert p.is_leader
    return [rec.value for b in p.log.batches() for rec in b.records]


def test_batch_retried_after_a_lost_response_is_not_written_twice():
    """Kafka's idempotent producer: broker 0's Produce responses are held for 35 s, longer than
    request.timeout.ms (30 s), so the producer retries a batch the leader already appended. The leader
    recognises the retry (same producer id, epoch and sequences) and answers with the original offset:
    every record is in the log once and the checker finds no duplicate. (Without the duplicate check
    this story writes one batch twice: the checker's duplicate count is 1.)"""
    run = ScenarioRun(parse_scenario(RETRIED_PRODUCE))
    v = run.run().verdict
    values = leader_values(run)
    assert v["acked"]["all"] > 300 and v["lost_acked"] == 0
    assert len(values) == len(set(values)) >= v["acked"]["all"]
    assert v["anomalies"]["duplicate"] == 0


def test_acks_1_producer_is_not_idempotent():
    """Kafka: enable.idempotence needs acks=all; an acks=1 producer asks for no producer id and its
    batches carry none (producer id -1), so the leader keeps no producer state for them."""
    s = parse_scenario("""
name: acks1
cluster: {brokers: 3}
topics: [{name: t, assignment: [[0, 1, 2]]}]
steps:
  - {at: 1s, produce: {topic: t, count: 5, acks: 1}}
""")
    run = ScenarioRun(s)
    v = run.run().verdict
    assert v["acked"]["1"] == 5
    p = run.sim.broker(0).partitions[("t", 0)]
    batches = list(p.log.batches())
    assert batches and all(b.producer_id == -1 for b in batches)
    assert p.log.log_end_offset == 5
    assert p.log.producer_state.producers == {}
