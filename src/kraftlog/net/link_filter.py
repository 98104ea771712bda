"""Chaos mode's link faults on a real node's edge: :class:`LinkFilter`, the simulator's network rules
(``isolate``, ``partition``, ``cut_link``, ``heal``, ``hold``, ``release``) on directed links, and the
control commands that change them (:meth:`LinkFilter.apply`).

A pure object (no sockets, no clock): the TCP driver (:class:`kraftlog.net.driver.NodeDriver`) asks it
about every message crossing the node's edge and keeps the held ones here; the control channel
(:mod:`kraftlog.net.control`) hands it the commands.

Where the filter applies (:class:`~kraftlog.net.driver.NodeDriver`). Every message crossing a node's edge
is judged, with this node as its src (sending) or dst (receiving) and the other end as the peer node or
:data:`CLIENTS`: requests to peers (before any connection is made) and their responses (as they are read),
requests arriving on a listener (as they are handed to the node) and the responses the node writes back
(ApiVersions answered by the framing included). A message between two nodes thus crosses two filters
holding the same rules: a drop at either is the same drop, and a message held by the sender and then by
the receiver (when a release reaches the sender first) still arrives in order, at the receiver's release.
A command reaching the nodes one after the other takes effect, for a node-to-node link, as soon as either
end has it.

* **Drop**: the message is never written, or never handed to the node; the sender finds out only
  by its own timeout, as in the simulator. TCP connections stay up across a cut (the faithful
  choice: the simulator keeps no connection state to break; a real cut that reset connections
  would fail requests at once, ``peer_disconnected``, which the simulator's cut never does).
* **Ordering.** Responses leave a listener connection in request order because the connection is
  muted while the node works on one request. A response the filter drops or holds still unmutes
  the connection (it counts as sent), so later requests on it go on; a held request is set aside
  and later ones on its connection go on too, as in the simulator, where a hold never delays other
  messages. Released requests go back to the front of their connection's queue in their original
  order. So after a drop or a hold, a client may see responses out of request order or with a gap:
  node peers match responses by correlation id and do not care; librdkafka does the same;
  kafka-python closes the connection on a correlation id mismatch and reconnects.
* **Lost with the connection.** A held request or response whose connection closed before its
  release is dropped (TCP lost it, as the simulator drops a held message of a restarted process);
  a held *outbound* request has not touched a connection yet and is sent on release over whatever
  connection the peer then has.
"""

from __future__ import annotations

from ..controller.controller import CONTROLLER
from ..links import LinkRules, matches
from ..protocol import messages as m

__all__ = ["LinkFilter", "CLIENTS", "PASS", "DROP", "HOLD", "node_of_client_id", "api_name"]

#: The endpoint every connection that is not a node's counts as (producers, consumers, admin tools: a
#: connection on the CLIENT listener, or one whose client id names no node). Like the simulator's
#: clients it is in no isolated set and no partition group: ``isolate([0])`` cuts broker 0 from it,
#: a partition leaves it reaching every node. Commands cannot name it (the simulator's cannot either).
CLIENTS = "clients"

#: Verdicts of :meth:`LinkFilter.decide`.
PASS, DROP, HOLD = "pass", "drop", "hold"

_CUT_KEYS = (("from", "to"), ("src", "dst"))


def node_of_client_id(client_id) -> object:
    """The node a node process's own client id names (``controller``; ``broker-<id>``; a quorum voter's
    ``controller-<id>``, as :func:`kraftlog.net.node.node_name` spells them), else None."""
    if client_id == CONTROLLER:
        return CONTROLLER
    for prefix in ("broker-", "controller-"):  # a broker, or a quorum's voter (controller-3000)
        if isinstance(client_id, str) and client_id.startswith(prefix):
            digits = client_id[len(prefix):]
            if digits.isascii() and digits.isdigit() and (digits == "0" or digits[0] != "0"):
                return int(digits)
    return None


def api_name(msg: object) -> str:
    """The Kafka API name of a core message (its class's ``API``)."""
    return getattr(msg, "API", None) or type(msg).__name__


def _node_key(node) -> tuple:
    return (isinstance(node, str), node if isinstance(node, int) else 0, str(node))


def _sorted(nodes) -> list:
    """Node ids in a stable order (brokers by id, then named nodes), for JSON."""
    return sorted(nodes, key=_node_key)


def _show_node(node) -> str:
    return node if isinstance(node, str) else str(node)


