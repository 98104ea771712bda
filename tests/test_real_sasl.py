"""A `kraftlog cluster up --secure` cluster on real processes (issue 36): every listener SASL_SSL (the cluster's own
CA, a certificate per node), the nodes authenticating to each other as `node-<id>`, an admin user whose
client properties are DIR/admin.properties (SCRAM-SHA-512: its credential is bootstrap metadata, `storage format
--add-scram`). The admin creates a SCRAM user with confluent-kafka's AdminClient
(AlterUserScramCredentials); confluent-kafka, kafka-python and kcat then produce and consume as that user with
SCRAM-SHA-512; a client without SASL or without TLS, a wrong password and an unknown mechanism are refused, the
broker counts each failed authentication, and no password reaches a node's log. The forgery stories of the
issue, sent with kraftlog's own message classes, are refused on the secured cluster and change nothing; on a
PLAINTEXT cluster the same requests are served (as Kafka serves them without authentication and ACLs)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.net.client_security import ClientSecurity, load_command_config
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from test_real_cluster import FAST, _stop_everything, kraftlog

pytestmark = pytest.mark.slow

ALICE_PASSWORD = "alice-secret-9d2f"


class Secured:
    """A running ``--secure`` cluster: its directory, cluster.json, the admin's client security and the passwords."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.info = cl.load(directory)
        self.ca = os.path.join(directory, "security", "ca.pem")
        self.admin = load_command_config(os.path.join(directory, "admin.properties"))
        with open(os.path.join(directory, "security", "secrets.json")) as f:
            self.passwords: dict[str, str] = json.load(f)

    def node(self, node) -> dict:
        return next(e for e in self.info["nodes"] if e["id"] == node)

    @property
    def client(self) -> str:
        return f"127.0.0.1:{self.node(0)['port']}"

    @property
    def controller(self) -> str:
        return f"127.0.0.1:{next(e for e in self.info['nodes'] if e['role'] == 'controller')['port']}"

    def as_node(self, node: int) -> ClientSecurity:
        """The credentials of ``node`` (a compromised node's, in the forgery stories)."""
        return ClientSecurity("SASL_SSL", "PLAIN", f"node-{node}", self.passwords[f"node-{node}"], self.ca)

    def admin_config(self, **extra) -> dict:
        return _sasl(self.client, self.ca, "SCRAM-SHA-512", "admin", self.admin.password or "", **extra)


@pytest.fixture(scope="module")
def secure(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("secure") / "cluster")
    try:
        args = ["cluster", "up", "--secure", "--brokers", "3", "--dir", directory, "--port", "0", "--detach"]
        for c in FAST:
            args += ["--config", c]
        up = kraftlog(*args)
        assert f"{directory}/admin.properties" in up.stdout, up.stdout
        yield Secured(directory)
    finally:
        _stop_everything(directory)


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


