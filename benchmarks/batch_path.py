"""What opaque record batches save on a broker's produce -> replicate -> fetch path.

For one batch as a client sends it (``--records`` records of ``--value-bytes`` bytes, uncompressed),
times the two ways a broker can carry it from a Produce request to a Fetch response, in the same run:

* **opaque** (what kraftlog does, DESIGN.md "Real cluster"): wrap the bytes (header parse + CRC-32C
  check), stamp base offset and partition leader epoch into a copy, write the stamped bytes;
* **decoded** (what kraftlog did before): decode every record, rebuild the batch with its offsets, and
  encode it again for the fetch response.

Also times a FileDisk segment read of 1 MiB (the fetch path's ``read_range``: one pread, batches not
decoded) against decoding the same batches. Prints the machine, microseconds per batch (median of
``--repeat`` runs) and the ratio decoded / opaque. Usage:

    .venv/bin/python benchmarks/batch_path.py [--records 100] [--value-bytes 100] [--repeat 7]

(from the repository root, with the project's virtual environment).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time

try:
    from kraftlog.net.disk import FileDisk
    from kraftlog.protocol.records import Record, RecordBatch, encode_batches
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog and its dependencies installed ({exc}); "
             "run it from the repository root as: .venv/bin/python benchmarks/batch_path.py")


def _client_batch(records: int, value_bytes: int) -> bytes:
    recs = tuple(Record(1_700_000_000_000 + i, b"key-%d" % i, os.urandom(value_bytes)) for i in range(records))
    return encode_batches((RecordBatch(0, -1, recs, producer_id=7, producer_epoch=0, base_sequence=0),))


def _per_call_us(fn, n: int, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for i in range(n):
            fn(i)
        runs.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(runs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=100)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    data = _client_batch(args.records, args.value_bytes)
    n = 300

    def opaque(i: int) -> bytes:
        return RecordBatch.from_bytes(data).with_offsets(i * args.records, 3).data

    def decoded(i: int) -> bytes:
        b = RecordBatch.from_bytes(data)
        rebuilt = RecordBatch(i * args.records, 3, b.records, b.producer_id, b.producer_epoch, b.base_sequence)
        return encode_batches((rebuilt,))

    assert RecordBatch.from_bytes(opaque(2)) == RecordBatch.from_bytes(decoded(2))
    t_opaque = _per_call_us(opaque, n, args.repeat)
    t_decoded = _per_call_us(decoded, n, args.repeat)

    with tempfile.TemporaryDirectory() as tmp:
        disk = FileDisk(tmp)
        path = "data/t-0/00000000000000000000.log"
        count = max(1, (1 << 20) // len(data))
        for i in range(count):
            disk.append(path, RecordBatch.from_bytes(data).with_offsets(i * args.records, 0), 0)

        def read_opaque(_i: int) -> int:
            return len(disk.read_range(path, 0, count))

        def read_decoded(_i: int) -> int:
            return sum(len(b.records) for b in disk.read_range(path, 0, count))

        t_read = _per_call_us(read_opaque, 20, args.repeat)
        t_read_dec = _per_call_us(read_decoded, 20, args.repeat)
        disk.close()

    print(f"machine: {platform.machine()} {platform.processor() or ''} {os.cpu_count()} cpus, "
          f"Python {platform.python_version()} ({platform.python_implementation()})")
    print(f"batch: {args.records} records x {args.value_bytes}-byte values = {len(data)} bytes")
    print(f"produce -> fetch, per batch: opaque {t_opaque:.1f} us, decoded {t_decoded:.1f} us "
          f"(decoded / opaque = {t_decoded / t_opaque:.1f}x)")
    print(f"segment read of {count} batches ({count * len(data) / 1048576:.2f} MiB): opaque "
          f"{t_read:.0f} us, decoding the records too {t_read_dec:.0f} us "
          f"({t_read_dec / t_read:.1f}x)")


if __name__ == "__main__":
    main()
