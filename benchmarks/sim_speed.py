"""Simulator speed: simulated time / wall time, and simulated messages handled per wall second.

Workload (issue #2): 3 brokers, one partition with RF 3 and min ISR 2, a producer at 100 records/s
(acks=all), a consumer, no faults; single process, one core. Usage:

    python benchmarks/sim_speed.py [--sim-seconds 600] [--wire]

Prints the machine, the ratio (fastest, median and slowest of ``--repeat`` runs: this VM's speed
varies by several percent between runs) and the message rate. Each run is a whole scenario run:
bootstrap, the simulation, and the checkers that compute the verdict. ``--wire`` sends every message
through the kio wire mapping (Kafka bytes and back), which costs far more.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from kraftlog.sim.runner import ScenarioRun
from kraftlog.sim.scenario import parse_scenario

SCENARIO = """
name: sim-speed
seed: 1
cluster:
  brokers: 3
  config: {min.insync.replicas: 2}
topics:
  - {name: t, replication_factor: 3}
clients:
  - {id: p1, producer: t, acks: all, interval: 10ms}
  - {id: c1, consumer: t, reset: earliest}
steps:
  - {run_for: %ds}
"""


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=int, default=600)
    ap.add_argument("--wire", action="store_true")
    ap.add_argument("--repeat", type=int, default=3, help="runs; the fastest is reported (VM noise)")
    args = ap.parse_args()
    walls = []
    for _ in range(args.repeat):
        run = ScenarioRun(parse_scenario(SCENARIO % args.sim_seconds, "sim-speed"), wire=args.wire)
        start = time.perf_counter()
        result = run.run()
        walls.append(time.perf_counter() - start)
    wall = min(walls)
    sim_s = run.sim.now / 1000
    v = result.verdict
    print(f"machine: {machine()}")
    print(f"workload: 3 brokers, RF 3, producer 100 records/s acks=all, 1 consumer, wire={args.wire}; "
          "one process, one core")
    print(f"runs: {args.repeat}, wall seconds: {', '.join(f'{w:.2f}' for w in walls)} (fastest reported)")
    print(f"simulated {sim_s:.0f} s in {wall:.2f} s wall: {sim_s / wall:.0f}x real time "
          f"(median run: {sim_s / statistics.median(walls):.0f}x, slowest: {sim_s / max(walls):.0f}x)")
    print(f"messages delivered: {run.sim.messages_delivered} ({run.sim.messages_delivered / wall:,.0f} per wall second)")
    print(f"acked acks=all: {v['acked']['all']}, lost: {v['lost_acked']}, consumed: {len(run.consumed)}")


if __name__ == "__main__":
    main()
