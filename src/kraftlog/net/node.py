"""One node of a real cluster as an OS process: ``python -m kraftlog.net.node DIR NODE``.

``DIR`` is the cluster directory that ``kraftlog cluster up`` prepared (its ``cluster.json`` names the
level, the seed, the configs and the ports); ``NODE`` is ``controller`` or a broker id. The process

* binds its listeners on 127.0.0.1 (the ports ``cluster.json`` asks for; 0 = a free port),
* opens its data directory ``DIR/<node>/`` as a :class:`~kraftlog.net.disk.FileDisk` (a restart
  recovers the logs there) and hands it to its core, which verifies the directory's ``meta.properties``
  (written by ``kraftlog cluster up``/``format``, never by the node: see
  :mod:`kraftlog.storage.meta_properties`) against ``cluster.json``'s cluster id and the node id. A
  directory that is missing, not formatted, or another node's or cluster's is refused: the process
  writes ``{"pid", "refused": <reason>}`` as its run file, prints ``<node> refused to start: <reason>``
  (one line) and exits with :data:`EXIT_REFUSED`, without creating anything. A controller thus never
  comes back with an empty metadata log after its directory was lost. A listener port it cannot bind
  (in use) is refused the same way, the run file naming the port (``port_in_use``) and the listener,
  with exit status :data:`EXIT_PORT_IN_USE`,
* seeds its ``Random`` with ``f"{seed}:{node}:{incarnation}"``, the incarnation being the start count
  the launcher keeps in ``cluster.json`` (every restart is a new incarnation, as a restarted Kafka
  broker has a new incarnation id),
* writes ``DIR/run/<node>.json`` (pid, ports, and the node's state, broker epoch and fencing as the
  node itself knows them, and its counters, Kafka's ``metadata-apply-error-count`` among them:
  at once when they change, else every second) for ``cluster status``, and logs each metadata record it
  could not apply,
* in chaos mode (``"chaos": true`` in ``cluster.json``, ``kraftlog cluster up --chaos``): keeps the
  FileDisk's shadow (a :class:`~kraftlog.net.shadow.ShadowFileDisk`, so that a fault injector can give a
  killed node its fsynced files back), runs the driver with a :class:`~kraftlog.net.link_filter.LinkFilter`
  whose rules start as ``DIR/links.json`` says (the cluster-wide rules
  :func:`kraftlog.net.cluster.control_all` keeps there, so a node restarted during a partition is still
  partitioned), and serves the driver's control channel
  on 127.0.0.1, on a free port written to its run file as ``control_port``; a broker also answers
  ``{"cmd": "disk_full", "for_ms": N}`` there (every write of its FileDisk fails with ENOSPC for N ms:
  a full file system without root; ``{"cmd": "disk_full", "full": false}`` ends it),
* writes a broker's storage faults into its log (a failed log directory, data dropped at load) and its
  run file (``log_dir_offline``, ``log_dir_failure``, ``counters``); a node that stops by itself (a broker
  whose failed log directory was not acknowledged in KIP-858's ``log.dir.failure.timeout.ms``, the
  controller when its metadata log cannot be written) exits with status 1 and the reason on its last
  log line,
* when ``cluster.json`` names an ``owner_pid`` (a fault injector such as ``kraftlog chaos`` that started
  the cluster as its own children): dies with its owner. On Linux the kernel sends it SIGKILL when the
  owner exits (``prctl(PR_SET_PDEATHSIG)``, which reaches a paused node too); elsewhere, and as a second
  guard, the node shuts down at its next wake once the owner's PID is gone. A fault injector killed by
  SIGKILL thus leaves no node behind,
* bounds its listeners as ``cluster.json``'s config says (:class:`~kraftlog.net.listener_limits.ListenerLimits`:
  ``queued.max.request.bytes``, ``max.connections``, ``max.connections.per.ip``,
  ``connections.max.idle.ms``, ``kraftlog.request.receive.timeout.ms``, ``socket.request.max.bytes``; a
  bad value exits 2 naming it) and writes what they refused and closed to its run file (``listeners``),
* runs the node under :class:`~kraftlog.net.driver.NodeDriver` until SIGTERM/SIGINT: a broker then
  shuts down cleanly (controlled shutdown, logs flushed, HWM checkpoint and clean-shutdown file
  written; at most 35 s), the controller stops at once (its metadata log is fsynced on every append).
  The signal is taken by a Python-level handler, which runs however busy the event loop is, and arms
  a timer: the process exits at the latest :data:`FORCED_EXIT_MS` after the signal.

Logs go through the :mod:`logging` module (:mod:`kraftlog.net.node_logging`: a logger per source, levels
and the text or JSON format from ``cluster.json``'s ``log.*`` configs) to stderr, one line per event,
which the launcher sends to ``DIR/<node>.log``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from random import Random, SystemRandom

from ..broker.broker import CONTROLLED_SHUTDOWN_MAX_MS, Broker
from ..controller.controller import CONTROLLER, QuorumController
from ..controller.metrics import EVENT_QUEUE_PROCESSING_TIME, EVENT_QUEUE_TIME
from ..level import Level
from ..metrics import MetricName
from ..protocol import listeners as lst
from ..protocol import wire
from ..protocol.raft_records import RaftEndpoint
from ..protocol.sasl import SaslConfig
from ..storage.meta_properties import NodeIdentityError
from ..storage.metadata_log import MetadataLogLoadError
from . import node_logging
from .credentials import ListenerCredentials
from .disk import FileDisk
from .driver import Clock, NodeDriver
from .link_filter import LinkFilter
from .listener_limits import ListenerLimits
from .listener_security import server_context
from .meta_properties import read_meta_properties
from .metrics_http import MetricsEndpoint, key_gauges
from .server_config import ServerConfig, ServerConfigError, load_server_config
from .shadow import ShadowFileDisk

HOST = "127.0.0.1"
#: In a chaos-mode cluster directory: the cluster-wide link rules (LinkFilter.to_rules), kept by
#: :func:`kraftlog.net.cluster.control_all` and read by every node at start.
LINKS_FILE = "links.json"
#: Extra time (ms) past the broker's own controlled-shutdown bound before the process gives up.
SHUTDOWN_GRACE_MS = 5000
#: After a SIGTERM/SIGINT, the process exits at the latest this long (ms) after it, whatever its event loop
#: does (a thread's timer, armed by the signal handler itself): the clean path's bound plus 5 s for closing.
FORCED_EXIT_MS = CONTROLLED_SHUTDOWN_MAX_MS + SHUTDOWN_GRACE_MS + 5000
#: The run file is rewritten at least this often (s) while the node runs, and at once when its state,
#: broker epoch, fencing or control port changes.
STATUS_INTERVAL_S = 1.0
#: Exit status of a node that refuses to start on its directory (Kafka exits 1 on a fatal start error).
EXIT_REFUSED = 1
#: The metrics endpoint among the sockets a node binds (:mod:`kraftlog.net.metrics_http`).
METRICS = "METRICS"
#: The exit status of a node that cannot bind a listener's port (in use, or not allowed): its run file
#: names the port (``port_in_use``) and the listener, and the launcher exits 2 with one line naming both.
EXIT_PORT_IN_USE = 2


#: The node id of a quorum's first controller (``cluster up --controllers N``: 3000, 3001, ...; Kafka's examples
#: number controllers so, and the simulator does too). Broker ids stay below it.
CONTROLLER_ID_BASE = 3000


def is_controller_id(node) -> bool:
    """``node`` names a controller: the single one (``controller``) or a quorum's voter (an id >= 3000)."""
    return node == CONTROLLER or (isinstance(node, int) and node >= CONTROLLER_ID_BASE)


