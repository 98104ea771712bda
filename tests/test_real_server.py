"""`kraftlog server` on real processes (issue 35, Must-shows 1 and 4): the README's three-host layout
(`examples/three-hosts/`: three controllers on 127.0.0.1-3, three brokers on 127.0.0.4-6, each loopback
address standing in for a host), formatted with `kraftlog storage format`, serves kcat and confluent-kafka, and
`kraftlog metadata-quorum describe --status` shows the leader and the voters; bad properties exit 2 with one
line each."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kraftlog.net.client import KafkaConnection
from kraftlog.net.cluster_files import free_ports
from kraftlog.net.server_config import load_server_config
from kraftlog.protocol import messages as m
from kraftlog.storage.meta_properties import parse_kafka_uuid
from test_real_cluster import _consume, _produce, _stop_everything, kraftlog
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


def _status(bootstrap: str, timeout_s: float = 30, observers: str = "[0, 1, 2]") -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        out = kraftlog("metadata-quorum", "--bootstrap-controller", bootstrap, "describe", "--status", check=False)
        if out.returncode == 0 and f"CurrentObservers:       {observers}" in out.stdout:
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


def _dynamic_layout(tmp_path, brokers: int = 2, auto_join: bool = True) -> tuple[dict[int, str], str]:
    """Three controllers of a dynamic quorum (KIP-853: controller.quorum.bootstrap.servers, auto-join on) on
    127.0.0.1-3 and ``brokers`` one-listener brokers on 127.0.0.4.., in ``tmp_path``; (node id -> file, the
    bootstrap servers)."""
    cport, bport = free_ports(2)
    servers = ",".join(f"127.0.0.{i}:{cport}" for i in (1, 2, 3))
    files = {}
    for i in range(3):
        files[3000 + i] = f"controller-{3000 + i}.properties"
        (tmp_path / files[3000 + i]).write_text(
            f"node.id={3000 + i}\nprocess.roles=controller\nlisteners=CONTROLLER://127.0.0.{i + 1}:{cport}\n"
            f"controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers={servers}\n"
            f"controller.quorum.auto.join.enable={str(auto_join).lower()}\nlog.dirs=data/controller-{3000 + i}\n")
    for b in range(brokers):
        files[b] = f"broker-{b}.properties"
        (tmp_path / files[b]).write_text(
            f"node.id={b}\nprocess.roles=broker\nlisteners=PLAINTEXT://127.0.0.{4 + b}:{bport}\n"
            f"controller.listener.names=CONTROLLER\ncontroller.quorum.bootstrap.servers={servers}\n"
            f"log.dirs=data/broker-{b}\ndefault.replication.factor={brokers}\nmin.insync.replicas={brokers}\n"
            f"offsets.topic.replication.factor={brokers}\nreplica.lag.time.max.ms=5000\n")
    return files, servers


def files_port(tmp_path) -> str:
    """The brokers' port of :func:`_dynamic_layout`'s files (the same on every host)."""
    return (tmp_path / "broker-0.properties").read_text().split("listeners=PLAINTEXT://127.0.0.4:")[1].split()[0]


def _describe(servers: str) -> m.DescribeQuorumResponse | None:
    """The quorum as its leader describes it (kraftlog's own DescribeQuorum), None while none answers."""
    for address in servers.split(","):
        try:
            with KafkaConnection(address, timeout_s=5) as k:
                resp = k.request(m.DescribeQuorumRequest())
        except OSError:
            continue
        if isinstance(resp, m.DescribeQuorumResponse) and resp.error_code == 0 and resp.partition_error_code == 0:
            return resp
    return None


def _unfenced(address: str) -> set[int]:
    """The brokers a broker's Metadata answer lists (the unfenced ones), empty while it does not answer."""
    try:
        with KafkaConnection(address, timeout_s=5) as k:
            resp = k.request(m.MetadataRequest(topics=()))
    except OSError:
        return set()
    return {b.node_id for b in resp.brokers} if isinstance(resp, m.MetadataResponse) else set()


def _wait(what: str, check, timeout_s: float = 60):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"not within {timeout_s} s: {what}")


