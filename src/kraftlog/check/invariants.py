"""The TLA+ invariants of KIP-966 replication, checked while a run goes.

Source: Jack Vanlightly's TLA+ specification of Kafka replication with ELR
(``Vanlightly/kafka-tlaplus``, ``kafka_data_replication/kraft/v_elr/v_elr_properties.tla`` and the
module it uses, ``kafka_replication_v_elr_simple.tla`` / ``v_elr_functions.tla``; the later
``kraft/kip-966/kip_966_properties.tla`` states the same properties under other names). These
invariants fire *before* data is lost: a state from which an election can lose acknowledged records
already breaks them, whereas ``lost_acked`` only sees the loss at the end of the run.

What "committed" means here, as in the specification:

* ``ControllerIsrHasUpToTrueHWM`` and the ELR part of ``ValidControllerIsrAndElr`` compare a member's
  LEO with the **true HWM**, the spec's ``inv_true_hwm``: the highest HWM any leader (stale or not)
  ever set for the partition (``MaybeAdvanceHighWatermark`` raises it, nothing lowers it). The runner
  takes it from every leader HWM it observes after each broker event, and from each acks=all
  acknowledgement (an acks=all ack of offset ``o`` is only sent once the leader's HWM passed ``o``,
  so ``o + 1`` is a lower bound of the true HWM at that moment).
* ``LeaderHasCompleteCommittedLog`` checks the **acknowledged records**, the spec's ``inv_pos_acked``:
  every record acknowledged to an acks=all producer, at the offset its acknowledgement carried
  (stricter than the spec's "at any offset": Kafka never moves a committed record).

A *running* broker (the spec's ``broker_state[b].status = RUNNING``: it registered and got its
registration answered) is a live broker whose current broker epoch equals the one in the
controller's image. A broker that is down, or restarted and not yet registered, is not checked: it
may have lost what it held, and KIP-903/KIP-966 only require that it not come back into the ISR/ELR
with less. Nor is a broker whose log directory is offline (KIP-858: an I/O error): its replicas are
offline, their data unreachable on its disk until it restarts, which makes it register anew.

Functions take plain data and return ``(key, message)`` pairs like :mod:`kraftlog.check.checkers`:
the key deduplicates a finding repeated at every check, the message reads
``t=<ms>ms <InvariantName> <partition>: <what>``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence

from ..protocol.records import Record

#: A finding: (deduplication key, message).
Finding = tuple[str, str]
#: An acknowledged acks=all record: (offset, value bytes).
Acked = tuple[int, bytes | None]

#: The specification's names, used as the first word of each message.
CONTROLLER_ISR_HAS_UP_TO_TRUE_HWM = "ControllerIsrHasUpToTrueHWM"
VALID_CONTROLLER_ISR_AND_ELR = "ValidControllerIsrAndElr"
VALID_LEADER_MAXIMAL_ISR = "ValidLeaderMaximalISR"
LEADER_HAS_COMPLETE_COMMITTED_LOG = "LeaderHasCompleteCommittedLog"
NO_METADATA_LOG_DIVERGENCE = "NoMetadataLogDivergence"


def isr_elr_completeness(name: str, isr: Collection[int], elr: Collection[int], running_leo: Mapping[int, int],
                         true_hwm: int, now_ms: int) -> list[Finding]:
    """No running member of the controller's ISR or ELR lacks a committed record.

    ``ControllerIsrHasUpToTrueHWM`` (ISR) and the ELR clause of ``ValidControllerIsrAndElr``:
    ``~∃ b ∈ isr ∪ elr: partition_data[b].leo < inv_true_hwm ∧ broker_state[b].status = RUNNING``.

    ``isr``/``elr``: the controller's committed members (broker ids); ``running_leo``: {broker: LEO
    (offset)} of the members that are running (members missing from it are not checked);
    ``true_hwm``: the true HWM (offset, see the module docstring). Keys are
    ``<Invariant> <partition> <broker>``: one finding per member and partition."""
    out: list[Finding] = []
    if true_hwm <= 0:
        return out
    for inv, role, members in ((CONTROLLER_ISR_HAS_UP_TO_TRUE_HWM, "ISR", isr),
                               (VALID_CONTROLLER_ISR_AND_ELR, "ELR", elr)):
        for b in members:
            leo = running_leo.get(b)
            if leo is not None and leo < true_hwm:
                out.append((f"{inv} {name} {b}",
                            f"t={now_ms}ms {inv} {name}: running {role} member {b} has LEO {leo} below the "
                            f"true HWM {true_hwm} (committed records it lacks: {true_hwm - leo}; "
                            f"{role} {list(members)})"))
    return out


def leader_maximal_isr(name: str, broker: int, leader_isr: Collection[int], maximal_isr: Collection[int],
                       pending: bool, controller_isr: Collection[int], controller_elr: Collection[int], min_isr: int,
                       now_ms: int) -> list[Finding]:
    """``ValidLeaderMaximalISR`` for one non-stale leader (``IsNonStaleLeader``: the broker leads the
    partition in the controller's current leader epoch).

    The spec's two clauses, checked on the leader's own state:

    * without a pending AlterPartition, the maximal ISR equals the leader's ISR;
    * when the leader's ISR has at least ``min_isr`` members, its maximal ISR contains the
      controller's ISR ∪ ELR (otherwise the HWM can advance past a record that an electable replica
      lacks, and Leader Candidate Completeness breaks).

    ``leader_isr``/``maximal_isr``: the leader's committed ISR and its maximal ISR (KIP-497);
    ``pending``: an AlterPartition is in flight; ``controller_isr``/``controller_elr``: the
    controller's committed state; ``min_isr``: the effective min ISR. Keys:
    ``ValidLeaderMaximalISR <partition> <broker> <clause>``."""
    out: list[Finding] = []
    maximal = set(maximal_isr)
    if not pending and maximal != set(leader_isr):
        out.append((f"{VALID_LEADER_MAXIMAL_ISR} {name} {broker} equal",
                    f"t={now_ms}ms {VALID_LEADER_MAXIMAL_ISR} {name}: leader {broker} has no AlterPartition in "
                    f"flight but its maximal ISR {sorted(maximal)} differs from its ISR {sorted(leader_isr)}"))
    if len(leader_isr) >= min_isr:
        outside = sorted((set(controller_isr) | set(controller_elr)) - maximal)
        if outside:
            out.append((f"{VALID_LEADER_MAXIMAL_ISR} {name} {broker} superset",
                        f"t={now_ms}ms {VALID_LEADER_MAXIMAL_ISR} {name}: leader {broker}'s maximal ISR "
                        f"{sorted(maximal)} lacks {outside} of the controller's ISR {list(controller_isr)} ∪ ELR "
                        f"{list(controller_elr)} while its ISR {list(leader_isr)} is at least min ISR {min_isr}"))
    return out


def missing_acked(acked: Sequence[Acked], start: int,
                  record_at: Callable[[int], tuple[Record, int] | None]) -> tuple[int, list[Acked]]:
    """Scan ``acked[start:]`` against a replica log.

    ``acked``: [(offset, value bytes)] of records acknowledged to acks=all producers, in ack order;
    ``record_at(offset)``: the log's (record, leader epoch) at that offset, or None (``PartitionLog.record_at``).
    Returns (``len(acked)``, the missing entries), a missing entry being an acknowledged record the log
    does not hold at its offset. Cost: one lookup per entry scanned (O(log batches) each)."""
    missing: list[Acked] = []
    for i in range(start, len(acked)):
        offset, value = acked[i]
        found = record_at(offset)
        if found is None or found[0].value != value:
            missing.append((offset, value))
    return len(acked), missing


def leader_complete_log(name: str, leader: int, leader_epoch: int, missing: Sequence[Acked], acked_total: int,
                        now_ms: int) -> list[Finding]:
    """``LeaderHasCompleteCommittedLog``: the controller's leader holds every acknowledged record
    (``∀ v ∈ inv_pos_acked: ∃ offset: log[leader][offset].value = v``; here at the acknowledged offset).

    ``missing``: [(offset, value bytes)] from :func:`missing_acked` over the running leader's log;
    ``acked_total``: how many acks=all records the partition has acknowledged so far. Key:
    ``LeaderHasCompleteCommittedLog <partition> <leader epoch>`` (one finding per elected leader)."""
    if not missing:
        return []
    offset, value = missing[0]
    shown = value.decode(errors="replace") if isinstance(value, bytes) else value
    return [(f"{LEADER_HAS_COMPLETE_COMMITTED_LOG} {name} {leader_epoch}",
             f"t={now_ms}ms {LEADER_HAS_COMPLETE_COMMITTED_LOG} {name}: leader {leader} (epoch {leader_epoch}) "
             f"lacks {len(missing)} of {acked_total} acknowledged records, the first {shown!r} at offset {offset}")]


def metadata_log_divergence(broker: int, broker_log: Sequence[object], controller_log: Sequence[object], start: int,
                            now_ms: int) -> list[Finding]:
    """``NoMetadataLogDivergence``: a broker's copy of the metadata log agrees with the controller's at
    every offset both hold (``~∃ offset ≤ Len(con_metadata_log): Len(broker_metadata_log[b]) >= offset ∧
    broker_metadata_log[b][offset] # con_metadata_log[offset]``), checked from offset ``start`` on.

    ``broker_log``/``controller_log``: lists of metadata records indexed by offset. Records are compared
    by identity first (the simulator shares them), then by value (``--wire`` copies them). Offsets below the
    controller's log start offset (``controller_log.start_offset``: cleaned after a snapshot) and broker entries
    None (below a snapshot the broker loaded) are not compared. Returns the first divergence only. Key:
    ``NoMetadataLogDivergence broker <id>``."""
    end = min(len(broker_log), len(controller_log))
    for off in range(max(start, getattr(controller_log, "start_offset", 0), 0), end):
        mine, theirs = broker_log[off], controller_log[off]
        if mine is None or mine is theirs or mine == theirs:
            continue
        return [(f"{NO_METADATA_LOG_DIVERGENCE} broker {broker}",
                 f"t={now_ms}ms {NO_METADATA_LOG_DIVERGENCE} broker {broker}: metadata offset {off} holds "
                 f"{mine!r} on the broker but {theirs!r} on the controller")]
    return []
