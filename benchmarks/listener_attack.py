"""A producer's latency on a real kraftlog broker with and without a memory attack on its listener.

One broker (and the controller) as OS processes on 127.0.0.1 (``kraftlog.net.cluster.up`` in a
temporary directory, stopped in a ``finally`` by ``cluster.down`` then ``cluster.kill``, by PID); topic
``load`` (1 partition, RF 1) for the producer, topic ``bulk`` (3 MiB of 64 KiB records) for the attacker's
Fetches. Phases alternate, ``--rounds`` times: **quiet**, then **attack**, each ``--duration`` seconds:

* the producer (confluent-kafka, ``acks=all``, librdkafka's default batching) sends 1 KiB records at
  ``--rate`` records/s to ``load``; latency per record is librdkafka's ``Message.latency()`` (from
  ``produce()`` to its acknowledgement), p50/p99/max over the phase (nearest rank);
* during an attack phase, started just before the producer: ten connections each announce a 100 MiB
  request (a 4-byte size) and send 1 MiB of it, and one connection pipelines 1,200 Fetches of ``bulk``
  (1 MiB each) and never reads (the issue's attack); they are closed at the end of the phase;
* throughout, a probe connection sends ApiVersions every 200 ms (the slowest answer is reported; none
  within 1 s counts as a miss) and the broker's RSS is sampled (psutil; the peak is reported).

Usage (from the repository root, with the project's virtual environment)::

    .venv/bin/python benchmarks/listener_attack.py [--rounds 2] [--duration 10] [--rate 1000] [--json OUT]

The pre-issue build can be measured the same way by pointing ``PYTHONPATH`` at its ``src`` (the nodes
inherit it). Figures depend on the machine and on what else it runs: the output starts with the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid

import confluent_kafka
import psutil
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire

MIB = 1 << 20


def machine() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), None)
    except OSError:
        pass
    return {"cpu_model": model or platform.processor() or None, "cores": os.cpu_count(),
            "memory_gib": round(psutil.virtual_memory().total / 2 ** 30, 1), "python": platform.python_version(),
            "kernel": platform.release(), "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
            "librdkafka": confluent_kafka.libversion()[0]}


def _pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]


class Watch:
    """Samples the broker's RSS and probes ApiVersions every 200 ms on a thread of its own."""

    def __init__(self, pid: int, bootstrap: str) -> None:
        self.proc = psutil.Process(pid)
        self.bootstrap = bootstrap
        self.stop = threading.Event()
        self.peak_mb = 0.0
        self.slowest_ms = 0.0
        self.misses = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        probe = None
        while not self.stop.is_set():
            try:
                self.peak_mb = max(self.peak_mb, self.proc.memory_info().rss / 1e6)
                if probe is None:
                    probe = KafkaConnection(self.bootstrap, timeout_s=1.0, client_id="probe")
                start = time.perf_counter()
                probe.request(m.ApiVersionsRequest())
                self.slowest_ms = max(self.slowest_ms, (time.perf_counter() - start) * 1000)
            except OSError:  # no answer within 1 s (a timeout) or a closed probe connection
                self.misses += 1
                if probe is not None:
                    probe.close()
                probe = None
            self.stop.wait(0.2)
        if probe is not None:
            probe.close()


def attack(host: str, port: int) -> list[socket.socket]:
    """The issue's attack: ten 100 MiB announcers (1 MiB of body each) and a pipelining non-reader."""
    socks = []
    body = os.urandom(MIB)
    for _ in range(10):
        s = socket.create_connection((host, port))
        s.settimeout(10)
        s.sendall(struct.pack(">i", 100 * MIB) + body)
        socks.append(s)
    request = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(uuid.UUID(int=0), 0, -1, 0, topic="bulk"),))
    s = socket.create_connection((host, port))
    s.sendall(b"".join(wire.frame(wire.encode_request(request, corr, client_id="pipeliner", version=12))
                       for corr in range(1, 1201)))
    socks.append(s)
    return socks


def phase(name: str, bootstrap: str, pid: int, duration_s: float, rate: int, attacked: bool) -> dict:
    host, port = bootstrap.split(":")
    watch = Watch(pid, bootstrap)
    watch.thread.start()
    socks = attack(host, int(port)) if attacked else []
    lats: list[float] = []
    failed = [0]

    def cb(err, msg):
        if err is None and msg.latency() is not None:
            lats.append(msg.latency() * 1000)
        elif err is not None:
            failed[0] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    payload = os.urandom(1024)
    sent, start = 0, time.perf_counter()
    try:
        while time.perf_counter() - start < duration_s:
            due = int((time.perf_counter() - start) * rate)
            while sent < due:
                producer.produce("load", payload, partition=0, on_delivery=cb)
                sent += 1
            producer.poll(0.001)
        left = producer.flush(30)
    finally:
        for s in socks:
            s.close()
        watch.stop.set()
        watch.thread.join(5)
    lats.sort()
    return {"phase": name, "attack": attacked, "sent": sent, "acked": len(lats), "failed": failed[0],
            "unacked": left, "p50_ms": _pct(lats, 50), "p99_ms": _pct(lats, 99), "max_ms": lats[-1] if lats else None,
            "broker_rss_peak_mb": round(watch.peak_mb, 1), "probe_slowest_ms": round(watch.slowest_ms, 1),
            "probe_misses": watch.misses}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=2, help="quiet/attack pairs (default 2)")
    ap.add_argument("--duration", type=float, default=10.0, help="seconds per phase (default 10)")
    ap.add_argument("--rate", type=int, default=1000, help="records/s of the producer (default 1000)")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON to OUT")
    args = ap.parse_args(argv)
    result = {"machine": machine(), "settings": vars(args), "phases": []}
    directory = tempfile.mkdtemp(prefix="kraftlog-listener-attack-")
    try:
        cl.up(directory, 1, port=0)
        entry = cl._entry(cl.load(directory), 0)
        bootstrap = f"{entry['host']}:{entry['port']}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for future in admin.create_topics([NewTopic("load", 1, 1), NewTopic("bulk", 1, 1)]).values():
            future.result(30)
        filler = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        chunk = os.urandom(64 * 1024)
        for _ in range(48):
            filler.produce("bulk", chunk, partition=0)
        if filler.flush(60):
            raise SystemExit("could not fill the bulk topic")
        for r in range(args.rounds):
            for attacked in (False, True):
                name = f"{'attack' if attacked else 'quiet'} {r + 1}"
                figures = phase(name, bootstrap, entry["pid"], args.duration, args.rate, attacked)
                result["phases"].append(figures)
                print(json.dumps(figures), flush=True)
    finally:
        cl.teardown(directory, remove=True)
    print(f"\nmachine: {json.dumps(result['machine'])}")
    print(f"{'phase':10} {'acked':>7} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7} {'RSS peak MB':>12} "
          f"{'probe slowest ms':>17} {'probe misses':>13}")
    for f in result["phases"]:
        print(f"{f['phase']:10} {f['acked']:>7} {f['p50_ms'] or 0:>7.1f} {f['p99_ms'] or 0:>7.1f} "
              f"{f['max_ms'] or 0:>7.1f} {f['broker_rss_peak_mb']:>12.0f} {f['probe_slowest_ms']:>17.0f} "
              f"{f['probe_misses']:>13}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=2)
            out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