def node_name(node) -> str:
    """``controller``, ``controller-<id>`` (a quorum's voter) or ``broker-<id>``: the name of a node's data
    directory, log and run files."""
    if node == CONTROLLER:
        return CONTROLLER
    return f"controller-{node}" if is_controller_id(node) else f"broker-{node}"


def quorum_voters(cluster: dict) -> list[int]:
    """The ids of a cluster's controller quorum (``controller.quorum.voters``), [] with the single controller."""
    return sorted(e["id"] for e in cluster["nodes"] if e["role"] == "controller" and isinstance(e["id"], int))


def _bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host`` ("" : every interface) and ``port`` (0: a free one); OSError when the
    address is in use or not this host's."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.setblocking(False)
    return sock


def write_json(path: str, data, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` as JSON, atomically (tmp file + rename): a reader sees the old file
    or the new one, never a torn one (cluster.json, the run files). ``mode``: the file's permissions."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    os.fchmod(fd, mode)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def read_links(directory: str) -> dict | None:
    """The rules of ``DIR/links.json``, or None when there are none (or the file cannot be read)."""
    try:
        with open(os.path.join(directory, LINKS_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


#: prctl(2)'s PR_SET_PDEATHSIG (linux/prctl.h).
_PR_SET_PDEATHSIG = 1


def die_with_owner(owner_pid: int) -> bool:
    """Ask the kernel to SIGKILL this process when its parent, the owner ``owner_pid``, exits (Linux's
    ``prctl(PR_SET_PDEATHSIG, SIGKILL)``; returns False where that is not available). Exits at once
    (status 3) when the parent is not ``owner_pid`` any more: the owner died before the request."""
    armed = False
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            armed = ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0
        except (OSError, AttributeError):
            armed = False
    if os.getppid() != owner_pid:
        sys.stderr.write(f"owner pid {owner_pid} is gone (parent is {os.getppid()}): not starting\n")
        sys.exit(3)
    return armed


#: mallopt(3) parameters (malloc.h) and the values a node process sets (:func:`tune_malloc`).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MALLOC_MMAP_THRESHOLD = 32 << 20  # glibc's largest (HEAP_MAX_SIZE / 2 on 64-bit)
MALLOC_TRIM_THRESHOLD = 128 << 20


def tune_malloc() -> bool:
    """Keep freed memory in the process (glibc's ``mallopt``; returns False where that is not available).

    A node's large buffers (a request or response frame of up to about 1 MiB, the record batches in it,
    a segment read) live for one event. With glibc's defaults, blocks above the (dynamic) mmap threshold
    are mmap(2)ed and unmapped on free, and the heap top is trimmed back to the kernel above 128 KiB, so
    each new buffer is fresh memory: its pages are faulted in and zeroed, which made copying a 1 MiB
    batch cost ~1 ms instead of ~0.15 ms here. Blocks up to 32 MiB now come from the heap and the heap
    keeps up to 128 MiB free (``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD``)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, MALLOC_TRIM_THRESHOLD))


def _advertised_host(host: str) -> str:
    """The host a broker advertises for a listener bound to ``host`` (every interface: this host's name, as
    Kafka advertises the canonical host name)."""
    return host or socket.gethostname()


def owner_alive(owner_pid: int) -> bool:
    """Whether the owner's PID still runs (the watchdog's second guard)."""
    try:
        os.kill(owner_pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class NodeSpec:
    """What one node process runs: from ``cluster.json`` (:func:`spec_from_cluster`, ``kraftlog cluster``) or
    from a ``server.properties`` (:func:`spec_from_server_config`, ``kraftlog server``).

    ``node``: the core's node id (:data:`~kraftlog.controller.controller.CONTROLLER` for the single controller);
    ``name``: its client id and file name (``broker-1``, ``controller-3000``); ``root``: its data directory;
    ``binds``: listener role (``CLIENT``, ``INTERNAL``, ``CONTROLLER``, ``METRICS``) -> (host, port) to bind
    (port 0: a free one); ``advertise``: a broker's role -> (host, port) it registers (port 0: the bound one);
    ``controllers``: controller id -> (host, port) (static voters); ``voters``: the quorum's static ids ([] for the
    single controller and for a dynamic quorum); ``cluster_id``: None to take it from the directory's
    meta.properties; ``seed``: the text its Random is seeded with (None: the OS's randomness); ``run_path``: its
    run file (None: none); ``chaos``, ``owner_pid``, ``links_dir``: a fault injector's (``cluster.json``)."""

    node: object
    name: str
    controller: bool
    root: str
    level: Level
    config: dict
    binds: dict
    advertise: dict
    controllers: dict
    voters: list
    #: KIP-853's dynamic quorum: ``controller.quorum.bootstrap.servers`` by the ids the node gives them (Kafka's
    #: -2, -3, ...) -> (host, port); the voters are then in the bootstrap checkpoint and the log, not ``voters``
    bootstrap: dict = field(default_factory=dict)
    #: a controller's own controller listener (name, host, port): what it tells the quorum it listens on
    listener: tuple | None = None
    cluster_id: str | None = None
    seed: str | None = None
    run_path: str | None = None
    incarnation: int | None = None
    chaos: bool = False
    owner_pid: int | None = None
    links_dir: str | None = None
    #: listener role -> its SASL settings (:class:`~kraftlog.net.server_config.SaslListener`), for a
    #: ``SASL_PLAINTEXT`` listener
    sasl: dict = field(default_factory=dict)
    #: listener role -> its TLS settings (:class:`~kraftlog.net.listener_security.TlsListener`), for an ``SSL``
    #: or ``SASL_SSL`` listener
    tls: dict = field(default_factory=dict)
    #: listener role (``CONTROLLER``, ``INTERNAL``) -> how this node connects to the other nodes' listener of that
    #: role (:class:`~kraftlog.net.listener_security.PeerSecurity`); none: PLAINTEXT
    peers: dict = field(default_factory=dict)


#: The id of ``controller.quorum.bootstrap.servers``' first server, the next ones -3, -4, ... (Kafka's
#: ``QuorumConfig.parseBootstrapServers``): a bootstrap server is an address whose node id is unknown.
BOOTSTRAP_ID_BASE = -2


def spec_from_cluster(directory: str, node) -> NodeSpec:
    """The spec of ``node`` of the ``kraftlog cluster`` directory ``directory``: its ``DIR/<node>.properties``
    (written by the launcher from cluster.json, :mod:`kraftlog.net.cluster_properties`) read as ``kraftlog server``
    reads one, and from cluster.json what a fault injector adds: the cluster id it checks, its seed and
    incarnation, its run file, chaos mode, owner and link rules. SystemExit when the node is not in cluster.json
    or its properties file is not one kraftlog can run (one line, exit 2)."""
    with open(os.path.join(directory, "cluster.json")) as f:
        cluster = json.load(f)
    entry = next((e for e in cluster["nodes"] if e["id"] == node), None)
    if entry is None:
        raise SystemExit(f"node {node!r} is not in cluster.json")
    path = os.path.join(directory, f"{node_name(node)}.properties")
    try:
        server = load_server_config(path)
    except ServerConfigError as exc:
        print(f"{node_name(node)}: {exc}", file=sys.stderr, flush=True)  # the message names the file
        raise SystemExit(2) from None
    spec = spec_from_server_config(server)
    if spec.node != node or spec.name != node_name(node):
        print(f"{node_name(node)}: {path} describes {spec.name}, not {node_name(node)}", file=sys.stderr, flush=True)
        raise SystemExit(2)
    spec.cluster_id = cluster["cluster_id"]
    spec.seed = str(cluster["seed"])
    spec.run_path = os.path.join(directory, "run", f"{node_name(node)}.json")
    spec.incarnation = entry.get("incarnation")
    spec.chaos = bool(cluster.get("chaos", False))
    spec.owner_pid = cluster.get("owner_pid") or None
    spec.links_dir = directory
    return spec


def spec_from_server_config(server: ServerConfig) -> NodeSpec:
    """The spec of a node run from its ``server.properties`` (:mod:`kraftlog.net.server_config`): a
    controller's listener becomes the ``CONTROLLER`` role; a broker's inter-broker listener ``INTERNAL``
    and its other one ``CLIENT`` (with one listener for both, ``INTERNAL`` serves clients too and is
    advertised under both names); ``metrics.port`` on the host of the node's first listener."""
    binds: dict = {}
    advertise: dict = {}
    listener = None
    if server.is_controller:
        ep = server.listeners[server.controller_listener]
        binds[lst.CONTROLLER] = (ep.host, ep.port)
        listener = (ep.name, ep.host, ep.port)
    else:
        inter = server.inter_broker_listener
        client = server.client_listener()
        assert inter is not None and client is not None  # a broker's (server_config)
        binds[lst.INTERNAL] = (server.listeners[inter].host, server.listeners[inter].port)
        if client != inter:
            binds[lst.CLIENT] = (server.listeners[client].host, server.listeners[client].port)
        for role, name in ((lst.INTERNAL, inter), (lst.CLIENT, client)):
            advertise[role] = (server.advertised[name].host, server.advertised[name].port)
    # each listener the node binds, by role, with its security (server_config: any listener may be secured)
    names = ({lst.CONTROLLER: server.controller_listener} if server.is_controller else
             {lst.INTERNAL: server.inter_broker_listener, lst.CLIENT: server.client_listener()})
    sasl = {role: server.sasl[name] for role, name in names.items() if role in binds and name in server.sasl}
    tls = {role: server.tls[name] for role, name in names.items() if role in binds and name in server.tls}
    peers = {lst.CONTROLLER: server.controller_peer, lst.INTERNAL: server.inter_broker_peer}
    if server.metrics_port is not None:
        binds[METRICS] = (next(iter(server.listeners.values())).host, server.metrics_port)
    if server.single_controller:  # kraftlog's single controller, no Raft: the brokers know it as `controller`
        (address,) = server.voters.values()
        return NodeSpec(
            node=CONTROLLER if server.is_controller else server.node_id, name=server.name,
            controller=server.is_controller, root=server.data_dir, level=server.level, config=dict(server.config),
            binds=binds, advertise=advertise, controllers={CONTROLLER: address}, voters=[], sasl=sasl, tls=tls,
            peers=peers)
    return NodeSpec(
        node=server.node_id, name=server.name, controller=server.is_controller, root=server.data_dir,
        level=server.level, config=dict(server.config), binds=binds, advertise=advertise,
        controllers=dict(server.voters), voters=sorted(server.voters), listener=listener,
        bootstrap={BOOTSTRAP_ID_BASE - i: address for i, address in enumerate(server.bootstrap_servers)},
        sasl=sasl, tls=tls, peers=peers)


async def _main(spec: NodeSpec) -> int:
    began = time.monotonic()
    node, name = spec.node, spec.name
    try:  # the logging module, as the config's log.* keys say (kraftlog.net.node_logging)
        node_log = node_logging.configure(name, spec.config)
    except ValueError as exc:
        print(f"{name}: {exc}", file=sys.stderr, flush=True)
        return 2
    log = node_log.info
    broker_log = logging.getLogger(node_logging.BROKER).info
    metadata_log = logging.getLogger(node_logging.METADATA).error
    recovery_log = logging.getLogger(node_logging.UNCLEAN_RECOVERY).info
    driver_log = logging.getLogger(node_logging.DRIVER).info
    storage_log = logging.getLogger(node_logging.STORAGE).warning
    owner = spec.owner_pid
    if owner:
        die_with_owner(int(owner))
    level = spec.level
    root = spec.root
    run_path = spec.run_path
    if run_path is not None:
        os.makedirs(os.path.dirname(run_path), exist_ok=True)

    def write_run(data: dict) -> None:
        if run_path is not None:
            write_json(run_path, data)

    def refuse(reason: str) -> int:
        node_log.error(f"refused to start: {reason}")
        write_run({"pid": os.getpid(), "refused": reason, "updated": time.time()})
        return EXIT_REFUSED

    if not os.path.isdir(root):  # nothing is created for a lost directory: it stays as the operator left it
        return refuse(f"{root} does not exist: not formatted (no meta.properties)")
    try:
        identity = read_meta_properties(root) or {}
    except ValueError as exc:
        return refuse(str(exc))
    cluster_id = spec.cluster_id if spec.cluster_id is not None else identity.get("cluster.id")
    if cluster_id is None:
        return refuse(f"{root} is not formatted (no meta.properties): run `kraftlog storage format` first")
    incarnation = spec.incarnation
    if not incarnation:  # a cluster.json written before the launcher counted starts
        try:
            incarnation = int(identity.get("incarnation", "0")) + 1
        except ValueError:
            incarnation = 1
    rng = Random(f"{spec.seed}:{node}:{incarnation}" if spec.seed is not None else SystemRandom().getrandbits(64))

    socks = {}
    controller = spec.controller
    voters = spec.voters
    for listener, (host, port) in spec.binds.items():
        try:
            socks[listener] = _bind(host, port or 0)
        except OSError as exc:
            for sock in socks.values():
                sock.close()
            reason = f"cannot bind its {listener} listener to {host or '*'}:{port}: {exc.strerror or exc}"
            node_log.error(f"refused to start: {reason}")
            write_run({"pid": os.getpid(), "refused": reason, "port_in_use": port,
                       "listener": listener, "updated": time.time()})
            return EXIT_PORT_IN_USE
    metrics_sock = socks.pop(METRICS, None)
    ports = {k: s.getsockname()[1] for k, s in socks.items()}
    config = dict(spec.config)
    try:
        limits = ListenerLimits.from_config(config)
    except ValueError as exc:
        node_log.error(f"config: {exc}")
        return 2
    chaos = spec.chaos
    # a quorum's nodes (voters and the brokers observing them) keep the KRaft log: Raft batches
    disk = (ShadowFileDisk if chaos else FileDisk)(root, log=storage_log, raft_metadata=bool(voters or spec.bootstrap))
    clock = Clock()
    now = clock.now_ms()
    try:
        if controller:
            own = () if spec.listener is None else (RaftEndpoint(
                spec.listener[0], _advertised_host(spec.listener[1]), spec.listener[2] or ports[lst.CONTROLLER]),)
            core = QuorumController(config, level, disk, rng, now, cluster_id, verify_identity=True,
                                    node_id=None if node == CONTROLLER else int(node),
                                    quorum_voters=voters if voters else None, quorum_bootstrap=sorted(spec.bootstrap),
                                    listeners=own)
            port, internal = ports[lst.CONTROLLER], None
        else:
            advertised = {}
            for role, (host, adv_port) in spec.advertise.items():
                bound = ports.get(role, ports[lst.INTERNAL])  # one listener for clients and brokers
                advertised[role] = f"{role}://{_advertised_host(host)}:{adv_port or bound}"
            config["advertised.listeners"] = ",".join(advertised[r] for r in sorted(advertised))
            core = Broker(int(node), config, level, disk, rng, now, cluster_id, verify_identity=True,
                          controller_quorum=voters or sorted(spec.bootstrap) or None,
                          quorum_static_voters=bool(voters))
            port, internal = ports.get(lst.CLIENT, ports[lst.INTERNAL]), ports[lst.INTERNAL]
    except (NodeIdentityError, MetadataLogLoadError, ValueError) as exc:  # not this node's, a log not whole
        disk.close()
        for sock in socks.values():
            sock.close()
        return refuse(f"{root}: {exc}")
    controller_addresses = {**spec.controllers, **spec.bootstrap}
    raft = (core.quorum.raft if core.quorum is not None else None) if controller else getattr(core.loader, "raft", None)

    def address_of(peer):
        """(host, port, the listener's role) of a peer node, None when unknown yet."""
        if peer in controller_addresses:  # the single controller, a static voter or a bootstrap server
            return (*controller_addresses[peer], lst.CONTROLLER)
        found = raft.endpoint_of(peer) if raft is not None and isinstance(peer, int) else None
        if found is not None:  # a voter of a dynamic quorum, or a leader an answer named (KIP-853)
            return (*found, lst.CONTROLLER)
        reg = core.image.brokers.get(peer)
        endpoint = None if reg is None else reg.endpoint(lst.INTERNAL)
        return None if endpoint is None else (*endpoint, lst.INTERNAL)

    def disk_full(command: dict) -> dict:
        args = {k: v for k, v in command.items() if k != "cmd"}
        if set(args) - {"for_ms", "full"}:
            raise ValueError(f"disk_full takes for_ms or full, not {sorted(set(args) - {'for_ms', 'full'})}")
        if args.get("full", True) is False:
            disk.set_full(False)
            return {"full": False}
        for_ms = args.get("for_ms")
        if for_ms is not None and (not isinstance(for_ms, int) or isinstance(for_ms, bool) or for_ms < 1):
            raise ValueError(f"disk_full: for_ms must be an integer >= 1, got {for_ms!r}")
        disk.set_full(True, None if for_ms is None else for_ms / 1000)
        storage_log("injected ENOSPC: every write fails" + ("" if for_ms is None else f" for {for_ms} ms"))
        return {"full": True, "for_ms": for_ms}

    link_filter = None
    if chaos:
        link_filter = LinkFilter.from_rules(read_links(spec.links_dir or root))
        if link_filter.active:
            driver_log(f"link filter rules from {LINKS_FILE}: {json.dumps(link_filter.to_rules(), sort_keys=True)}")
    sasl = {role: SaslConfig(listener.mechanisms, ListenerCredentials(listener.plain_users, lambda: core.image),
                             nonce=lambda: secrets.token_urlsafe(18), failed_delay_ms=listener.failed_delay_ms)
            for role, listener in spec.sasl.items()}
    driver = NodeDriver(core, socks, address_of, driver_log, client_id=name, clock=clock, link_filter=link_filter,
                        control_handlers={"disk_full": disk_full} if chaos and not controller else None,
                        limits=limits, sasl=sasl,
                        tls={role: server_context(listener) for role, listener in spec.tls.items()},
                        peer_security={role: peer for role, peer in spec.peers.items() if peer.protocol != "PLAINTEXT"})
    for role in sasl:  # Kafka's socket-server-metrics of the listener
        for i, attribute in enumerate(("successful-authentication-total", "failed-authentication-total")):
            core.metrics.gauge(MetricName("kafka.server", "socket-server-metrics", None, (("listener", role),),
                                          attribute=attribute),
                               lambda role=role, i=i: driver.authentications[role][i])
    started = time.time()

    written = {"key": None, "at": 0.0}
    #: seconds from the node's start (``_main``, kraftlog imported) to the broker's first published metadata image
    #: (it caught up with the controller's metadata log): the metadata catch-up of a restart (benchmarks/)
    published_after: dict[str, float | None] = {"s": None}

    def write_status(force: bool = True) -> None:
        # The run file is rewritten when what `cluster status` and `wait_ready` read changes (state, broker
        # epoch, fencing, control port), and otherwise at most once per STATUS_INTERVAL_S: on_wake runs
        # after every event, and a file write + rename per request was the largest cost under load.
        if run_path is None:  # `kraftlog server`: no run file (its state is in its log and on /metrics)
            return
        errors = core.metadata_apply_errors.count
        if not controller:
            published = core.publisher.published
            if published and published_after["s"] is None:
                published_after["s"] = round(time.monotonic() - began, 3)
            key = (core.state, core.broker_epoch, core.fenced, driver.control_port, core.log_dir_offline, errors,
                   published)
        else:
            quorum = core.quorum
            key = (driver.control_port, errors) if quorum is None else (
                driver.control_port, errors, quorum.raft.leader_id, quorum.raft.epoch, quorum.is_active,
                quorum.raft.voter_set().voter_ids, quorum.raft.is_voter())
        now = time.monotonic()
        if not force and key == written["key"] and now - written["at"] < STATUS_INTERVAL_S:
            return
        written["key"], written["at"] = key, now
        status = {"pid": os.getpid(), "port": port, "internal_port": internal, "incarnation": incarnation,
                  "started": started, "updated": time.time(), "chaos": chaos, "control_port": driver.control_port,
                  "metrics_port": metrics_port, "gauges": key_gauges(core.metrics),
                  "counters": {"metadata-apply-error-count": errors},
                  "listeners": driver.listener_stats()}
        if not controller:
            status.update(metadata_offset=core.image.offset, metadata_published_after_s=published_after["s"])
            status.update(state=core.state, broker_epoch=core.broker_epoch, fenced=core.fenced,
                          log_dir_offline=core.log_dir_offline, log_dir_failure=core.log_dir_failure,
                          counters={"storage-error-count": core.storage_error_count,
                                    "dropped-at-load-count": len(core.dropped_at_load),
                                    "batches-recovered-at-load": core.log_manager.batches_recovered,
                                    "batches-trusted-at-load": core.log_manager.batches_trusted,
                                    "segments-unread-at-load": core.log_manager.segments_unread,
                                    "segments-deleted": core.log_manager.segments_deleted,
                                    "cleanings": core.log_manager.cleaner.cleanings,
                                    "cleanings-aborted": core.log_manager.cleaner.aborted,
                                    "cleaning-in-progress": int(core.log_manager.cleaner.cleaning is not None),
                                    "metadata-apply-error-count": errors,
                                    "stray-dir-count": len(core.strays)})
        elif core.quorum is None:
            single = core.single
            status.update(state="RUNNING", metadata_offset=core.end_offset,
                          metadata_log_start_offset=single.log.start_offset if single is not None else 0)
        else:  # a voter: its Raft state (what `metadata-quorum describe` and the fault injectors read)
            raft = core.quorum.raft
            status.update(state="RUNNING", metadata_offset=raft.high_watermark - 1,
                          metadata_log_start_offset=raft.log_start_offset,
                          quorum={"leader_id": raft.leader_id, "epoch": raft.epoch, "active": core.quorum.is_active,
                                  "state": raft.state.name, "high_watermark": raft.high_watermark,
                                  "log_end_offset": raft.log.end_offset, "voter": raft.is_voter(),
                                  "voters": list(raft.voter_set().voter_ids), "kraft_version": raft.kraft_version})
        write_run(status)

    def on_wake() -> None:
        if owner and stop["requested_ms"] is None and not owner_alive(int(owner)):
            log(f"owner pid {owner} is gone: shutting down")
            on_signal(signal.SIGTERM)
        for line in core.take_log_lines():  # a broker's storage notes; the controller's metadata log and snapshots
            (broker_log if not controller else log)(line)
        for line in core.metadata_apply_errors.take():  # Kafka's metadata fault handler logs each one
            metadata_log(line)
        write_status(force=False)
        if controller:
            for ev in core.urm.take_events():  # the unclean recoveries' steps (KIP-966), into the node's log
                recovery_log(f"unclean recovery of {ev.partition}: {ev.kind}: {ev.detail}")

    if controller:  # Kafka's ControllerEventManager histograms: only the driver sees an event wait and run
        driver.event_timers = (core.metrics.histogram(EVENT_QUEUE_TIME),
                               core.metrics.histogram(EVENT_QUEUE_PROCESSING_TIME))
    endpoint = MetricsEndpoint(lambda: core.metrics)
    metrics_port = await endpoint.start(metrics_sock) if metrics_sock is not None else None
    supported = wire.supported_api_versions(core.level)
    await driver.start(lambda listener: lst.listener_api_versions(listener, supported))
    if chaos:
        await driver.start_control(HOST)
    write_status()
    log(f"started (incarnation {incarnation}, level {level.label}, ports {ports}, pid {os.getpid()}"
        + (f", metrics on http://{metrics_sock.getsockname()[0]}:{metrics_port}/metrics"
           if metrics_sock is not None else "")
        + (f", chaos mode, control port {driver.control_port})" if chaos else ")"))

    stop = {"requested_ms": None}
    loop = asyncio.get_running_loop()

    def on_signal(signum: int) -> None:
        if stop["requested_ms"] is not None:
            return
        stop["requested_ms"] = clock.now_ms()
        log(f"signal {signal.Signals(signum).name}: shutting down")
        if not controller:
            core.begin_controlled_shutdown(clock.now_ms())
        driver.kick()

    forced = {"armed": False}

    def force_exit() -> None:  # on the timer's thread: the loop did not finish in time
        log(f"still running {FORCED_EXIT_MS} ms after the signal: exiting without a clean shutdown")
        os._exit(1)

    def on_os_signal(signum: int, frame) -> None:
        # A Python-level handler (signal.signal), not loop.add_signal_handler: it runs on the main thread
        # between two bytecodes however busy the event loop is, so a signal is never lost to a loop that
        # does not get back to its selector; the shutdown itself runs on the loop (call_soon_threadsafe
        # also wakes it). The timer ends the process if the clean shutdown does not.
        if not forced["armed"]:
            forced["armed"] = True
            timer = threading.Timer(FORCED_EXIT_MS / 1000, force_exit)
            timer.daemon = True
            timer.start()
        loop.call_soon_threadsafe(on_signal, signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_os_signal)

    def done() -> bool:
        if getattr(core, "fatal_error", None) is not None:
            return True  # the node stopped itself (a failed log directory or metadata log): exit 1
        requested = stop["requested_ms"]
        if requested is None:
            return False
        if controller or core.stopped:
            return True
        return clock.now_ms() - requested > CONTROLLED_SHUTDOWN_MAX_MS + SHUTDOWN_GRACE_MS

    fatal = None
    try:
        await driver.run_until(done, on_wake=on_wake)  # a broker's fatal error stops it too (core.stopped)
    finally:
        driver.stopping = True
        fatal = getattr(core, "fatal_error", None)
        clean = controller or (core.stopped and fatal is None)
        for line in core.take_log_lines():
            (broker_log if not controller else log)(line)
        write_status()
        await driver.close()
        await endpoint.close()
        disk.close()
        log(f"stopped: {fatal}" if fatal
            else "stopped" + ("" if clean else " without completing the controlled shutdown"))
    return 1 if fatal else 0


def run(spec: NodeSpec) -> int:
    """Run the node ``spec`` describes until it stops (its exit status): glibc's malloc tuned, uvloop when
    installed."""
    tune_malloc()
    try:
        import uvloop  # measured here: about 2x asyncio's request rate on framing
        runner = uvloop.run
    except ImportError:
        runner = asyncio.run
    return runner(_main(spec))


def run_server(path: str) -> int:
    """``kraftlog server CONFIG.properties``: run the node a properties file describes
    (:mod:`kraftlog.net.server_config`). A file kraftlog cannot run a node from exits 2 with one line naming
    the key; a port in use exits 2 (:data:`EXIT_PORT_IN_USE`) with one line naming it; an unformatted or
    foreign directory exits 1 (:data:`EXIT_REFUSED`)."""
    try:
        server = load_server_config(path)
    except ServerConfigError as exc:
        print(f"kraftlog server: {path}: {exc}", file=sys.stderr, flush=True)
        return 2
    return run(spec_from_server_config(server))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--config":
        return run_server(argv[1])
    if len(argv) != 2:
        print("usage: python -m kraftlog.net.node DIR controller|NODE_ID | --config SERVER.properties",
              file=sys.stderr)
        return 2
    directory, node = argv
    node = node if node == CONTROLLER else int(node)  # a broker's id, or a quorum voter's (>= 3000)
    return run(spec_from_cluster(directory, node))


if __name__ == "__main__":
    sys.exit(main())