def _authentication_counts(metrics_port: int, listener: str = "CLIENT") -> dict[str, float]:
    """A node's Kafka socket-server-metrics of ``listener``, from its /metrics endpoint."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            for kind in ("successful", "failed"):
                if s.name == f"kafka_server_socket_server_metrics_{kind}_authentication_total" \
                        and s.labels.get("listener") == listener:
                    out[kind] = s.value
    return out


def _consume(config: dict, topic: str, count: int, timeout_s: float = 60) -> list[bytes]:
    """The values a confluent-kafka consumer of ``config`` reads from ``topic``'s start, until ``count`` or
    ``timeout_s``."""
    consumer = Consumer({**config, "auto.offset.reset": "earliest"})
    got: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


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



def test_scram_sha_512_clients_over_sasl_ssl_and_the_refusals(secure):
    ca, client = secure.ca, secure.client
    admin = AdminClient(secure.admin_config())
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
        "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), ALICE_PASSWORD.encode())])
    futures["alice"].result(timeout=30)
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(timeout=30)
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)]
    kraftlog("topics", "create", "--bootstrap-server", client, "--command-config", f"{secure.dir}/admin.properties",
             "--topic", "secured", "--partitions", "1", "--replication-factor", "3",
             "--config", "min.insync.replicas=2")
    with ExitStack() as stack:
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
        got = _consume({**alice, "group.id": "alice-readers"}, "secured", 200)
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
        assert "Unsupported SASL mechanism" in unknown and "SCRAM-SHA-512" in unknown, unknown
        anonymous = _refused({"bootstrap.servers": client, "security.protocol": "SSL", "ssl.ca.location": ca})
        assert anonymous, "a client without SASL on a SASL_SSL listener must be refused"
        plaintext = _refused({"bootstrap.servers": client})
        assert plaintext, "a PLAINTEXT client on a TLS listener must be refused"
        with pytest.raises(kafka.errors.KafkaError):
            kafka.KafkaProducer(bootstrap_servers=client, security_protocol="SASL_SSL", ssl_cafile=ca,
                                sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="alice",
                                sasl_plain_password="guess", max_block_ms=5000)
        # kraftlog's own admin commands reach the secured listener with Kafka's client properties (--command-config)
        alice_config = os.path.join(secure.dir, "alice.properties")
        with open(alice_config, "w") as f:
            f.write("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka."
                    f'common.security.scram.ScramLoginModule required username="alice" password="{ALICE_PASSWORD}";\n'
                    f"ssl.truststore.type=PEM\nssl.truststore.location={ca}\n")
        described = kraftlog("topics", "describe", "--bootstrap-server", client, "--command-config", alice_config,
                             "--topic", "secured")
        assert described.returncode == 0 and "Topic: secured" in described.stdout, described.stderr
        guess_config = os.path.join(secure.dir, "guess.properties")
        with open(alice_config) as src, open(guess_config, "w") as dst:
            dst.write(src.read().replace(ALICE_PASSWORD, "guess"))
        refused = kraftlog("topics", "describe", "--bootstrap-server", client, "--command-config", guess_config,
                           "--topic", "secured", check=False)
        assert refused.returncode == 1 and "SASL authentication failed: Authentication failed" in refused.stderr \
            and "guess" not in refused.stderr, refused.stderr
        bare = kraftlog("topics", "describe", "--bootstrap-server", client, "--topic", "secured", check=False)
        assert bare.returncode == 1, "kraftlog without --command-config must not get an answer from a TLS listener"
        assert fuzzing.result(timeout=600) >= 10_000
        counts = _authentication_counts(secure.node(0)["metrics_port"])
        assert counts["failed"] >= 4 and counts["successful"] >= 4, counts
        # the nodes authenticated to each other on their own listeners (replication and registration), counted there
        internal = _authentication_counts(secure.node(0)["metrics_port"], "INTERNAL")
        assert internal["successful"] >= 2 and internal["failed"] == 0, internal
        seen = _consume({**alice, "group.id": "check"}, "secured", 201, timeout_s=10)  # one more never comes
        assert len(seen) == 200, "a refused client's record landed"
    status = cl.status(secure.dir)
    assert all(n.alive and not n.fenced for n in status), status


def _latest_registration(records, broker: int):
    from kraftlog.metadata.records import RegisterBrokerRecord
    found = [r for r in records if isinstance(r, RegisterBrokerRecord) and r.broker_id == broker]
    assert found, f"no RegisterBrokerRecord of broker {broker} in the metadata log"
    return found[-1]


def _refused_outright(address: str, msg, security: ClientSecurity | None = None) -> str:
    """The error a connection without (or with failing) credentials meets: the listener closes it, nothing served."""
    try:
        with KafkaConnection(address, timeout_s=10, security=security) as k:
            answer = k.request(msg)
    except (OSError, PermissionError) as exc:
        return f"{type(exc).__name__}: {exc}"
    raise AssertionError(f"{address} answered {answer}")


def _metadata(address: str, security: ClientSecurity | None) -> m.MetadataResponse:
    with KafkaConnection(address, timeout_s=10, security=security) as k:
        resp = k.request(m.MetadataRequest(topics=()))
    assert isinstance(resp, m.MetadataResponse), resp
    return resp


def _forged(controller: str, internal0: str, security: ClientSecurity | None, cluster_id: str,
            relay_port: int) -> dict:
    """The issue's forgery stories, as broker 1 in the name of whoever ``security`` authenticates (None:
    anonymous), with kraftlog's own message classes; returns each answer by story."""
    out: dict[str, object] = {}
    with KafkaConnection(controller, timeout_s=10, client_id="broker-2", security=security) as k:
        fetched = k.request(m.MetadataFetchRequest(2, -1, 0, 0))  # the whole metadata log, as broker 2 asks it
        assert isinstance(fetched, m.MetadataFetchResponse) and fetched.error_code == 0, fetched
        victim = _latest_registration(fetched.records, 1)
        relay = m.Listener("CLIENT", "127.0.0.1", relay_port)
        internal = m.Listener("BROKER", "127.0.0.1", int(internal0.rsplit(":", 1)[1]) + 1)
        out["amend"] = k.request(m.BrokerRegistrationRequest(1, cluster_id, victim.incarnation_id,
                                                             listeners=(relay, internal)))
        again = k.request(m.MetadataFetchRequest(2, -1, 0, 0))
        out["after_amend"] = _latest_registration(again.records, 1).listeners
        out["register"] = k.request(m.BrokerRegistrationRequest(1, cluster_id, uuid.uuid4(),
                                                                previous_broker_epoch=victim.broker_epoch))
        out["fence"] = k.request(m.BrokerHeartbeatRequest(1, victim.broker_epoch, 10**9, True, False))
        out["shutdown"] = k.request(m.BrokerHeartbeatRequest(1, victim.broker_epoch, 10**9, False, True))
        out["alter_partition"] = k.request(m.AlterPartitionRequest(1, victim.broker_epoch, ()))
        out["own_heartbeat"] = k.request(m.BrokerHeartbeatRequest(2, -1, 0, False, False))
    with KafkaConnection(internal0, timeout_s=10, client_id="broker-2", security=security) as k:
        out["replica_fetch"] = k.request(m.FetchRequest(1, victim.broker_epoch, 0, 1, ()))
    return out


