"""Launching and managing a real cluster on loopback: what ``kraftlog cluster ...`` runs.

A cluster directory ``DIR`` holds

* ``cluster.json``: ``{"bootstrap": "127.0.0.1:P", "level", "seed", "cluster_id", "brokers": N,
  "config": {...}, "chaos": bool, "nodes": [{"id": <int> or "controller", "role": "controller"|"broker",
  "pid", "host", "port", "internal_port", "metrics_port", "incarnation"}]}`` (``port`` = a broker's client
  listener, the controller's listener for the controller; ``internal_port`` = a broker's inter-broker
  listener, null for the controller; ``metrics_port`` = the node's ``/metrics`` endpoint,
  :mod:`kraftlog.net.metrics_http`; ``incarnation`` = how many times the node was started, which seeds its Random;
  ``chaos`` absent = false);
* ``controller/``, ``broker-<id>/``: each node's data (see :mod:`kraftlog.net.node`), formatted as
  ``kafka-storage.sh format`` does (a ``meta.properties`` with the cluster id, the node id and a random
  directory id, :mod:`kraftlog.storage.meta_properties`) when ``up`` creates a new cluster; the nodes
  never format their own directories and refuse to start on one that is missing or not theirs;
* ``controller.log``, ``broker-<id>.log``: each node's log; ``run/<node>.json``: each node's status
  (``control_port``: its control channel in chaos mode, else null);
* ``links.json`` (chaos mode): the cluster-wide link rules that :func:`control_all` keeps.

Chaos mode (``up(..., chaos=True)``, ``"chaos": true`` in cluster.json; issue 13): every node keeps its
FileDisk's shadow and serves a control channel on 127.0.0.1 (its port is ``control_port`` in its run
file) through which :func:`control` and :func:`control_all` change its driver's link filter (the
simulator's ``isolate``, ``partition``, ``cut``, ``heal``, ``hold``, ``release``; see
:class:`kraftlog.net.link_filter.LinkFilter` and :meth:`kraftlog.net.driver.NodeDriver.control`);
``links.json`` keeps the cluster-wide rules for nodes that start later. :func:`pause`, :func:`resume`
and :func:`kill_node` are the process faults (SIGSTOP, SIGCONT, SIGKILL by PID).

Formatting, as an operator would (:func:`format_node`): ``up`` formats every directory of a new
cluster; ``up`` of an existing cluster and :func:`start_broker` format a *broker* directory that is
missing or empty (a replaced disk: the broker joins with empty logs, which KIP-966's unclean-shutdown
rule handles as it handles ``crash: {lose: all}`` in the simulator); nothing formats the controller's
directory of an existing cluster except ``kraftlog cluster format --controller``, so a lost metadata
directory stops the controller (:class:`ClusterError` with its one-line reason) instead of giving the
cluster an empty metadata log. ``status`` lists each broker's ``-stray`` partition directories.

Every process is started with its own session (a Ctrl-C in the terminal reaches the launcher, which then
shuts the nodes down cleanly) and is stopped by its PID, never by name. Ports are loopback only.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from random import SystemRandom

from ..controller.controller import CONTROLLER
from ..level import Level
from ..protocol import listeners as lst
from ..protocol.raft_records import RaftEndpoint, Voter, VotersRecord
from ..raft.bootstrap import format_quorum
from ..storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    format_disk,
    kafka_uuid,
    new_directory_id,
    parse_kafka_uuid,
)
from .cluster_files import ClusterError, free_ports, load, node_alive, pid_alive
from .cluster_files import cluster_path as _cluster_path
from .cluster_files import entry as _entry
from .cluster_files import locked as _locked
from .cluster_files import save as _save
from .cluster_files import update_entry as _update_entry
from .cluster_properties import SINGLE_CONTROLLER_ID, write_node_properties
from .cluster_security import admin_scram_records, secure_new_cluster
from .disk import FileDisk
from .link_filter import LinkFilter
from .meta_properties import read_meta_properties
from .node import CONTROLLER_ID_BASE, HOST, LINKS_FILE, node_name, quorum_voters, read_links, write_json
from .server_config import config_problem

__all__ = ["ClusterError", "free_ports", "up", "down", "status", "start_broker", "stop_broker", "load", "NodeStatus",
           "format_node", "strays", "READY_TIMEOUT_S", "pid_alive", "kill", "control", "control_all", "pause",
           "resume", "kill_node", "node_alive", "active_controller", "controller_ids", "start_controller", "run_file",
           "format_initial_controllers"]

#: The suffix of a stray partition directory (Kafka's ``LogManager.StrayDirSuffix``).
STRAY_SUFFIX = "-stray"
#: How long (s) ``up --detach`` and ``start`` wait for brokers to be unfenced.
READY_TIMEOUT_S = 60.0
#: How long (s) a clean shutdown may take before the process is killed.
STOP_TIMEOUT_S = 45.0


def run_file(directory: str, node) -> dict | None:
    """The run file ``node`` last wrote (:mod:`kraftlog.net.node`), None when there is none or it cannot be read."""
    return _run_file(directory, node)


def _run_file(directory: str, node) -> dict | None:
    try:
        with open(os.path.join(directory, "run", f"{node_name(node)}.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _launch(directory: str, node) -> subprocess.Popen:
    """Start ``node``'s process (its stderr and stdout appended to DIR/<node>.log)."""
    run = _run_file(directory, node)
    if run is not None:  # forget the previous incarnation's status
        os.unlink(os.path.join(directory, "run", f"{node_name(node)}.json"))
    log = open(os.path.join(directory, f"{node_name(node)}.log"), "ab")
    try:
        return subprocess.Popen([sys.executable, "-m", "kraftlog.net.node", directory, str(node)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=directory)
    finally:
        log.close()


def _wait_started(directory: str, node, proc: subprocess.Popen, timeout_s: float = 20.0) -> dict:
    """Wait until ``node`` wrote its run file (its listeners are bound); ClusterError if it died, or
    (exit 1, its one-line reason) if it refused to start on its directory."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = _run_file(directory, node)
        if run is not None and run.get("pid") == proc.pid:
            if run.get("refused"):
                proc.wait(timeout=10)
                if run.get("port_in_use") is not None:  # one line, exit 2: the operator's choice of port
                    raise ClusterError(f"{node_name(node)}: port {run['port_in_use']} ({run.get('listener')} "
                                       f"listener) on {HOST} is in use", 2)
                raise ClusterError(f"{node_name(node)} refused to start (exit {proc.returncode}): {run['refused']}")
            return run
        if proc.poll() is not None:
            raise ClusterError(f"{node_name(node)} exited with code {proc.returncode} while starting\n"
                               + _tail(directory, node))
        time.sleep(0.05)
    raise ClusterError(f"{node_name(node)} did not start within {timeout_s:.0f} s\n" + _tail(directory, node))


def _tail(directory: str, node, lines: int = 15) -> str:
    try:
        with open(os.path.join(directory, f"{node_name(node)}.log"), errors="replace") as f:
            text = f.readlines()[-lines:]
    except OSError:
        return f"  ({node_name(node)}.log: none)"
    return "".join(f"  {node_name(node)}.log: {line}" for line in text).rstrip("\n")


def _start_node(directory: str, cluster: dict, node) -> subprocess.Popen:
    """Launch ``node`` and record it in cluster.json. The running check, the incarnation bump, the launch
    and the PID are one step under cluster.json's lock, and every write re-reads the file: parallel
    starts neither lose each other's PIDs (orphans ``cluster down`` would not stop) nor start one node
    twice. ClusterError (exit 2) when the node already runs. ``cluster`` is updated in place."""
    with _locked(directory):
        fresh = load(directory)
        entry = _entry(fresh, node)
        if pid_alive(entry.get("pid")):
            what = "the controller" if node == CONTROLLER else node_name(node)
            raise ClusterError(f"{what} is already running (pid {entry['pid']})", 2)
        entry["incarnation"] = entry.get("incarnation", 0) + 1  # seeds the node's Random (kraftlog.net.node)
        write_json(_cluster_path(directory), fresh, mode=0o600)
        # the node runs from its server.properties, as `kraftlog server` does (cluster_properties)
        write_node_properties(directory, fresh, node, node_name(node))
        proc = _launch(directory, node)
        entry["pid"] = proc.pid  # known at once: a node that refuses to start shows as REFUSED in ``status``
        write_json(_cluster_path(directory), fresh, mode=0o600)
    run = _wait_started(directory, node, proc)
    fresh = _update_entry(directory, node, pid=proc.pid, port=run["port"], internal_port=run["internal_port"])
    cluster.clear()
    cluster.update(fresh)
    return proc


def _node_root(directory: str, node) -> str:
    return os.path.join(directory, node_name(node))


def _blank(root: str) -> bool:
    """Whether a node directory is missing or holds nothing but its lock file (a new or replaced disk)."""
    try:
        return not [n for n in os.listdir(root) if n != ".lock"]
    except FileNotFoundError:
        return True


def format_node(directory: str, node, cluster: dict | None = None) -> MetaProperties:
    """Format ``node``'s directory as ``kafka-storage.sh format`` does: ``meta.properties`` with the
    cluster's id, the node id and a new random directory id (the directory is created if missing).
    ClusterError (exit 2) when the node is running or its directory is already formatted (Kafka's
    format refuses a formatted directory too). Formatting the controller's directory of an existing
    cluster gives it an empty metadata log: the brokers then keep their partitions as ``-stray``
    directories. Returns what was written."""
    cluster = load(directory) if cluster is None else cluster
    entry = _entry(cluster, node)
    if pid_alive(entry.get("pid")):
        raise ClusterError(f"{node_name(node)} is running (pid {entry['pid']}): stop it before formatting", 2)
    root = _node_root(directory, node)
    if os.path.exists(os.path.join(root, META_PROPERTIES)):
        raise ClusterError(f"{root} is already formatted ({META_PROPERTIES} exists)", 2)
    identity = MetaProperties(cluster["cluster_id"], str(node), new_directory_id(SystemRandom()))
    with FileDisk(root) as disk:
        if cluster.get("secure") and entry["role"] == "controller":  # `storage format --add-scram` of the admin
            format_quorum(disk, 0, None, records=admin_scram_records(directory))
        format_disk(disk, identity, 0)
    return identity


def format_initial_controllers(directory: str, cluster: dict) -> None:
    """``storage format --initial-controllers`` on every controller of a kraft.version 1 cluster: the bootstrap
    checkpoint names each voter with the directory id of its ``meta.properties`` and its controller listener on
    127.0.0.1 (KIP-853). OSError when a directory cannot be written."""
    voters = []
    for v in quorum_voters(cluster):
        props = read_meta_properties(_node_root(directory, v)) or {}
        voters.append(Voter(v, parse_kafka_uuid(props["directory.id"]),
                            (RaftEndpoint(lst.CONTROLLER, HOST, _entry(cluster, v)["port"]),)))
    scram = admin_scram_records(directory) if cluster.get("secure") else []
    for v in quorum_voters(cluster):
        with FileDisk(_node_root(directory, v), raft_metadata=True) as disk:
            format_quorum(disk, 0, VotersRecord(tuple(voters)), records=scram)


#: A node entry's ports in cluster.json: its listener (a broker's client one), a broker's inter-broker
#: listener, its /metrics endpoint (kraftlog.net.metrics_http).
PORT_KEYS = ("port", "internal_port", "metrics_port")


def check_ports(brokers: int, port: int, controller_port: int | None, internal_port: int | None,
                controllers: int = 1, metrics_port: int | None = None) -> None:
    """Validate ``up``'s port choices (0 or None: free ports): broker ``i``'s client port ``port + i``,
    its internal port ``internal_port + i``, controller ``i``'s ``controller_port + i``, the ``/metrics`` ports
    from ``metrics_port`` on (the controllers', then the brokers'), each range within 1..65535 and none
    overlapping another. ClusterError (exit 2) naming the option otherwise."""
    spans = {"--port": (port, brokers), "--internal-port": (internal_port, brokers),
             "--controller-port": (controller_port, controllers),
             "--metrics-port": (metrics_port, controllers + brokers)}
    taken: list[tuple[str, range]] = []
    for option, (base, count) in spans.items():
        if not base:
            continue
        if not 1 <= base <= 65536 - count:
            raise ClusterError(f"{option} must be within 1..{65536 - count} (0: free ports), got {base}", 2)
        ports = range(base, base + count)
        for other, theirs in taken:
            if ports.start < theirs.stop and theirs.start < ports.stop:
                raise ClusterError(f"{option} {_span(ports)} overlaps {other} {_span(theirs)}", 2)
        taken.append((option, ports))


def _span(ports: range) -> str:
    return str(ports.start) if len(ports) == 1 else f"{ports.start}..{ports.stop - 1}"


def up(directory: str, brokers: int, port: int = 9092, level: Level | None = None, seed: int | None = None,
       config: dict | None = None, chaos: bool = False, owned: bool = False, controller_port: int | None = None,
       internal_port: int | None = None, controllers: int = 1, kraft_version: int = 0,
       metrics_port: int | None = None, secure: bool = False) -> dict:
    """Start a controller (``controllers`` > 1: a KRaft quorum of that many voters, ids 3000, 3001, ..., static
    ``controller.quorum.voters``) and ``brokers`` brokers on 127.0.0.1 with data under ``directory`` (reused when
    it holds a cluster of the same size and level: the nodes recover their logs) and return cluster.json.
    Broker ``i`` listens for clients on ``port + i`` and for brokers on ``internal_port + i``; the
    controller on ``controller_port``; the nodes' ``/metrics`` from ``metrics_port`` on, the controllers' first
    (:func:`check_ports`). Any of them 0 (None: the three latter's default): free ports below the kernel's
    ephemeral range (:func:`free_ports`), recorded in cluster.json so that a restarted node binds the same ones;
    a reused cluster keeps its recorded ports but those ``controller_port``, ``internal_port`` and
    ``metrics_port`` name. A port in use stops the start with
    ClusterError (exit 2) naming the node and the port. ``chaos``: chaos mode (see
    the module's doc; an existing cluster may be switched to it, not back: its data has a shadow that a
    plain node would make stale). ``owned``: the nodes die with this process (``owner_pid`` in
    cluster.json; see :mod:`kraftlog.net.node`): for a fault injector that must leave no node behind
    when it is killed; it must then start and restart the nodes from its main thread (the kernel's
    parent-death signal follows the thread that started a node). Every ``up`` starts with no link rule.
    ``kraft_version`` 1 (a quorum only): KIP-853's dynamic quorum, as ``kraftlog server`` runs it from
    ``controller.quorum.bootstrap.servers``: each controller's directory is formatted with the bootstrap checkpoint
    naming every voter with its directory id and endpoint (``storage format --initial-controllers``), the nodes
    know the controllers only as bootstrap servers, and ``controller.quorum.auto.join.enable`` is true unless
    ``config`` says otherwise: a voter whose directory was lost and formatted again rejoins with its new one.
    ``secure`` (a new cluster only; a secured one stays secured): :mod:`kraftlog.net.cluster_security`.
    Raises ClusterError (exit 2) on a mismatch with an existing cluster or a cluster that is already
    running."""
    from ..level import DEFAULT
    if brokers < 1 or brokers > 50:
        raise ClusterError(f"--brokers must be within 1..50, got {brokers}", 2)
    if controllers < 1 or controllers > 9:
        raise ClusterError(f"--controllers must be within 1..9, got {controllers}", 2)
    if kraft_version not in (0, 1):
        raise ClusterError(f"--kraft-version must be 0 (static voters) or 1 (dynamic, KIP-853), got {kraft_version}", 2)
    if kraft_version == 1 and controllers == 1:
        raise ClusterError("--kraft-version 1 needs a controller quorum (--controllers 3): the single controller "
                           "is not a Raft quorum", 2)
    if secure and chaos:
        raise ClusterError("--secure with --chaos is not served: kraftlog's fault injectors speak PLAINTEXT", 2)
    check_ports(brokers, port, controller_port, internal_port, controllers, metrics_port)
    for key, value in sorted((config or {}).items()):  # what each node's server.properties will say
        problem = config_problem(key, str(value))
        if problem is not None:
            raise ClusterError(f"--config {key}={value}: {problem}", 2)
    os.makedirs(directory, exist_ok=True)
    directory = os.path.abspath(directory)
    if os.path.exists(_cluster_path(directory)):
        cluster = load(directory)
        if cluster["brokers"] != brokers:
            raise ClusterError(f"{directory} holds a cluster of {cluster['brokers']} brokers, not {brokers}", 2)
        if len(controller_ids(cluster)) != controllers:
            raise ClusterError(f"{directory} holds a cluster of {len(controller_ids(cluster))} controller(s), not "
                               f"{controllers}", 2)
        if cluster.get("kraft_version", 0) != kraft_version:
            raise ClusterError(f"{directory} holds a cluster at kraft.version {cluster.get('kraft_version', 0)}, not "
                               f"{kraft_version}", 2)
        if level is not None and cluster["level"] != level.label:
            raise ClusterError(f"{directory} holds a cluster at level {cluster['level']}, not {level.label}", 2)
        running = [node_name(e["id"]) for e in cluster["nodes"] if pid_alive(e.get("pid"))]
        if running:
            raise ClusterError(f"{directory}: {', '.join(running)} already running; `kraftlog cluster down "
                               f"--dir {directory}` first", 2)
        if secure and not cluster.get("secure"):
            raise ClusterError(f"{directory} holds a PLAINTEXT cluster: --secure makes a new one (another --dir)", 2)
        if cluster.get("secure") and chaos:
            raise ClusterError(f"{directory} holds a --secure cluster: --chaos is not served there", 2)
        if cluster.get("chaos") and not chaos:
            raise ClusterError(f"{directory} holds a chaos-mode cluster (its data has a shadow); start it with "
                               "--chaos", 2)
        if seed is not None:
            cluster["seed"] = seed
        if config:
            cluster["config"].update(config)
        cluster["chaos"] = bool(chaos)
        missing = [e for e in cluster["nodes"] if "metrics_port" not in e]  # a cluster.json of before /metrics
        recorded = frozenset(e[k] for e in cluster["nodes"] for k in PORT_KEYS if e.get(k))
        for e, free in zip(missing, free_ports(len(missing), exclude=recorded), strict=True):
            e["metrics_port"] = free
        for i, e in enumerate(cluster["nodes"]):  # ports named now replace the recorded ones
            if metrics_port:  # the controllers first, then the brokers, as cluster.json lists them
                e["metrics_port"] = metrics_port + i
            if e["role"] == "controller" and controller_port:
                e["port"] = controller_port + (e["id"] - CONTROLLER_ID_BASE if e["id"] != CONTROLLER else 0)
            elif e["role"] == "broker" and internal_port:
                e["internal_port"] = internal_port + e["id"]
    else:
        level = level if level is not None else DEFAULT  # Level.CLASSIC is 0: falsy
        cluster = {
            "bootstrap": None, "level": level.label,
            "seed": seed if seed is not None else SystemRandom().randrange(2 ** 31),
            "cluster_id": kafka_uuid(uuid.UUID(int=SystemRandom().getrandbits(128))), "brokers": brokers,
            "config": dict(config or {}), "chaos": bool(chaos), "kraft_version": kraft_version,
            "nodes": [{"id": CONTROLLER if controllers == 1 else CONTROLLER_ID_BASE + i, "role": "controller",
                       "pid": None, "host": HOST, "port": controller_port + i if controller_port else 0,
                       "internal_port": None, "metrics_port": metrics_port + i if metrics_port else 0}
                      for i in range(controllers)]
            + [{"id": i, "role": "broker", "pid": None, "host": HOST, "port": port + i if port else 0,
                "internal_port": internal_port + i if internal_port else 0,
                "metrics_port": metrics_port + controllers + i if metrics_port else 0}
               for i in range(brokers)],
        }
        # Every port not given (the controller's, the internal listeners', the client ones with --port 0)
        # is chosen now and kept, so that a restarted node binds the same one (free_ports).
        unset = [(e, k) for e in cluster["nodes"] for k in PORT_KEYS if e.get(k) == 0]
        given = frozenset(e[k] for e in cluster["nodes"] for k in PORT_KEYS if e.get(k))
        for (e, k), free in zip(unset, free_ports(len(unset), exclude=given), strict=True):
            e[k] = free
        if kraft_version == 1:
            cluster["config"].setdefault("controller.quorum.auto.join.enable", "true")
        if secure:
            secure_new_cluster(directory, cluster, SINGLE_CONTROLLER_ID)
        _save(directory, cluster)
        for e in cluster["nodes"]:  # a new cluster: every directory is new
            if _blank(_node_root(directory, e["id"])):
                format_node(directory, e["id"], cluster)
        if kraft_version == 1:
            format_initial_controllers(directory, cluster)
    # Kafka's default.replication.factor is 1 (an auto-created topic would then live on one broker); a
    # cluster brought up here gets min(3, brokers) unless --config names it (`cluster up` says so).
    if "default.replication.factor" not in cluster["config"]:
        cluster["config"]["default.replication.factor"] = str(min(3, brokers))
    # __consumer_offsets' replication factor is Kafka's 3 and not capped (FindCoordinator answers
    # COORDINATOR_NOT_AVAILABLE while fewer brokers are registered): with fewer brokers, `cluster up` writes
    # their number (and says so) unless --config names it.
    if brokers < 3 and "offsets.topic.replication.factor" not in cluster["config"]:
        cluster["config"]["offsets.topic.replication.factor"] = str(brokers)
    for b in range(brokers):  # a replaced broker disk is formatted as an operator would; never the controller's
        if _blank(_node_root(directory, b)):
            format_node(directory, b, cluster)
    cluster["owner_pid"] = os.getpid() if owned else None
    _save(directory, cluster)
    try:  # a new run starts with every link up
        os.unlink(os.path.join(directory, LINKS_FILE))
    except FileNotFoundError:
        pass
    started: list[subprocess.Popen] = []
    try:
        for node in controller_ids(cluster) + list(range(brokers)):
            started.append(_start_node(directory, cluster, node))
        wait_ready(directory, list(range(brokers)))
    except BaseException:
        for proc in started:
            _kill(proc.pid)
        raise
    return cluster


def wait_ready(directory: str, broker_ids: list[int], timeout_s: float = READY_TIMEOUT_S) -> None:
    """Wait until every broker of ``broker_ids`` reports itself registered and unfenced; ClusterError (exit
    1) with each node's log tail when that takes longer than ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    cluster = load(directory)
    while time.monotonic() < deadline:
        ready = True
        for b in broker_ids:
            run = _run_file(directory, b)
            pid = _entry(cluster, b).get("pid")
            if not pid_alive(pid):
                raise ClusterError(f"broker-{b} (pid {pid}) died while starting\n" + _tail(directory, b))
            if run is None or run.get("fenced", True) or run.get("broker_epoch", -1) < 0:
                ready = False
        if ready:
            return
        time.sleep(0.1)
    tails = "\n".join(_tail(directory, n) for n in controller_ids(load(directory)) + broker_ids)
    raise ClusterError(f"brokers not all unfenced within {timeout_s:.0f} s\n{tails}")


@dataclass
class NodeStatus:
    """One node as ``cluster status`` shows it: cluster.json's entry plus what its process reports."""

    id: object
    role: str
    pid: int | None
    host: str
    port: int
    internal_port: int | None
    alive: bool
    fenced: bool | None
    broker_epoch: int | None
    state: str | None
    #: a broker's log directory failed (an I/O error: ENOSPC, EIO) and is offline until a restart; what
    #: failed; None when not running or for the controller
    log_dir_offline: bool | None = None
    log_dir_failure: str | None = None
    #: what the process counts (until metrics are exported): e.g. ``storage-error-count``,
    #: ``dropped-at-load-count``, ``batches-recovered-at-load`` (checked one by one at start: after an unclean
    #: shutdown, those from the recovery point on) and ``batches-trusted-at-load`` (below it, by length only),
    #: ``segments-deleted`` (retention), ``cleanings`` / ``cleanings-aborted`` (the log cleaner's, since start),
    #: ``cleaning-in-progress`` (1 while a cleaning runs),
    #: ``metadata-apply-error-count`` (every node: metadata records it could
    #: not apply, Kafka's metric)
    counters: dict | None = None
    #: Why the node's last start was refused (its directory's identity), while it stays down; else None.
    refused: str | None = None
    #: The broker's ``-stray`` partition directories (names under its ``data/``), sorted; [] otherwise.
    strays: list[str] = field(default_factory=list)
    #: Its ``/metrics`` port (cluster.json's ``metrics_port``) and the key gauges its process last reported
    #: (:data:`kraftlog.net.metrics_http.KEY_GAUGES`; None when it is not running).
    metrics_port: int | None = None
    gauges: dict | None = None

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def strays(directory: str, broker: int) -> list[str]:
    """The ``-stray`` partition directories broker ``broker`` keeps (names under ``broker-<id>/data/``,
    sorted): partitions its metadata did not assign to it at startup, renamed and never deleted (see
    :meth:`kraftlog.broker.broker.BrokerMetadataPublisher._stop_deleted_partitions`)."""
    from ..broker.broker import LOG_DIR
    try:
        names = os.listdir(os.path.join(_node_root(directory, broker), LOG_DIR))
    except OSError:
        return []
    return sorted(n for n in names if n.endswith(STRAY_SUFFIX))


def status(directory: str) -> list[NodeStatus]:
    """Every node of the cluster in ``directory`` with ``alive`` (its PID runs), ``fenced`` and the broker
    epoch its process last reported (None for the controller, or for a node that is not running), the
    reason its last start was refused (state ``REFUSED``) and each broker's ``-stray`` directories."""
    cluster = load(directory)
    out = []
    for e in cluster["nodes"]:
        alive = pid_alive(e.get("pid"))
        run = _run_file(directory, e["id"])
        refused = run.get("refused") if run and not alive and run.get("pid") == e.get("pid") else None
        run = run if alive else None
        broker = e["role"] == "broker"
        out.append(NodeStatus(
            e["id"], e["role"], e.get("pid"), e["host"], e["port"], e.get("internal_port"), alive,
            (run.get("fenced") if run and broker else None),
            (run.get("broker_epoch") if run and broker else None),
            "REFUSED" if refused else (run.get("state") if run else None),
            (run.get("log_dir_offline") if run and broker else None),
            (run.get("log_dir_failure") if run and broker else None),
            (run.get("counters") if run else None),
            refused, strays(directory, e["id"]) if broker else [], e.get("metrics_port"),
            (run.get("gauges") if run else None)))
    return out


def _kill(pid: int | None, sig: int = signal.SIGKILL) -> None:
    if pid:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _stop_pid(pid: int | None, kill: bool, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """SIGTERM (a clean shutdown) or SIGKILL ``pid`` and wait until it is gone; escalates to SIGKILL after
    ``timeout_s``. Returns whether the stop was clean."""
    if not pid_alive(pid):
        return True
    _kill(pid, signal.SIGKILL if kill else signal.SIGTERM)
    if not kill:
        _kill(pid, signal.SIGCONT)  # a paused node (``pause``) must run to handle SIGTERM
    deadline = time.monotonic() + (5.0 if kill else timeout_s)
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            _wait_gone(pid)
            return not kill
        time.sleep(0.05)
    _kill(pid)
    while pid_alive(pid):
        _reap(pid)
        time.sleep(0.05)
    _wait_gone(pid)
    return False


def _reap(pid: int) -> bool:
    """Reap ``pid`` if it is our child that exited; True once it is reaped (or not our child)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True


def _wait_gone(pid: int, timeout_s: float = 10.0) -> None:
    """Wait until the process ``pid`` has fully exited: reaped when it is our child, else gone from
    /proc. A multi-threaded process's main thread shows as a zombie while its other threads still exit
    and still hold its files (a FileDisk lock among them), so a zombie is not yet "gone"."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return
        except ChildProcessError:  # not our child: its parent reaps it
            if not os.path.exists(f"/proc/{pid}"):
                return
        time.sleep(0.02)


def kill(directory: str) -> list[str]:
    """SIGKILL, by PID, every node of ``directory``'s cluster.json that still runs, and reap those that
    are our children; returns the names of the nodes killed. For cleanup after a failure (a test's
    ``finally``): ``down`` is the clean way."""
    killed = []
    for e in load(directory)["nodes"]:
        if pid_alive(e.get("pid")):
            _stop_pid(e["pid"], kill=True)
            killed.append(node_name(e["id"]))
    return killed


def teardown(directory: str, remove: bool = False) -> None:
    """Stop ``directory``'s cluster whatever state it is in, for a ``finally``: :func:`down` (a ClusterError, e.g.
    no cluster.json yet, is ignored), then :func:`kill` by PID of whatever still runs, then, with ``remove``, the
    directory deleted."""
    try:
        down(directory)
    except ClusterError:
        pass
    finally:
        try:
            kill(directory)
        except ClusterError:
            pass
        if remove:
            shutil.rmtree(directory, ignore_errors=True)


def down(directory: str) -> list[tuple[str, bool]]:
    """Shut every node down cleanly, brokers first (each does a controlled shutdown while the controller
    is still up), then the controller; returns (node, stopped cleanly) per node that was running."""
    cluster = load(directory)
    out = []
    brokers = [e for e in cluster["nodes"] if e["role"] == "broker" and pid_alive(e.get("pid"))]
    for e in brokers:  # all brokers at once: each waits for its own controlled shutdown
        _kill(e["pid"], signal.SIGTERM)
        _kill(e["pid"], signal.SIGCONT)
    for e in brokers:
        out.append((node_name(e["id"]), _stop_pid(e["pid"], kill=False)))
    for node in controller_ids(cluster):
        ctrl = _entry(cluster, node)
        if pid_alive(ctrl.get("pid")):
            out.append((node_name(node), _stop_pid(ctrl["pid"], kill=False)))
    return out


def start_broker(directory: str, broker: int, wait: bool = True) -> dict:
    """Start broker ``broker`` (stopped or killed) on its recorded ports; with ``wait``, return once it is
    unfenced again. A missing or empty directory (a replaced disk) is formatted first, as an operator
    would (the returned entry then has ``"formatted": true``). ClusterError (exit 2) when it is already
    running; (exit 1) when it refuses to start on its directory."""
    cluster = load(directory)
    entry = _entry(cluster, broker)
    if pid_alive(entry.get("pid")):
        raise ClusterError(f"broker-{broker} is already running (pid {entry['pid']})", 2)
    formatted = _blank(_node_root(directory, broker))
    if formatted:
        format_node(directory, broker, cluster)
    _start_node(directory, cluster, broker)
    if wait:
        wait_ready(directory, [broker])
    return {**_entry(load(directory), broker), "formatted": formatted}


def stop_broker(directory: str, broker: int, kill: bool = False) -> bool:
    """Stop broker ``broker``: a clean shutdown, or SIGKILL with ``kill``. Returns whether it was running."""
    entry = _entry(load(directory), broker)
    if not pid_alive(entry.get("pid")):
        return False
    _stop_pid(entry["pid"], kill=kill)
    return True


# ---------------------------------------------------------------------- chaos mode: process faults
def kill_node(directory: str, node) -> bool:
    """SIGKILL ``node`` (a broker id or ``"controller"``) by PID and wait until it is gone (and reaped
    when it is our child); a paused node dies too. Returns whether it was running. Restart it with
    :func:`start_broker` / :func:`start_controller`."""
    return stop_broker(directory, node, kill=True)


def _signal_node(directory: str, node, sig: int) -> bool:
    entry = _entry(load(directory), node)
    if not pid_alive(entry.get("pid")):
        return False
    _kill(entry["pid"], sig)
    return True


def pause(directory: str, node) -> bool:
    """SIGSTOP ``node``'s process (a long GC pause, a frozen VM): it neither reads, writes nor ticks, its
    peers' connections stay open, and the kernel still accepts connections and buffers bytes for it.
    Returns whether it was running. :func:`down` and :func:`kill` handle paused nodes."""
    return _signal_node(directory, node, signal.SIGSTOP)


def resume(directory: str, node) -> bool:
    """SIGCONT ``node``'s process (after :func:`pause`); returns whether it was running."""
    return _signal_node(directory, node, signal.SIGCONT)


# ---------------------------------------------------------------------- chaos mode: link faults
#: How long (s) a control command may wait for its answer by default.
CONTROL_TIMEOUT_S = 5.0


def _require_chaos(directory: str, cluster: dict) -> None:
    if not cluster.get("chaos"):
        raise ClusterError(f"{directory} is not a chaos-mode cluster (start it with `kraftlog cluster up "
                           "--chaos`): its nodes have no control channel", 2)


def _control_port(directory: str, cluster: dict, node) -> int:
    _require_chaos(directory, cluster)
    entry = _entry(cluster, node)
    if not pid_alive(entry.get("pid")):
        raise ClusterError(f"{node_name(node)} is not running")
    run = _run_file(directory, node)
    if run is None or run.get("pid") != entry["pid"] or not run.get("control_port"):
        raise ClusterError(f"{node_name(node)} (pid {entry['pid']}) has no control port in its run file")
    return run["control_port"]


def _send_command(port: int, command: dict, deadline: float) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=max(0.01, deadline - time.monotonic()))
    try:
        sock.sendall(json.dumps(command).encode() + b"\n")
    except OSError:
        sock.close()
        raise
    return sock


def _read_answer(sock: socket.socket, deadline: float) -> dict:
    data = b""
    with sock:
        while not data.endswith(b"\n"):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            sock.settimeout(left)
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("the node closed the control connection without answering")
            data += chunk
    return json.loads(data)


def control(directory: str, node, command: dict, timeout_s: float = CONTROL_TIMEOUT_S) -> dict:
    """Send one control command to ``node`` (a broker id or ``"controller"``) of a running chaos-mode
    cluster and return its answer (see :meth:`kraftlog.net.driver.NodeDriver.control`: ``ok``, the
    node's rules and held counts, or ``error``). Only that node changes: to fault the cluster, use
    :func:`control_all`. ClusterError when the node is not running, has no control channel or does not
    answer within ``timeout_s`` (a paused node applies the command when resumed: it waits in its
    socket)."""
    cluster = load(directory)
    port = _control_port(directory, cluster, node)
    deadline = time.monotonic() + timeout_s
    try:
        return _read_answer(_send_command(port, command, deadline), deadline)
    except (OSError, ValueError) as exc:
        raise ClusterError(f"{node_name(node)}: control command {command.get('cmd')!r} failed: "
                           f"{type(exc).__name__}: {exc}") from None


def control_all(directory: str, command: dict, timeout_s: float = CONTROL_TIMEOUT_S) -> dict:
    """Send one cluster-wide control command to every running node (each applies the part that concerns
    its own links) and return ``{node: answer}`` (running nodes only). The command is sent to all nodes
    before any answer is read, so they get it within milliseconds of each other; a node that fails or
    does not answer within ``timeout_s`` (a paused one) has ``{"ok": false, "node", "error"}``.

    A command that changes rules is first checked and recorded in ``DIR/links.json`` (ClusterError exit
    2, nothing sent, when it is malformed): a node that is down now, or restarts later, starts with the
    cluster's current rules, as the simulator's rules outlive a node's restart (held messages do not:
    they die with their process)."""
    cluster = load(directory)
    _require_chaos(directory, cluster)
    if not (isinstance(command, dict) and command.get("cmd") == "status"):
        rules = LinkFilter.from_rules(read_links(directory))
        try:
            rules.apply(command)
        except ValueError as exc:
            raise ClusterError(f"bad control command {command!r}: {exc}", 2) from None
        write_json(os.path.join(directory, LINKS_FILE), rules.to_rules())
    deadline = time.monotonic() + timeout_s
    sent: dict = {}
    answers: dict = {}
    for e in cluster["nodes"]:
        node = e["id"]
        if not pid_alive(e.get("pid")):
            continue
        try:
            sent[node] = _send_command(_control_port(directory, cluster, node), command, deadline)
        except (ClusterError, OSError) as exc:
            answers[node] = {"ok": False, "node": node, "error": str(exc)}
    for node, sock in sent.items():
        try:
            answers[node] = _read_answer(sock, deadline)
        except (OSError, ValueError) as exc:
            answers[node] = {"ok": False, "node": node, "error": f"{type(exc).__name__}: {exc}"}
    return {e["id"]: answers[e["id"]] for e in cluster["nodes"] if e["id"] in answers}


def start_controller(directory: str, node=CONTROLLER) -> dict:
    """Start the controller ``node`` (the single one, or a quorum voter's id; stopped or killed) on its recorded
    port. Its directory is never formatted here: ClusterError (exit 1, the node's one-line reason) when it refuses
    to start on a directory that is missing, not formatted or not this cluster's."""
    cluster = load(directory)
    entry = _entry(cluster, node)
    if pid_alive(entry.get("pid")):
        raise ClusterError(f"{node_name(node)} is already running (pid {entry['pid']})", 2)
    _start_node(directory, cluster, node)
    return _entry(load(directory), node)


def active_controller(directory: str) -> int | None:
    """A quorum's active voter, as the running voters' run files report it (``quorum.active`` true, in the highest
    epoch: a paused former leader's file still says active); while none is, the first running voter; None when
    none runs (or the cluster has one controller)."""
    info = load(directory)
    running = [v for v in quorum_voters(info) if node_alive(info, v)]
    active = []
    for voter in running:
        quorum = (_run_file(directory, voter) or {}).get("quorum") or {}
        if quorum.get("active"):
            active.append((quorum.get("epoch", -1), voter))
    if active:  # a paused former leader still says active: the newest epoch's is the active one
        return max(active)[1]
    return running[0] if running else None


def controller_ids(cluster: dict) -> list:
    """The controller nodes of ``cluster``: ``["controller"]``, or a quorum's voter ids."""
    return quorum_voters(cluster) or [CONTROLLER]
