"""`kraftlog server`'s properties file and `kraftlog storage`: Kafka's KRaft node configuration rules
(`KafkaConfig`'s validation), each refusal one line naming the key, and `storage format`'s Formatter rules."""

from __future__ import annotations

import os
import pathlib
import uuid

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftlog.cli import main
from kraftlog.level import Level
from kraftlog.net.node import NodeSpec, spec_from_server_config
from kraftlog.net.server_config import ServerConfigError, load_server_config, parse_server_config
from kraftlog.net.storage_cli import random_uuid
from kraftlog.protocol import listeners as lst
from kraftlog.storage.meta_properties import load_properties, parse_kafka_uuid, store_properties

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "three-hosts"

VOTERS = "3000@127.0.0.1:9093,3001@127.0.0.2:9093,3002@127.0.0.3:9093"
CONTROLLER = f"""node.id=3001
process.roles=controller
listeners=CONTROLLER://127.0.0.2:9093
controller.listener.names=CONTROLLER
controller.quorum.voters={VOTERS}
log.dirs=/var/lib/kraftlog/c1
"""
BROKER = f"""node.id=1
process.roles=broker
listeners=CLIENT://127.0.0.5:9092,BROKER://127.0.0.5:9094
advertised.listeners=CLIENT://broker1.example:9092
inter.broker.listener.name=BROKER
controller.listener.names=CONTROLLER
listener.security.protocol.map=CLIENT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.voters={VOTERS}
log.dirs=/var/lib/kraftlog/b1
metrics.port=9100
min.insync.replicas=2
log.level=DEBUG
"""


def _with(text: str, **changes: str | None) -> str:
    """``text`` with the keys of ``changes`` (dots as underscores) replaced, added or (None) removed."""
    lines = text.splitlines()
    for key, value in changes.items():
        key = key.replace("_", ".")
        lines = [line for line in lines if not line.startswith(key + "=")]
        if value is not None:
            lines.append(f"{key}={value}")
    return "\n".join(lines) + "\n"


def test_a_controller_file_is_read_as_kafka_names_it():
    server = parse_server_config(CONTROLLER)
    assert server.node_id == 3001 and server.is_controller and server.name == "controller-3001"
    assert server.voters == {3000: ("127.0.0.1", 9093), 3001: ("127.0.0.2", 9093), 3002: ("127.0.0.3", 9093)}
    assert server.data_dir == "/var/lib/kraftlog/c1" and server.metrics_port is None
    assert server.level == Level.URM  # kraftlog.level's default: the highest level
    spec = spec_from_server_config(server)
    assert isinstance(spec, NodeSpec) and spec.controller and spec.node == 3001
    assert spec.binds == {lst.CONTROLLER: ("127.0.0.2", 9093)} and spec.voters == [3000, 3001, 3002]
    assert spec.run_path is None and spec.cluster_id is None  # the cluster id comes from meta.properties


def test_a_broker_maps_its_listeners_to_the_client_and_inter_broker_roles():
    server = parse_server_config(BROKER)
    assert not server.is_controller and server.inter_broker_listener == "BROKER"
    assert server.client_listener() == "CLIENT"
    assert server.config == {"min.insync.replicas": "2", "log.level": "DEBUG"}
    spec = spec_from_server_config(server)
    assert spec.binds == {lst.INTERNAL: ("127.0.0.5", 9094), lst.CLIENT: ("127.0.0.5", 9092),
                          "METRICS": ("127.0.0.5", 9100)}
    # advertised.listeners overrides CLIENT only; BROKER is advertised as it listens
    assert spec.advertise == {lst.INTERNAL: ("127.0.0.5", 9094), lst.CLIENT: ("broker1.example", 9092)}


