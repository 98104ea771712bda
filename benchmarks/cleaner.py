"""The log cleaner (issue 31): how fast it cleans, how long one of its slices holds the node, and what a cleaning
does to the produce latency of the same brokers.

Two parts, each printing the machine and its figures (``--json`` prints them as one JSON object):

* **cleaner** (in process): writes one compacted partition log of ``--mib`` MiB (default 64) with kraftlog's
  FileDisk in a temporary directory: batches of 10 records of ``--value-bytes`` bytes (default 100) over
  ``--keys`` keys (default 10,000), in 16 MiB segments, every batch uncompressed (``--codec`` names one of
  gzip, snappy, lz4, zstd to compress them), then runs one cleaning of it to its end in slices of
  ``kraftlog.log.cleaner.slice.bytes`` (64 KiB), as a broker does between requests. Prints the cleaner's
  rate (MB/s of log cleaned: the dirty bytes over the cleaning's time; and MB/s of bytes read, map and rewrite
  phases together), the bytes kept, and the time one slice took (p50, p99, max): the longest a cleaning holds
  a broker before it handles requests again.
* **latency** (real processes): a 3-broker ``cluster up`` cluster on loopback. A compacted topic ``big`` is
  filled with ``--fill-mib`` MiB (default 48) of keyed records while its ``min.cleanable.dirty.ratio`` is 0.99
  (nothing is cleaned) and the followers catch up; then an acks=all confluent-kafka producer sends ``--rate``
  records/s (default 400) of 100 bytes to another topic for ``--seconds`` s (default 8), after 200 records of
  warm-up: first with no cleaning, then right after ``big``'s ratio is set to 0.01 (IncrementalAlterConfigs), while
  the three brokers clean it. Prints the
  produce latency p50/p99/max (librdkafka's ``Message.latency()``) of both phases, their ratio, and the share
  of the second phase during which a cleaning was running (sampled from ``cluster status``). Every process
  started is stopped by PID in a ``finally``.

Usage (from the repository root, with the project's virtual environment)::

    .venv/bin/python benchmarks/cleaner.py [--mib 64] [--codec lz4] [--fill-mib 48] [--rate 400] [--seconds 8]
        [--skip-latency] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time

try:
    from kraftlog.net import cluster as cl
    from kraftlog.net.disk import FileDisk
    from kraftlog.protocol.records import CODECS, Record, RecordBatch
    from kraftlog.storage.cleaner import Cleaning, OffsetMap, grab_filthiest
    from kraftlog.storage.log import LogConfig, PartitionLog
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog and its dependencies installed ({exc}); "
             "run it from the repository root as: .venv/bin/python benchmarks/cleaner.py")

DIR = "data/t-0"
SLICE = 65_536


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100 * len(ordered) + 0.5)) - 1))]


def cleaner_part(mib: int, keys: int, value_bytes: int, codec: int) -> dict:
    """Write the log, clean it once in slices; the figures."""
    root = tempfile.mkdtemp(prefix="kraftlog-cleaner-")
    try:
        config = LogConfig(compact=True, delete=False, min_cleanable_ratio=0.0, segment_bytes=16 << 20)
        with FileDisk(root) as disk:
            log = PartitionLog(disk, DIR, config, 0)
            value = b"v" * value_bytes
            n = 0
            t0 = time.perf_counter()
            while log.size < mib << 20:
                records = tuple(Record(n + i, f"key-{(n + i) * 7919 % keys:06d}".encode(), value) for i in range(10))
                log.append_as_leader(RecordBatch(-1, -1, records, attributes=codec), 0, n)
                n += 10
            log._roll(n)
            log.update_high_watermark(log.log_end_offset)
            write_s = time.perf_counter() - t0
            size = log.size
            target = grab_filthiest({("t", 0): log}, n)
            assert target is not None
            cleaning = Cleaning(disk, log, target, OffsetMap(128 << 20), n)
            slices: list[float] = []
            t0 = time.perf_counter()
            while not cleaning.finished:
                s0 = time.perf_counter()
                cleaning.step(n, SLICE)
                slices.append((time.perf_counter() - s0) * 1000)
            clean_s = time.perf_counter() - t0
            assert cleaning.phase == "done", cleaning.reason
            stats = cleaning.stats
        return {
            "log_mib": round(size / (1 << 20), 1), "records": n, "keys": keys, "codec": CODECS.get(codec, "none"),
            "write_s": round(write_s, 2), "clean_s": round(clean_s, 2),
            "cleaned_mb_per_s": round(target.cleanable_bytes / 1e6 / clean_s, 2),
            "read_mb_per_s": round((stats.map_bytes_read + stats.bytes_read) / 1e6 / clean_s, 2),
            "kept_bytes": stats.bytes_written, "records_kept": stats.messages_written,
            "slices": len(slices), "slice_p50_ms": round(_pct(slices, 50), 2),
            "slice_p99_ms": round(_pct(slices, 99), 2), "slice_max_ms": round(max(slices), 2),
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _produce_phase(bootstrap: str, topic: str, rate: int, seconds: float, directory: str | None) -> dict:
    """acks=all records of 100 bytes at ``rate``/s for ``seconds``; latencies, and with ``directory`` the share
    of status samples in which some broker was cleaning."""
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, "enable.idempotence": True})
    lats: list[float] = []
    errors: list[str] = []
    worst: list[tuple[float, float]] = []  # (s into the phase when acknowledged, latency ms)

    def cb(err, msg) -> None:
        if err is not None:
            errors.append(str(err))
        elif msg.latency() is not None:
            lats.append(msg.latency() * 1000)
            worst.append((round(time.perf_counter() - t0, 2), round(msg.latency() * 1000, 1)))

    payload = os.urandom(100)
    for _ in range(200):  # warm-up, not counted: connections, metadata, the producer id
        p.produce(topic, payload, partition=0)
    if p.flush(30):
        raise RuntimeError("the warm-up was not acknowledged")
    samples: list[bool] = []
    t0 = time.perf_counter()
    sent = 0
    next_sample = t0
    while time.perf_counter() - t0 < seconds:
        due = int((time.perf_counter() - t0) * rate)
        while sent < due:
            p.produce(topic, payload, partition=0, on_delivery=cb)
            sent += 1
        p.poll(0.001)
        if directory is not None and time.perf_counter() >= next_sample:
            samples.append(any((s.counters or {}).get("cleaning-in-progress") for s in cl.status(directory)
                               if s.id != "controller"))
            next_sample += 0.5
    left = p.flush(30)
    if errors or left:
        raise RuntimeError(f"{len(errors)} records failed ({errors[:3]}), {left} unacknowledged")
    out = {"records": len(lats), "p50_ms": round(_pct(lats, 50), 2), "p99_ms": round(_pct(lats, 99), 2),
           "max_ms": round(max(lats), 2), "worst": sorted(worst, key=lambda w: -w[1])[:5]}
    if samples:
        out["cleaning_share"] = round(sum(samples) / len(samples), 2)
    return out


def _log_end_offsets(directory: str, topic: str) -> list[float]:
    """Each broker's LogEndOffset gauge of ``topic``-0, read from its /metrics."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    out = []
    for e in cl.load(directory)["nodes"]:
        if e["role"] != "broker":
            continue
        with urllib.request.urlopen(f"http://127.0.0.1:{e['metrics_port']}/metrics", timeout=5) as r:
            text = r.read().decode()
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "kafka_log_log_logendoffset" and sample.labels.get("topic") == topic:
                    out.append(sample.value)
    return out


