"""Hostile clients against a real broker's listener (issue 24, findings 3 and 4), on real processes.

Each test starts its own cluster (``kraftlog.net.cluster.up``, free ports, in ``tmp_path``) and stops
every process it started by PID in a ``finally``. What they prove (the bounds are the README's "Bounded
listeners"):

* **Bounded memory, a live listener** (``queued.max.request.bytes``, buffers that grow as bytes arrive,
  muting): ten connections each announcing a 100 MiB request (and sending 1 MiB of it), and a
  client pipelining 1,200 Fetches of 1 MiB each without reading a byte, keep the broker's RSS below
  :data:`RSS_BOUND_MB`, and a probe connection's ApiVersions is answered within
  :data:`PROBE_ANSWER_S` every time it is asked, throughout.
* **The receive deadline** (``kraftlog.request.receive.timeout.ms``): 500 slow-loris connections (a
  request begun and never finished) are all closed by the broker; ``connections.max.idle.ms`` closes a
  connection that says nothing; ``max.connections`` closes the connections over the limit at once.
* **The livelock** (finding 4): a broker held at broker epoch -1 (a second incarnation of its id took
  its registration while it was paused, so the controller answers DUPLICATE_BROKER_REGISTRATION) for
  30 s uses under 10% of a core on average and stops within 5 s of SIGTERM.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import time
import uuid

import pytest

from conftest import running_cluster, wait_for
from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.net.cluster_properties import write_node_properties
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire

psutil = pytest.importorskip("psutil")
confluent_kafka = pytest.importorskip("confluent_kafka")

pytestmark = pytest.mark.slow

#: The broker's RSS bound under the memory attacks (MB = 10^6 bytes), as the README states it.
RSS_BOUND_MB = 300
#: How long (s) a probe's ApiVersions may wait for its answer, as the issue states it.
PROBE_ANSWER_S = 1.0
MIB = 1 << 20


def _cluster(tmp_path, config: dict | None = None, brokers: int = 1):
    return running_cluster(str(tmp_path / "cluster"), brokers, config=dict(config or {}))


def _address(directory: str, broker: int = 0) -> tuple[str, int]:
    entry = cl._entry(cl.load(directory), broker)
    return entry["host"], entry["port"]


def _pid(directory: str, broker: int = 0) -> int:
    return cl._entry(cl.load(directory), broker)["pid"]


def _rss_mb(proc) -> float:
    return proc.memory_info().rss / 1e6


def _probe(conn: KafkaConnection) -> float:
    """Send ApiVersions on the probe connection; the seconds its answer took. An answer that does not come
    within :data:`PROBE_ANSWER_S` fails the test."""
    start = time.monotonic()
    try:
        resp = conn.request(m.ApiVersionsRequest())
    except TimeoutError:
        raise AssertionError(f"the probe's ApiVersions got no answer within {PROBE_ANSWER_S} s") from None
    took = time.monotonic() - start
    assert resp.error_code == 0
    return took


def _fetch_frame(topic: str, corr: int) -> bytes:
    """A consumer's Fetch v12 (topic by name) of partition 0 from offset 0, up to 1 MiB, without waiting."""
    request = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(uuid.UUID(int=0), 0, -1, 0, topic=topic),))
    return wire.frame(wire.encode_request(request, corr, client_id="pipeliner", version=12))