def test_one_listener_serves_clients_and_brokers_as_kafkas_default_plaintext():
    server = parse_server_config(_with(BROKER, listeners="PLAINTEXT://127.0.0.5:9092", advertised_listeners=None,
                                       inter_broker_listener_name=None, listener_security_protocol_map=None))
    assert server.inter_broker_listener == "PLAINTEXT" and server.client_listener() == "PLAINTEXT"
    spec = spec_from_server_config(server)
    assert spec.binds == {lst.INTERNAL: ("127.0.0.5", 9092), "METRICS": ("127.0.0.5", 9100)}
    assert spec.advertise == {lst.INTERNAL: ("127.0.0.5", 9092), lst.CLIENT: ("127.0.0.5", 9092)}


@pytest.mark.parametrize("text, message", [
    (_with(BROKER, num_io_threads="8"), "unknown configuration 'num.io.threads'"),
    (_with(BROKER, min_insync_replica="2"), "did you mean 'min.insync.replicas'"),
    (_with(BROKER, node_id=None), 'Missing required configuration "node.id"'),
    (_with(BROKER, node_id="one"), "Invalid value one for configuration node.id"),
    (_with(BROKER, process_roles=None), 'Missing required configuration "process.roles"'),
    (_with(BROKER, process_roles="broker,controller"), "combined mode"),
    (_with(BROKER, listeners=None), 'Missing required configuration "listeners"'),
    (_with(BROKER, listeners="CLIENT:9092"), "is not NAME://HOST:PORT"),
    (_with(BROKER, listeners="CLIENT://127.0.0.5:99999"), "port within 0..65535"),
    (_with(BROKER, listener_security_protocol_map="CLIENT:PLAINTEXT"), "no security protocol for listener BROKER"),
    (_with(BROKER, listener_security_protocol_map="CLIENT:SSL,BROKER:PLAINTEXT"),
     "ssl.keystore.location (or listener.name.client.ssl.keystore.location) is required: listener CLIENT uses TLS"),
    (_with(BROKER, inter_broker_listener_name="INTERNAL"), "inter.broker.listener.name: INTERNAL"),
    (_with(BROKER, controller_listener_names=None), "controller.listener.names must contain"),
    (_with(BROKER, controller_listener_names="CLIENT"), "must not contain a value appearing in listeners"),
    (_with(BROKER, controller_quorum_voters="3000@127.0.0.1"), "is not HOST:PORT"),
    (_with(BROKER, controller_quorum_voters="x@127.0.0.1:9093"), "is not ID@HOST:PORT"),
    (_with(BROKER, controller_quorum_voters="1@127.0.0.1:9093"), "must not be in the voters"),
    (_with(BROKER, controller_quorum_voters=None), 'or "controller.quorum.bootstrap.servers"'),
    (_with(BROKER, controller_quorum_voters=None, controller_quorum_bootstrap_servers="127.0.0.1"),
     "is not HOST:PORT"),
    (_with(BROKER, log_dirs="/a,/b"), "one log directory"),
    (_with(BROKER, log_dirs=None), 'Missing required configuration "log.dirs"'),
    (_with(BROKER, metadata_log_dir="/elsewhere"), "keeps its metadata log in its log directory"),
    (_with(BROKER, min_insync_replicas="0"), "Invalid value 0 for configuration min.insync.replicas"),
    (_with(BROKER, kraftlog_level="fast"), "kraftlog.level: unknown or unimplemented level"),
    (_with(BROKER, metrics_port="70000"), "metrics.port"),
    (_with(CONTROLLER, node_id="3005"), "the node id 3005 must be in the voters"),
    (_with(CONTROLLER, listeners="CONTROLLER://127.0.0.2:9095"),
     "voter 3001@127.0.0.2:9093 is not this node's controller listener CONTROLLER://127.0.0.2:9095"),
    (_with(CONTROLLER, listeners="CONTROLLER://127.0.0.9:9093"), "is not this node's controller listener"),
    (_with(CONTROLLER, listeners="CONTROLLER://127.0.0.2:9093,PLAINTEXT://127.0.0.2:9092"),
     "PLAINTEXT is not in controller.listener.names"),
    (_with(CONTROLLER, controller_listener_names="OTHER", listener_security_protocol_map="CONTROLLER:PLAINTEXT"),
     "OTHER must appear in listeners"),
])
def test_a_file_kraftlog_cannot_run_is_refused_in_one_line_naming_the_key(text, message):
    with pytest.raises(ServerConfigError) as caught:
        parse_server_config(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_three_host_example_files_are_valid(tmp_path):
    files = sorted(EXAMPLES.glob("*.properties"))
    assert [f.name for f in files] == ["broker-0.properties", "broker-1.properties", "broker-2.properties",
                                      "controller-3000.properties", "controller-3001.properties",
                                      "controller-3002.properties"]
    servers = [load_server_config(str(f)) for f in files]
    hosts = {next(iter(s.listeners.values())).host for s in servers}
    assert hosts == {f"127.0.0.{i}" for i in range(1, 7)}  # one loopback address per host
    assert {s.node_id for s in servers if s.is_controller} == set(servers[0].voters)


def _runner_files(tmp_path: pathlib.Path, text: str) -> str:
    path = tmp_path / "server.properties"
    path.write_text(_with(text, log_dirs=str(tmp_path / "data")))
    return str(path)


def test_storage_format_writes_meta_properties_and_refuses_a_formatted_directory(tmp_path):
    runner = CliRunner()
    config = _runner_files(tmp_path, BROKER)
    cluster_id = random_uuid()
    assert len(cluster_id) == 22 and parse_kafka_uuid(cluster_id) != uuid.UUID(int=0)
    done = runner.invoke(main, ["storage", "format", "--cluster-id", cluster_id, "--config", config])
    assert done.exit_code == 0, done.output
    text = (tmp_path / "data" / "meta.properties").read_text()
    assert f"cluster.id={cluster_id}" in text and "node.id=1" in text and "directory.id=" in text
    again = runner.invoke(main, ["storage", "format", "-t", cluster_id, "-c", config])
    assert again.exit_code == 1 and "is already formatted" in again.output
    ignored = runner.invoke(main, ["storage", "format", "-t", cluster_id, "-c", config, "--ignore-formatted"])
    assert ignored.exit_code == 0 and (tmp_path / "data" / "meta.properties").read_text() == text


def test_storage_format_add_scram_bootstraps_a_controllers_metadata_log(tmp_path):
    """KIP-900: ``--add-scram`` writes the credential into the controller's bootstrap checkpoint (no voters: a
    static quorum); a bad argument exits 2 in one line naming the problem, not the password, and formats nothing."""
    from kraftlog.net.disk import FileDisk
    from kraftlog.raft.bootstrap import read_bootstrap, read_bootstrap_records
    config = _runner_files(tmp_path, CONTROLLER)
    bad = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config,
                                    "--add-scram", "SCRAM-SHA-512=[name=alice,password=pw-1234,iterations=1]"])
    assert bad.exit_code == 2 and "iterations 1 outside 4096..16384" in bad.output and "pw-1234" not in bad.output
    assert bad.output.count("\n") == 1 and not os.path.exists(tmp_path / "data" / "meta.properties")
    done = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config,
                                     "--add-scram", "SCRAM-SHA-512=[name=alice,password=pw-1234]",
                                     "-S", "SCRAM-SHA-256=[name=bob,password=pw-5678,iterations=8192]"])
    assert done.exit_code == 0, done.output
    with FileDisk(str(tmp_path / "data"), raft_metadata=True) as disk:
        assert read_bootstrap(disk) is None
        records = read_bootstrap_records(disk)
    assert [(r.name, r.mechanism, r.iterations) for r in records] == [("alice", 2, 4096), ("bob", 1, 8192)]
    assert b"pw-1234" not in (tmp_path / "data" / "metadata" / "__cluster_metadata-0" / "bootstrap.checkpoint"
                              ).read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--cluster-id", "not-a-uuid"], "does not appear to be a valid UUID"),
    (["--cluster-id", "AAAAAAAAAAAAAAAAAAAAAA"], "is a reserved UUID"),
    (["--standalone"], "You cannot specify controller.quorum.voters and format the node with --standalone"),
    (["--no-initial-controllers"], "please remove controller.quorum.voters"),
    (["--standalone", "--no-initial-controllers"], "only one of --standalone"),
])
def test_storage_format_refuses_bad_requests_in_one_line(tmp_path, args, message):
    config = _runner_files(tmp_path, CONTROLLER)
    full = ["storage", "format", "--config", config] + (args if "--cluster-id" in args
                                                       else ["--cluster-id", random_uuid(), *args])
    result = CliRunner().invoke(main, full)
    assert result.exit_code == 2 and message in result.output and result.output.count("\n") == 1
    assert not os.path.exists(tmp_path / "data" / "meta.properties")


