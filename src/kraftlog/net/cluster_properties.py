"""The ``server.properties`` of each node of a ``kraftlog cluster`` directory: ``cluster up`` is a convenience over
the path ``kraftlog server`` takes.

:func:`node_properties` writes, from ``cluster.json``, the properties file an operator would write for the node
(:mod:`kraftlog.net.server_config`'s keys: ``node.id``, ``process.roles``, listeners on 127.0.0.1 at the ports
``cluster.json`` records, the quorum line, ``log.dirs``, ``metrics.port``, ``kraftlog.level`` and the cluster
config); the launcher writes it as ``DIR/<node>.properties`` before each start, and the node process reads it with
the same parser as ``kraftlog server`` (:func:`kraftlog.net.node.spec_from_cluster`), taking from ``cluster.json``
only what a fault injector adds (its run file, seed and incarnation, chaos mode, owner, link rules). A ``--secure``
cluster's files add the security keys of :mod:`kraftlog.net.cluster_security` and are mode 0600.

A broker listens on ``CLIENT`` (clients) and ``BROKER`` (``inter.broker.listener.name``); a controller on
``CONTROLLER``. The quorum line is ``controller.quorum.voters`` (static voters), or
``controller.quorum.bootstrap.servers`` at kraft.version 1 (KIP-853). kraftlog's single controller (``cluster up
--controllers 1``, the node ``controller``: no Raft, its metadata log commits on its own fsync) has no Kafka
equivalent: its file and its brokers' name it as the one voter ``3000`` with ``kraftlog.controller.single=true``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..controller.controller import CONTROLLER
from ..storage.meta_properties import store_properties
from .cluster_security import security_properties
from .files import atomic_write
from .node import HOST
from .server_config import SINGLE_CONTROLLER_KEY

__all__ = ["node_properties", "write_node_properties", "properties_path", "SINGLE_CONTROLLER_ID"]

#: The node id a single controller's properties give it (``kraftlog.controller.single``): a quorum's first id.
SINGLE_CONTROLLER_ID = 3000


def properties_path(directory: str, name: str) -> str:
    """``DIR/<node name>.properties``."""
    return os.path.join(directory, f"{name}.properties")


def _controllers(cluster: Mapping) -> list[dict]:
    return [e for e in cluster["nodes"] if e["role"] == "controller"]


def node_properties(directory: str, cluster: Mapping, node, name: str) -> dict[str, str]:
    """The properties of ``node`` (its entry in ``cluster``, ``cluster.json``'s dict; ``name``: its file name,
    ``broker-0``) in the key order an operator writes them; its data directory is ``directory/name``."""
    entry = next(e for e in cluster["nodes"] if e["id"] == node)
    controllers = _controllers(cluster)
    single = len(controllers) == 1 and controllers[0]["id"] == CONTROLLER
    controller = entry["role"] == "controller"
    props: dict[str, str] = {
        "node.id": str(SINGLE_CONTROLLER_ID if node == CONTROLLER else node),
        "process.roles": "controller" if controller else "broker",
    }
    if controller:
        props["listeners"] = f"CONTROLLER://{HOST}:{entry['port']}"
        props["listener.security.protocol.map"] = "CONTROLLER:PLAINTEXT"
    else:
        props["listeners"] = f"CLIENT://{HOST}:{entry['port']},BROKER://{HOST}:{entry['internal_port']}"
        props["inter.broker.listener.name"] = "BROKER"
        props["listener.security.protocol.map"] = "CLIENT:PLAINTEXT,BROKER:PLAINTEXT,CONTROLLER:PLAINTEXT"
    props["controller.listener.names"] = "CONTROLLER"
    if single:
        props["controller.quorum.voters"] = f"{SINGLE_CONTROLLER_ID}@{HOST}:{controllers[0]['port']}"
        props[SINGLE_CONTROLLER_KEY] = "true"
    elif cluster.get("kraft_version", 0) == 1:
        props["controller.quorum.bootstrap.servers"] = ",".join(f"{HOST}:{e['port']}" for e in controllers)
    else:
        props["controller.quorum.voters"] = ",".join(f"{e['id']}@{HOST}:{e['port']}" for e in controllers)
    props["log.dirs"] = os.path.join(os.path.abspath(directory), name)
    if entry.get("metrics_port") is not None:
        props["metrics.port"] = str(entry["metrics_port"])
    props["kraftlog.level"] = str(cluster["level"])
    if cluster.get("secure"):  # `cluster up --secure`: every listener SASL_SSL, one user per node
        props.update(security_properties(directory, cluster, node, SINGLE_CONTROLLER_ID))
    for key, value in sorted(cluster.get("config", {}).items()):
        props[key] = str(value)
    return props


def write_node_properties(directory: str, cluster: Mapping, node, name: str) -> str:
    """Write :func:`node_properties` as ``DIR/<name>.properties`` (atomically) and return its path."""
    path = properties_path(directory, name)
    text = "# written by `kraftlog cluster` from cluster.json: rewritten at each start of the node\n"
    text += store_properties(node_properties(directory, cluster, node, name))
    atomic_write(path, text.encode("latin-1"), mode=0o600 if cluster.get("secure") else 0o644)  # passwords
    return path
