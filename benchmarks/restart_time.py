"""How long a broker's log takes to load after a clean shutdown: segment checksums against a full scan.

Writes one partition log of ``--gib`` GiB (default 2) of ``--batch-kib`` KiB record batches (default 64,
uncompressed, leader epoch 0) with kraftlog's FileDisk, in 1 GiB segments (Kafka's default
``segment.bytes``), seals it as a clean shutdown does (flush, producer snapshot, the active segment's checksum),
then times, in fresh processes, alternating ``--repeat`` times (default 2):

* **checksum** (issue 30): the load after a clean shutdown, ``PartitionLog(..., clean_shutdown=True)``: one
  CRC-32C pass over each segment file against its ``.checksum``; a sealed segment that matches is loaded
  from its ``.index``/``.timeindex`` files, its batches read on first use (Kafka's lazy load), the active
  one by its batches' 61-byte headers;
* **full scan** (issue 30's log, same files): the load after an unclean shutdown from recovery point 0,
  every batch recovered one by one (each batch's length, magic and CRC-32C, then its header), which is
  what a clean restart cost before the checksums;
* **before** (``--before SRC``, optional): the pre-issue build's load (its ``src`` directory, e.g. a
  ``git worktree`` of the commit before issue 30) of the same batches in its single segment file,
  ``00000000000000000000.log``: every batch's CRC-32C checked, then every batch read back whole.

Each figure is the load alone (the ``PartitionLog`` constructor, ``time.perf_counter``) in a new
interpreter, the files warm in the page cache (the writes just made them so; dropping the cache needs
root): the ratios measure the work of the load, not the disk. Prints the machine, each run and the ratios
full scan / checksum and before / checksum.

Usage (from the repository root, with the project's virtual environment)::

    .venv/bin/python benchmarks/restart_time.py [--gib 2] [--batch-kib 64] [--repeat 2] [--before /path/to/old/src]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from machine import describe  # benchmarks/machine.py (the script's directory is on sys.path)

try:
    from kraftlog.net.disk import FileDisk
    from kraftlog.protocol.records import Record, RecordBatch, encode_batches
    from kraftlog.storage.log import LogConfig, PartitionLog
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog and its dependencies installed ({exc}); "
             "run it from the repository root as: .venv/bin/python benchmarks/restart_time.py")

DIR = "data/t-0"
SRC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")

_LOAD = """
import sys, time, json
sys.path.insert(0, {src!r})
from kraftlog.net.disk import FileDisk
from kraftlog.storage.log import LogConfig, PartitionLog
disk = FileDisk({root!r})
t0 = time.perf_counter()
log = PartitionLog(disk, {dir!r}, LogConfig(), 0{extra})
elapsed = time.perf_counter() - t0
print(json.dumps({{"s": elapsed, "leo": log.log_end_offset}}))
"""


def _machine() -> str:
    return describe()


def _batch(batch_kib: int) -> bytes:
    value = os.urandom(1000)
    n = max(1, batch_kib * 1024 // 1030)
    return encode_batches((RecordBatch(0, 0, tuple(Record(1_700_000_000_000, None, value) for _ in range(n))),))


def write_logs(root: str, before_root: str | None, gib: float, batch_kib: int) -> tuple[int, int]:
    """The log of ``gib`` GiB in ``root`` (1 GiB segments, sealed); the same batches in one segment file in
    ``before_root`` (the pre-issue layout) when given. Returns (batches, bytes)."""
    template = RecordBatch.from_bytes(_batch(batch_kib))
    total = int(gib * (1 << 30))
    disk = FileDisk(root)
    log = PartitionLog(disk, DIR, LogConfig(), 0)
    single = None
    if before_root is not None:
        os.makedirs(os.path.join(before_root, DIR), exist_ok=True)
        single = open(os.path.join(before_root, DIR, "00000000000000000000.log"), "wb")  # noqa: SIM115
    written = batches = 0
    try:
        while written < total:
            stored = log.append_as_leader(template, 0, batches)
            if single is not None:
                single.write(stored.data)
            written += stored.size_bytes
            batches += 1
        log.seal(batches)
    finally:
        disk.close()
        if single is not None:
            single.close()
    if before_root is not None:
        with open(os.path.join(before_root, DIR, "leader-epoch-checkpoint"), "w") as fh:
            fh.write("0\n1\n0 0\n")
    return batches, written


def time_load(src: str, root: str, extra: str) -> tuple[float, int]:
    """Seconds the ``PartitionLog`` constructor of the build at ``src`` takes over ``root``, and the LEO."""
    code = _LOAD.format(src=src, root=root, dir=DIR, extra=extra)
    env = dict(os.environ, PYTHONPATH=src)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         timeout=1800)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    return got["s"], got["leo"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=2.0, help="GiB of batches in the log (default 2)")
    ap.add_argument("--batch-kib", type=int, default=64, help="KiB per record batch (default 64)")
    ap.add_argument("--repeat", type=int, default=2, help="loads of each kind, alternating (default 2)")
    ap.add_argument("--before", metavar="SRC", help="the src directory of the build before issue 30")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON to OUT")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kraftlog-restart-")
    try:
        root = os.path.join(work, "new")
        before_root = os.path.join(work, "before") if args.before else None
        print(f"Machine: {_machine()}; load average at start {os.getloadavg()[0]:.2f}")
        t0 = time.perf_counter()
        batches, size = write_logs(root, before_root, args.gib, args.batch_kib)
        print(f"Log: {size / (1 << 30):.2f} GiB in {batches:,} batches of {size // batches:,} bytes "
              f"(written in {time.perf_counter() - t0:.1f} s), 1 GiB segments")
        kinds = {"checksum": (SRC, root, ", clean_shutdown=True"),
                 "full scan": (SRC, root, ", recovery_point=0")}
        if args.before:
            kinds["before"] = (args.before, before_root, "")
        runs: dict[str, list[float]] = {k: [] for k in kinds}
        leos = set()
        for i in range(args.repeat):
            for kind, (src, where, extra) in kinds.items():
                assert where is not None
                seconds, leo = time_load(src, where, extra)
                leos.add(leo)
                runs[kind].append(seconds)
                print(f"  run {i + 1}: {kind:<9} {seconds:7.3f} s  (LEO {leo:,})")
        assert len(leos) == 1, f"the loads disagree on the LEO: {leos}"
        med = {k: statistics.median(v) for k, v in runs.items()}
        print("Median load: " + ", ".join(f"{k} {v:.3f} s" for k, v in med.items()))
        print(f"Ratio full scan / checksum: {med['full scan'] / med['checksum']:.2f}x")
        if "before" in med:
            print(f"Ratio before (pre-issue build) / checksum: {med['before'] / med['checksum']:.2f}x")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"machine": _machine(), "batches": batches, "bytes": size, "runs": runs,
                           "median_s": med}, fh, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
