"""SASL over TLS on real processes (issue 36): a controller and a broker run by `kraftlog server` from
hand-written properties, the broker's client listener SASL_SSL (a certificate the test's CA signed, made with
kraftlog.net.certificates) with PLAIN (an admin user in its JAAS configuration) and SCRAM-SHA-512. The admin
creates a SCRAM user with confluent-kafka's AdminClient (AlterUserScramCredentials); confluent-kafka, kafka-python
and kcat then produce and consume as that user with SCRAM-SHA-512; a client without SASL or without TLS, a wrong
password and an unknown mechanism are refused, the broker counts each failed authentication, and no password
reaches a node's log."""

from __future__ import annotations

import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from kraftlog.net.certificates import issue_ca, issue_certificate, write_keystore, write_truststore
from kraftlog.net.cluster_files import free_ports
from test_real_cluster import kraftlog
from test_real_server import _server, _stop

pytestmark = pytest.mark.slow

ADMIN_PASSWORD = "admin-secret-5c1e"
ALICE_PASSWORD = "alice-secret-9d2f"


def _properties(tmp_path, ports: list[int]) -> tuple[str, str]:
    client, broker, controller, metrics = ports
    ca = issue_ca()
    write_keystore(str(tmp_path / "broker-0.pem"), issue_certificate(ca, "broker-0", ("127.0.0.1", "localhost")),
                   password="key-pass")
    write_truststore(str(tmp_path / "ca.pem"), ca.certificate)
    controller_file = tmp_path / "controller.properties"
    controller_file.write_text(
        "node.id=3000\nprocess.roles=controller\n"
        f"listeners=CONTROLLER://127.0.0.1:{controller}\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=3000@127.0.0.1:{controller}\n"
        f"log.dirs={tmp_path}/data/controller\n")
    broker_file = tmp_path / "broker.properties"
    broker_file.write_text(
        "node.id=0\nprocess.roles=broker\n"
        f"listeners=SASL_SSL://127.0.0.1:{client},BROKER://127.0.0.1:{broker}\n"
        "listener.security.protocol.map=SASL_SSL:SASL_SSL,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={tmp_path}/broker-0.pem\nssl.key.password=key-pass\n"
        "inter.broker.listener.name=BROKER\ncontroller.listener.names=CONTROLLER\n"
        f"controller.quorum.voters=3000@127.0.0.1:{controller}\n"
        f"log.dirs={tmp_path}/data/broker-0\nmetrics.port={metrics}\n"
        "sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN\n"
        "listener.name.sasl_ssl.plain.sasl.jaas.config="
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{ADMIN_PASSWORD}" user_admin="{ADMIN_PASSWORD}";\n'
        "offsets.topic.num.partitions=1\noffsets.topic.replication.factor=1\n")
    return str(controller_file), str(broker_file)


def _sasl(bootstrap: str, ca: str, mechanism: str, user: str, password: str, **extra) -> dict:
    """A confluent-kafka config over SASL_SSL trusting the CA file ``ca`` (the broker's certificate names 127.0.0.1:
    librdkafka checks the host name)."""
    return {"bootstrap.servers": bootstrap, "security.protocol": "SASL_SSL", "ssl.ca.location": ca,
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password, **extra}


def _fuzz_the_listener(address: str, ca: str) -> int:
    """10,000 connections with random bytes where the TLS handshake starts (some behind a TLS record header), and
    10,000 fuzzed SASL frames (test_sasl's) inside established TLS sessions, sent by two threads each while the
    test's real clients work; returns how many were sent (the clients working meanwhile, and after, show the
    listener kept serving)."""
    import random
    import socket
    import ssl

    from test_sasl import _fuzzed_sasl_frame
    host, port = address.rsplit(":", 1)
    context = ssl.create_default_context(cafile=ca)

    def raw(seed: int) -> int:
        rng = random.Random(seed)
        for _ in range(5000):  # sent, then closed: the broker must drop each half-begun handshake
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                head = bytes([0x16, 0x03, rng.randrange(4)]) if rng.random() < 0.5 else b""
                try:
                    sock.sendall(head + rng.randbytes(rng.randrange(1, 600)))
                except OSError:
                    pass  # the broker closed it first: what it should do
        return 5000

    def framed(seed: int) -> int:
        rng = random.Random(seed)
        sent = 0
        while sent < 5000:
            with socket.create_connection((host, int(port)), timeout=10) as sock, \
                    context.wrap_socket(sock, server_hostname=host) as tls:
                for _ in range(8):  # sent in a row (a truncated frame is never answered: nothing waits for one)
                    sent += 1
                    try:
                        tls.sendall(_fuzzed_sasl_frame(rng))
                    except (OSError, ssl.SSLError):
                        break  # the broker closed the session: what it should do
        return sent

    with ThreadPoolExecutor(4) as pool:  # two of each at once
        raws = [pool.submit(raw, seed) for seed in range(2)]
        frames = [pool.submit(framed, seed) for seed in range(2, 4)]
        assert sum(f.result() for f in raws) == 10_000
        return sum(f.result() for f in frames)


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


