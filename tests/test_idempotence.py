"""Idempotent producer (Kafka's default with acks=all): ProducerStateManager rules and the
duplicate-free failover it buys."""

from __future__ import annotations

from pathlib import Path

from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch
from kraftlog.sim.runner import run_scenario
from kraftlog.sim.scenario import load_scenario, parse_scenario
from kraftlog.storage.disk import SimDisk
from kraftlog.storage.log import LogConfig, PartitionLog
from kraftlog.storage.producer_state import ProducerStateManager

ROOT = Path(__file__).resolve().parents[1]


def batch(seq: int, n: int = 2, pid: int = 7, epoch: int = 0, base: int = -1) -> RecordBatch:
    return RecordBatch(base, -1, tuple(Record(0, None, b"v") for _ in range(n)), producer_id=pid,
                       producer_epoch=epoch, base_sequence=seq)


def test_new_producer_must_start_at_sequence_zero():
    psm = ProducerStateManager()
    assert psm.check(batch(0)) == (Errors.NONE, -1)
    assert psm.check(batch(5))[0] == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


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


def test_controlled_shutdown_of_the_leader_under_load_writes_no_duplicate():
    """A batch appended by the old leader and replicated, then retried on the new leader after
    NOT_LEADER_OR_FOLLOWER, is recognised as a duplicate (acks=all producers are idempotent)."""
    v = run_scenario(load_scenario(str(ROOT / "scenarios" / "controlled-shutdown.yaml"))).verdict
    assert v["anomalies"]["duplicate"] == 0
    assert v["lost_acked"] == 0


def test_non_idempotent_acks_1_producer_is_unaffected():
    s = parse_scenario("""
name: acks1
cluster: {brokers: 3}
topics: [{name: t, replication_factor: 3}]
steps:
  - {at: 1s, produce: {topic: t, count: 5, acks: 1}}
""")
    v = run_scenario(s).verdict
    assert v["acked"]["1"] == 5
