"""``kraftlog cluster up --secure``: a cluster whose every listener is SASL_SSL and whose nodes prove who they are.

At the first ``up`` (:func:`secure_new_cluster`) ``DIR/security/`` (mode 0700) receives the cluster's own CA
(``ca.pem``: the truststore every node and client checks certificates against; the CA's private key is not kept),
one certificate per node for 127.0.0.1 and ``localhost`` (``<node>.pem``, key and chain, mode 0600), and
``secrets.json`` (mode 0600): one random password per node and one for the admin user. ``DIR/admin.properties``
(mode 0600) is the admin's Kafka client configuration (SASL_SSL, SCRAM-SHA-512, the CA), also kept in cluster.json as
``client_config`` (cluster.json is written mode 0600); kraftlog's admin commands take it with
``--command-config``, Kafka's tools and librdkafka read the same keys.

:func:`security_properties` adds to each node's ``server.properties`` (mode 0600: it holds passwords):

* the listeners ``CLIENT``, ``BROKER`` (inter-broker) and ``CONTROLLER`` map to SASL_SSL, with the node's
  certificate (``ssl.keystore.*``) and the CA (``ssl.truststore.*``);
* ``CLIENT`` enables SCRAM-SHA-512. The admin's credential is bootstrap metadata: every controller's directory is
  formatted with it (:func:`admin_scram_records`, ``storage format --add-scram``, KIP-900) and the first active
  controller writes it into the metadata log; the admin creates every other user (AlterUserScramCredentials);
* ``BROKER`` (inter-broker) and ``CONTROLLER`` enable PLAIN whose only users are the nodes, ``node-<id>`` (a broker's
  id, a controller's 3000, 3001, ...): no client's user can log in there. Each node authenticates to the others as
  itself (``sasl.mechanism.inter.broker.protocol`` and ``sasl.mechanism.controller.protocol`` PLAIN, the listeners'
  JAAS ``username`` / ``password``), over TLS. Not SCRAM between nodes: SCRAM credentials are global, so a client's
  SCRAM user could log in on a node listener too and, without ACLs (the Authorization issue), act as any node
  there; and a quorum's controllers must authenticate to each other before any metadata log exists (Kafka's
  documentation keeps the controller listener PLAIN for that reason);
* ``super.users=User:admin``. A node's principal ``User:node-<id>`` may act only as node ``<id>``
  (:func:`kraftlog.protocol.listeners.node_identity_refusal`: a kraftlog addition to Kafka).
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping

from ..controller.controller import CONTROLLER
from .certificates import issue_ca, issue_certificate, write_keystore, write_truststore
from .cluster_files import ClusterError
from .files import atomic_write
from .node import HOST, node_name

__all__ = ["SECURITY_DIR", "ADMIN_USER", "secure_new_cluster", "security_properties", "node_principal_name",
           "admin_properties", "admin_scram_records", "write_private"]

SECURITY_DIR = "security"
ADMIN_USER = "admin"
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule required"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule required"


def node_principal_name(node, single_controller_id: int) -> str:
    """The SASL user of ``node`` (a broker id, a quorum controller's id, or ``controller``: the single one, whose
    properties give it ``single_controller_id``): ``node-<id>``."""
    return f"node-{single_controller_id if node == CONTROLLER else node}"


def write_private(path: str, text: str) -> None:
    """``text`` into ``path``, atomically, mode 0600 (it holds passwords)."""
    atomic_write(path, text.encode("latin-1"), mode=0o600)


def _security_dir(directory: str) -> str:
    return os.path.join(directory, SECURITY_DIR)


def secure_new_cluster(directory: str, cluster: dict, single_controller_id: int) -> None:
    """Issue the CA, each node's certificate and every password of a new ``--secure`` cluster (the module doc) and
    record in ``cluster`` (cluster.json's dict) ``secure`` and the admin's ``client_config``; writes
    ``DIR/admin.properties``. OSError when a file cannot be written."""
    root = _security_dir(directory)
    os.makedirs(root, mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    ca = issue_ca(f"kraftlog CA {cluster['cluster_id']}")
    write_truststore(os.path.join(root, "ca.pem"), ca.certificate)
    passwords = {ADMIN_USER: secrets.token_urlsafe(18)}
    for e in cluster["nodes"]:
        name = node_name(e["id"])
        write_keystore(os.path.join(root, f"{name}.pem"), issue_certificate(ca, name, (HOST, "localhost")))
        passwords[node_principal_name(e["id"], single_controller_id)] = secrets.token_urlsafe(18)
    write_private(os.path.join(root, "secrets.json"), json.dumps(passwords, indent=1, sort_keys=True) + "\n")
    cluster["secure"] = True
    cluster["client_config"] = admin_properties(directory, passwords[ADMIN_USER])
    write_private(os.path.join(directory, "admin.properties"),
                  "# written by `kraftlog cluster up --secure`: the admin user's client configuration\n"
                  + "".join(f"{k}={v}\n" for k, v in cluster["client_config"].items()))


def admin_properties(directory: str, password: str) -> dict[str, str]:
    """The admin user's Kafka client configuration (SASL_SSL, SCRAM-SHA-512, the cluster's CA)."""
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{_SCRAM_MODULE} username="{ADMIN_USER}" password="{password}";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": os.path.join(_security_dir(directory), "ca.pem")}


def _passwords(directory: str) -> dict[str, str]:
    """``DIR/security/secrets.json``; ClusterError (exit 2, one line) when it is lost or unreadable: the nodes'
    properties cannot be written without it, and new passwords would not match the ones the cluster knows."""
    path = os.path.join(_security_dir(directory), "secrets.json")
    try:
        with open(path) as f:
            passwords: dict[str, str] = json.load(f)
    except (OSError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise ClusterError(f"{path}: cannot read this --secure cluster's passwords ({why}); start a new cluster in "
                           "another --dir", 2) from None
    return passwords


def admin_scram_records(directory: str) -> list[object]:
    """``storage format --add-scram 'SCRAM-SHA-512=[name=admin,password=...]'`` (8192 iterations, a random salt): the
    UserScramCredentialRecord a secured cluster's controllers start their metadata log with, so that the admin can
    log in on the client listener before anyone could create a user. ClusterError when ``DIR/security/secrets.json``
    cannot be read."""
    from ..metadata.records import UserScramCredentialRecord
    from ..protocol.sasl import SCRAM_MECHANISM_TYPES, SCRAM_SHA_512, scram_credential
    c = scram_credential(SCRAM_SHA_512, _passwords(directory)[ADMIN_USER], os.urandom(32), 8192)
    return [UserScramCredentialRecord(ADMIN_USER, SCRAM_MECHANISM_TYPES[SCRAM_SHA_512], c.salt, c.stored_key,
                                      c.server_key, c.iterations)]


def security_properties(directory: str, cluster: Mapping, node, single_controller_id: int) -> dict[str, str]:
    """The security keys of ``node``'s ``server.properties`` in a ``--secure`` cluster (the module doc), in the
    order an operator writes them. ClusterError when ``DIR/security/secrets.json`` cannot be read."""
    passwords = _passwords(directory)
    me = node_principal_name(node, single_controller_id)
    nodes = [node_principal_name(e["id"], single_controller_id) for e in cluster["nodes"]]
    root = _security_dir(directory)
    own = f'{_PLAIN_MODULE} username="{me}" password="{passwords[me]}"'
    users = "".join(f' user_{n}="{passwords[n]}"' for n in nodes)
    is_controller = next(e for e in cluster["nodes"] if e["id"] == node)["role"] == "controller"
    props = {
        "listener.security.protocol.map": ("CONTROLLER:SASL_SSL,BROKER:SASL_SSL" if is_controller else
                                           "CLIENT:SASL_SSL,BROKER:SASL_SSL,CONTROLLER:SASL_SSL"),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": os.path.join(root, f"{node_name(node)}.pem"),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": os.path.join(root, "ca.pem"),
        "sasl.mechanism.controller.protocol": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
    }
    if is_controller:  # the controller reaches brokers' BROKER listener too (KIP-966's GetReplicaLogInfo)
        props["inter.broker.listener.name"] = "BROKER"
        props["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN"
        props["listener.name.controller.plain.sasl.jaas.config"] = own + users + ";"
        props["listener.name.broker.plain.sasl.jaas.config"] = own + ";"
    else:
        props["listener.name.client.sasl.enabled.mechanisms"] = "SCRAM-SHA-512"
        props["listener.name.broker.sasl.enabled.mechanisms"] = "PLAIN"
        props["listener.name.broker.plain.sasl.jaas.config"] = own + users + ";"
        props["listener.name.controller.plain.sasl.jaas.config"] = own + ";"
    props["super.users"] = f"User:{ADMIN_USER}"
    return props