def test_scram_sha_512_clients_over_sasl_ssl_and_the_refusals(tmp_path):
    ca = str(tmp_path / "ca.pem")
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
        admin = AdminClient(_sasl(client, ca, "PLAIN", "admin", ADMIN_PASSWORD))
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
        # hostile bytes on the same listener all along, from other threads (the clients below must not notice)
        stack.enter_context(fuzzer := ThreadPoolExecutor(1))
        fuzzing = fuzzer.submit(_fuzz_the_listener, client, ca)
        alice = _sasl(client, ca, "SCRAM-SHA-512", "alice", ALICE_PASSWORD)
        producer = Producer({**alice, "acks": "all", "message.timeout.ms": 30000})
        delivered: list = []
        for i in range(100):
            producer.produce("secured", f"c-{i}".encode(), on_delivery=lambda err, msg: delivered.append(err))
        producer.flush(60)
        assert delivered == [None] * 100
        kafka = pytest.importorskip("kafka")
        kp = kafka.KafkaProducer(bootstrap_servers=client, security_protocol="SASL_SSL", ssl_cafile=ca,
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
            read = subprocess.run(["kcat", "-b", client, "-X", "security.protocol=SASL_SSL",
                                   "-X", f"ssl.ca.location={ca}",
                                   "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice",
                                   "-X", f"sasl.password={ALICE_PASSWORD}", "-C", "-t", "secured", "-e", "-q",
                                   "-c", "200"], capture_output=True, text=True, timeout=60)
            assert sorted(read.stdout.split()) == sorted(v.decode() for v in got), read.stderr

        # the refusals: each client is told why, and nothing it sent lands
        wrong = _refused(_sasl(client, ca, "SCRAM-SHA-512", "alice", "guess"))
        assert "Authentication failed" in wrong, wrong
        unknown = _refused(_sasl(client, ca, "SCRAM-SHA-256", "alice", ALICE_PASSWORD))
        assert "Unsupported SASL mechanism" in unknown and "SCRAM-SHA-512,PLAIN" in unknown, unknown
        anonymous = _refused({"bootstrap.servers": client, "security.protocol": "SSL", "ssl.ca.location": ca})
        assert anonymous, "a client without SASL on a SASL_SSL listener must be refused"
        plaintext = _refused({"bootstrap.servers": client})
        assert plaintext, "a PLAINTEXT client on a TLS listener must be refused"
        with pytest.raises(kafka.errors.KafkaError):
            kafka.KafkaProducer(bootstrap_servers=client, security_protocol="SASL_SSL", ssl_cafile=ca,
                                sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                sasl_plain_password="guess", max_block_ms=5000)
        # kraftlog's own admin commands reach the secured listener with Kafka's client properties (--command-config)
        admin_config = tmp_path / "admin.properties"
        admin_config.write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common."
            f'security.scram.ScramLoginModule required username="alice" password="{ALICE_PASSWORD}";\n'
            f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n")
        described = kraftlog("topics", "describe", "--bootstrap-server", client, "--command-config", str(admin_config),
                             "--topic", "secured")
        assert described.returncode == 0 and "Topic: secured" in described.stdout, described.stderr
        (tmp_path / "guess.properties").write_text(admin_config.read_text().replace(ALICE_PASSWORD, "guess"))
        refused = kraftlog("topics", "describe", "--bootstrap-server", client, "--command-config",
                           str(tmp_path / "guess.properties"), "--topic", "secured", check=False)
        assert refused.returncode == 1 and "SASL authentication with 127.0.0.1 failed: Authentication failed" \
            in refused.stderr and "guess" not in refused.stderr, refused.stderr
        bare = kraftlog("topics", "describe", "--bootstrap-server", client, "--topic", "secured", check=False)
        assert bare.returncode == 1, "kraftlog without --command-config must not get an answer from a TLS listener"
        assert fuzzing.result(timeout=600) >= 10_000
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
