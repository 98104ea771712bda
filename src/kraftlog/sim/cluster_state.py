"""Reading a simulated cluster's state for a scenario run: the committed metadata, the conditions of
``wait_until``/``expect`` (SCENARIOS.md), the final state of the verdict and the replicas' logs.

Everything here reads the cluster and changes nothing (no history event, no digest moves).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..broker.broker import LOG_DIR
from ..broker.log_manager import stray_partitions
from ..client.producer import record_identity
from ..metadata.image import MetadataImage
from ..metadata.topic_names import INTERNAL_TOPICS
from ..storage.epoch_cache import parse_epoch_checkpoint
from ..storage.log import EPOCH_CHECKPOINT_FILE, PartitionLog
from ..storage.segment import segment_paths

if TYPE_CHECKING:
    from ..check.checkers import Compaction, FinalLogs, LogContent, ReplicaLogs, Retention
    from ..controller.controller import QuorumController
    from ..scenario import Condition
    from .cluster import SimCluster


def committed_image(sim: SimCluster, brokers: int, last_controller: QuorumController | None) -> MetadataImage:
    """The committed metadata that conditions and the verdict read: the controller's image; while
    the controller is down (it refused to start), the newest image a live broker holds (the metadata
    the cluster still serves; the lowest broker id among equals), else the last controller's
    (``last_controller``), else an empty image."""
    ctl = sim.controller
    if ctl is not None:
        return ctl.committed_image
    best = None
    for c in sim.controllers() if sim.quorum_ids else ():  # a quorum without an active controller: the standbys'
        if best is None or c.image.offset > best.offset:
            best = c.image
    for b in range(brokers):
        node = sim.broker(b)
        if node is not None and (best is None or node.image.offset > best.offset):
            best = node.image
    if best is not None:
        return best
    return last_controller.committed_image if last_controller is not None else MetadataImage()


def leader_hwm(sim: SimCluster, image: MetadataImage, topic: str, index: int) -> int | None:
    """The HWM of partition ``topic``-``index`` on its leader in ``image``, if that broker runs and leads
    it; else None."""
    part = image.partitions.get((topic, index))
    if part is None or part.leader < 0:
        return None
    b = sim.broker(part.leader)
    if b is None:
        return None
    p = b.partitions.get((topic, index))
    if p is None or not p.is_leader:
        return None
    return p.log.high_watermark


def quorum_view(sim: SimCluster) -> tuple[object, int]:
    """(the active controller's id or None, the highest Raft epoch a running controller is in)."""
    ctl = sim.controller
    epochs = [c.quorum.raft.epoch for c in sim.controllers() if c.quorum is not None]
    return (ctl.node_id if ctl is not None else None), max(epochs, default=0)


def holds(sim: SimCluster, image: MetadataImage, cond: Condition) -> bool:
    """Evaluate a condition against the committed ``image`` (and the leader's HWM), or the quorum."""
    checks = cond.checks
    if cond.kind == "quorum":
        active, epoch = quorum_view(sim)
        for key, want in checks.items():
            if key == "active_controller" and (active is None if want == "any" else active != want):
                return False
            if key == "quorum_epoch" and epoch != want:
                return False
            if key == "quorum_epoch_at_least" and epoch < int(str(want)):
                return False
        return True
    if cond.kind == "metadata":
        start, snapshot = metadata_log_view(sim)
        for key, want in checks.items():
            value = start if key == "metadata_log_start_at_least" else snapshot
            if value is None or value < int(str(want)):
                return False
        return True
    if cond.kind == "partition":
        topic, _, idx = str(cond.target).rpartition("-")
        part = image.partitions.get((topic, int(idx)))
        if part is None:
            return False
        for key, want in checks.items():
            if key == "leader":
                if (part.leader if part.leader >= 0 else None) != want:
                    return False
            elif key == "isr":
                if frozenset(part.isr) != want:
                    return False
            elif key == "elr":
                if frozenset(part.elr) != want:
                    return False
            elif key == "last_known_elr":
                if frozenset(part.last_known_elr) != want:
                    return False
            elif key == "leader_epoch_at_least":
                assert isinstance(want, int)  # Condition: an int
                if part.leader_epoch < want:
                    return False
            elif key == "recovering":
                if part.recovering != want:
                    return False
            elif key in ("hwm", "hwm_at_least"):
                assert isinstance(want, int)  # Condition: an int
                hwm = leader_hwm(sim, image, topic, int(idx))
                if hwm is None or (hwm != want if key == "hwm" else hwm < want):
                    return False
        return True
    broker = int(cond.target)
    reg = image.brokers.get(broker)
    for key, want in checks.items():
        if key == "alive":
            if sim.alive(broker) != want:
                return False
        elif key == "fenced":
            if (reg is None or reg.fenced) != want:
                return False
        elif key == "in_controlled_shutdown":
            if (reg is not None and reg.in_controlled_shutdown) != want:
                return False
        elif key == "log_dir_offline":
            if (reg is not None and not reg.has_online_log_dir) != want:
                return False
        elif key == "stray_partitions":
            if frozenset(stray_partitions(sim.disks[broker])) != want:
                return False
        elif key == "metadata_offset_at_least":
            offset = broker_metadata_offset(sim, broker)
            if offset is None or offset < int(str(want)):
                return False
    return True


def broker_metadata_offset(sim: SimCluster, broker: int) -> int | None:
    """The offset of the last metadata record running broker ``broker`` replayed, None when it is down."""
    node = sim.nodes.get(broker)
    return node.image.offset if node is not None and hasattr(node, "image") else None


def metadata_log_view(sim: SimCluster) -> tuple[int | None, int | None]:
    """(the metadata log start offset, the latest snapshot's end offset, -1 for none) of the single controller, or
    of a quorum the least over its running controllers (every running voter's log starts there or later, and each
    wrote or fetched a snapshot there or later); None for both while none runs."""
    ctl = sim.controller
    if ctl is not None and ctl.single is not None:
        latest = ctl.single.log.latest_snapshot_id
        return ctl.single.log.start_offset, (latest.end_offset if latest is not None else -1)
    logs = [c.quorum.raft.log for c in sim.controllers() if c.quorum is not None]
    if not logs:
        return None, None
    return (min(log.start_offset for log in logs),
            min(log.files.latest.end_offset if log.files.latest is not None else -1 for log in logs))


def observed(sim: SimCluster, image: MetadataImage, cond: Condition) -> str:
    """What the condition's target looks like in ``image`` (for a condition that did not hold)."""
    if cond.kind == "quorum":
        active, epoch = quorum_view(sim)
        return f"active_controller={active if active is not None else 'none'}, quorum_epoch={epoch}"
    if cond.kind == "metadata":
        start, snapshot = metadata_log_view(sim)
        return f"metadata_log_start={start}, metadata_snapshot={snapshot}"
    if cond.kind == "partition":
        topic, _, idx = str(cond.target).rpartition("-")
        part = image.partitions.get((topic, int(idx)))
        if part is None:
            return "no such partition"
        hwm = leader_hwm(sim, image, topic, int(idx))
        return (f"leader={part.leader if part.leader >= 0 else None}, isr={list(part.isr)}, elr={list(part.elr)}, "
                f"last_known_elr={list(part.last_known_elr)}, leader_epoch={part.leader_epoch}, hwm={hwm}, "
                f"recovering={part.recovering}")
    reg = image.brokers.get(int(cond.target))
    return (f"alive={sim.alive(int(cond.target))}, fenced={reg.fenced if reg else None}, "
            f"in_controlled_shutdown={reg.in_controlled_shutdown if reg else None}, "
            f"log_dir_offline={(not reg.has_online_log_dir) if reg else None}, "
            f"metadata_offset={broker_metadata_offset(sim, int(cond.target))}, "
            f"stray_partitions={sorted(stray_partitions(sim.disks[int(cond.target)]))}")


def retention_view(sim: SimCluster, image: MetadataImage, end_ms: int,
                   acked_at: dict[tuple[str, str], tuple[int, int]]) -> dict[str, Retention]:
    """For each partition whose running leader's log start offset moved above 0 (retention or a log start
    taken from a leader), what the checker needs to tell records retention was entitled to delete from lost
    ones (:class:`kraftlog.check.checkers.Retention`): the leader's log start, its retention configs, the run's
    end, its batches from the log start on and the partition's acks=all records' offsets and timestamps."""
    out: dict[str, Retention] = {}
    for (topic, idx) in sorted(image.partitions):
        part = image.partitions[(topic, idx)]
        leader = sim.broker(part.leader) if part.leader >= 0 else None
        p = leader.partitions.get((topic, idx)) if leader is not None else None
        if p is None or not p.is_leader or p.log.log_start_offset == 0:
            continue
        log = p.log
        name = f"{topic}-{idx}"
        out[name] = {"log_start": log.log_start_offset, "retention_ms": log.config.retention_ms,
                     "retention_bytes": log.config.retention_bytes, "end_ms": end_ms,
                     "batches": [(b.base_offset, b.size_bytes) for b in log.batches()
                                 if b.next_offset > log.log_start_offset],
                     "acked_at": {v: at for (n, v), at in acked_at.items() if n == name}}
    return out


def compaction_view(sim: SimCluster, image: MetadataImage, keys: dict[tuple[str, str], str],
                    acked_at: dict[tuple[str, str], tuple[int, int]],
                    tombstones: set[tuple[str, str]] = frozenset()) -> dict[str, Compaction]:  # type: ignore[assignment]
    """For each compacted partition with a running leader (``cleanup.policy`` holds ``compact``), what the checker
    needs to tell records the log cleaner was entitled to remove from lost ones
    (:class:`kraftlog.check.checkers.Compaction`): the keys the producers sent, the leader log's last offset of
    each key below its HWM, the acks=all records' offsets, the acknowledged tombstones of each key (offset,
    timestamp), the partition's ``delete.retention.ms`` and the run's end."""
    out: dict[str, Compaction] = {}
    for (topic, idx) in sorted(image.partitions):
        part = image.partitions[(topic, idx)]
        leader = sim.broker(part.leader) if part.leader >= 0 else None
        p = leader.partitions.get((topic, idx)) if leader is not None else None
        if p is None or not p.is_leader or not p.log.config.compact or topic in INTERNAL_TOPICS:
            continue
        name = f"{topic}-{idx}"
        out[name] = compaction_of(p.log, name, keys, acked_at, tombstones, sim.now, p.log.high_watermark)
    return out


def compaction_of(log: PartitionLog, name: str, keys: dict[tuple[str, str], str],
                  acked_at: dict[tuple[str, str], tuple[int, int]], tombstones: set[tuple[str, str]], end_ms: int,
                  upto: int) -> Compaction:
    """Partition ``name``'s :class:`kraftlog.check.checkers.Compaction` from ``log`` (its offsets from the log start
    to ``upto``: the HWM for the verdict, the LEO online) and the recorder's ``keys``, ``acked_at`` and
    ``tombstones``, at ``end_ms``."""
    latest: dict[str, int] = {}
    for batch in log.batches():
        for offset, rec in zip(batch.record_offsets(), batch.records, strict=True):
            if log.log_start_offset <= offset < upto and rec.key is not None:
                latest[rec.key.decode(errors="replace")] = offset
    tombs: dict[str, list[tuple[int, int]]] = {}
    for (n, v) in sorted(tombstones):
        at = acked_at.get((n, v))
        if n == name and at is not None:
            tombs.setdefault(keys[(n, v)], []).append(at)
    return {"keys": {v: k for (n, v), k in keys.items() if n == name}, "latest": latest,
            "acked_offsets": {v: at[0] for (n, v), at in acked_at.items() if n == name},
            "tombstones": tombs, "delete_retention_ms": log.config.delete_retention_ms, "end_ms": end_ms}


def final_state(sim: SimCluster, image: MetadataImage, brokers: int
                ) -> tuple[dict[str, dict[str, dict[str, object]]], FinalLogs, ReplicaLogs]:
    """The verdict's ``final`` (``{"partitions": {...}, "brokers": {...}}``, SCENARIOS.md), the final
    leader logs below their HWMs and every live replica's log (shapes in :mod:`kraftlog.check.checkers`),
    read from the committed ``image`` and the running brokers."""
    partitions: dict[str, dict[str, object]] = {}
    final_logs: FinalLogs = {}
    replica_logs: ReplicaLogs = {}
    # {offset: (value, leader epoch)} per distinct log. In the simulator replicas append the very
    # batch objects they fetched, so a log holding the same batches as one already read is read once.
    contents: dict[tuple[int, ...], LogContent] = {}
    for (topic, idx) in sorted(image.partitions):
        part = image.partitions[(topic, idx)]
        name = f"{topic}-{idx}"
        leos: dict[str, int] = {}
        logs: dict[int, tuple[LogContent, int]] = {}
        internal = topic in INTERNAL_TOPICS  # its records are the group checkers' (recorder.groups), not these
        for r in part.replicas:
            b = sim.broker(r)
            p = b.partitions.get((topic, idx)) if b is not None else None
            if p is None:
                continue
            leos[str(r)] = p.log.log_end_offset
            if internal:
                continue
            batches = list(p.log.batches())
            same_batches = tuple(map(id, batches))
            content = contents.get(same_batches)
            if content is None:
                content = contents[same_batches] = {}
                for batch in batches:
                    epoch = batch.partition_leader_epoch
                    values = [(record_identity(rec.value, rec.headers), epoch) for rec in batch.records]
                    content.update(zip(batch.record_offsets(), values, strict=True))
            logs[r] = (content, p.log.high_watermark)
        hwm = None
        if internal:
            leader = sim.broker(part.leader) if part.leader >= 0 else None
            p = leader.partitions.get((topic, idx)) if leader is not None else None
            hwm = p.log.high_watermark if p is not None and p.is_leader else None
        else:
            replica_logs[name] = logs
        if part.leader >= 0 and part.leader in logs:
            leader = sim.broker(part.leader)
            assert leader is not None  # it holds a log: it runs
            if leader.partitions[(topic, idx)].is_leader:
                content, hwm = logs[part.leader]
                start = leader.partitions[(topic, idx)].log.log_start_offset  # below it: deleted or unreadable
                final_logs[name] = {o: v for o, v in content.items() if start <= o < hwm}
        if name not in final_logs and not internal:
            final_logs[name] = None
        partitions[name] = {
            "leader": part.leader if part.leader >= 0 else None, "leader_epoch": part.leader_epoch,
            "partition_epoch": part.partition_epoch, "isr": list(part.isr), "elr": list(part.elr),
            "last_known_elr": list(part.last_known_elr),
            "last_known_leader": part.last_known_leader if part.last_known_leader >= 0 else None,
            "recovering": part.recovering, "hwm": hwm, "leo": leos}
    registrations: dict[str, dict[str, object]] = {}
    for broker in range(brokers):
        reg = image.brokers.get(broker)
        registrations[str(broker)] = {"alive": sim.alive(broker), "fenced": reg.fenced if reg else True,
                                      "epoch": reg.broker_epoch if reg else -1}
    return {"partitions": partitions, "brokers": registrations}, final_logs, replica_logs


def dump_logs(sim: SimCluster, image: MetadataImage) -> dict[str, dict[str, dict[str, object]]]:
    """Every replica's log at the end, like ``kafka-dump-log --print-data-log``: ``{partition: {broker:
    {"alive", "state", "leo", "hwm", "leader_epoch_cache": [[epoch, start offset], ...], "batches":
    [{"base_offset", "last_offset", "count", "leader_epoch", "producer_id", "producer_epoch",
    "base_sequence", "size_bytes", "values"}, ...]}}}``. A broker that is down shows what its disk holds
    (what it will recover on restart; ``hwm`` None)."""
    out: dict[str, dict[str, dict[str, object]]] = {}
    for (topic, idx) in sorted(image.partitions):
        if topic in INTERNAL_TOPICS:
            continue  # binary records of the group coordinator
        part = image.partitions[(topic, idx)]
        replicas: dict[str, dict[str, object]] = {}
        for r in part.replicas:
            b = sim.broker(r)
            p = b.partitions.get((topic, idx)) if b is not None else None
            hwm: int | None
            if p is not None:
                batches, cache = list(p.log.batches()), p.log.epoch_cache.entries()
                leo, hwm = p.log.log_end_offset, p.log.high_watermark
                state = "leader" if p.is_leader else "follower"
            else:
                disk, directory = sim.disks[r], f"{LOG_DIR}/{topic}-{idx}"
                batches = [b for path in segment_paths(disk, directory) for b in disk.scan(path)]
                text = disk.read_value(f"{directory}/{EPOCH_CHECKPOINT_FILE}")
                cache = parse_epoch_checkpoint(text) if text else []
                leo, hwm = (batches[-1].next_offset if batches else 0), None
                state = "down (its disk)" if b is None else "no replica"
            replicas[str(r)] = {
                "alive": b is not None, "state": state, "leo": leo, "hwm": hwm,
                "leader_epoch_cache": [list(entry) for entry in cache],
                "batches": [{"base_offset": batch.base_offset, "last_offset": batch.last_offset,
                             "count": batch.record_count, "leader_epoch": batch.partition_leader_epoch,
                             "producer_id": batch.producer_id, "producer_epoch": batch.producer_epoch,
                             "base_sequence": batch.base_sequence, "size_bytes": batch.size_bytes,
                             "values": [rec.value.decode(errors="replace") if rec.value is not None else None
                                        for rec in batch.records]}
                            for batch in batches]}
        out[f"{topic}-{idx}"] = replicas
    return out
