"""The steps of a scenario: one frozen dataclass per verb of SCENARIOS.md's verb table.

A :class:`Step` is *when* (``at_ms``/``after_ms``) and *what* (its ``action``, an instance of one of the
verb classes below). Interpreters ``match`` on the action's type::

    match step.action:
        case Crash(node=node, lose=lose): ...
        case Isolate(nodes=nodes): ...

Nodes are broker ids (ints) or :data:`CONTROLLER`; durations are int ms (fields ending ``_ms``). The
fields are the file's normalised arguments (see :func:`kraftlog.scenario.parse_scenario`), except that
``from``/``to`` (Python keywords) are ``src``/``dst`` and a crash or restart names its node in ``node``
whether the file wrote ``broker: 1`` or ``node: 1`` (``node: controller`` for the controller).
:attr:`Action.args` gives the arguments back as a plain dict keyed as the file names them (``from``,
``to``, ``broker``/``node``) — the shape the timeline's step events carry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import ClassVar, Protocol, TypeVar

from .model import CONTROLLER, Condition, is_controller

__all__ = [
    "ACTIONS",
    "VERBS",
    "Action",
    "AlterConfig",
    "DeleteTopic",
    "Corrupt",
    "Crash",
    "Cut",
    "DiskFull",
    "Elect",
    "Expect",
    "Heal",
    "Hold",
    "Isolate",
    "Partition",
    "Pause",
    "Produce",
    "Release",
    "Restart",
    "RestartClient",
    "RestartController",
    "Resume",
    "RunFor",
    "Shutdown",
    "Step",
    "action_from_args",
    "corrupt_target",
]

#: Field names that the file spells otherwise (Python keywords).
_FILE_NAMES = {"src": "from", "dst": "to"}


@dataclass(frozen=True, slots=True)
class Action:
    """What a step does; subclasses are the verbs. ``VERB`` is the verb's name in the file."""

    VERB: ClassVar[str] = ""

    @property
    def args(self) -> dict[str, object]:
        """The arguments as a plain dict keyed as the file names them (the normalised shape
        :func:`~kraftlog.scenario.parse_scenario` documents)."""
        return {_FILE_NAMES.get(f.name, f.name): getattr(self, f.name) for f in fields(self)}


class _Targeted(Action):
    """A crash, restart, pause or resume: its ``node`` is a broker id or ``"controller"``; in ``args`` a broker is
    ``{"broker": id}`` and the controller ``{"node": "controller"}``, as the file writes them."""

    __slots__ = ()

    @property
    def args(self) -> dict[str, object]:
        out = super().args  # Action.args
        node = out.pop("node")
        key = "node" if node == CONTROLLER else "controller" if is_controller(node) else "broker"
        return {key: node, **out}


@dataclass(frozen=True, slots=True)
class Produce(Action):
    """``produce``: ``count`` records to ``topic``-``partition`` with ``acks`` (``"all"|"1"|"0"``), each
    given up after ``timeout_ms`` (Kafka's delivery.timeout.ms)."""

    VERB: ClassVar[str] = "produce"
    topic: str
    partition: int
    count: int
    acks: str
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Crash(_Targeted):
    """``crash``: stop ``node`` abruptly, losing ``lose`` (``"none"|"unflushed"|"all"``)."""

    VERB: ClassVar[str] = "crash"
    node: int | str
    lose: str = "none"


@dataclass(frozen=True, slots=True)
class Shutdown(Action):
    """``shutdown``: a controlled shutdown of ``broker`` (KIP-631 ControlledShutdown)."""

    VERB: ClassVar[str] = "shutdown"
    broker: int


@dataclass(frozen=True, slots=True)
class _OnNode(_Targeted):
    """A step on one ``node``: a broker id or ``"controller"``."""

    node: int | str


@dataclass(frozen=True, slots=True)
class Restart(_OnNode):
    """``restart``: start the stopped ``node`` again (a broker id or ``"controller"``)."""

    VERB: ClassVar[str] = "restart"


@dataclass(frozen=True, slots=True)
class RestartController(Action):
    """``restart_controller``: controller failover (kill and restart; its metadata log is replayed)."""

    VERB: ClassVar[str] = "restart_controller"