def _wait_caught_up(directory: str, topic: str, timeout_s: float = 300) -> None:
    """Until every replica of ``topic``-0 has the same LEO twice in a row (the followers copied the fill)."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        leos = _log_end_offsets(directory, topic)
        if len(leos) == 3 and len(set(leos)) == 1 and leos == last:
            return
        last = leos
        time.sleep(1)
    raise RuntimeError(f"the followers of {topic} did not catch up: {last}")


def latency_part(fill_mib: int, rate: int, seconds: float, throttle: float | None) -> dict:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

    directory = tempfile.mkdtemp(prefix="kraftlog-cleaner-cluster-")
    try:
        config = {"log.cleaner.backoff.ms": "500"}
        if throttle is not None:
            config["log.cleaner.io.max.bytes.per.second"] = str(throttle)
        cl.up(directory, 3, port=0, config=config)
        bootstrap = cl.load(directory)["bootstrap"]
        admin = AdminClient({"bootstrap.servers": bootstrap})
        futures = admin.create_topics([
            NewTopic("big", 1, 3, config={"cleanup.policy": "compact", "segment.bytes": str(4 << 20),
                                          "min.cleanable.dirty.ratio": "0.99", "min.insync.replicas": "2"}),
            NewTopic("lat", 1, 3, config={"min.insync.replicas": "2"})])
        for f in futures.values():
            f.result(30)
        filler = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 256 << 10})
        value = b"x" * 200
        written = 0
        i = 0
        while written < fill_mib << 20:
            try:
                filler.produce("big", key=f"key-{i % 20000:05d}".encode(), value=value, partition=0)
            except BufferError:
                filler.poll(0.01)
                continue
            written += 220
            i += 1
            if i % 1000 == 0:
                filler.poll(0)
        if filler.flush(120):
            raise RuntimeError("the fill was not acknowledged")
        for _ in range(20):  # a roll, so that the filled records are all in sealed segments
            filler.produce("big", key=b"roll", value=os.urandom(1 << 18), partition=0)
        filler.flush(60)
        _wait_caught_up(directory, "big")
        quiet = _produce_phase(bootstrap, "lat", rate, seconds, None)
        before = {s.id: (s.counters or {}).get("cleanings", 0) for s in cl.status(directory)}
        res = ConfigResource("topic", "big", incremental_configs=[
            ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
        admin.incremental_alter_configs([res])[res].result(30)
        busy = _produce_phase(bootstrap, "lat", rate, seconds, directory)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            now = {s.id: (s.counters or {}).get("cleanings", 0) for s in cl.status(directory)}
            if all(now[b] > before[b] for b in now if b != "controller"):
                break
            time.sleep(0.5)
        cleaned = {s.id: (s.counters or {}).get("cleanings", 0) - before[s.id] for s in cl.status(directory)
                   if s.id != "controller"}
        return {"fill_mib": fill_mib, "rate": rate, "seconds": seconds, "throttle_bytes_per_s": throttle,
                "no_cleaning": quiet, "cleaning": busy,
                "p99_ratio": round(busy["p99_ms"] / quiet["p99_ms"], 2),
                "p50_ratio": round(busy["p50_ms"] / quiet["p50_ms"], 2), "cleanings_per_broker": cleaned}
    finally:
        cl.teardown(directory, remove=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--keys", type=int, default=10_000)
    ap.add_argument("--value-bytes", type=int, default=100)
    ap.add_argument("--codec", choices=sorted(CODECS.values()), default=None)
    ap.add_argument("--fill-mib", type=int, default=48)
    ap.add_argument("--rate", type=int, default=400)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--io-max-bytes-per-second", type=float, default=None,
                    help="the brokers' log.cleaner.io.max.bytes.per.second in the latency part (default: none)")
    ap.add_argument("--skip-latency", action="store_true")
    ap.add_argument("--skip-cleaner", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    codec = {v: k for k, v in CODECS.items()}.get(args.codec or "", 0)
    out: dict = {"machine": machine()}
    if not args.skip_cleaner:
        out["cleaner"] = cleaner_part(args.mib, args.keys, args.value_bytes, codec)
    if not args.skip_latency:
        out["latency"] = latency_part(args.fill_mib, args.rate, args.seconds, args.io_max_bytes_per_second)
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"machine: {out['machine']}")
    c = out.get("cleaner")
    if c is not None:
        print(f"cleaner: {c['log_mib']} MiB log ({c['records']} records, {c['keys']} keys, codec {c['codec']}) cleaned "
              f"in {c['clean_s']} s: {c['cleaned_mb_per_s']} MB/s of log cleaned, {c['read_mb_per_s']} MB/s read; "
              f"{c['records_kept']} records ({c['kept_bytes']} bytes) kept")
        print(f"  {c['slices']} slices of {SLICE} bytes: p50 {c['slice_p50_ms']} ms, p99 {c['slice_p99_ms']} ms, "
              f"max {c['slice_max_ms']} ms")
    if "latency" in out:
        lt = out["latency"]
        for name in ("no_cleaning", "cleaning"):
            ph = lt[name]
            extra = f", a cleaning running in {int(100 * ph['cleaning_share'])}% of samples" \
                if "cleaning_share" in ph else ""
            print(f"produce acks=all at {lt['rate']}/s, {name.replace('_', ' ')}: p50 {ph['p50_ms']} ms, "
                  f"p99 {ph['p99_ms']} ms, max {ph['max_ms']} ms ({ph['records']} records{extra})")
        if lt["throttle_bytes_per_s"] is not None:
            print(f"  log.cleaner.io.max.bytes.per.second = {lt['throttle_bytes_per_s']:.0f}")
        print(f"  cleaning / no cleaning: p50 {lt['p50_ratio']}x, p99 {lt['p99_ratio']}x; cleanings per broker "
              f"{lt['cleanings_per_broker']}")


if __name__ == "__main__":
    main()