def test_storage_format_refuses_a_controller_flag_on_a_broker(tmp_path):
    config = _runner_files(tmp_path, BROKER)
    result = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config, "--standalone"])
    assert result.exit_code == 2 and "describes a broker" in result.output


DYNAMIC = _with(CONTROLLER, controller_quorum_voters=None,
                controller_quorum_bootstrap_servers="127.0.0.1:9093,127.0.0.2:9093,127.0.0.3:9093")


def test_a_dynamic_quorum_names_bootstrap_servers_by_kafkas_negative_ids():
    """KIP-853: without controller.quorum.voters the node asks the bootstrap servers, ids -2, -3, -4 (Kafka's
    QuorumConfig), and learns the voters from its bootstrap checkpoint and the log."""
    server = parse_server_config(DYNAMIC)
    assert server.dynamic_quorum and server.voters == {}
    spec = spec_from_server_config(server)
    assert spec.voters == [] and spec.bootstrap == {-2: ("127.0.0.1", 9093), -3: ("127.0.0.2", 9093),
                                                    -4: ("127.0.0.3", 9093)}
    assert spec.listener == ("CONTROLLER", "127.0.0.2", 9093)
    broker = spec_from_server_config(parse_server_config(_with(
        BROKER, controller_quorum_voters=None, controller_quorum_bootstrap_servers="127.0.0.1:9093")))
    assert broker.voters == [] and broker.bootstrap == {-2: ("127.0.0.1", 9093)} and broker.listener is None


