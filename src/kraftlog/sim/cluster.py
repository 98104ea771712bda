"""The deterministic simulator: a whole cluster in one thread, on virtual time.

``SimCluster`` owns the event queue, the seeded network (per-message delay drawn from a range, FIFO
per directed link like a TCP connection, cut links, partitions, held messages by API name), the
SimDisks, and the faults (crash with page-cache or disk loss, clean shutdown, restart, controller
failover, a full disk, flipped bytes in a stopped broker's log). A broker that stops by itself (its
failed log directory was not acknowledged in time: ``Broker.fatal_error``) leaves like a process that
exits: removed, its page cache kept. It formats every SimDisk as ``kafka-storage.sh format`` does (a
``meta.properties`` value: this cluster's id, the node id, a directory id) and the nodes verify it when
they start: a broker whose disk was replaced (``crash(..., "all")``) is formatted again before its
restart, as an operator formats a new disk, while the controller's is not: it refuses to start on an
unformatted disk (:attr:`refused`), as a KRaft controller must rather than come back with an empty
metadata log. It drives the sans-I/O nodes through their contract only: ``deliver``, ``tick``,
``poll``, ``next_deadline``, and ``connection_failed`` when a request targets a node that is down.

Client connections: a client's ``ConnectionSetup`` (see ``kraftlog.protocol.node``) travels like a
message (delay, FIFO per link, cuts, holds) but is never handed to its destination: on arrival at a live
node the network sends the reply back (a TCP handshake, one more delay, lost on a cut reverse link); a
setup for a node that is down is refused (``connection_failed``), one over a cut link is lost, so the
client waits for its connection setup timeout.

With ``wire=True`` every message goes through ``kraftlog.protocol.wire.roundtrip`` (Kafka bytes via
kio and back), so mapping bugs surface in simulation too.
"""

from __future__ import annotations

import heapq
import random

from ..broker.broker import Broker, derived_directory_id
from ..controller.controller import CONTROLLER, QuorumController
from ..level import Level
from ..links import LinkRules, matches
from ..protocol.messages import Envelope
from ..protocol.node import ConnectionSetup
from ..protocol.raft_records import Voter, VotersRecord
from ..raft.bootstrap import format_quorum
from ..storage.disk import SimDisk
from ..storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    NodeIdentityError,
    format_disk,
    kafka_uuid,
    new_directory_id,
    read_identity,
)
from ..storage.metadata_log import MetadataLogLoadError
from .history import FLUSH_LINES, History

#: The node id of a quorum's first controller (Kafka's examples number controllers 3000, 3001, ...).
CONTROLLER_ID_BASE = 3000

DELIVER, TICK, CALL = 0, 1, 2