def test_100mib_announcers_and_a_pipelining_non_reader_keep_rss_bounded_and_the_probe_answered(tmp_path):
    """Finding 3: a 4-byte size header no longer allocates the size it announces (the buffer grows as
    bytes arrive, charged to queued.max.request.bytes), and a client that pipelines requests and never
    reads is muted (no request of it is handed over, nor is it read, while a response to it waits
    unwritten), so it stalls only itself: RSS stays below the bound and the probe is always answered."""
    with _cluster(tmp_path) as directory:
        host, port = _address(directory)
        bootstrap = f"{host}:{port}"
        broker = psutil.Process(_pid(directory))
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("t", 1, 1)])["t"].result(30)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        value = os.urandom(64 * 1024)
        for _ in range(48):  # 3 MiB: every Fetch below is answered with 1 MiB of records
            producer.produce("t", value=value, partition=0)
        assert producer.flush(60) == 0
        probe = KafkaConnection(bootstrap, timeout_s=PROBE_ANSWER_S)
        _probe(probe)
        baseline_mb = _rss_mb(broker)
        attackers: list[socket.socket] = []
        try:
            body = os.urandom(MIB)
            for _ in range(10):  # each announces a 100 MiB request and sends 1 MiB of it
                s = socket.create_connection((host, port))
                s.sendall(struct.pack(">i", 100 * MIB) + body)
                attackers.append(s)
            pipeliner = socket.create_connection((host, port))
            attackers.append(pipeliner)
            pipeliner.sendall(b"".join(_fetch_frame("t", corr) for corr in range(1, 1201)))  # never read
            peak_mb, answers, worst_s = baseline_mb, 0, 0.0
            end = time.monotonic() + 12.0
            while time.monotonic() < end:
                worst_s = max(worst_s, _probe(probe))
                answers += 1
                peak_mb = max(peak_mb, _rss_mb(broker))
                time.sleep(0.2)
            print(f"broker RSS {baseline_mb:.0f} MB before, peak {peak_mb:.0f} MB under attack; "
                  f"{answers} probes answered, slowest in {worst_s * 1000:.0f} ms")
            assert peak_mb < RSS_BOUND_MB, f"broker RSS reached {peak_mb:.0f} MB (bound {RSS_BOUND_MB} MB)"
            assert answers >= 20
        finally:
            for s in attackers:
                s.close()
            probe.close()
        # The broker still serves: a produce after the attack is acknowledged.
        producer.produce("t", value=b"after", partition=0)
        assert producer.flush(30) == 0


#: The short deadlines of the deadline test (ms): a begun request must be received within 2 s, a
#: connection that says nothing for 4 s is closed.
DEADLINES = {"kraftlog.request.receive.timeout.ms": "2000", "connections.max.idle.ms": "4000"}


def _wait_all_closed(socks: list[socket.socket], timeout_s: float) -> tuple[int, float]:
    """Wait until the broker closed every socket of ``socks`` (EOF or a reset); (how many it closed,
    seconds the last one took)."""
    sel = selectors.DefaultSelector()
    for s in socks:
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    closed, start, last = 0, time.monotonic(), 0.0
    deadline = start + timeout_s
    while closed < len(socks) and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            try:
                data = key.fileobj.recv(65536)
            except (ConnectionResetError, BrokenPipeError):
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                closed += 1
                last = time.monotonic() - start
    sel.close()
    return closed, last


def _listener_stats(directory: str) -> dict:
    run = cl._run_file(directory, 0) or {}
    return run.get("listeners") or {}


def test_slow_loris_and_idle_connections_are_closed(tmp_path):
    """kraftlog.request.receive.timeout.ms: 500 connections that begin a request (half stop inside the
    4-byte size, half inside the body) and never finish it are all closed by the broker, while a probe
    is answered; connections.max.idle.ms closes a connection that never says anything, and not before."""
    with _cluster(tmp_path, DEADLINES) as directory:
        host, port = _address(directory)
        probe = KafkaConnection(f"{host}:{port}", timeout_s=PROBE_ANSWER_S)
        loris: list[socket.socket] = []
        try:
            for i in range(500):
                s = socket.create_connection((host, port))
                s.sendall(b"\x00\x00" if i % 2 else struct.pack(">i", 1000) + b"\x00\x01" * 10)
                loris.append(s)
                if i % 50 == 0:
                    _probe(probe)  # answered meanwhile (and not idle)
            closed, last_s = _wait_all_closed(loris, timeout_s=20.0)
            print(f"{closed} of 500 slow-loris connections closed, the last {last_s:.1f} s after the 500th opened")
            assert closed == 500
            _probe(probe)
            stats = wait_for("the closes counted",
                             lambda: _listener_stats(directory).get("closed_receive_timeout", 0) >= 500, timeout_s=5.0)
            assert stats
        finally:
            for s in loris:
                s.close()
            probe.close()
        idle = socket.create_connection((host, port))
        try:
            closed, took = _wait_all_closed([idle], timeout_s=15.0)
            assert closed == 1 and took >= 3.0, (closed, took)  # 4 s, checked every second
        finally:
            idle.close()