@dataclass(frozen=True, slots=True)
class Pause(_OnNode):
    """``pause``: freeze the running ``node`` (a broker id or ``"controller"``), as a long GC pause or a
    stopped VM does: it gets no ticks and no deliveries (messages to it wait in the network), its timers
    fire late on resume. SIGSTOP on a real process."""

    VERB: ClassVar[str] = "pause"


@dataclass(frozen=True, slots=True)
class Resume(_OnNode):
    """``resume``: unfreeze the paused ``node``: what waited for it is delivered, its overdue timers fire.
    SIGCONT on a real process."""

    VERB: ClassVar[str] = "resume"


@dataclass(frozen=True, slots=True)
class DiskFull(Action):
    """``disk_full``: every write of ``broker`` fails with ENOSPC for ``for_ms``."""

    VERB: ClassVar[str] = "disk_full"
    broker: int
    for_ms: int


@dataclass(frozen=True, slots=True)
class Corrupt(Action):
    """``corrupt``: flip ``bytes`` bytes in the batch of the stopped ``broker``'s replica of ``partition``
    (``"t-0"``) chosen by ``at`` (``"middle"``, ``"last"`` or an offset; :func:`corrupt_target`)."""

    VERB: ClassVar[str] = "corrupt"
    broker: int
    partition: str
    at: int | str = "middle"
    bytes: int = 1


@dataclass(frozen=True, slots=True)
class Isolate(Action):
    """``isolate``: cut every link between each of ``nodes`` and every other node."""

    VERB: ClassVar[str] = "isolate"
    nodes: tuple[int | str, ...]


@dataclass(frozen=True, slots=True)
class Partition(Action):
    """``partition`` (the network, not a Kafka partition): only nodes in the same group of ``groups`` (a
    tuple of node tuples) can talk."""

    VERB: ClassVar[str] = "partition"
    groups: tuple[tuple[int | str, ...], ...]


@dataclass(frozen=True, slots=True)
class Cut(Action):
    """``cut``: drop messages ``src`` → ``dst`` (one direction)."""

    VERB: ClassVar[str] = "cut"
    src: int | str
    dst: int | str


@dataclass(frozen=True, slots=True)
class Heal(Action):
    """``heal``: restore the links of ``nodes``, or every link when None."""

    VERB: ClassVar[str] = "heal"
    nodes: tuple[int | str, ...] | None = None


@dataclass(frozen=True, slots=True)
class _Matching(Action):
    """A hold or release: the messages of ``api`` from ``src`` to ``dst`` it matches; None is any."""

    api: str | None = None
    src: int | str | None = None
    dst: int | str | None = None


@dataclass(frozen=True, slots=True)
class Hold(_Matching):
    """``hold``: delay (not drop) the matching messages until released."""

    VERB: ClassVar[str] = "hold"


@dataclass(frozen=True, slots=True)
class Release(_Matching):
    """``release``: deliver what a matching ``hold`` delayed, and stop holding."""

    VERB: ClassVar[str] = "release"


@dataclass(frozen=True, slots=True)
class AlterConfig(Action):
    """``alter_config``: IncrementalAlterConfigs SET of ``config`` on ``topic``, or the cluster when None."""

    VERB: ClassVar[str] = "alter_config"
    topic: str | None
    config: dict[str, str]


@dataclass(frozen=True, slots=True)
class DeleteTopic(Action):
    """``delete_topic``: DeleteTopics of ``topic`` (its records go with it: they are not counted as lost)."""

    VERB: ClassVar[str] = "delete_topic"
    topic: str


@dataclass(frozen=True, slots=True)
class Elect(Action):
    """``elect``: ElectLeaders of ``type`` (KIP-966's five types) on ``partition`` (``"t-0"``);
    ``leader`` is the designated broker of type ``designation``, else None."""

    VERB: ClassVar[str] = "elect"
    partition: str
    type: str
    leader: int | None = None


@dataclass(frozen=True, slots=True)
class WaitUntil(Action):
    """``wait_until``: run until ``condition`` holds; a failed expectation after ``timeout_ms``."""

    VERB: ClassVar[str] = "wait_until"
    condition: Condition
    timeout_ms: int


@dataclass(frozen=True, slots=True)
class Expect(Action):
    """``expect``: ``condition`` must hold now (else a failed expectation)."""

    VERB: ClassVar[str] = "expect"
    condition: Condition


