"""Profile kraftlog's node processes under the produce load of ``benchmarks/cluster_throughput.py``.

Starts the same cluster (a controller and 3 brokers on 127.0.0.1, ``kraftlog.net.cluster.up`` in a
temporary directory), creates one topic with 1 partition, replication factor 3 and
``min.insync.replicas=2``, and drives it with the same confluent-kafka producer (``acks=all``,
librdkafka's default batching, a window of unacknowledged records) for ``--warmup`` + ``--duration``
seconds. After the warm-up, ``py-spy record`` samples the partition's leader, a follower and the
controller (``--nodes``) for ``--duration`` seconds, non-blocking (the process is not paused per
sample; with ``--native`` it is, as py-spy requires), by function (``py-spy -F``). Then it prints, per node:

* how busy its Python threads were: samples / (duration x rate) (py-spy leaves out idle samples, e.g.
  the event loop waiting in ``epoll_wait``);
* the top ``--top`` functions by **own** time (the sampled frame: where the CPU was) and by
  **inclusive** time (the function or anything it called), as % of the node's samples.

With ``--native`` py-spy also unwinds C extensions (uvloop, kio's readers, crc32c); slower to sample.
py-spy samples wall-clock time: a frame that makes a system call (a socket or file write, shown as the
Python function that called it, e.g. ``_write_response`` or ``_write_all``) also collects the time the
process waited for a CPU after it, which on a machine with fewer cores than busy processes is much of
it; ``perf record -g -p PID`` tells CPU time apart. Profile figures are shares, not speeds: measure
speeds with ``cluster_throughput.py`` on an otherwise idle machine. Every process it starts is stopped by PID in a ``finally``; the
temporary directory is removed.

Usage (from the repository root; py-spy from PyPI: ``pip install py-spy``)::

    .venv/bin/python benchmarks/profile_broker.py [--size 1024] [--duration 15] [--top 12] [--json OUT]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))


def _load_throughput():
    spec = importlib.util.spec_from_file_location("cluster_throughput", os.path.join(HERE, "cluster_throughput.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)  # exits with a message when kraftlog or confluent-kafka is missing
    return mod


def find_py_spy() -> str | None:
    """py-spy next to this Python (a venv's bin/) or on PATH."""
    local = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(local, os.X_OK):
        return local
    return shutil.which("py-spy")


def _frame_name(frame: str) -> str:
    """``func (kraftlog/net/driver.py:123)`` -> ``func (kraftlog/net/driver.py)``: one entry per function."""
    head, sep, tail = frame.rpartition(":")
    if sep and tail.endswith(")") and tail[:-1].isdigit():
        return head + ")"
    return frame


def summarize(raw_path: str, expected_samples: float, top: int) -> dict:
    """Own and inclusive time per function from py-spy's ``--format raw`` output (collapsed stacks:
    ``frame;frame;...;leaf count`` per line)."""
    own: Counter = Counter()
    incl: Counter = Counter()
    total = 0
    try:
        with open(raw_path, errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                n = int(count)
                frames = [_frame_name(fr) for fr in stack.split(";")]
                # py-spy puts the thread (with -t) or process (with -s) first; drop such non-frames
                frames = [fr for fr in frames if "(" in fr] or frames
                total += n
                own[frames[-1]] += n
                for fr in set(frames):
                    incl[fr] += n
    except FileNotFoundError:
        pass
    pct = (lambda c: round(100.0 * c / total, 1)) if total else (lambda c: 0.0)
    return {
        "samples": total,
        "busy_pct": round(100.0 * total / expected_samples, 1) if expected_samples else None,
        "own": [{"function": k, "pct": pct(v), "samples": v} for k, v in own.most_common(top)],
        "inclusive": [{"function": k, "pct": pct(v), "samples": v} for k, v in incl.most_common(top)],
    }


def _leader_of(bootstrap: str, topic: str) -> int:
    from confluent_kafka.admin import AdminClient
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    return md.partitions[0].leader


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=1024, help="record size in bytes (default 1024)")
    ap.add_argument("--duration", type=float, default=15.0, help="seconds of profiling (default 15)")
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds of load before profiling (default 3)")
    ap.add_argument("--rate", type=int, default=100, help="py-spy samples per second (default 100)")
    ap.add_argument("--top", type=int, default=12, help="entries per table (default 12)")
    ap.add_argument("--nodes", default="leader,follower,controller",
                    help="comma-separated: leader, follower (one), followers (both), controller")
    ap.add_argument("--native", action="store_true", help="py-spy --native (C extensions' frames too)")
    ap.add_argument("--window-kib", type=int, default=4096, help="unacknowledged payload at most (default 4096)")
    ap.add_argument("--json", metavar="OUT", help="write the tables (and the load's figures) as JSON")
    ap.add_argument("--keep-raw", metavar="DIR", help="copy py-spy's raw outputs into DIR")
    args = ap.parse_args(argv)
    py_spy = find_py_spy()
    if py_spy is None:
        print("error: py-spy not found; install it: .venv/bin/pip install py-spy", file=sys.stderr)
        return 2
    ct = _load_throughput()
    kcluster = ct.kcluster
    wanted = [n.strip() for n in args.nodes.split(",") if n.strip()]
    workdir = tempfile.mkdtemp(prefix="kraftlog-profile-")
    directory = os.path.join(workdir, "cluster")
    spies: list[tuple[str, int, subprocess.Popen, str]] = []
    result: dict = {"machine": ct.machine(), "size": args.size, "duration_s": args.duration, "rate": args.rate,
                    "native": args.native, "nodes": {}}
    code = 0
    try:
        info = kcluster.up(directory, 3, port=0)
        pids = {n["id"]: n["pid"] for n in info["nodes"]}
        bootstrap = ",".join(f"127.0.0.1:{n['port']}" for n in info["nodes"] if n["role"] == "broker")
        topic = f"profile-{args.size}"
        ct._create_kraftlog_topic(bootstrap, topic)
        leader = _leader_of(bootstrap, topic)
        followers = sorted(b for b in range(3) if b != leader)
        targets: list[tuple[str, int]] = []
        for w in wanted:
            if w == "leader":
                targets.append((f"leader (broker {leader})", pids[leader]))
            elif w == "follower":
                targets.append((f"follower (broker {followers[0]})", pids[followers[0]]))
            elif w == "followers":
                targets += [(f"follower (broker {b})", pids[b]) for b in followers]
            elif w == "controller":
                targets.append(("controller", pids["controller"]))
            else:
                ap.error(f"unknown node {w!r}")
        conf = {"bootstrap.servers": bootstrap, "acks": "all", "client.id": "profile-broker"}
        limits = ct.Limits(duration_s=args.warmup + args.duration + 1.0, max_bytes=1 << 62, drain_s=30.0,
                           window_bytes=args.window_kib * 1024)

        def start_spies() -> None:
            time.sleep(args.warmup)
            for label, pid in targets:
                out = os.path.join(workdir, f"{pid}.raw")
                cmd = [py_spy, "record", "--pid", str(pid), "--duration", str(int(args.duration)), "--rate",
                       str(args.rate), "--format", "raw", "--function", "--output", out]
                # --native needs the process paused per sample; otherwise do not pause it
                cmd.append("--native" if args.native else "--nonblocking")
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(out + ".err", "wb"))
                spies.append((label, pid, proc, out))

        starter = threading.Thread(target=start_spies, daemon=True)
        starter.start()
        figures = ct._kafka_run(conf, topic, args.size, limits, list(pids.values()))
        starter.join()
        for _label, _pid, proc, _out in spies:
            proc.wait(timeout=args.duration + 60)
        result["load"] = {k: figures.get(k) for k in ("records", "records_per_s", "mb_per_s", "p50_ms",
                                                      "p99_ms", "failed", "unacked")}
        expected = args.duration * args.rate
        for label, pid, proc, out in spies:
            summary = summarize(out, expected, args.top)
            if summary["samples"] == 0:
                try:
                    with open(out + ".err", errors="replace") as f:
                        summary["py_spy_error"] = f.read()[-500:]
                except OSError:
                    pass
            result["nodes"][label] = summary
            if args.keep_raw:
                os.makedirs(args.keep_raw, exist_ok=True)
                if os.path.exists(out):
                    shutil.copy(out, os.path.join(args.keep_raw, f"{label.split()[0]}-{pid}.raw"))
    except Exception as exc:
        result["error"] = f"{type(exc).__name__}: {exc}"
        code = 1
    finally:
        for _label, _pid, proc, _out in spies:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        try:
            kcluster.down(directory)
        except Exception:
            pass
        try:
            kcluster.kill(directory)
        except Exception:
            pass
        shutil.rmtree(workdir, ignore_errors=True)
    _print(result, args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")
    return code


def _print(result: dict, args) -> None:
    m = result["machine"]
    print(f"Machine: {m['cpu_model']}, {m['cores']} cores, Python {m['python']}, load average at start "
          f"{m['load_avg_at_start']}")
    if result.get("error"):
        print(f"error: {result['error']}")
    load = result.get("load")
    if load:
        print(f"Load: {args.size}-byte records, acks=all, RF 3: {load['records_per_s']:,} records/s, "
              f"{load['mb_per_s']} MB/s, p50 {load['p50_ms']} ms, p99 {load['p99_ms']} ms "
              "(py-spy running: slower than an unprofiled run)")
    for label, s in result["nodes"].items():
        print(f"\n== {label}: {s['samples']} samples over {args.duration:g} s at {args.rate}/s "
              f"(busy {s['busy_pct']}%)" + (" [native]" if args.native else ""))
        if s.get("py_spy_error"):
            print(f"   py-spy: {s['py_spy_error']}")
        for kind, title in (("own", "own time"), ("inclusive", "inclusive time")):
            print(f"   top by {title}:")
            for e in s[kind]:
                print(f"   {e['pct']:6.1f}%  {e['function']}")


if __name__ == "__main__":
    sys.exit(main())