def test_connections_over_max_connections_are_closed_at_once(tmp_path):
    """max.connections (40 here): of 50 more connections beside the probe's, the 11 over the limit are
    closed by the broker at once and counted; the probe is still answered."""
    with _cluster(tmp_path, {"max.connections": "40"}) as directory:
        host, port = _address(directory)
        probe = KafkaConnection(f"{host}:{port}", timeout_s=PROBE_ANSWER_S)
        many: list[socket.socket] = []
        try:
            for _ in range(50):
                many.append(socket.create_connection((host, port)))
            closed, _ = _wait_all_closed(many, timeout_s=3.0)
            assert closed == 11
            _probe(probe)
            wait_for("the refusals counted", lambda: _listener_stats(directory).get("refused") == 11, timeout_s=5.0)
        finally:
            for s in many:
                s.close()
            probe.close()


#: Fast fencing, so that a paused broker loses its session within seconds.
FAST_SESSION = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


def _second_incarnation(directory: str, broker: int, tmp_path) -> tuple[subprocess.Popen, str]:
    """Start another process of broker ``broker`` of the cluster in ``directory``: the same cluster id and
    controller, a data directory and listeners of its own (a copy of cluster.json in a directory of its
    own) and another seed, so another incarnation id. Returns the process and its directory."""
    other = str(tmp_path / "second")
    os.makedirs(os.path.join(other, "run"))
    cluster = cl.load(directory)
    cluster["owner_pid"] = None
    cluster["seed"] += 1  # the incarnation id comes from the seed: another seed, another incarnation
    for e in cluster["nodes"]:
        if e["id"] == broker:
            e.update(pid=None, port=0, internal_port=0, metrics_port=0)
    with open(os.path.join(other, "cluster.json"), "w") as f:
        json.dump(cluster, f)
    cl.format_node(other, broker)  # a node starts only on a formatted directory (issue 23)
    write_node_properties(other, cluster, broker, f"broker-{broker}")  # and from its server.properties
    with open(os.path.join(other, f"broker-{broker}.log"), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "kraftlog.net.node", other, str(broker)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=other)
    return proc, other


def test_a_broker_held_at_broker_epoch_minus_one_idles_and_stops_on_sigterm(tmp_path):
    """Finding 4: broker 0 is paused until its session expires, a second incarnation of broker 0 registers
    meanwhile, then broker 0 resumes: its heartbeat gets STALE_BROKER_EPOCH (broker epoch -1) and every
    registration DUPLICATE_BROKER_REGISTRATION while the second one heartbeats. Held there for 30 s it
    uses under 10% of a core on average (it was 100%: a due metadata fetch it could not send kept its
    deadline in the past), and SIGTERM stops it within 5 s."""
    second = None
    with _cluster(tmp_path, FAST_SESSION) as directory:
        try:
            first = psutil.Process(_pid(directory))
            cl.pause(directory, 0)
            second, other = _second_incarnation(directory, 0, tmp_path)
            wait_for("the second incarnation registered and unfenced", lambda: (
                (cl._run_file(other, 0) or {}).get("broker_epoch", -1) >= 0
                and (cl._run_file(other, 0) or {}).get("fenced") is False), timeout_s=30.0)
            cl.resume(directory, 0)
            wait_for("broker 0 at broker epoch -1",
                     lambda: (cl._run_file(directory, 0) or {}).get("broker_epoch") == -1, timeout_s=15.0)
            before, start = first.cpu_times(), time.monotonic()
            while time.monotonic() - start < 30.0:
                time.sleep(1.0)
                assert second.poll() is None, "the second incarnation died"
                assert (cl._run_file(directory, 0) or {}).get("broker_epoch") == -1
            after, elapsed = first.cpu_times(), time.monotonic() - start
            share = (after.user + after.system - before.user - before.system) / elapsed
            print(f"broker 0 at broker epoch -1 for {elapsed:.0f} s: {share * 100:.1f}% of a core")
            assert share < 0.10, f"{share * 100:.0f}% of a core at broker epoch -1"
            first.send_signal(signal.SIGTERM)
            start = time.monotonic()
            try:
                first.wait(timeout=5.0)
            except psutil.TimeoutExpired:
                raise AssertionError("broker 0 still runs 5 s after SIGTERM") from None
            print(f"broker 0 stopped {time.monotonic() - start:.2f} s after SIGTERM")
        finally:
            if second is not None:
                second.terminate()
                try:
                    second.wait(timeout=45)
                except subprocess.TimeoutExpired:
                    second.kill()
                    second.wait()
