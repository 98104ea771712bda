"""SASL on real processes (issue 36): a controller and a broker run by `kraftlog server` from hand-written
properties, the broker's client listener SASL_PLAINTEXT with PLAIN (an admin user in its JAAS configuration) and
SCRAM-SHA-512. The admin creates a SCRAM user with confluent-kafka's AdminClient (AlterUserScramCredentials);
confluent-kafka, kafka-python and kcat then produce and consume as that user with SCRAM-SHA-512; an anonymous
client, a wrong password and an unknown mechanism are refused, and the broker counts each failed
authentication; no password reaches a node's log."""

from __future__ import annotations

import shutil
import subprocess
import time
from contextlib import ExitStack

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from kraftlog.net.cluster_files import free_ports
from test_real_cluster import kraftlog
from test_real_server import _server, _stop

pytestmark = pytest.mark.slow

ADMIN_PASSWORD = "admin-secret-5c1e"
ALICE_PASSWORD = "alice-secret-9d2f"


def _properties(tmp_path, ports: list[int]) -> tuple[str, str]:
    client, broker, controller, metrics = ports
    controller_file = tmp_path / "controller.properties"
    controller_file.write_text(
        "node.id=3000\nprocess.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{controller}\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=3000@127.0.0.1:{controller}\n"
        f"log.dirs={tmp_path}/data/controller\n")
    broker_file = tmp_path / "broker.properties"
    broker_file.write_text(
        "node.id=0\nprocess.roles=broker\n"
        f"listeners=SASL_PLAINTEXT://127.0.0.1:{client},BROKER://127.0.0.1:{broker}\n"
        "listener.security.protocol.map=SASL_PLAINTEXT:SASL_PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        "inter.broker.listener.name=BROKER\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=3000@127.0.0.1:{controller}\n"
        f"log.dirs={tmp_path}/data/broker-0\nmetrics.port={metrics}\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}";\n'
        "offsets.topic.num.partitions=1\noffsets.topic.replication.factor=1\n")
    return str(controller_file), str(broker_file)


def _sasl(bootstrap: str, mechanism: str, user: str, password: str, **extra) -> dict:
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": user, "sasl.password": password, **extra}