def _produce_on(address: str, security: ClientSecurity | None):
    """A Produce (of no partition) on ``address``: what the listener answers."""
    with KafkaConnection(address, timeout_s=10, security=security) as k:
        return k.request(m.ProduceRequest(acks=1, timeout_ms=1000, partitions=()))


def test_forgeries_in_another_nodes_name_are_refused_on_a_secured_cluster_and_change_nothing(secure):
    """A compromised broker 2 (its own credentials, `User:node-2`) tries the issue's stories against broker 1: each
    is CLUSTER_AUTHORIZATION_FAILED (the node identity rule) and the cluster is as it was; a node acting as itself
    is served; without credentials no listener answers at all."""
    kraftlog("topics", "create", "--bootstrap-server", secure.client, "--command-config",
             f"{secure.dir}/admin.properties", "--topic", "victim", "--partitions", "3", "--replication-factor", "3")
    producer = Producer(secure.admin_config(acks="all"))
    delivered: list = []
    for i in range(300):
        producer.produce("victim", f"v-{i}".encode(), partition=i % 3, on_delivery=lambda e, msg: delivered.append(e))
    producer.flush(60)
    assert delivered == [None] * 300
    before = _metadata(secure.client, secure.admin)
    internal0 = f"127.0.0.1:{secure.node(0)['internal_port']}"
    answers = _forged(secure.controller, internal0, secure.as_node(2), secure.info["cluster_id"], 9)
    refused = Errors.CLUSTER_AUTHORIZATION_FAILED
    for story in ("amend", "register", "fence", "shutdown", "alter_partition", "replica_fetch"):
        assert answers[story].error_code == refused, (story, answers[story])
    assert answers["own_heartbeat"].error_code == Errors.STALE_BROKER_EPOCH, answers["own_heartbeat"]
    assert not any(":9" == x[-2:] for x in answers["after_amend"]), answers["after_amend"]
    # no credentials: the controller, a broker's inter-broker and client listeners close the connection unanswered
    for address in (secure.controller, internal0, secure.client):
        assert _refused_outright(address, m.MetadataFetchRequest(-1, -1, 0, 0)), address
    assert _refused_outright(internal0, m.ProduceRequest(acks=1, timeout_ms=1000, partitions=()))
    anonymous_tls = ClientSecurity("SSL", cafile=secure.ca)
    assert _refused_outright(secure.controller, m.MetadataFetchRequest(-1, -1, 0, 0), anonymous_tls)
    # the admin (a super user, SCRAM on the client listener) cannot log in on a node listener: its users are the nodes
    admin_there = ClientSecurity("SASL_SSL", "PLAIN", "admin", secure.admin.password, secure.ca)
    assert "PermissionError" in _refused_outright(secure.controller, m.MetadataFetchRequest(-1, -1, 0, 0),
                                                  admin_there)
    scram_there = ClientSecurity("SASL_SSL", "SCRAM-SHA-512", "admin", secure.admin.password, secure.ca)
    assert "SCRAM-SHA-512 is not enabled" in _refused_outright(internal0, m.FetchRequest(1, -1, 0, 1, ()),
                                                               scram_there)  # no client's SCRAM user there
    # nothing changed: every broker at its own address, every ISR whole, every record there
    time.sleep(2)  # a forged fencing would show within a heartbeat
    after = _metadata(secure.client, secure.admin)
    assert sorted((b.node_id, b.host, b.port) for b in after.brokers) == \
        sorted((b.node_id, b.host, b.port) for b in before.brokers)
    assert sorted(b.node_id for b in after.brokers) == [0, 1, 2]
    with KafkaConnection(secure.client, timeout_s=10, security=secure.admin) as k:
        topic = k.request(m.DescribeTopicPartitionsRequest(("victim",))).topics[0]
    assert [sorted(p.isr_nodes) for p in topic.partitions] == [[0, 1, 2]] * 3, topic
    got = _consume(secure.admin_config(**{"group.id": "victim-check"}), "victim", 300)
    assert sorted(got) == sorted(f"v-{i}".encode() for i in range(300))