def test_a_voter_that_lost_its_disk_rejoins_a_dynamic_quorum_and_nothing_acknowledged_is_lost(tmp_path):
    """KIP-853 on real processes: the active controller of a kraft.version 1 quorum is SIGKILLed and its directory
    deleted under an acks=all producer; `kraftlog server` refuses the empty directory; formatted again with
    --no-initial-controllers it comes back with a new directory id, removes its old self from the voters and
    adds itself (controller.quorum.auto.join.enable), and the quorum keeps committing; no acknowledged record is
    lost. A static voter that lost its disk would instead come back as a voter with an empty log."""
    files, servers = _dynamic_layout(tmp_path)
    cluster_id = _kraftlog_in(tmp_path, "storage", "random-uuid").stdout.strip()
    dirs = {n: _kraftlog_in(tmp_path, "storage", "random-uuid").stdout.strip() for n in (3000, 3001, 3002)}
    initial = ",".join(f"{n}@127.0.0.{n - 2999}:{servers.split(',')[0].split(':')[1]}:{dirs[n]}" for n in dirs)
    for node, name in files.items():
        extra = ["--initial-controllers", initial] if node >= 3000 else []
        out = _kraftlog_in(tmp_path, "storage", "format", "-t", cluster_id, "-c", name, *extra)
        assert out.returncode == 0, out.stderr
    procs: dict[int, subprocess.Popen] = {}
    acked: list[bytes] = []
    stop = threading.Event()

    def produce() -> None:  # acks=all all along, as a user's producer would
        producer = Producer({"bootstrap.servers": "127.0.0.4:" + files_port(tmp_path), "acks": "all",
                             "enable.idempotence": True, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            producer.produce("ledger", f"r{i}".encode(),
                             on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None)
            producer.poll(0)
            i += 1
            time.sleep(0.002)
        producer.flush(30)

    with ExitStack() as stack:
        stack.callback(lambda: _stop([procs[n] for n in sorted(procs, key=lambda n: (n >= 3000, n))]))
        for node in (3000, 3001, 3002, 0, 1):
            procs[node] = _server(tmp_path, files[node])
        first = _wait("a quorum with both brokers observing", lambda: (d := _describe(servers)) is not None and {
            o.replica_id for o in d.observers} >= {0, 1} and d)
        assert {v.replica_id: v.replica_directory_id for v in first.current_voters} == {
            n: parse_kafka_uuid(dirs[n]) for n in dirs}
        _wait("both brokers unfenced", lambda: _unfenced("127.0.0.4:" + files_port(tmp_path)) == {0, 1})
        kraftlog("topics", "create", "--bootstrap-server", "127.0.0.4:" + files_port(tmp_path), "--topic", "ledger",
                 "--partitions", "2", "--replication-factor", "2")
        writer = threading.Thread(target=produce, daemon=True)
        writer.start()
        stack.callback(stop.set)
        _wait("records acknowledged", lambda: len(acked) > 200)
        leader = first.leader_id
        procs.pop(leader).kill()  # SIGKILL, then the disk is gone
        shutil.rmtree(tmp_path / "data" / f"controller-{leader}")
        second = _wait("another leader", lambda: (d := _describe(servers)) is not None and d.leader_id != leader and d)
        refused = subprocess.run([sys.executable, "-m", "kraftlog.cli", "server", files[leader]], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 1 and "not formatted" in refused.stderr
        out = _kraftlog_in(tmp_path, "storage", "format", "-t", cluster_id, "-c", files[leader],
                           "--no-initial-controllers")
        assert out.returncode == 0, out.stderr
        new_dir = parse_kafka_uuid(out.stdout.split("directory.id ")[1].rstrip(".\n"))
        assert new_dir != parse_kafka_uuid(dirs[leader])
        procs[leader] = _server(tmp_path, files[leader])
        rejoined = _wait("the lost voter back as a voter with its new directory id", lambda: (
            d := _describe(servers)) is not None and {(v.replica_id, v.replica_directory_id) for v in d.current_voters}
            == {(n, parse_kafka_uuid(dirs[n])) for n in dirs if n != leader} | {(leader, new_dir)} and d, 90)
        assert rejoined.leader_epoch >= second.leader_epoch
        kraftlog("topics", "create", "--bootstrap-server", "127.0.0.5:" + files_port(tmp_path), "--topic", "after",
                 "--partitions", "1", "--replication-factor", "2")  # the quorum still commits
        time.sleep(1)
        stop.set()
        writer.join(60)
        assert len(acked) > 300
        consumer = Consumer({"bootstrap.servers": "127.0.0.5:" + files_port(tmp_path), "group.id": "audit",
                             "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("ledger", p, 0) for p in range(2)])
            got = {msg.value() for msg in _consume(consumer, len(acked))}
        finally:
            consumer.close()
        assert set(acked) <= got, f"{len(set(acked) - got)} acknowledged records lost"
        for node, proc in procs.items():
            assert proc.poll() is None, f"node {node} exited"


def test_cluster_up_runs_its_nodes_from_the_server_properties_it_writes(tmp_path):
    """`cluster up` is a convenience over `kraftlog server`'s path: it writes DIR/<node>.properties for every node
    (static voters here; the single controller's files: tests/test_server_config.py) and each node reads its file
    with the same parser; a cluster config that no node file could hold is refused first."""
    directory = tmp_path / "c"
    bad = kraftlog("cluster", "up", "--dir", str(directory), "--config", "min.insync.replica=2", "--detach",
                   check=False)
    assert bad.returncode == 2 and "did you mean 'min.insync.replicas'" in bad.stderr
    assert not (directory / "cluster.json").exists()
    try:
        kraftlog("cluster", "up", "--controllers", "3", "--brokers", "1", "--dir", str(directory), "--port", "0",
                 "--config", "min.insync.replicas=1", "--detach")
        info = json.loads((directory / "cluster.json").read_text())
        for e in info["nodes"]:
            name = f"controller-{e['id']}" if e["role"] == "controller" else f"broker-{e['id']}"
            server = load_server_config(str(directory / f"{name}.properties"))
            assert server.node_id == e["id"] and server.name == name and server.data_dir == str(directory / name)
            assert server.voters == {v: ("127.0.0.1", p["port"]) for v, p in
                                     ((n["id"], n) for n in info["nodes"] if n["role"] == "controller")}
            assert server.config["min.insync.replicas"] == "1"
        out = _status(",".join(f"127.0.0.1:{e['port']}" for e in info["nodes"] if e["role"] == "controller"),
                      observers="[0]")
        assert "CurrentVoters:          [3000, 3001, 3002]" in out
    finally:
        _stop_everything(str(directory))


def test_an_operator_replaces_a_lost_voter_with_remove_and_add_controller(tmp_path):
    """Without auto-join (Kafka's default), a voter formatted again after its disk was lost stays an observer until
    the operator runs `metadata-quorum remove-controller` (its old directory id) and `add-controller` (its file):
    the voters are then the three ids again, the new directory id among them."""
    files, servers = _dynamic_layout(tmp_path, brokers=1, auto_join=False)
    cluster_id = _kraftlog_in(tmp_path, "storage", "random-uuid").stdout.strip()
    dirs = {n: _kraftlog_in(tmp_path, "storage", "random-uuid").stdout.strip() for n in (3000, 3001, 3002)}
    port = servers.split(",")[0].split(":")[1]
    initial = ",".join(f"{n}@127.0.0.{n - 2999}:{port}:{dirs[n]}" for n in dirs)
    for node, name in files.items():
        extra = ["--initial-controllers", initial] if node >= 3000 else []
        assert _kraftlog_in(tmp_path, "storage", "format", "-t", cluster_id, "-c", name, *extra).returncode == 0
    procs: dict[int, subprocess.Popen] = {}
    with ExitStack() as stack:
        stack.callback(lambda: _stop([procs[n] for n in sorted(procs, key=lambda n: (n >= 3000, n))]))
        for node in (3000, 3001, 3002, 0):
            procs[node] = _server(tmp_path, files[node])
        first = _wait("a quorum", lambda: _describe(servers))
        lost = next(v for v in (3000, 3001, 3002) if v != first.leader_id)  # a follower's disk this time
        procs.pop(lost).kill()
        shutil.rmtree(tmp_path / "data" / f"controller-{lost}")
        out = _kraftlog_in(tmp_path, "storage", "format", "-t", cluster_id, "-c", files[lost],
                           "--no-initial-controllers")
        new_dir = out.stdout.split("directory.id ")[1].rstrip(".\n")
        procs[lost] = _server(tmp_path, files[lost])
        _wait("the new directory fetching as an observer", lambda: (d := _describe(servers)) is not None and any(
            o.replica_id == lost and o.replica_directory_id == parse_kafka_uuid(new_dir) for o in d.observers))
        time.sleep(3)  # auto-join is off: it stays an observer
        d = _describe(servers)
        assert (lost, parse_kafka_uuid(dirs[lost])) in {(v.replica_id, v.replica_directory_id) for v in
                                                        d.current_voters}
        removed = _kraftlog_in(tmp_path, "metadata-quorum", "--bootstrap-controller", servers, "remove-controller",
                               "--controller-id", str(lost), "--controller-directory-id", dirs[lost])
        assert removed.returncode == 0 and f"Removed controller {lost}" in removed.stdout, removed.stderr
        added = _kraftlog_in(tmp_path, "metadata-quorum", "--bootstrap-controller", servers, "add-controller",
                             "--command-config", files[lost])
        assert added.returncode == 0 and f"Added controller {lost} with directory id {new_dir}" in added.stdout, \
            added.stderr
        _wait("the voters with the new directory", lambda: (d := _describe(servers)) is not None and {
            (v.replica_id, v.replica_directory_id) for v in d.current_voters} == {
            (n, parse_kafka_uuid(dirs[n])) for n in dirs if n != lost} | {(lost, parse_kafka_uuid(new_dir))})
        again = _kraftlog_in(tmp_path, "metadata-quorum", "--bootstrap-controller", servers, "add-controller",
                             "--command-config", files[lost])
        assert again.returncode == 1 and again.stderr.count("\n") == 1  # already a voter: the quorum refuses