def _authentication_counts(metrics_port: int) -> dict[str, float]:
    """The broker's Kafka socket-server-metrics of its client listener, from its /metrics endpoint."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            for kind in ("successful", "failed"):
                if s.name == f"kafka_server_socket_server_metrics_{kind}_authentication_total" \
                        and s.labels.get("listener") == "CLIENT":
                    out[kind] = s.value
    return out


def _refused(config: dict) -> str:
    """The error a confluent-kafka producer reports when it cannot authenticate (its error callback)."""
    errors: list[str] = []
    producer = Producer({**config, "error_cb": lambda err: errors.append(str(err)), "message.timeout.ms": 5000})
    producer.produce("secured", b"must-not-land")
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    producer.flush(6)
    return errors[0] if errors else ""


def test_scram_sha_512_clients_on_a_sasl_plaintext_listener_and_the_refusals(tmp_path):
    ports = free_ports(4)
    client = f"127.0.0.1:{ports[0]}"
    controller_file, broker_file = _properties(tmp_path, ports)
    cluster_id = kraftlog("storage", "random-uuid").stdout.strip()
    for path in (controller_file, broker_file):
        kraftlog("storage", "format", "--cluster-id", cluster_id, "--config", path)
    procs: list[subprocess.Popen] = []
    with ExitStack() as stack:
        stack.callback(_stop, procs)
        procs.append(_server(tmp_path, "controller.properties"))
        procs.insert(0, _server(tmp_path, "broker.properties"))
        admin = AdminClient(_sasl(client, "PLAIN", "admin", ADMIN_PASSWORD))
        deadline = time.monotonic() + 60
        while True:  # the broker is up once it answers the admin's Metadata
            try:
                admin.list_topics(timeout=5)
                break
            except KafkaException:
                assert time.monotonic() < deadline, (tmp_path / "broker.properties.log").read_text()[-3000:]
        futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), ALICE_PASSWORD.encode())])
        futures["alice"].result(timeout=30)
        described = admin.describe_user_scram_credentials(["alice"])["alice"].result(timeout=30)
        assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
            (ScramMechanism.SCRAM_SHA_512, 8192)]
        # (the broker applies the credential record from the metadata log a moment after the controller)
        alice = _sasl(client, "SCRAM-SHA-512", "alice", ALICE_PASSWORD)
        producer = Producer({**alice, "acks": "all", "message.timeout.ms": 30000})
        delivered: list = []
        for i in range(100):
            producer.produce("secured", f"c-{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(60)
        assert delivered == [None] * 100
        kafka = pytest.importorskip("kafka")
        kp = kafka.KafkaProducer(bootstrap_servers=client, security_protocol="SASL_PLAINTEXT",
                                 sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                 sasl_plain_password=ALICE_PASSWORD, acks="all")
        for i in range(100):
            kp.send("secured", f"k-{i}".encode())
        kp.flush(timeout=60)
        kp.close()
        consumer = Consumer({**alice, "group.id": "alice-readers", "auto.offset.reset": "earliest"})
        got: list[bytes] = []
        try:
            consumer.subscribe(["secured"])
            deadline = time.monotonic() + 60
            while len(got) < 200 and time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())
        finally:
            consumer.close()
        assert sorted(got) == sorted([f"c-{i}".encode() for i in range(100)] + [f"k-{i}".encode() for i in range(100)])
        if shutil.which("kcat"):
            read = subprocess.run(["kcat", "-b", client, "-X", "security.protocol=SASL_PLAINTEXT",
                                   "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice",
                                   "-X", f"sasl.password={ALICE_PASSWORD}", "-C", "-t", "secured", "-e", "-q",
                                   "-c", "200"], capture_output=True, text=True, timeout=60)
            assert sorted(read.stdout.split()) == sorted(v.decode() for v in got), read.stderr

        # the refusals: each client is told why, and nothing it sent lands
        wrong = _refused(_sasl(client, "SCRAM-SHA-512", "alice", "guess"))
        assert "Authentication failed" in wrong, wrong
        unknown = _refused(_sasl(client, "SCRAM-SHA-256", "alice", ALICE_PASSWORD))
        assert "Unsupported SASL mechanism" in unknown and "SCRAM-SHA-512,PLAIN" in unknown, unknown
        anonymous = _refused({"bootstrap.servers": client})
        assert anonymous, "a PLAINTEXT client on a SASL listener must be refused"
        with pytest.raises(kafka.errors.KafkaError):
            kafka.KafkaProducer(bootstrap_servers=client, security_protocol="SASL_PLAINTEXT",
                                sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                sasl_plain_password="guess", max_block_ms=5000)
        counts = _authentication_counts(ports[3])
        assert counts["failed"] >= 4 and counts["successful"] >= 4, counts
        check = Consumer({**alice, "group.id": "check", "auto.offset.reset": "earliest"})
        try:
            check.subscribe(["secured"])
            seen: list[bytes] = []
            deadline = time.monotonic() + 30
            while len(seen) < 200 and time.monotonic() < deadline:
                msg = check.poll(0.5)
                if msg is not None and msg.error() is None:
                    seen.append(msg.value())
            time.sleep(1)
            msg = check.poll(1)
            assert len(seen) == 200 and (msg is None or msg.error() is not None), "a refused client's record landed"
        finally:
            check.close()
        for proc in procs:
            assert proc.poll() is None, f"a node exited: {proc.args}"
    logs = "".join((tmp_path / f"{n}.log").read_text() for n in ("controller.properties", "broker.properties"))
    assert ALICE_PASSWORD not in logs and ADMIN_PASSWORD not in logs and "guess" not in logs
    assert "Traceback" not in logs