def _bootstrap_voters(root: pathlib.Path):
    from kraftlog.net.disk import FileDisk
    from kraftlog.raft.bootstrap import read_bootstrap
    with FileDisk(root, raft_metadata=True) as disk:
        return read_bootstrap(disk)


def test_storage_format_standalone_writes_the_bootstrap_checkpoint_with_this_controller(tmp_path):
    config = _runner_files(tmp_path, DYNAMIC)
    missing = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config])
    assert missing.exit_code == 2 and "you must specify one of the following: --standalone" in missing.output
    done = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config, "--standalone"])
    assert done.exit_code == 0, done.output
    voters = _bootstrap_voters(tmp_path / "data")
    (voter,) = voters.voters.values()
    dir_id = (tmp_path / "data" / "meta.properties").read_text().split("directory.id=")[1].split()[0]
    assert voter.voter_id == 3001 and voter.voter_directory_id == parse_kafka_uuid(dir_id)
    assert [(e.name, e.host, e.port) for e in voter.endpoints] == [("CONTROLLER", "127.0.0.2", 9093)]


def test_storage_format_initial_controllers_gives_this_node_the_directory_id_named(tmp_path):
    ids = {n: random_uuid() for n in (3000, 3001, 3002)}
    initial = ",".join(f"{n}@127.0.0.{n - 2999}:9093:{ids[n]}" for n in ids)
    config = _runner_files(tmp_path, DYNAMIC)
    done = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config,
                                     "--initial-controllers", initial])
    assert done.exit_code == 0, done.output
    assert f"directory.id={ids[3001]}" in (tmp_path / "data" / "meta.properties").read_text()
    voters = _bootstrap_voters(tmp_path / "data")
    assert {v.voter_id: (v.voter_directory_id, v.endpoints[0].host) for v in voters.voters.values()} == {
        n: (parse_kafka_uuid(ids[n]), f"127.0.0.{n - 2999}") for n in ids}


