"""`kraftlog server` on real processes (issue 35, Must-shows 1 and 4): the README's three-host layout
(`examples/three-hosts/`: three controllers on 127.0.0.1-3, three brokers on 127.0.0.4-6, each loopback
address standing in for a host), formatted with `kraftlog storage format`, serves kcat and confluent-kafka, and
`kraftlog metadata-quorum describe --status` shows the leader and the voters; bad properties exit 2 with one
line each."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import ExitStack

import pytest
from confluent_kafka import Consumer

from kraftlog.net.cluster_files import free_ports
from test_real_cluster import _consume, _produce, kraftlog
from test_server_config import EXAMPLES

pytestmark = pytest.mark.slow

HOSTS = [f"127.0.0.{i}" for i in range(1, 7)]


def _layout(tmp_path) -> tuple[list[str], dict[int, int]]:
    """The example files in ``tmp_path``, their ports (9092, 9093, 9094, 9100) replaced by free ones (the
    same on every host, as in the example); returns (file names, example port -> port used)."""
    chosen = free_ports(4)
    for port in chosen:  # free on every "host", not only 127.0.0.1
        for host in HOSTS:
            with socket.socket() as s:
                s.bind((host, port))
    ports = dict(zip((9092, 9093, 9094, 9100), chosen, strict=True))
    names = []
    for f in sorted(EXAMPLES.glob("*.properties")):
        text = re.sub(r":(9092|9093|9094)\b", lambda m: f":{ports[int(m.group(1))]}", f.read_text())
        text = text.replace("metrics.port=9100", f"metrics.port={ports[9100]}")
        (tmp_path / f.name).write_text(text)
        names.append(f.name)
    return names, ports


def _kraftlog_in(directory, *args: str) -> subprocess.CompletedProcess:
    """The command line run from ``directory``, as an operator on that host types it (the example files'
    relative ``log.dirs`` are taken from the working directory, as Kafka does)."""
    return subprocess.run([sys.executable, "-m", "kraftlog.cli", *args], cwd=directory, capture_output=True,
                          text=True, timeout=120)


def _server(tmp_path, name: str) -> subprocess.Popen:
    log = open(tmp_path / f"{name}.log", "ab")
    try:
        return subprocess.Popen([sys.executable, "-m", "kraftlog.cli", "server", name], cwd=tmp_path,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    finally:
        log.close()


def _stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each node by its PID in turn (brokers first: a broker's controlled shutdown needs the
    controllers) and wait for it; SIGKILL one that still runs 40 s later (the broker's bound is 35 s)."""
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=40)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _status(bootstrap: str, timeout_s: float = 30) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        out = kraftlog("metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status", check=False)
        if out.returncode == 0 and "CurrentObservers:       [0, 1, 2]" in out.stdout:
            return out.stdout
        if time.monotonic() > deadline:
            raise AssertionError(f"no quorum with three observers within {timeout_s} s:\n{out.stdout}{out.stderr}")
        time.sleep(0.5)


def _all_brokers_listed(brokers: list[str], timeout_s: float = 60) -> str:
    """kcat's metadata listing once it names every broker (kcat -L, retried as an operator would)."""
    deadline = time.monotonic() + timeout_s
    while True:
        out = subprocess.run(["kcat", "-b", brokers[0], "-L", "-m", "2"], capture_output=True, text=True, timeout=30)
        if f" {len(brokers)} brokers:" in out.stdout or time.monotonic() > deadline:
            return out.stdout + out.stderr
        time.sleep(0.5)


