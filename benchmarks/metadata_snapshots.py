"""Metadata snapshots on a real cluster (issue 34): the controller's metadata directory after 1,000,000 metadata
records, and a broker restart's metadata catch-up against replay from offset 0.

Two clusters, one after the other, each a controller and one broker as OS processes on 127.0.0.1
(``kraftlog.net.cluster.up`` in a temporary directory, stopped in a ``finally`` by PID):

* **snapshots**: Kafka's snapshot rule and retention with a segment size Kafka accepts
  (``metadata.log.segment.bytes`` 8 MiB, Kafka's ``metadata.log.segment.min.bytes``;
  ``metadata.max.retention.bytes`` 32 MiB; ``metadata.log.max.record.bytes.between.snapshots`` 20 MiB, Kafka's
  default);
* **replay from 0** (the baseline): snapshots off (``metadata.log.max.record.bytes.between.snapshots`` at its
  maximum, no retention): the controller keeps every record, as kraftlog did before issue 34.

Each gets ``--topics`` topics (CreateTopics, 1 partition, replication factor 1), then IncrementalAlterConfigs of
``--per-request`` topics at a time (one ConfigRecord each) until ``--records`` metadata records were written, sent
to the controller's listener (so that the writes go on while the broker restarts). The controller's metadata directory
is measured (bytes of every file under it) after every request; its maximum is reported beside the bound the rule
gives: ``metadata.max.retention.bytes`` + ``metadata.log.segment.bytes`` + what is written between two cleanings
(they run every 60 s, as Kafka's; the bytes written per 60 s at the measured rate) + the snapshots (a cleaning
keeps the latest snapshot and deletes only whole segments).

Then the broker is stopped (SIGTERM, a controlled shutdown), ``--missed`` more records are written while it is
down, and it is started again. Measured: seconds from its launch until it has published metadata (it caught up
with the controller's log: the run file's ``metadata_published_after_s``, the node's own figure from its process
start, and the benchmark's wall time from the launch to seeing it), per restart kind:

* **local snapshot** (snapshots cluster): the broker loads its own latest snapshot and the records after it from its
  metadata directory and fetches only the missed records;
* **controller snapshot** (snapshots cluster, the broker's metadata directory deleted first): it fetches the
  controller's snapshot (FetchSnapshot) and the records after it;
* **replay from 0** (baseline cluster, the broker's metadata directory deleted first): it fetches and replays every
  record from offset 0.

Each restart kind runs ``--repeat`` times (default 3); medians and the ratios replay-from-0 / local snapshot and
replay-from-0 / controller snapshot are printed with the machine. The figures depend on the machine: compare the
kinds within one run.

Usage (from the repository root, with the project's virtual environment)::

    .venv/bin/python benchmarks/metadata_snapshots.py [--records 1000000] [--topics 2000] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from machine import describe  # benchmarks/machine.py (the script's directory is on sys.path)

try:
    from kraftlog.net import cluster as cl
    from kraftlog.net.client import KafkaConnection
    from kraftlog.protocol import messages as m
    from kraftlog.protocol.errors import Errors
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog installed ({exc}); run it from the repository root as: "
             ".venv/bin/python benchmarks/metadata_snapshots.py")

MIB = 1 << 20
SNAPSHOTS = {"metadata.log.segment.bytes": str(8 * MIB), "metadata.max.retention.bytes": str(32 * MIB),
             "metadata.log.max.record.bytes.between.snapshots": str(20 * MIB)}
NO_SNAPSHOTS = {"metadata.log.segment.bytes": str(8 * MIB), "metadata.max.retention.bytes": "-1",
                "metadata.max.retention.ms": "-1",
                "metadata.log.max.record.bytes.between.snapshots": str((1 << 63) - 1),
                "metadata.log.max.snapshot.interval.ms": "0"}


def _machine() -> str:
    return describe()


def _dir_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass  # deleted meanwhile
    return total


def _run_file(directory: str, node: str) -> dict:
    try:
        with open(os.path.join(directory, "run", f"{node}.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


class Writer:
    """Writes metadata records to the controller: topics, then config changes of ``per_request`` topics each."""

    def __init__(self, directory: str, topics: int, per_request: int) -> None:
        self.directory = directory
        ctl = next(e for e in cl.load(directory)["nodes"] if e["role"] == "controller")
        # the controller's own listener: the writes go on while the broker is down
        self.conn = KafkaConnection(f"{ctl['host']}:{ctl['port']}", timeout_s=120.0, client_id="metadata-bench")
        self.topics = [f"t{i:05d}" for i in range(topics)]
        self.per_request = per_request
        self.round = 0
        self.max_dir = 0
        self.ctl_meta = os.path.join(directory, "controller", "metadata")

    def create_topics(self) -> None:
        for i in range(0, len(self.topics), 500):
            batch = tuple(m.CreatableTopic(t, 1, 1) for t in self.topics[i:i + 500])
            resp = self.conn.request(m.CreateTopicsRequest(batch, timeout_ms=120_000))
            bad = [t for t in resp.topics if t.error_code not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS)]
            if bad:
                raise RuntimeError(f"CreateTopics failed: {bad[:3]}")

    def alter(self, records: int) -> None:
        """About ``records`` ConfigRecords, ``per_request`` per IncrementalAlterConfigs."""
        written = 0
        while written < records:
            n = min(self.per_request, records - written, len(self.topics))
            start = (self.round * self.per_request) % len(self.topics)
            names = [self.topics[(start + j) % len(self.topics)] for j in range(n)]
            value = str(600_000 + self.round)
            resources = tuple(m.AlterConfigsResource(m.RESOURCE_TOPIC, t, (
                m.AlterableConfig("retention.ms", m.OP_SET, value),)) for t in names)
            resp = self.conn.request(m.IncrementalAlterConfigsRequest(resources))
            bad = [r for r in resp.responses if r.error_code != Errors.NONE]
            if bad:
                raise RuntimeError(f"IncrementalAlterConfigs failed: {bad[:3]}")
            written += n
            self.round += 1
            self.max_dir = max(self.max_dir, _dir_bytes(self.ctl_meta))

    def close(self) -> None:
        self.conn.close()


def _controller_end(writer: Writer) -> int:
    """The controller's metadata log end offset: the high watermark of a MetadataFetch past its end (answered
    OFFSET_OUT_OF_RANGE with it)."""
    resp = writer.conn.request(m.MetadataFetchRequest(-1, -1, 1 << 62, 0))
    return int(resp.high_watermark)


def _wait_caught_up(directory: str, writer: Writer, timeout_s: float = 900) -> None:
    deadline = time.monotonic() + timeout_s
    end = _controller_end(writer)
    while time.monotonic() < deadline:
        time.sleep(1.2)  # the broker's run file is rewritten at least once a second while it works
        if _run_file(directory, "broker-0").get("metadata_offset", -1) >= end - 1:
            return
    raise RuntimeError("broker 0 did not catch up with the metadata log")


def restart(directory: str, writer: Writer, missed: int, wipe: bool) -> dict:
    """Stop broker 0 cleanly, write ``missed`` records, (delete its metadata directory,) start it; the catch-up."""
    cl.stop_broker(directory, 0)
    writer.alter(missed)
    end = _controller_end(writer)
    if wipe:
        shutil.rmtree(os.path.join(directory, "broker-0", "metadata"), ignore_errors=True)
    t0 = time.monotonic()
    pid = cl.start_broker(directory, 0, wait=False)["pid"]
    deadline = t0 + 900
    while time.monotonic() < deadline:
        run = _run_file(directory, "broker-0")
        if run.get("pid") == pid and run.get("metadata_published_after_s") is not None:
            # published: it fetched up to the controller's high watermark (its first publish waits for that)
            return {"node_s": run["metadata_published_after_s"], "wall_s": round(time.monotonic() - t0, 3),
                    "controller_end_offset": end}
        time.sleep(0.02)
    raise RuntimeError("the restarted broker did not publish its metadata")


def one_cluster(config: dict, args: argparse.Namespace, kinds: list[tuple[str, bool]]) -> dict:
    directory = tempfile.mkdtemp(prefix="kraftlog-metadata-bench-")
    writer = None
    try:
        cl.up(directory, 1, port=0, config=config)
        writer = Writer(directory, args.topics, args.per_request)
        t0 = time.monotonic()
        writer.create_topics()
        writer.alter(args.records - 2 * args.topics)
        written_s = time.monotonic() - t0
        end = _controller_end(writer)
        _wait_caught_up(directory, writer)
        ctl_dir = _dir_bytes(writer.ctl_meta)
        broker_dir = _dir_bytes(os.path.join(directory, "broker-0", "metadata"))
        start = _run_file(directory, "controller").get("metadata_log_start_offset")
        print(f"  {end:,} metadata records written in {written_s:.0f} s ({end / written_s:,.0f}/s); the "
              f"controller's metadata directory: {ctl_dir / MIB:.1f} MiB now, {writer.max_dir / MIB:.1f} MiB at most; "
              f"log start offset {start:,}; the broker's: {broker_dir / MIB:.1f} MiB")
        restarts: dict[str, list[dict]] = {k: [] for k, _ in kinds}
        for i in range(args.repeat):
            for kind, wipe in kinds:
                r = restart(directory, writer, args.missed, wipe)
                restarts[kind].append(r)
                print(f"  run {i + 1}: {kind:<20} caught up {r['node_s']:6.2f} s after its process start "
                      f"({r['wall_s']:.2f} s wall from the launch)")
        return {"config": config, "records": end, "written_s": round(written_s, 1),
                "controller_metadata_bytes": ctl_dir, "controller_metadata_max_bytes": writer.max_dir,
                "broker_metadata_bytes": broker_dir, "log_start_offset": start, "restarts": restarts}
    finally:
        if writer is not None:
            writer.close()
        cl.teardown(directory, remove=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000, help="metadata records to write (default 1,000,000)")
    ap.add_argument("--topics", type=int, default=2000, help="topics created first (default 2000)")
    ap.add_argument("--per-request", type=int, default=1000, help="config changes per request (default 1000)")
    ap.add_argument("--missed", type=int, default=20_000, help="records written while the broker is down")
    ap.add_argument("--repeat", type=int, default=3, help="restarts of each kind (default 3)")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON to OUT")
    args = ap.parse_args()
    print(f"Machine: {_machine()}; load average at start {os.getloadavg()[0]:.2f}")
    print("snapshots (" + ", ".join(f"{k}={v}" for k, v in SNAPSHOTS.items()) + "):")
    snap = one_cluster(SNAPSHOTS, args, [("local snapshot", False), ("controller snapshot", True)])
    print("replay from 0 (snapshots off):")
    base = one_cluster(NO_SNAPSHOTS, args, [("replay from 0", True)])
    med = {k: statistics.median(r["node_s"] for r in runs)
           for part in (snap, base) for k, runs in part["restarts"].items()}
    # bytes written in one cleaning interval (60 s) at the measured rate: the baseline keeps every byte written
    per_minute = base["controller_metadata_bytes"] / base["written_s"] * 60
    bound = 32 * MIB + 8 * MIB + per_minute
    print(f"Controller metadata directory after {snap['records']:,} records: "
          f"{snap['controller_metadata_bytes'] / MIB:.1f} "
          f"MiB ({snap['controller_metadata_max_bytes'] / MIB:.1f} MiB at most; bound {bound / MIB:.0f} MiB + the "
          f"snapshots: 32 MiB retention + an 8 MiB segment + {per_minute / MIB:.0f} MiB written per 60 s) against "
          f"{base['controller_metadata_bytes'] / MIB:.1f} MiB without snapshots "
          f"({base['controller_metadata_bytes'] / snap['controller_metadata_bytes']:.1f}x)")
    print("Median catch-up: " + ", ".join(f"{k} {v:.2f} s" for k, v in med.items()))
    print(f"Ratio replay from 0 / local snapshot: {med['replay from 0'] / med['local snapshot']:.1f}x; "
          f"replay from 0 / controller snapshot: {med['replay from 0'] / med['controller snapshot']:.1f}x")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": _machine(), "args": vars(args), "snapshots": snap, "baseline": base,
                       "median_catch_up_s": med, "bound_bytes_without_snapshots": round(bound)}, fh, indent=2)


if __name__ == "__main__":
    main()