@pytest.mark.parametrize("initial, message", [
    ("3000@127.0.0.1:9093:" + "A" * 22, "does not name this node (3001)"),
    ("3001@127.0.0.2:9093", "is not ID@HOST:PORT:DIRECTORY_ID"),
    ("3001@127.0.0.2:9093:not-an-id", "not-an-id"),
])
def test_storage_format_refuses_bad_initial_controllers(tmp_path, initial, message):
    config = _runner_files(tmp_path, DYNAMIC)
    result = CliRunner().invoke(main, ["storage", "format", "-t", random_uuid(), "-c", config,
                                       "--initial-controllers", initial])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not os.path.exists(tmp_path / "data" / "meta.properties")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=12), st.text(max_size=20), max_size=6))
def test_properties_written_for_a_node_read_back_as_they_were(props):
    """`cluster up` writes each node's server.properties with store_properties (plain where an operator would
    write plain, java.util.Properties escaping elsewhere); load_properties reads back every key and value."""
    assert load_properties(store_properties(props)) == props


def test_cluster_up_spells_each_node_as_kraftlog_server_reads_it(tmp_path):
    """`cluster up` writes each node's server.properties (kraftlog.net.cluster_properties): the single controller
    as the one voter 3000 with kraftlog.controller.single (the node `controller`, no Raft), its brokers pointing at
    it; a kraft.version 1 quorum's nodes with bootstrap servers only. Each file reads back as the node it was
    written for."""
    from kraftlog.controller.controller import CONTROLLER
    from kraftlog.net.cluster_properties import write_node_properties
    single = {"level": "elr", "config": {"min.insync.replicas": "2"}, "nodes": [
        {"id": "controller", "role": "controller", "port": 9093, "metrics_port": 9100},
        {"id": 0, "role": "broker", "port": 9092, "internal_port": 9094, "metrics_port": 9101}]}
    controller = load_server_config(write_node_properties(str(tmp_path), single, "controller", "controller"))
    assert controller.single_controller and controller.name == "controller" and controller.level == Level.ELR
    spec = spec_from_server_config(controller)
    assert spec.node == CONTROLLER and spec.voters == [] and spec.controllers == {CONTROLLER: ("127.0.0.1", 9093)}
    broker = spec_from_server_config(load_server_config(write_node_properties(str(tmp_path), single, 0, "broker-0")))
    assert broker.node == 0 and broker.controllers == {CONTROLLER: ("127.0.0.1", 9093)} and broker.voters == []
    assert broker.binds == {lst.INTERNAL: ("127.0.0.1", 9094), lst.CLIENT: ("127.0.0.1", 9092),
                            "METRICS": ("127.0.0.1", 9101)} and broker.config["min.insync.replicas"] == "2"
    dynamic = {"level": "urm", "config": {}, "kraft_version": 1, "nodes": [
        {"id": 3000 + i, "role": "controller", "port": 9093 + i, "metrics_port": None} for i in range(3)]}
    voter = spec_from_server_config(load_server_config(write_node_properties(str(tmp_path), dynamic, 3001,
                                                                             "controller-3001")))
    assert voter.node == 3001 and voter.voters == [] and voter.bootstrap == {
        -2: ("127.0.0.1", 9093), -3: ("127.0.0.1", 9094), -4: ("127.0.0.1", 9095)}
    assert "listeners=CONTROLLER://127.0.0.1:9094" in (tmp_path / "controller-3001.properties").read_text()


# ------------------------------------------------------------------------ SASL listeners (issue 36)
_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a-pw" '
         'user_admin="a-pw" user_alice="b-pw";')