def test_a_secured_clusters_files_keep_their_secrets_and_no_password_reaches_a_log(secure):
    """cluster.json, admin.properties, every node's properties, keystores and secrets.json are mode 0600 (the
    security directory 0700); the CA certificate is the only file others may read; no password is in a node's log."""
    directory = secure.dir
    private = ["cluster.json", "admin.properties", "security/secrets.json",
               *(f"{n}.properties" for n in ("controller", "broker-0", "broker-1", "broker-2")),
               *(f"security/{n}.pem" for n in ("controller", "broker-0", "broker-1", "broker-2"))]
    for name in private:
        assert stat.S_IMODE(os.stat(os.path.join(directory, name)).st_mode) == 0o600, name
    assert stat.S_IMODE(os.stat(os.path.join(directory, "security")).st_mode) == 0o700
    assert secure.info["client_config"]["security.protocol"] == "SASL_SSL"
    logs = "".join(open(os.path.join(directory, f"{n}.log")).read()
                   for n in ("controller", "broker-0", "broker-1", "broker-2"))
    for password in [*secure.passwords.values(), ALICE_PASSWORD]:
        assert password not in logs
    assert "Traceback" not in logs


def test_on_a_plaintext_cluster_the_same_forgeries_are_served(tmp_path):
    """What a PLAINTEXT cluster allows, as Kafka's does without authentication: anyone reads the metadata log from the
    controller (incarnation ids, broker epochs), re-registers broker 1 at a relay's address, fences it and asks for
    its shutdown, and fetches as its replica."""
    directory = str(tmp_path / "cluster")
    try:
        args = ["cluster", "up", "--brokers", "2", "--dir", directory, "--port", "0", "--detach"]
        for c in FAST:
            args += ["--config", c]
        kraftlog(*args)
        info = cl.load(directory)
        controller = next(f"127.0.0.1:{e['port']}" for e in info["nodes"] if e["role"] == "controller")
        broker0 = next(e for e in info["nodes"] if e["id"] == 0)
        internal0 = f"127.0.0.1:{broker0['internal_port']}"
        answers = _forged(controller, internal0, None, info["cluster_id"], 9)
        assert answers["amend"].error_code == Errors.NONE, answers["amend"]
        assert "CLIENT://127.0.0.1:9" in answers["after_amend"], answers["after_amend"]  # clients sent to a relay
        assert answers["fence"].error_code == Errors.NONE and answers["fence"].is_fenced, answers["fence"]
        assert answers["shutdown"].error_code == Errors.NONE, answers["shutdown"]
        assert answers["replica_fetch"].error_code == Errors.NONE, answers["replica_fetch"]
        assert answers["alter_partition"].error_code == Errors.NONE, answers["alter_partition"]
        # a new incarnation is refused only while broker 1's own session is valid
        assert answers["register"].error_code == Errors.DUPLICATE_BROKER_REGISTRATION, answers["register"]
        assert isinstance(_produce_on(internal0, None), m.ProduceResponse)  # the inter-broker listener serves anyone
    finally:
        _stop_everything(directory)