class LinkFilter(LinkRules):
    """The simulator's network faults as rules on directed links, for one real node's edge.

    A pure object (no sockets, no clock): the rules are a :class:`~kraftlog.links.LinkRules`, the very
    class :class:`~kraftlog.sim.cluster.SimCluster` keeps its rules in, plus the held messages. Node ids
    are the simulator's (broker ints, ``"controller"``); every ordinary client is :data:`CLIENTS`.

    * ``isolate(nodes)``: every link between ``nodes`` and any other endpoint (clients included) is cut,
      both ways; links inside ``nodes`` stay up;
    * ``partition(groups)``: endpoints in different groups cannot reach each other; an endpoint in no
      group (e.g. clients) reaches all;
    * ``cut_link(src, dst)``: one direction only;
    * ``heal(nodes)``: every cut, isolation and partition membership touching ``nodes`` goes away;
      ``heal()`` restores everything (holds are not links: only ``release`` ends them);
    * ``hold(api, src, dst)`` (each None = any): matching messages are set aside;
      ``release(api, src, dst)`` removes the holds it matches (its None fields are wildcards) and returns
      the held messages it matches, in the order they were held.

    :meth:`decide` judges one message as the simulator does at delivery: a cut link drops it (checked
    first), else a matching hold keeps it aside, else it passes. The caller keeps held messages here
    (:meth:`hold_message`) so that :meth:`release` hands them back in their original order; a released
    message is judged again by the caller (a cut made meanwhile drops it, another hold keeps it), as the
    simulator re-checks released messages at their delivery."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple] = []  # (api, src, dst, item) in the order held

    def release(self, api=None, src=None, dst=None) -> list:
        """End the matching holds; return the matching held items, in the order they were held."""
        self.end_holds(api, src, dst)
        keep, go = [], []
        for entry in self.held:
            if matches(api, src, dst, entry[0], entry[1], entry[2]):
                go.append(entry[3])
            else:
                keep.append(entry)
        self.held = keep
        return go

    # ------------------------------------------------------------------ judging messages
    @property
    def active(self) -> bool:
        """Whether any rule is set (nothing to judge otherwise)."""
        return bool(self.cut or self.isolated or self.partitioned or self.holds)

    def decide(self, api: str, src, dst) -> str:
        """:data:`DROP` (the link src -> dst is cut), :data:`HOLD` (a hold matches) or :data:`PASS`."""
        if (self.cut or self.isolated or self.partitioned) and self.is_cut(src, dst):
            return DROP
        if self.holds and self.is_held(api, src, dst):
            return HOLD
        return PASS

    def hold_message(self, api: str, src, dst, item) -> None:
        """Keep ``item`` (whatever the caller needs to deliver it later) until a matching release."""
        self.held.append((api, src, dst, item))

    def forget(self, predicate) -> int:
        """Drop the held items for which ``predicate(item)`` holds (their connection closed: TCP lost
        them); returns how many."""
        before = len(self.held)
        self.held = [e for e in self.held if not predicate(e[3])]
        return before - len(self.held)

    # ------------------------------------------------------------------ commands (the control channel)
    def apply(self, command) -> list:
        """Apply one control command (a dict, see :meth:`NodeDriver.control`); returns the items a
        ``release`` freed (empty otherwise). ValueError for a malformed command (nothing changed)."""
        if not isinstance(command, dict):
            raise ValueError(f"a command is a JSON object, got {type(command).__name__}")
        cmd = command.get("cmd")
        args = {k: v for k, v in command.items() if k != "cmd"}
        if cmd == "status":
            _only(args, ())
            return []
        if cmd == "isolate":
            _only(args, ("nodes",))
            self.isolate(_nodes(_required(args, "nodes", cmd), "nodes"))
        elif cmd == "partition":
            _only(args, ("groups",))
            groups = _required(args, "groups", cmd)
            if not isinstance(groups, list) or not groups:
                raise ValueError("partition: groups must be a non-empty list of lists of nodes")
            parsed, seen = [], set()
            for i, g in enumerate(groups):
                nodes = _nodes(g, f"groups[{i}]")
                for n in nodes:
                    if n in seen:
                        raise ValueError(f"partition: node {_show_node(n)} is in more than one group")
                    seen.add(n)
                parsed.append(nodes)
            self.partition(parsed)
        elif cmd == "cut":
            src, dst = _cut_ends(args)
            self.cut_link(src, dst)
        elif cmd == "heal":
            _only(args, ("nodes",))
            nodes = args.get("nodes")
            self.heal(None if nodes is None else _nodes(nodes, "nodes"))
        elif cmd in ("hold", "release"):
            api, src, dst = _hold_args(cmd, args)
            if cmd == "hold":
                self.hold(api, src, dst)
            else:
                return self.release(api, src, dst)
        else:
            raise ValueError(f"unknown cmd {cmd!r} (expected one of: isolate, partition, cut, heal, hold, "
                             "release, status)")
        return []

    def to_rules(self) -> dict:
        """The rules as JSON-able data (:meth:`from_rules` reads them back; held messages are not rules)."""
        return {
            "cut": [[s, d] for s, d in sorted(self.cut, key=lambda link: (_node_key(link[0]), _node_key(link[1])))],
            "isolated": [_sorted(g) for g in self.isolated],
            "partitioned": [[_sorted(g) for g in groups] for groups in self.partitioned],
            "holds": [{"api": a, "from": s, "to": d} for a, s, d in self.holds],
        }

    @classmethod
    def from_rules(cls, rules: dict | None) -> LinkFilter:
        f = cls()
        if rules:
            f.cut = {(s, d) for s, d in rules.get("cut", ())}
            f.isolated = [frozenset(g) for g in rules.get("isolated", ())]
            f.partitioned = [[frozenset(g) for g in groups] for groups in rules.get("partitioned", ())]
            f.holds = [(h.get("api"), h.get("from"), h.get("to")) for h in rules.get("holds", ())]
        return f

    def status(self) -> dict:
        """The rules, the number of held messages and their count per (api, from, to)."""
        counts: dict = {}
        for api, src, dst, _ in self.held:
            counts[(api, src, dst)] = counts.get((api, src, dst), 0) + 1
        return {"rules": self.to_rules(), "held": len(self.held),
                "held_by": [{"api": a, "from": s, "to": d, "count": c} for (a, s, d), c in counts.items()]}


def _only(args: dict, allowed: tuple) -> None:
    extra = sorted(set(args) - set(allowed))
    if extra:
        raise ValueError(f"unknown argument(s) {', '.join(map(repr, extra))}"
                         + (f" (expected: {', '.join(allowed)})" if allowed else " (it takes none)"))


def _required(args: dict, key: str, cmd: str):
    if args.get(key) is None:
        raise ValueError(f"{cmd}: {key} is required")
    return args[key]


def _node(value, what: str):
    """A node id of a command: a broker id (int >= 0) or ``"controller"``."""
    if value == CONTROLLER and isinstance(value, str):
        return CONTROLLER
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise ValueError(f"{what}: {value!r} is not a node (a broker id or {CONTROLLER!r})")


def _nodes(value, what: str) -> tuple:
    if not isinstance(value, list) or not value:
        raise ValueError(f"{what} must be a non-empty list of nodes, got {value!r}")
    out = []
    for v in value:
        n = _node(v, what)
        if n in out:
            raise ValueError(f"{what}: node {_show_node(n)} is listed twice")
        out.append(n)
    return tuple(out)


def _ends(args: dict, cmd: str) -> tuple:
    """``from``/``to`` (the scenario file's keys) or ``src``/``dst`` (SimCluster's arguments)."""
    spelled = [keys for keys in _CUT_KEYS if any(k in args for k in keys)]
    if len(spelled) > 1:
        raise ValueError(f"{cmd}: give from/to or src/dst, not both")
    keys = spelled[0] if spelled else _CUT_KEYS[0]
    return keys, args.get(keys[0]), args.get(keys[1])


def _cut_ends(args: dict) -> tuple:
    keys, src, dst = _ends(args, "cut")
    _only(args, keys)
    if src is None or dst is None:
        raise ValueError(f"cut: {keys[0]} and {keys[1]} are required")
    src, dst = _node(src, keys[0]), _node(dst, keys[1])
    if src == dst:
        raise ValueError(f"cut: {keys[0]} and {keys[1]} are the same node {_show_node(src)}")
    return src, dst


def _hold_args(cmd: str, args: dict) -> tuple:
    keys, src, dst = _ends(args, cmd)
    _only(args, ("api",) + keys)
    api = args.get("api")
    if api is not None and api not in m.API_NAMES:
        raise ValueError(f"{cmd}: unknown api {api!r} (expected one of: {', '.join(sorted(m.API_NAMES))})")
    return (api, None if src is None else _node(src, keys[0]), None if dst is None else _node(dst, keys[1]))