@dataclass(frozen=True, slots=True)
class RunFor(Action):
    """``run_for``: let the cluster run for ``duration_ms``."""

    VERB: ClassVar[str] = "run_for"
    duration_ms: int


@dataclass(frozen=True, slots=True)
class RestartClient(Action):
    """``restart_client``: the consumer ``client`` is killed (no last commit, no LeaveGroup) and a new one of the
    same group starts, resuming from the group's committed offsets."""

    VERB: ClassVar[str] = "restart_client"
    client: str


#: Step verbs, in the order of the SCENARIOS.md table, and their classes.
ACTIONS: dict[str, type[Action]] = {cls.VERB: cls for cls in (
    Produce, Crash, Shutdown, Restart, RestartController, Pause, Resume, DiskFull, Corrupt, Isolate, Partition, Cut,
    Heal, Hold, Release, AlterConfig, DeleteTopic, Elect, WaitUntil, Expect, RunFor, RestartClient)}
VERBS: tuple[str, ...] = tuple(ACTIONS)


def action_from_args(verb: str, args: Mapping[str, object]) -> Action:
    """The action of ``verb`` from its arguments keyed as the file names them (the inverse of
    :attr:`Action.args`; a crash or restart may name its node ``broker``, ``node`` or ``controller``). Lists become
    tuples. Raises KeyError for an unknown verb, TypeError for missing or unknown arguments."""
    cls = ACTIONS[verb]
    back = {v: k for k, v in _FILE_NAMES.items()}
    kwargs = {back.get(k, k): v for k, v in args.items()}
    if issubclass(cls, _Targeted) and "broker" in kwargs:
        kwargs["node"] = kwargs.pop("broker")
    if issubclass(cls, _Targeted) and "controller" in kwargs:
        kwargs["node"] = kwargs.pop("controller")
    for key in ("nodes", "groups"):
        value = kwargs.get(key)
        if value is not None:
            assert isinstance(value, (list, tuple)), f"{key} is a list"
            kwargs[key] = tuple(tuple(g) if isinstance(g, (list, tuple)) else g for g in value)
    return cls(**kwargs)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of the fault schedule.

    ``index`` is 1-based; ``line`` is the 1-based YAML line of the step (not part of equality; 0 for a
    generated step). ``at_ms`` is an absolute scenario time, or None when the step runs ``after_ms`` after
    the previous step's completion (``after_ms`` is 0 when ``at_ms`` is set). ``action`` is what it does.
    """

    index: int
    line: int = field(compare=False)
    at_ms: int | None
    after_ms: int
    action: Action

    @property
    def verb(self) -> str:
        """The verb's name as the file writes it (``"crash"``)."""
        return self.action.VERB

    @property
    def args(self) -> dict[str, object]:
        """The action's arguments as a plain dict (:attr:`Action.args`)."""
        return self.action.args

    @property
    def label(self) -> str:
        """``step <index> (<verb>)``, as messages name a step."""
        return f"step {self.index} ({self.verb})"


class BatchSpan(Protocol):
    """What :func:`corrupt_target` reads of a record batch."""

    @property
    def base_offset(self) -> int:
        """The batch's first offset."""

    @property
    def next_offset(self) -> int:
        """The offset after its last record."""


B = TypeVar("B", bound=BatchSpan)


def corrupt_target(batches: Iterable[B], at: int | str) -> tuple[int, B] | None:
    """Which batch a ``corrupt`` step damages in a replica log holding ``batches`` (record batches in
    offset order, each with ``base_offset`` and ``next_offset``): ``at`` ``"middle"`` takes the batch
    holding offset LEO // 2 (LEO = the last batch's next offset), ``"last"`` the last batch, an int the
    batch holding that offset. Returns (index in ``batches``, batch), or None when the log is empty or
    no batch holds the offset. The same rule for the simulator and for real processes."""
    listed = list(batches)
    if not listed:
        return None
    if at == "last":
        return len(listed) - 1, listed[-1]
    offset = listed[-1].next_offset // 2 if at == "middle" else int(at)
    for i, b in enumerate(listed):
        if b.base_offset <= offset < b.next_offset:
            return i, b
    return None
