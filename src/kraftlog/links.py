"""Network faults as rules on directed links, shared by the two drivers.

The simulator (:class:`kraftlog.sim.cluster.SimCluster`) and the TCP driver's link filter
(:class:`kraftlog.net.link_filter.LinkFilter`, a chaos-mode node's edge) apply the same scenario verbs with
the same semantics, so they keep their rules in one :class:`LinkRules`. It is pure data and logic: no
sockets, no clock; what happens to a dropped or held message is the driver's business.

Node ids are the simulator's: broker ints, ``"controller"``, client node ids (the TCP driver names
every ordinary client with one id).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import TypeAlias

__all__ = ["LinkRules", "matches"]

#: A node id as the drivers name nodes (broker int, ``"controller"``, a client's id).
Node: TypeAlias = Hashable
#: A hold or release pattern: (API name, source, destination), each None = any.
Pattern: TypeAlias = tuple[str | None, Node | None, Node | None]


def matches(api: str | None, src: Node | None, dst: Node | None,
            m_api: str | None, m_src: Node | None, m_dst: Node | None) -> bool:
    """Whether a message or hold ``(m_api, m_src, m_dst)`` matches the pattern ``(api, src, dst)``,
    whose None fields are wildcards (``release``'s and ``hold``'s matching)."""
    return (api is None or m_api == api) and (src is None or m_src == src) and (dst is None or m_dst == dst)


class LinkRules:
    """The scenario file's network verbs as rules (SCENARIOS.md):

    * ``isolate(nodes)``: every link between ``nodes`` and any other node, present or added later,
      clients included, is cut both ways; links inside ``nodes`` stay up;
    * ``partition(groups)``: nodes in different groups cannot reach each other; a node in no group
      (e.g. a client) reaches all;
    * ``cut_link(src, dst)``: one direction only;
    * ``heal(nodes)``: every cut, isolation and partition membership touching ``nodes`` goes away;
      ``heal()`` restores every link (holds are not links: only ``release`` ends them);
    * ``hold(api, src, dst)`` (each None = any): matching messages are kept in flight;
      :meth:`end_holds` removes the holds a ``release`` pattern matches (the driver then delivers the
      held messages the pattern matches, in their original order).

    Attributes (read by the drivers' hot paths): ``cut`` (set of (src, dst)), ``isolated`` (list of
    frozensets), ``partitioned`` (list of lists of frozensets), ``holds`` (list of (api, src, dst))."""

    def __init__(self) -> None:
        self.cut: set[tuple[Node, Node]] = set()
        self.isolated: list[frozenset[Node]] = []
        self.partitioned: list[list[frozenset[Node]]] = []
        self.holds: list[Pattern] = []

    def isolate(self, nodes: Iterable[Node]) -> None:
        self.isolated.append(frozenset(nodes))

    def partition(self, groups: Iterable[Iterable[Node]]) -> None:
        self.partitioned.append([frozenset(g) for g in groups])

    def cut_link(self, src: Node, dst: Node) -> None:
        self.cut.add((src, dst))

    def heal(self, nodes: Iterable[Node] | None = None) -> None:
        if nodes is None:
            self.cut.clear()
            self.isolated.clear()
            self.partitioned.clear()
        else:
            gone = set(nodes)
            self.cut = {(a, b) for a, b in self.cut if a not in gone and b not in gone}
            self.isolated = [g - gone for g in self.isolated if g - gone]
            self.partitioned = [[g - gone for g in groups] for groups in self.partitioned]

    @property
    def links_down(self) -> bool:
        """Whether any link rule (cut, isolation, partition) is set."""
        return bool(self.cut or self.isolated or self.partitioned)

    def is_cut(self, src: Node, dst: Node) -> bool:
        """Is the directed link src -> dst down?"""
        if (src, dst) in self.cut:
            return True
        for g in self.isolated:
            if (src in g) != (dst in g):
                return True
        for groups in self.partitioned:
            gs = gd = None
            for i, g in enumerate(groups):
                if src in g:
                    gs = i
                if dst in g:
                    gd = i
            if gs is not None and gd is not None and gs != gd:
                return True
        return False

    def hold(self, api: str | None = None, src: Node | None = None, dst: Node | None = None) -> None:
        self.holds.append((api, src, dst))

    def is_held(self, api: str, src: Node, dst: Node) -> bool:
        """Whether a hold matches a message of API ``api`` from ``src`` to ``dst``."""
        for h_api, h_src, h_dst in self.holds:
            if matches(h_api, h_src, h_dst, api, src, dst):
                return True
        return False

    def end_holds(self, api: str | None = None, src: Node | None = None, dst: Node | None = None) -> None:
        """Remove the holds the release pattern ``(api, src, dst)`` matches (None = any)."""
        self.holds = [h for h in self.holds if not matches(api, src, dst, *h)]
