"""An in-memory ``__consumer_offsets`` for driving the group coordinator without a broker: a
:class:`~kraftlog.broker.coordinator_runtime.PartitionWriter` over record batches in a list, whose HWM follows
the LEO (``auto_commit``) or moves only when a test says (:meth:`MemoryWriter.commit_to`)."""

from __future__ import annotations

import random

from kraftlog.broker.coordinator_runtime import CoordinatorRuntime
from kraftlog.broker.group_coordinator import GroupCoordinator
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import Record, RecordBatch


class MemoryWriter:
    """``partitions`` partitions of ``__consumer_offsets``, all led here in ``leader_epoch``; ``fail`` (an error
    code) makes every append fail with it."""

    def __init__(self, partitions: int = 1, auto_commit: bool = True) -> None:
        self.logs: dict[int, list[RecordBatch]] = {i: [] for i in range(partitions)}
        self.hwm: dict[int, int] = dict.fromkeys(range(partitions), 0)
        self.leaders: dict[int, int] = dict.fromkeys(range(partitions), 0)
        self.auto_commit = auto_commit
        self.fail: int = Errors.NONE

    def leo(self, index: int) -> int:
        log = self.logs[index]
        return log[-1].next_offset if log else 0

    def coordinator_leaders(self) -> dict[int, int]:
        return dict(self.leaders)

    def append_coordinator_records(self, now_ms: int, index: int, records) -> tuple[int, int]:
        if self.fail != Errors.NONE:
            return self.fail, -1
        batch = RecordBatch(-1, -1, tuple(Record(now_ms, k, v) for k, v in records))
        stamped = batch.with_offsets(self.leo(index), self.leaders.get(index, 0))
        self.logs[index].append(stamped)
        if self.auto_commit:
            self.hwm[index] = self.leo(index)
        return Errors.NONE, self.leo(index)

    def coordinator_high_watermark(self, index: int) -> int:
        return self.hwm[index]

    def coordinator_batches(self, index: int):
        return list(self.logs[index])


def runtime_over(writer: MemoryWriter, now_ms: int = 0, commit_timeout_ms: int = 5000) -> CoordinatorRuntime:
    """A runtime over ``writer`` with every partition loaded at ``now_ms``."""
    return CoordinatorRuntime(writer, lambda: len(writer.logs), commit_timeout_ms)


def coordinator_over(writer: MemoryWriter, config: dict[str, str] | None = None, seed: int = 7,
                     now_ms: int = 0) -> GroupCoordinator:
    """A group coordinator over ``writer``'s partitions, loaded at ``now_ms`` (wired as the broker wires it)."""
    runtime = runtime_over(writer, now_ms, int((config or {}).get("offsets.commit.timeout.ms", 5000)))
    gc: GroupCoordinator = GroupCoordinator(runtime, config or {}, random.Random(seed))
    runtime.on_load = lambda now, index, stored: gc.load_groups(now, stored)
    runtime.on_unload = lambda now, index: gc.resign(now, runtime.groups_of(index, gc.groups()))
    runtime.sync(now_ms)
    runtime.load_pending(now_ms)
    return gc
