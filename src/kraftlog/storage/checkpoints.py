"""Broker-level checkpoint files of a log directory.

* ``replication-offset-checkpoint``: the HWM of every partition of the log dir, written atomically
  (Kafka's ``ReplicaManager`` checkpoints HWMs with tmp + fsync + rename). Value: Kafka's text format
  ``"0\\n<count>\\n<topic> <partition> <hwm>\\n..."``.
* ``recovery-point-offset-checkpoint`` and ``log-start-offset-checkpoint``: each log's recovery point and
  log start offset (Kafka's ``LogManager`` checkpoints), in the same format.
* ``.kafka_cleanshutdown`` (KIP-966): JSON ``{"version":0,"brokerEpoch":N}`` written on a clean stop and
  deleted at log load; its broker epoch becomes the PreviousBrokerEpoch of the next registration, -1
  when missing or unreadable (an unclean shutdown).

Values are stored as ``str`` so a file-backed disk can write them verbatim.
"""

from __future__ import annotations

import json

from .disk import Disk

__all__ = [
    "HWM_CHECKPOINT_FILE",
    "RECOVERY_POINT_CHECKPOINT_FILE",
    "LOG_START_OFFSET_CHECKPOINT_FILE",
    "write_offset_checkpoint",
    "read_offset_checkpoint",
    "CLEAN_SHUTDOWN_FILE",
    "write_hwm_checkpoint",
    "read_hwm_checkpoint",
    "write_clean_shutdown",
    "read_clean_shutdown",
    "delete_clean_shutdown",
]

#: Kafka's file names.
HWM_CHECKPOINT_FILE = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
#: The log cleaner's first dirty offset of each compacted log (Kafka's ``LogCleanerManager`` file).
CLEANER_CHECKPOINT_FILE = "cleaner-offset-checkpoint"

_HWM_VERSION = 0
_CLEAN_SHUTDOWN_VERSION = 0


def _as_text(value: object) -> str | None:
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return None
    return value if isinstance(value, str) else None


def write_offset_checkpoint(disk: Disk, path: str, mapping: dict[tuple[str, int], int], now_ms: int) -> None:
    """Atomically write ``{(topic, partition): offset}`` to ``path`` in Kafka's ``OffsetCheckpointFile`` format
    (``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``).

    Entries are written sorted by (topic, partition) so the file is deterministic. An entry whose topic name
    the format cannot hold (empty, or with whitespace or a line break: Kafka's legal names never have them,
    but a log directory from before kraftlog validated names may) is left out rather than failing the
    checkpoint: a checkpoint failure must never stop a broker (issue 24). OSError propagates.
    """
    items = sorted(((topic, partition), offset) for (topic, partition), offset in mapping.items()
                   if isinstance(topic, str) and topic and not any(c.isspace() for c in topic))
    lines = [str(_HWM_VERSION), str(len(items))]
    for (topic, partition), offset in items:
        lines.append(f"{topic} {partition} {offset}")
    disk.write_atomic(path, "\n".join(lines) + "\n", now_ms)


def read_offset_checkpoint(disk: Disk, path: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` from the offset checkpoint file ``path``; ``{}`` if missing.

    Raises ValueError naming the file when it is malformed (Kafka marks the log dir offline in that case).
    """
    value = disk.read_value(path)
    if value is None:
        return {}
    name = path.rpartition("/")[2]
    text = _as_text(value)
    if text is None:
        raise ValueError(f"{name} is not text")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        if len(lines) < 2 or int(lines[0]) != _HWM_VERSION:
            raise ValueError("bad header")
        count = int(lines[1])
        if count != len(lines) - 2:
            raise ValueError(f"expected {count} entries, found {len(lines) - 2}")
        out: dict[tuple[str, int], int] = {}
        for line in lines[2:]:
            topic, partition, offset = line.split()
            out[(topic, int(partition))] = int(offset)
    except ValueError as e:
        raise ValueError(f"malformed {name}: {e}") from None
    return out


def write_hwm_checkpoint(disk: Disk, log_dir: str, mapping: dict[tuple[str, int], int], now_ms: int) -> None:
    """Atomically write ``{(topic, partition): hwm}`` to ``{log_dir}/replication-offset-checkpoint``
    (:func:`write_offset_checkpoint`)."""
    write_offset_checkpoint(disk, f"{log_dir}/{HWM_CHECKPOINT_FILE}", mapping, now_ms)


def read_hwm_checkpoint(disk: Disk, log_dir: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): hwm}`` from ``{log_dir}/replication-offset-checkpoint``; ``{}`` if missing.

    Raises ValueError when the file is malformed (Kafka marks the log dir offline in that case).
    """
    return read_offset_checkpoint(disk, f"{log_dir}/{HWM_CHECKPOINT_FILE}")


def write_clean_shutdown(disk: Disk, log_dir: str, broker_epoch: int, now_ms: int) -> None:
    """Atomically write ``{"version":0,"brokerEpoch":broker_epoch}`` to ``{log_dir}/.kafka_cleanshutdown``
    (KIP-966: a broker writes it as the last step of a clean shutdown)."""
    text = json.dumps({"version": _CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}, separators=(",", ":"))
    disk.write_atomic(f"{log_dir}/{CLEAN_SHUTDOWN_FILE}", text, now_ms)


def read_clean_shutdown(disk: Disk, log_dir: str) -> int:
    """The broker epoch stored in ``{log_dir}/.kafka_cleanshutdown``, or -1 when the file is missing,
    not JSON, not version 0 or has no integer ``brokerEpoch`` (Kafka's ``CleanShutdownFileHandler``:
    any of these means the previous shutdown was unclean)."""
    text = _as_text(disk.read_value(f"{log_dir}/{CLEAN_SHUTDOWN_FILE}"))
    if text is None:
        return -1
    try:
        content = json.loads(text)
    except ValueError:
        return -1
    if not isinstance(content, dict):
        return -1
    version = content.get("version")
    epoch = content.get("brokerEpoch")
    if type(version) is not int or version != _CLEAN_SHUTDOWN_VERSION or type(epoch) is not int:
        return -1
    return epoch


def delete_clean_shutdown(disk: Disk, log_dir: str, now_ms: int) -> None:
    """Delete ``{log_dir}/.kafka_cleanshutdown`` durably (KIP-966: done at log load, so a crash before
    the next clean stop is detected as unclean). No-op if missing."""
    path = f"{log_dir}/{CLEAN_SHUTDOWN_FILE}"
    if disk.exists(path):
        disk.delete(path, now_ms)
