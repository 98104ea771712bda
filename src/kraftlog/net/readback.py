"""A real cluster's end state read back for the checkers, shared by ``kraftlog chaos``
(:mod:`kraftlog.net.chaos`) and ``scenario run --real`` (:mod:`kraftlog.net.real_scenario`): every
partition read from its leader up to its HWM over the Kafka protocol (:func:`read_back`), every replica's
log and HWM checkpoint from its files after a clean shutdown (:func:`read_replica_disks`), and the
invariants a real run checks at its end (:func:`end_state_violations`).
"""

from __future__ import annotations

import os

from ..check import checkers
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.records import RecordBatch
from .client import KafkaConnection
from .node import HOST, node_name

__all__ = ["read_back", "read_replica_disks", "end_state_violations", "ChaosError"]


class ChaosError(Exception):
    """A real run could not go on (the cluster did not come up, a node would not restart, a leader refused
    to be read back). Raised by ``kraftlog chaos`` (:mod:`kraftlog.net.chaos`) and by :func:`read_back`."""


def end_state_violations(replica_logs: dict, partitions: dict) -> list[str]:
    """The invariants a real run can check at its end (the simulator checks more, after every event):
    log matching below the HWMs across the replicas' disks, and each partition's leader in its ISR
    (``partitions``: {name: {"leader", "isr", ...}})."""
    out = checkers.log_matching(replica_logs)
    for name, p in sorted(partitions.items()):
        if p["leader"] is not None and p["leader"] not in p["isr"]:
            out.append(f"leader-in-isr {name}: leader {p['leader']} is not in its ISR {p['isr']}")
    return out



def read_back(request, ports: dict, described: dict, stamps: dict | None = None) -> tuple[dict, dict]:
    """Every partition of the topics of ``described`` read from its leader, offset 0 to its HWM, as a consumer
    may read it:
    ``({"<topic>-<p>": {offset: (value, leader epoch)}} (None for a leaderless partition),
    {"<topic>-<p>": HWM})``. ``request(message)``: an admin request to a reachable broker (None when none
    answers); ``ports``: broker id -> client port; ``described``: {topic: its DescribeTopicPartitions
    partitions}; ``stamps``, when given, is filled with each record's producer stamp,
    ``{"<topic>-<p>": {offset: (producer id, producer epoch, sequence)}}`` (for
    :func:`~kraftlog.check.checkers.duplicate_causes`). Raises ChaosError when a leader refuses."""
    final_logs, hwms = {}, {}
    topics = sorted(described)
    md = request(m.MetadataRequest(tuple(topics)))
    if md is None:
        raise ChaosError("no broker answered Metadata at the end of the run")
    ids = {t.name: t.topic_id for t in md.topics}
    for topic in topics:
        for p in described.get(topic) or []:
            name = f"{topic}-{p.partition_index}"
            if p.leader_id < 0:
                final_logs[name] = None
                continue
            log, hwm = {}, None
            with KafkaConnection(f"{HOST}:{ports[p.leader_id]}", timeout_s=10) as k:
                offset = 0
                while hwm is None or offset < hwm:
                    resp = k.request(m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(
                        ids[topic], p.partition_index, p.leader_epoch, offset),)))
                    pr = resp.partitions[0]
                    if pr.error_code != Errors.NONE:
                        raise ChaosError(f"reading {name} back from broker {p.leader_id}: {Errors(pr.error_code).name}")
                    hwm = pr.high_watermark
                    before = offset
                    for batch in pr.records:
                        for o, rec in zip(batch.record_offsets(), batch.records, strict=True):
                            if offset <= o < hwm:
                                log[o] = (rec.value.decode(errors="replace") if rec.value is not None else None,
                                          batch.partition_leader_epoch)
                                if stamps is not None:
                                    stamps.setdefault(name, {})[o] = (
                                        batch.producer_id, batch.producer_epoch,
                                        batch.base_sequence + o - batch.base_offset if batch.base_sequence >= 0
                                        else -1)
                        offset = max(offset, batch.next_offset)
                    if offset == before:
                        break
            final_logs[name] = log
            hwms[name] = hwm
    return final_logs, hwms


def read_replica_disks(directory: str, brokers: int, partitions: list[tuple[str, int]]) -> tuple[dict, dict]:
    """After a clean shutdown, every replica's log and HWM checkpoint from its files:
    ``({"<topic>-<p>": {broker: ({offset: (value, epoch)}, HWM)}}, {"<topic>-<p>": {"<broker>": LEO}})``."""
    from ..broker.broker import LOG_DIR
    from ..storage.checkpoints import read_hwm_checkpoint
    from ..storage.segment import segment_paths
    from .disk import FileDisk
    replica_logs: dict = {}
    leos: dict = {}
    for b in range(brokers):
        root = os.path.join(directory, node_name(b))
        with FileDisk(root) as disk:
            checkpoint = read_hwm_checkpoint(disk, LOG_DIR)
            for topic, p in partitions:
                paths = segment_paths(disk, f"{LOG_DIR}/{topic}-{p}")
                if not paths:
                    continue
                content = {}
                end = 0
                for batch in (b for path in paths for b in disk.scan(path)):
                    assert isinstance(batch, RecordBatch)  # a partition segment's items
                    for o, rec in zip(batch.record_offsets(), batch.records, strict=True):
                        content[o] = (rec.value.decode(errors="replace") if rec.value is not None
                                      else None, batch.partition_leader_epoch)
                    end = batch.next_offset
                name = f"{topic}-{p}"
                replica_logs.setdefault(name, {})[b] = (content, checkpoint.get((topic, p), 0))
                leos.setdefault(name, {})[str(b)] = end
    return replica_logs, leos
