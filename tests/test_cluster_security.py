"""``kraftlog cluster up --secure``'s files, without starting a node (issue 36): every node's properties parse as
``kraftlog server`` reads them, with every listener SASL_SSL, the node listeners' PLAIN users the nodes only, each
node authenticating to the others as itself, the admin bootstrapped as a SCRAM user; the secrets are mode 0600; a
lost ``secrets.json`` is one line (exit 2), not a traceback."""

from __future__ import annotations

import os
import stat

import pytest

from kraftlog.controller.controller import CONTROLLER
from kraftlog.net.cluster_files import ClusterError
from kraftlog.net.cluster_properties import SINGLE_CONTROLLER_ID, node_properties
from kraftlog.net.cluster_security import admin_scram_records, secure_new_cluster
from kraftlog.net.server_config import parse_server_config
from kraftlog.storage.meta_properties import store_properties


def _cluster(directory: str) -> dict:
    cluster = {"cluster_id": "AAAAAAAAAAAAAAAAAAAAAQ", "level": "urm", "config": {}, "kraft_version": 0,
               "nodes": [{"id": CONTROLLER, "role": "controller", "port": 19000},
                         *({"id": b, "role": "broker", "port": 19100 + b, "internal_port": 19200 + b}
                           for b in range(3))]}
    secure_new_cluster(directory, cluster, SINGLE_CONTROLLER_ID)
    return cluster


def test_every_node_of_a_secure_cluster_reads_its_properties_as_kraftlog_server_does(tmp_path):
    directory = str(tmp_path)
    cluster = _cluster(directory)
    for node, name in ((CONTROLLER, "controller"), (0, "broker-0"), (2, "broker-2")):
        server = parse_server_config(store_properties(node_properties(directory, cluster, node, name)), name)
        assert all(ep.protocol == "SASL_SSL" for ep in server.listeners.values())
        assert server.controller_peer.protocol == "SASL_SSL" and server.controller_peer.mechanism == "PLAIN"
        assert server.inter_broker_peer.protocol == "SASL_SSL" and server.inter_broker_peer.mechanism == "PLAIN"
        me = f"node-{SINGLE_CONTROLLER_ID if node == CONTROLLER else node}"
        assert server.controller_peer.username == me and server.inter_broker_peer.username == me
        node_listeners = ["CONTROLLER"] if node == CONTROLLER else ["BROKER"]
        for listener in node_listeners:  # the node listeners' users are the nodes, nobody else
            assert server.sasl[listener].mechanisms == ("PLAIN",)
            assert sorted(server.sasl[listener].plain_users) == sorted(
                ["node-3000", "node-0", "node-1", "node-2"])
        if node != CONTROLLER:
            assert server.sasl["CLIENT"].mechanisms == ("SCRAM-SHA-512",) and not server.sasl["CLIENT"].plain_users
        assert server.config["super.users"] == "User:admin"
    assert cluster["client_config"]["sasl.mechanism"] == "SCRAM-SHA-512"
    (admin,) = admin_scram_records(directory)
    assert admin.name == "admin" and admin.iterations == 8192
    for name in ("admin.properties", "security/secrets.json", "security/controller.pem", "security/broker-1.pem"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name
    assert stat.S_IMODE(os.stat(tmp_path / "security").st_mode) == 0o700


def test_a_lost_secrets_file_is_one_line_naming_it(tmp_path):
    directory = str(tmp_path)
    cluster = _cluster(directory)
    os.unlink(tmp_path / "security" / "secrets.json")
    with pytest.raises(ClusterError) as err:
        node_properties(directory, cluster, 0, "broker-0")
    assert "secrets.json: cannot read this --secure cluster's passwords" in str(err.value) and err.value.code == 2
    assert "\n" not in str(err.value)
