"""Simulator speed: simulated time / wall time, messages per wall second, and the cost per message as a
multiple of a bare event loop's, measured in the same run.

Workload (issue #2): 3 brokers, one partition with RF 3 and min ISR 2, a producer at 100 records/s
(acks=all), a consumer, no faults; single process, one core. Run from the repository root with the
project's virtual environment:

    .venv/bin/python benchmarks/sim_speed.py [--sim-seconds 600] [--repeat 3] [--wire]

Each repeat is a whole scenario run (bootstrap, the simulation, and the checkers that compute the
verdict), followed at once by a **bare event loop**: ``heapq`` push and pop of exactly as many events as
the simulator delivered messages, each a tuple shaped like the simulator's (time, sequence, kind,
payload), handed to a handler that does nothing, with the cyclic GC paused as the simulator pauses it.
The bare loop is what any discrete-event simulator in Python pays at the least per message; the
simulator's cost per delivered message divided by the bare loop's is a ratio that depends far less on
the machine than absolute figures do (both slow down together on a slower CPU). Both costs are CPU time
of this process (``time.process_time``), so that another process sharing the core does not inflate one
side, and medians: of the simulator runs, and of the bare loops timed right before and after each of
them (the VM's speed drifts; a short loop's fastest try would catch a faster moment than a long run's).
The absolute figures are wall time, as a user waits for them.

Prints the machine (CPU model, cores, Python), the simulated/wall ratio of the fastest, median and
slowest repeat (this VM's speed varies by several percent between runs), the message rate, µs of CPU
per message for the simulator and the bare loop, and their ratio. ``--wire`` sends every message through the
kio wire mapping (Kafka bytes and back), which costs far more.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import os
import platform
import statistics
import sys
import time

try:
    from kraftlog.sim.runner import ScenarioRun
    from kraftlog.scenario import parse_scenario
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog and its dependencies installed ({exc}); "
             "run it from the repository root as: .venv/bin/python benchmarks/sim_speed.py")

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

#: Events kept in the bare loop's queue (the simulator's queue holds a few dozen in this workload: one
#: tick per node and the messages in flight).
BARE_IN_FLIGHT = 64
#: Bare-loop timings before and after each simulator run (their median is the run's bare cost).
BARE_TRIES = 3


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
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()} "
            f"({platform.python_implementation()}), {platform.system()}")


def _handler(now: int, payload) -> None:
    """The bare loop's message handler: does nothing."""


def bare_event_loop(messages: int, in_flight: int = BARE_IN_FLIGHT, clock=time.process_time) -> float:
    """Seconds (of ``clock``: CPU time by default) for a discrete-event loop that pops ``messages`` events
    from a heap, hands each to a handler that does nothing, and pushes the next one (a delay of 1..5 ms,
    as the simulator's network draws): the least a simulator in Python pays per message."""
    queue: list = []
    push, pop = heapq.heappush, heapq.heappop
    handler = _handler
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = clock()
        for seq in range(in_flight):
            push(queue, (1 + seq % 5, seq, 0, seq))
        seq = in_flight
        for _ in range(messages):
            t, _, kind, payload = pop(queue)
            handler(t, payload)
            seq += 1
            push(queue, (t + 1 + seq % 5, seq, kind, payload))
        return clock() - start
    finally:
        if was_enabled:
            gc.enable()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sim-seconds", type=int, default=600, help="simulated seconds per run (default 600)")
    ap.add_argument("--wire", action="store_true", help="send every message through the Kafka wire encoding")
    ap.add_argument("--repeat", type=int, default=3, help="runs (default 3); fastest, median and slowest reported")
    args = ap.parse_args()
    if args.sim_seconds < 1 or args.repeat < 1:
        sys.exit("error: --sim-seconds and --repeat must be at least 1")
    print(f"machine: {machine()}", flush=True)
    walls, cpus, bares, ratios = [], [], [], []
    messages = 0
    for i in range(args.repeat):
        # The bare loop runs right before (from the second run on: the count is known, the same every run)
        # and right after each simulator run, so that both see the machine in the same state.
        before = [bare_event_loop(messages) for _ in range(BARE_TRIES)] if messages else []
        run = ScenarioRun(parse_scenario(SCENARIO % args.sim_seconds, "sim-speed"), wire=args.wire)
        start, start_cpu = time.perf_counter(), time.process_time()
        result = run.run()
        wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        messages = run.sim.messages_delivered
        around = before + [bare_event_loop(messages) for _ in range(BARE_TRIES)]
        bare = statistics.median(around)
        walls.append(wall)
        cpus.append(cpu)
        bares.extend(around)
        ratios.append(cpu / bare)
        print(f"  run {i + 1}/{args.repeat}: simulator {wall:.2f} s wall, {cpu:.2f} s CPU; bare loop {bare:.3f} s "
              f"CPU (median of {len(around)}) for {messages:,} messages: {cpu / bare:.0f}x", flush=True)
    wall = min(walls)
    sim_s = run.sim.now / 1000
    v = result.verdict
    sim_us = statistics.median(cpus) / messages * 1e6
    bare_us = statistics.median(bares) / messages * 1e6
    print(f"workload: 3 brokers, RF 3, producer 100 records/s acks=all, 1 consumer, wire={args.wire}; "
          "one process, one core")
    print(f"runs: {args.repeat}, wall seconds: {', '.join(f'{w:.2f}' for w in walls)} (fastest reported)")
    print(f"simulated {sim_s:.0f} s in {wall:.2f} s wall: {sim_s / wall:.0f}x real time "
          f"(median run: {sim_s / statistics.median(walls):.0f}x, slowest: {sim_s / max(walls):.0f}x)")
    print(f"messages delivered: {messages:,} ({messages / wall:,.0f} per wall second)")
    print(f"cost per delivered message (CPU time, medians): simulator {sim_us:.2f} µs (whole run, checkers "
          f"included), bare heapq event loop {bare_us:.3f} µs")
    print(f"simulator / bare event loop: {sim_us / bare_us:.0f}x "
          f"(per run {', '.join(f'{r:.0f}x' for r in ratios)})")
    print(f"acked acks=all: {v['acked']['all']}, lost: {v['lost_acked']}, consumed: {len(run.consumed)}")


if __name__ == "__main__":
    main()