class SimCluster:
    """A simulated cluster of ``brokers`` brokers (ids 0..n-1) and one controller.

    ``config``: cluster-wide configs (Kafka names → strings) given to every node; ``writeback_ms``:
    page-cache writeback delay (None = never); ``delay_ms``: (min, max) network delay per message."""

    def __init__(self, brokers: int, config: dict, level: Level, seed: int, *, writeback_ms: int | None = 30000,
                 delay_ms: tuple[int, int] = (1, 5), wire: bool = False, controllers: int = 1,
                 kraft_version: int = 0) -> None:
        self.n_brokers = brokers
        #: the controllers' node ids: ``"controller"`` for the one controller, else a KRaft quorum of
        #: ``controllers`` voters, ids 3000, 3001, ... (``controller.quorum.voters``)
        self.controller_ids: list = [CONTROLLER] if controllers == 1 else [
            CONTROLLER_ID_BASE + i for i in range(controllers)]
        self.quorum_ids: list[int] = [] if controllers == 1 else list(self.controller_ids)
        #: a quorum's kraft.version: 0 static voters, 1 voters with directory ids (KIP-853)
        self.kraft_version = kraft_version
        self.config = {k: str(v) for k, v in config.items()}
        self.level = level
        self.seed = seed
        self.delay_min, self.delay_max = delay_ms
        self.writeback_ms = writeback_ms
        self.net_rng = random.Random(f"net:{seed}")
        self.node_seeds = random.Random(f"nodes:{seed}")
        self.now = 0
        self.queue: list = []
        self._seq = 0
        self.nodes: dict = {}
        self.incarnation: dict = {}
        self.scheduled: dict = {}
        self.disks: dict = {b: SimDisk(writeback_ms) for b in range(brokers)}
        for cid in self.controller_ids:
            self.disks[cid] = SimDisk(writeback_ms)
        # The cluster's identity and each disk's format draw from Randoms of their own, so that formatting
        # changes no other draw (and no history digest).
        self.cluster_id = kafka_uuid(new_directory_id(random.Random(f"cluster:{seed}")))
        self._formats: dict = {}
        for node_id in self.controller_ids + list(range(brokers)):
            self.format(node_id)
        if self.quorum_ids and kraft_version == 1:
            self._format_initial_controllers()
        #: Starts a node refused (its disk's meta.properties): (simulated ms, node id, the one-line reason).
        self.refused: list[tuple[int, object, str]] = []
        #: isolate/partition/cut/heal/hold rules, the same object the TCP driver's LinkFilter uses
        self.links = LinkRules()
        self.held: list = []  # delivery payloads kept by a hold, in their original order
        #: Paused nodes (``pause``): node id -> the events that wait for its resume, in arrival order
        #: ((DELIVER, payload) for a message, (CALL, fn) for a network notification).
        self.paused: dict = {}
        self.link_last: dict = {}
        self.history = History()
        self.messages_delivered = 0
        self.wire = wire
        if wire:
            from ..protocol.wire import roundtrip
            self._roundtrip = roundtrip
        #: node id -> callable(sim, node_id), run after that node handled an event (drivers' history hooks)
        self.observers: dict = {}
        #: message type -> callable(sim, envelope), run before such a message is delivered
        self.message_observers: dict = {}
        for cid in self.controller_ids:
            self.start_controller(cid)
        for b in range(brokers):
            self.start_broker(b)

    # ================================================================= nodes
    def _rng_for(self, node_id) -> random.Random:
        return random.Random(f"{node_id}:{self.node_seeds.getrandbits(64)}")

    def format(self, node_id) -> None:
        """Format ``node_id``'s disk (``kafka-storage.sh format``): this cluster's id, the node id and a
        directory id, as a ``meta.properties`` value. A broker's first directory id is the one a broker
        derived before the simulator formatted disks (:func:`kraftlog.broker.broker.derived_directory_id`,
        which its log lines name: histories stay as they were); a disk formatted again (a replaced one) gets
        a new id from a Random of the node and the format's count, as ``kafka-storage.sh format`` draws one."""
        n = self._formats[node_id] = self._formats.get(node_id, 0) + 1
        if n == 1 and node_id not in self.controller_ids:
            directory_id = derived_directory_id(node_id)
        else:
            directory_id = new_directory_id(random.Random(f"format:{self.seed}:{node_id}:{n}"))
        format_disk(self.disks[node_id], MetaProperties(self.cluster_id, str(node_id), directory_id), self.now)

    def _format_initial_controllers(self) -> None:
        """``kafka-storage format --initial-controllers`` on every controller of a kraft.version 1 quorum: the
        bootstrap checkpoint names the voters with their directory ids."""
        voters = VotersRecord(tuple(
            Voter(cid, read_identity(self.disks[cid], str(cid), self.cluster_id).directory_id)
            for cid in self.quorum_ids))
        for cid in self.quorum_ids:
            format_quorum(self.disks[cid], self.now, voters)

    def start_controller(self, node_id=CONTROLLER) -> None:
        """Start controller ``node_id`` over its disk; NodeIdentityError (nothing started) when the disk is not
        formatted or belongs to another node or cluster. A controller of a quorum is a voter of
        ``controller.quorum.voters`` (kraft.version 0) with its disk's directory id."""
        disk = self.disks[node_id]
        if self.quorum_ids and disk.read_value(META_PROPERTIES) is None and not disk.list(""):
            # a quorum controller's replaced disk is formatted again by the operator: a new directory id, and
            # at kraft.version 1 no initial voters (--no-initial-controllers): it comes back as an observer.
            # At kraft.version 0 it is a static voter with an empty log (the unsafe case KIP-853 fixes).
            self.format(node_id)
        if not self.quorum_ids:
            node = QuorumController(self.config, self.level, disk, self._rng_for(node_id), self.now,
                                    self.cluster_id, verify_identity=True)
        else:
            identity = read_identity(disk, str(node_id), self.cluster_id)
            node = QuorumController(self.config, self.level, disk, self._rng_for(node_id), self.now,
                                    self.cluster_id, verify_identity=True, node_id=node_id,
                                    quorum_voters=self.quorum_ids if self.kraft_version == 0 else None,
                                    directory_id=identity.directory_id, quorum_bootstrap=self.quorum_ids)
        self._add(node_id, node)

    def start_broker(self, broker_id: int) -> None:
        """Start broker ``broker_id`` over its disk, formatting it first when it is blank (a replaced disk:
        the operator's format); NodeIdentityError when it belongs to another node or cluster."""
        if self.disks[broker_id].read_value(META_PROPERTIES) is None and not self.disks[broker_id].list(""):
            try:
                self.format(broker_id)
            except OSError as exc:  # a full file system (disk_full): no format, no start
                raise NodeIdentityError(f"not formatted: formatting its replaced disk failed: {exc}") from None
        node = Broker(broker_id, self.config, self.level, self.disks[broker_id], self._rng_for(broker_id), self.now,
                      self.cluster_id, verify_identity=True, controller_quorum=self.quorum_ids or None)
        self._add(broker_id, node)

    def add_client(self, node) -> None:
        self._add(node.node_id, node)

    def _add(self, node_id, node) -> None:
        self.nodes[node_id] = node
        self.incarnation[node_id] = self.incarnation.get(node_id, 0) + 1
        self.scheduled.pop(node_id, None)
        self._after(node_id, node)

    def alive(self, node_id) -> bool:
        return node_id in self.nodes

    @property
    def controller(self) -> QuorumController | None:
        """The controller that serves: the one controller (when up), or a quorum's active controller (None
        while there is none)."""
        if not self.quorum_ids:
            return self.nodes.get(CONTROLLER)
        active = [n for cid in self.quorum_ids if (n := self.nodes.get(cid)) is not None and n.is_active
                  and n.fatal_error is None]
        return max(active, key=lambda n: n.quorum.active_epoch) if active else None

    def controllers(self) -> list[QuorumController]:
        """The running controllers, by id."""
        return [n for cid in self.controller_ids if (n := self.nodes.get(cid)) is not None]

    def active_controller_id(self):
        """Where a client's request to ``"controller"`` goes in a quorum: the active controller, or the first
        running voter while there is none (it answers NOT_CONTROLLER), or the first voter when all are down."""
        ctl = self.controller
        if ctl is not None:
            return ctl.node_id
        running = [cid for cid in self.quorum_ids if cid in self.nodes]
        return running[0] if running else self.quorum_ids[0]

    def broker(self, broker_id: int) -> Broker | None:
        return self.nodes.get(broker_id)

    # ================================================================= faults
    def crash(self, node_id, lose: str = "none") -> None:
        """Hard stop: in-flight messages to it are lost; ``lose`` applies to its disk."""
        if node_id not in self.nodes:
            return
        del self.nodes[node_id]
        self.scheduled.pop(node_id, None)
        self.paused.pop(node_id, None)  # SIGKILL ends a stopped process too; what waited for it is gone
        self.disks[node_id].crash(lose, self.now)
        self.history.record(self.now, "crash", {"node": str(node_id), "lose": lose})
        # The process died: its TCP connections are reset, so peers fail their requests to it at once
        # (after one network delay), unless the link is cut (then they time out).
        self.call_at(self.now + self.delay_min, lambda sim: sim._peer_gone(node_id))

    def _peer_gone(self, node_id) -> None:
        for other in sorted(self.nodes, key=str):
            if self.is_cut(node_id, other) or self.is_cut(other, node_id):
                continue
            if other in self.paused:  # it learns of the reset connection when it runs again
                self.paused[other].append((CALL, lambda sim, other=other: sim._peer_gone_to(node_id, other)))
                continue
            self._peer_gone_to(node_id, other)

    def _peer_gone_to(self, node_id, other) -> None:
        """``other`` learns that ``node_id``'s connections were reset (when it still runs)."""
        node = self.nodes.get(other)
        if node is not None:
            node.peer_disconnected(self.now, node_id)
            self._after(other, node)

    def restart(self, node_id) -> bool:
        """Start a stopped node again; False when it refuses to start (its disk's identity, see
        :attr:`refused`: it stays down). A running node is left as it is (True)."""
        if node_id in self.nodes:
            return True
        self.history.record(self.now, "restart", {"node": str(node_id)})
        try:
            if node_id in self.controller_ids:
                self.start_controller(node_id)
            else:
                self.start_broker(node_id)
        except (NodeIdentityError, MetadataLogLoadError) as exc:
            self.refused.append((self.now, node_id, str(exc)))
            self.history.record(self.now, "refused", {"node": str(node_id), "reason": str(exc)})
            return False
        return True

    def disk_full(self, broker_id: int, for_ms: int) -> None:
        """Every write on broker ``broker_id``'s disk fails with ENOSPC for ``for_ms`` ms (whether the broker
        runs or not), then the file system has space again."""
        disk = self.disks[broker_id]
        disk.set_full(True)
        self.history.record(self.now, "disk_full", {"node": str(broker_id), "for_ms": for_ms})

        def space(sim: SimCluster) -> None:
            disk.set_full(False)
            sim.history.record(sim.now, "disk_space", {"node": str(broker_id)})

        self.call_at(self.now + for_ms, space)

    def corrupt(self, broker_id: int, path: str, index: int) -> bool:
        """Flip bytes in item ``index`` of the log file ``path`` on broker ``broker_id``'s disk (its process
        must be down: the caller checks). Returns False when there is no such item."""
        done = self.disks[broker_id].corrupt(path, index)
        self.history.record(self.now, "corrupt", {"node": str(broker_id), "path": path, "index": index, "done": done})
        return done

    def remove_client(self, node_id) -> None:
        """Kill the client ``node_id`` (SIGKILL): its observer runs a last time, then it is gone; peers see its
        connections reset."""
        obs = self.observers.get(node_id)
        if obs is not None:
            obs(self, node_id)
        del self.nodes[node_id]
        self.scheduled.pop(node_id, None)
        self.paused.pop(node_id, None)
        self.history.record(self.now, "crash", {"node": str(node_id), "lose": "all"})
        self.call_at(self.now + self.delay_min, lambda sim: sim._peer_gone(node_id))

    def _exited(self, node_id) -> None:
        """The node's process ended by itself (a broker's fatal error): removed like a crash, but its page
        cache stays (no machine crash): peers see its connections reset. Its observer runs a last time
        (what the node noted on its way out)."""
        obs = self.observers.get(node_id)
        if obs is not None:
            obs(self, node_id)
        del self.nodes[node_id]
        self.scheduled.pop(node_id, None)
        self.history.record(self.now, "exit", {"node": str(node_id)})
        self.call_at(self.now + self.delay_min, lambda sim: sim._peer_gone(node_id))

    def restart_controller(self) -> bool:
        """Controller failover: in-memory state lost, the metadata log replayed (a controller that is down
        is started). False when it refuses to start (see :meth:`restart`). In a quorum: the active
        controller (or, with none, the first voter) is killed and started again."""
        node_id = self.active_controller_id() if self.quorum_ids else CONTROLLER
        self.crash(node_id, "unflushed")
        return self.restart(node_id)

    def shutdown(self, broker_id: int) -> None:
        """Begin a clean (controlled) shutdown; the broker leaves once the controller lets it."""
        node = self.nodes.get(broker_id)
        if node is None:
            return
        if broker_id in self.paused:  # SIGTERM to a stopped process is handled when it runs again
            self.paused[broker_id].append((CALL, lambda sim: sim.shutdown(broker_id)))
            return
        self.history.record(self.now, "shutdown", {"node": str(broker_id)})
        node.begin_controlled_shutdown(self.now)
        self._after(broker_id, node)

    def pause(self, node_id) -> bool:
        """Freeze running node ``node_id`` (SIGSTOP: a long GC pause, a stopped VM): it gets no ticks and
        no deliveries; messages to it (and notices of its peers' reset connections) wait in the network;
        connection handshakes to it are still answered (by its kernel). False when it is not running.
        Pausing a paused node changes nothing."""
        if node_id not in self.nodes:
            return False
        if node_id not in self.paused:
            self.paused[node_id] = []
            self.history.record(self.now, "pause", {"node": str(node_id)})
        return True

    def resume(self, node_id) -> bool:
        """Unfreeze paused node ``node_id`` (SIGCONT): what waited for it is delivered now, in arrival
        order, and its overdue timers fire (one tick now). False when it is not paused."""
        waiting = self.paused.pop(node_id, None)
        if waiting is None:
            return False
        self.history.record(self.now, "resume", {"node": str(node_id), "waiting": len(waiting)})
        for kind, payload in waiting:
            self._push(self.now, kind, payload)
        self.scheduled.pop(node_id, None)
        self._after(node_id, self.nodes[node_id])
        return True

    def isolate(self, nodes) -> None:
        """Cut every link between ``nodes`` and all other nodes, including nodes added later."""
        self.links.isolate(nodes)
        self.history.record(self.now, "isolate", {"nodes": [str(n) for n in nodes]})

    def partition(self, groups) -> None:
        """Nodes only reach nodes of their own group (nodes in no group, e.g. clients, reach all)."""
        self.links.partition(groups)
        self.history.record(self.now, "partition", {"groups": [[str(n) for n in g] for g in groups]})

    def cut_link(self, src, dst) -> None:
        self.links.cut_link(src, dst)
        self.history.record(self.now, "cut", {"src": str(src), "dst": str(dst)})

    def heal(self, nodes=None) -> None:
        """Restore every link that touches ``nodes``, or all links."""
        self.links.heal(nodes)
        self.history.record(self.now, "heal", {"nodes": None if nodes is None else [str(n) for n in nodes]})

    def is_cut(self, src, dst) -> bool:
        """Is the directed link src -> dst down?"""
        return self.links.is_cut(src, dst)

    def hold(self, api: str | None = None, src: int | str | None = None, dst: int | str | None = None) -> None:
        self.links.hold(api, src, dst)
        self.history.record(self.now, "hold", {"api": api, "src": str(src), "dst": str(dst)})

    def release(self, api: str | None = None, src: int | str | None = None,
                dst: int | str | None = None) -> None:
        """Stop holding matching messages and deliver the held ones, in their original order."""
        self.links.end_holds(api, src, dst)
        keep: list = []
        go: list = []
        for payload in self.held:
            env = payload[0]
            (go if matches(api, src, dst, env.message.API, env.src, env.dst) else keep).append(payload)
        self.held = keep
        self.history.record(self.now, "release", {"api": api, "src": str(src), "dst": str(dst), "count": len(go)})
        for payload in go:
            self._push(self.now, DELIVER, payload)

    # ================================================================= event loop
    def _push(self, t: int, kind: int, payload) -> None:
        self._seq += 1
        heapq.heappush(self.queue, (t, self._seq, kind, payload))

    def call_at(self, t: int, fn) -> None:
        """Run ``fn(sim)`` at simulated time ``t`` (driver-level timers: background producers)."""
        self._push(max(t, self.now), CALL, fn)

    def _after(self, node_id, node) -> None:
        """Transmit what the node queued and (re)schedule its next tick."""
        out = node.poll()
        if out:
            self._transmit(out)
        obs = self.observers.get(node_id)
        if obs is not None:
            obs(self, node_id)
        d = node.next_deadline()
        if d is None:
            self.scheduled.pop(node_id, None)
            return
        if d < self.now:
            d = self.now
        cur = self.scheduled.get(node_id)
        if cur is None or d < cur:
            self.scheduled[node_id] = d
            self._seq += 1
            heapq.heappush(self.queue, (d, self._seq, TICK, (node_id, self.incarnation[node_id])))

    def _transmit(self, envelopes: list[Envelope]) -> None:
        """Put messages on the network: each arrives after a seeded delay in [delay_min, delay_max] ms,
        never before an earlier message on the same directed link (FIFO, like a TCP connection)."""
        links = self.links
        faulty = links.cut or links.isolated or links.partitioned
        nodes = self.nodes
        now = self.now
        delay_min = self.delay_min
        span = self.delay_max - delay_min + 1
        random = self.net_rng.random
        link_last = self.link_last
        queue = self.queue
        incarnation = self.incarnation
        quorum = self.quorum_ids
        for env in envelopes:
            src = env.src
            dst = env.dst
            if quorum and dst == CONTROLLER and not env.is_response:
                # a client's "controller" is the quorum's active controller (the simulator's stand-in for a
                # broker forwarding to it)
                dst = self.active_controller_id()
                env = Envelope(src, dst, env.correlation_id, env.message, False)
            if faulty and links.is_cut(src, dst):
                continue
            if dst not in nodes and not env.is_response:
                self._refuse(env)
                continue
            t = now + (delay_min + int(random() * span) if span > 1 else delay_min)
            link = (src, dst)
            last = link_last.get(link, 0)
            if t < last:
                t = last
            link_last[link] = t
            self._seq += 1
            # The sender's incarnation, and for a response the requester's: a message on a connection
            # whose process has since restarted is never delivered (_stale_connection).
            heapq.heappush(queue, (t, self._seq, DELIVER, (env, incarnation.get(src),
                                                           incarnation.get(dst) if env.is_response else None)))

    def _refuse(self, request: Envelope) -> None:
        """Connection refused (the destination is down): the sender learns at once, after one network
        delay, and fails the request."""
        self._push(self.now + self.delay_min, CALL, ("refused", request.src, request.correlation_id))

    def _tick(self, t: int, node_id, incarnation: int) -> None:
        """A node's scheduled tick (ignored when superseded or the node restarted since)."""
        if self.incarnation.get(node_id) != incarnation or self.scheduled.get(node_id) != t:
            return
        node = self.nodes.get(node_id)
        if node is None:
            return
        del self.scheduled[node_id]
        if node_id in self.paused:
            return  # no ticks while paused: resume() schedules the overdue one
        node.tick(self.now)
        if getattr(node, "fatal_error", None) is not None:
            self._exited(node_id)
            return
        self._after(node_id, node)
        if self.scheduled.get(node_id) == self.now:
            # A node must make progress: never tick twice at the same instant.
            self.scheduled[node_id] = self.now + 1
            self._push(self.now + 1, TICK, (node_id, self.incarnation[node_id]))

    def _call(self, payload) -> None:
        """A driver timer (``call_at``) or a refused connection reported to its sender."""
        if isinstance(payload, tuple) and payload[0] == "refused":
            _, src, corr = payload
            node = self.nodes.get(src)
            if src in self.paused:
                self.paused[src].append((CALL, payload))
            elif node is not None:
                node.connection_failed(self.now, corr)
                self._after(src, node)
        else:
            payload(self)

    def _connection_setup(self, env: Envelope, node) -> None:
        """A ConnectionSetup arrived: at the server, the network answers it (the node never sees it); at
        the client, the connection is established. Both count in the history, not as Kafka messages."""
        self.history.lines.append(f"{self.now}|{env.src}>{env.dst}|{env.correlation_id}|ConnectionSetup\n")
        if env.is_response:
            node.deliver(self.now, env)
            self._after(env.dst, node)
        else:
            self._transmit([Envelope(env.dst, env.src, env.correlation_id, env.message, True)])

    def _stopped_in_network(self, payload) -> bool:
        """Network faults at delivery time: a cut link drops the message, a hold keeps it aside."""
        env = payload[0]
        links = self.links
        if (links.cut or links.isolated or links.partitioned) and links.is_cut(env.src, env.dst):
            return True
        if links.holds and links.is_held(env.message.API, env.src, env.dst):
            self.held.append(payload)
            return True
        return False

    def _stale_connection(self, payload) -> bool:
        """A message whose connection died: its sender restarted since sending it (a request from the
        old process), or, for a response, the requester restarted since it was sent. TCP resets the
        connection, so the new process never sees it (nor a response that would match one of its own
        correlation ids: a controller failover with GetReplicaLogInfo answers in flight)."""
        env, src_incarnation, dst_incarnation = payload
        incarnation = self.incarnation
        return incarnation.get(env.src) != src_incarnation or (
            env.is_response and incarnation.get(env.dst) != dst_incarnation)

    def run_until(self, t_end: int, stop=None) -> bool:
        """Run events up to simulated time ``t_end``; with ``stop``, return True as soon as
        ``stop(sim)`` holds (checked after every event). Time ends at ``t_end`` otherwise.

        The one event loop of the simulator; message delivery, nearly every event, is inlined."""
        if stop is not None and stop(self):
            return True
        queue = self.queue
        pop = heapq.heappop
        nodes = self.nodes
        history = self.history
        lines = history.lines
        after = self._after
        setup = ConnectionSetup
        incarnation = self.incarnation
        links = self.links  # heal() replaces its sets, never the object
        paused = self.paused
        while queue and queue[0][0] <= t_end:
            t, _, kind, payload = pop(queue)
            if t > self.now:
                self.now = t
            if kind == DELIVER:
                env = payload[0]
                if ((links.cut or links.isolated or links.partitioned or links.holds)
                        and self._stopped_in_network(payload)):
                    pass
                elif paused and env.dst in paused and (env.is_response or type(env.message) is not setup):
                    # A paused node reads nothing: the message waits (its kernel still answers a
                    # connection's handshake, ConnectionSetup below).
                    paused[env.dst].append((DELIVER, payload))
                elif (node := nodes.get(env.dst)) is None:
                    if not env.is_response:
                        self._refuse(env)
                elif incarnation.get(env.src) != payload[1] or (
                        env.is_response and incarnation.get(env.dst) != payload[2]):
                    pass  # _stale_connection, inlined: the connection died with a restarted process
                elif type(env.message) is setup:
                    self._connection_setup(env, node)
                else:
                    if self.wire:
                        env = Envelope(env.src, env.dst, env.correlation_id,
                                       self._roundtrip(env.message, env.correlation_id), env.is_response)
                    self.messages_delivered += 1
                    message_type = type(env.message)
                    if self.message_observers:
                        obs = self.message_observers.get(message_type)
                        if obs is not None:
                            obs(self, env)
                    now = self.now
                    # One digest line per delivered message (History's format), appended on the hot path.
                    lines.append(f"{now}|{env.src}>{env.dst}|{env.correlation_id}|{message_type.__name__}\n")
                    if len(lines) >= FLUSH_LINES:
                        history.flush()
                    node.deliver(now, env)
                    after(env.dst, node)
            elif kind == TICK:
                self._tick(t, *payload)
            else:
                self._call(payload)
            if stop is not None and stop(self):
                return True
        if t_end > self.now:
            self.now = t_end
        return False