def test_three_hosts_from_hand_written_properties_serve_kcat_and_confluent_kafka(tmp_path):
    names, ports = _layout(tmp_path)
    cluster_id = kraftlog("storage", "random-uuid").stdout.strip()
    for name in names:
        out = _kraftlog_in(tmp_path, "storage", "format", "--cluster-id", cluster_id, "--config", name)
        assert out.returncode == 0 and out.stdout.startswith("Formatting ") and f"cluster.id {cluster_id}" in out.stdout
    # a node refuses a second format of its directory, as Kafka's Formatter
    again = _kraftlog_in(tmp_path, "storage", "format", "-t", cluster_id, "-c", names[0])
    assert again.returncode == 1 and "already formatted" in again.stderr
    controllers = ",".join(f"{h}:{ports[9093]}" for h in HOSTS[:3])
    brokers = [f"{h}:{ports[9092]}" for h in HOSTS[3:]]
    procs: list[subprocess.Popen] = []
    with ExitStack() as stack:
        stack.callback(_stop, procs)
        for name in sorted(names, key=lambda n: not n.startswith("controller")):  # brokers stop first
            procs.insert(0, _server(tmp_path, name))
        status = _status(controllers)
        leader = int(re.search(r"LeaderId:\s+(\d+)", status).group(1))
        assert leader in (3000, 3001, 3002) and "CurrentVoters:          [3000, 3001, 3002]" in status
        # each node binds its own host: a broker's endpoints are the addresses its file names; the brokers are
        # in Metadata once registered and unfenced (a few seconds after the quorum is up)
        listing = _all_brokers_listed(brokers) if shutil.which("kcat") else None
        if listing is not None:
            for i, address in enumerate(brokers):
                assert f"broker {i} at {address}" in listing, listing
            produced = subprocess.run(["kcat", "-b", brokers[0], "-P", "-t", "orders", "-X", "acks=all",
                                       "-X", "topic.message.timeout.ms=30000"],
                                      input="".join(f"order-{i}\n" for i in range(100)), capture_output=True,
                                      text=True, timeout=60)
            assert produced.returncode == 0, produced.stderr
            read = subprocess.run(["kcat", "-b", brokers[2], "-C", "-t", "orders", "-e", "-q", "-c", "100"],
                                  capture_output=True, text=True, timeout=60)
            assert read.stdout.split() == [f"order-{i}" for i in range(100)]
        values = [f"payment-{i}".encode() for i in range(300)]
        acked = _produce(brokers[1], "payments", values, acks="all", **{"enable.idempotence": True})
        assert len(acked) == len(values)
        consumer = Consumer({"bootstrap.servers": brokers[2], "group.id": "auditors",
                             "auto.offset.reset": "earliest"})
        try:
            consumer.subscribe(["payments"])
            got = _consume(consumer, len(values))
        finally:
            consumer.close()
        assert sorted(msg.value() for msg in got) == sorted(values)
        topic = kraftlog("topics", "describe", "--bootstrap-server", brokers[0], "--topic", "payments").stdout
        assert re.search(r"Replicas: \d,\d,\d\tIsr: \d,\d,\d", topic), topic  # default.replication.factor=3
        for proc in procs:
            assert proc.poll() is None, f"a node exited: {proc.args}"
    for name in names:  # every node stopped on its SIGTERM and said so
        assert "stopped" in (tmp_path / f"{name}.log").read_text().splitlines()[-1]


def _run_server(tmp_path, text: str, timeout: float = 30) -> subprocess.CompletedProcess:
    path = tmp_path / "bad.properties"
    path.write_text(text)
    return subprocess.run([sys.executable, "-m", "kraftlog.cli", "server", str(path)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout)


def test_bad_properties_exit_2_with_one_line_each(tmp_path):
    base = (EXAMPLES / "controller-3001.properties").read_text().replace("data/", f"{tmp_path}/data/")
    cases = {
        "unknown key": (base + "num.network.threads=3\n", "unknown configuration 'num.network.threads'"),
        "missing node.id": (re.sub(r"(?m)^node\.id=.*\n", "", base), 'Missing required configuration "node.id"'),
        "own listener not a voter": (base.replace("listeners=CONTROLLER://127.0.0.2:9093",
                                                  "listeners=CONTROLLER://127.0.0.2:9099"),
                                     "is not this node's controller listener CONTROLLER://127.0.0.2:9099"),
    }
    for what, (text, message) in cases.items():
        out = _run_server(tmp_path, text)
        assert out.returncode == 2, (what, out.stderr)
        assert out.stdout == "" and out.stderr.count("\n") == 1 and message in out.stderr, (what, out.stderr)


def test_a_port_in_use_exits_2_with_one_line_and_an_unformatted_directory_exits_1(tmp_path):
    port = free_ports(1)[0]
    text = (EXAMPLES / "controller-3001.properties").read_text().replace("data/", f"{tmp_path}/data/")
    text = re.sub(r":9093\b", f":{port}", text)
    unformatted = _run_server(tmp_path, text)
    assert unformatted.returncode == 1 and "not formatted" in unformatted.stderr
    assert not os.path.exists(tmp_path / "data")  # nothing created for a missing directory
    (tmp_path / "bad.properties").write_text(text)
    kraftlog("storage", "format", "-t", kraftlog("storage", "random-uuid").stdout.strip(), "-c",
             str(tmp_path / "bad.properties"))
    with socket.socket() as holder:
        holder.bind(("127.0.0.2", port))
        holder.listen(1)
        out = _run_server(tmp_path, text)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"cannot bind its CONTROLLER listener to 127.0.0.2:{port}" in out.stderr