_JAAS_KEY = "listener.name.client.plain.sasl.jaas.config"
SASL_BROKER = _with(BROKER,
                    listener_security_protocol_map="CLIENT:SASL_PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    sasl_enabled_mechanisms="SCRAM-SHA-512,PLAIN") + f"{_JAAS_KEY}={_JAAS}\n"
#: a broker whose inter-broker listener is SASL_PLAINTEXT with PLAIN, without sasl.mechanism.inter.broker.protocol
_INTER_SASL = _with(BROKER,
                    listener_security_protocol_map="CLIENT:PLAINTEXT,BROKER:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                    sasl_enabled_mechanisms="PLAIN") + f"listener.name.broker.plain.sasl.jaas.config={_JAAS}\n"
_NO_JAAS = "\n".join(line for line in SASL_BROKER.splitlines() if not line.startswith(_JAAS_KEY)) + "\n"


def test_a_sasl_plaintext_client_listener_reads_its_mechanisms_and_plain_users():
    """Kafka's names: the listener maps to SASL_PLAINTEXT, ``sasl.enabled.mechanisms`` (a listener's own
    ``listener.name.<l>.sasl.enabled.mechanisms`` first), PLAIN's users from the listener's JAAS configuration;
    the node's spec gives the client role those settings."""
    from kraftlog.net.node import spec_from_server_config
    server = parse_server_config(SASL_BROKER)
    listener = server.sasl["CLIENT"]
    assert listener.mechanisms == ("SCRAM-SHA-512", "PLAIN") and listener.plain_users == {"admin": "a-pw",
                                                                                         "alice": "b-pw"}
    assert listener.failed_delay_ms == 100 and "BROKER" not in server.sasl
    assert spec_from_server_config(server).sasl == {"CLIENT": listener}
    own = parse_server_config(SASL_BROKER + "listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-256\n"
                              "connection.failed.authentication.delay.ms=250\n")
    assert own.sasl["CLIENT"].mechanisms == ("SCRAM-SHA-256",) and own.sasl["CLIENT"].failed_delay_ms == 250
    assert "listener.name.client.plain.sasl.jaas.config" not in server.config  # never handed to the core


@pytest.mark.parametrize("text, message", [
    (_with(SASL_BROKER, sasl_enabled_mechanisms=None), "GSSAPI is not served for listener CLIENT"),
    (_with(SASL_BROKER, sasl_enabled_mechanisms="OAUTHBEARER"), "OAUTHBEARER is not served"),
    (SASL_BROKER.replace("listener.name.client.plain", "listener.name.client.plain-x"),
     "unknown listener configuration 'plain-x.sasl.jaas.config'"),
    (SASL_BROKER.replace(_JAAS_KEY, "listener.name.other.plain.sasl.jaas.config"), "no listener OTHER in listeners"),
    (_with(_NO_JAAS, sasl_enabled_mechanisms="PLAIN"), f"{_JAAS_KEY} is required"),
    (SASL_BROKER.replace('user_alice="b-pw";', 'user_alice="b-pw"'), "must end with ';'"),
    (_INTER_SASL, "sasl.mechanism.inter.broker.protocol: GSSAPI is not served"),
    (_with(_INTER_SASL, sasl_mechanism_inter_broker_protocol="PLAIN").replace('username="admin" ', ""),
     'listener.name.broker.plain.sasl.jaas.config: username="..." and password="..." are required'),
    (_with(_INTER_SASL, sasl_mechanism_inter_broker_protocol="SCRAM-SHA-512"),
     "listener.name.broker.scram-sha-512.sasl.jaas.config is required"),
    (_with(BROKER, listener_security_protocol_map="CLIENT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:SASL_SSL",
           sasl_mechanism_controller_protocol="OAUTHBEARER"), "sasl.mechanism.controller.protocol: OAUTHBEARER"),
    (_with(SASL_BROKER, connection_failed_authentication_delay_ms="-1"),
     "connection.failed.authentication.delay.ms"),
])
def test_a_sasl_listener_kraftlog_cannot_serve_is_refused_in_one_line(text, message):
    with pytest.raises(ServerConfigError) as caught:
        parse_server_config(text)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert "b-pw" not in str(caught.value)


# ------------------------------------------------------------------------ TLS listeners (issue 36)
def _tls_files(tmp_path: pathlib.Path) -> tuple[str, str]:
    from kraftlog.net.certificates import issue_ca, issue_certificate, write_keystore, write_truststore
    ca = issue_ca()
    write_keystore(str(tmp_path / "b.pem"), issue_certificate(ca, "broker-1", ("127.0.0.5",)), password="kp")
    write_truststore(str(tmp_path / "ca.pem"), ca.certificate)
    return str(tmp_path / "b.pem"), str(tmp_path / "ca.pem")


def _tls_broker(keystore: str, truststore: str, **changes: str | None) -> str:
    base = _with(BROKER, listener_security_protocol_map="CLIENT:SSL,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT",
                 ssl_keystore_type="PEM", ssl_keystore_location=keystore, ssl_key_password="kp",
                 ssl_truststore_type="PEM", ssl_truststore_location=truststore, ssl_client_auth="required")
    return _with(base, **changes)


def test_a_tls_listener_reads_kafkas_pem_keystore_and_truststore(tmp_path):
    """ssl.keystore.type=PEM (key then chain, ssl.key.password for an encrypted key), ssl.truststore.type=PEM,
    ssl.client.auth=required: the listener's context loads them and asks for a client certificate; the node's spec
    gives the client role those settings; the keystore file is 0600."""
    import os
    import ssl

    from kraftlog.net.listener_security import server_context
    from kraftlog.net.node import spec_from_server_config
    keystore, truststore = _tls_files(tmp_path)
    server = parse_server_config(_tls_broker(keystore, truststore))
    tls = server.tls["CLIENT"]
    assert (tls.keystore, tls.key_password, tls.truststore, tls.client_auth) == (keystore, "kp", truststore,
                                                                                 "required")
    assert server_context(tls).verify_mode == ssl.CERT_REQUIRED and server.sasl == {}
    assert spec_from_server_config(server).tls == {"CLIENT": tls}
    assert os.stat(keystore).st_mode & 0o777 == 0o600


def test_a_tls_listener_kraftlog_cannot_serve_is_refused_in_one_line(tmp_path):
    keystore, truststore = _tls_files(tmp_path)
    for changes, message in [
        ({"ssl_keystore_type": "JKS"}, "ssl.keystore.type: JKS is not served"),
        ({"ssl_keystore_location": str(tmp_path / "none.pem")}, "none.pem is not a readable file"),
        ({"ssl_key_password": "wrong"}, "cannot load"),
        ({"ssl_client_auth": "always"}, "ssl.client.auth: 'always' is not one of none, requested, required"),
        ({"ssl_truststore_location": None}, "ssl.client.auth=required needs ssl.truststore.location"),
        ({"ssl_principal_mapping_rules": "RULE:^CN=(.*?),.*$/$1/"}, "only DEFAULT is served"),
        ({"ssl_keystore_location": None}, "ssl.keystore.location (or listener.name.client.ssl.keystore.location)"),
    ]:
        with pytest.raises(ServerConfigError) as caught:
            parse_server_config(_tls_broker(keystore, truststore, **changes))
        assert message in str(caught.value) and "\n" not in str(caught.value), (changes, str(caught.value))
        assert "=kp" not in str(caught.value)  # a password is never echoed


def test_the_principal_of_a_client_certificate_is_its_subject_as_rfc_2253_writes_it():
    """Kafka's DEFAULT ssl.principal.mapping.rules: User: + X500Principal.getName() (most specific first,
    special characters escaped); no certificate: no principal (the connection stays ANONYMOUS)."""
    from kraftlog.net.listener_security import principal_of_certificate
    cert = {"subject": ((("countryName", "DE"),), (("organizationName", "Acme, Inc"),), (("commonName", "alice"),))}
    assert principal_of_certificate(cert) == "User:CN=alice,O=Acme\\, Inc,C=DE"
    assert principal_of_certificate(None) is None and principal_of_certificate({}) is None
