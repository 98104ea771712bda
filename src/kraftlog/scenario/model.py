"""The scenario model (format v1, docs/SCENARIOS.md): the cluster, topic and client specs, the conditions of
``wait_until``/``expect``, the :class:`Scenario` itself, the format's constants (defaults, limits, the keys
each mapping takes) and :class:`ScenarioError`. The steps are :mod:`kraftlog.scenario.steps` (one class per
verb); reading a file is :mod:`kraftlog.scenario.parser` (over :mod:`kraftlog.scenario.yaml_lines`); writing
one back is :mod:`kraftlog.scenario.dump`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, TypeGuard

from kraftlog.level import Level
from kraftlog.metadata.config import unknown_at_level

if TYPE_CHECKING:
    from .steps import Step

__all__ = [
    "ACKS",
    "ACTIVE_CONTROLLER",
    "CONTROLLER",
    "CONTROLLER_ID_BASE",
    "CORRUPT_AT",
    "ELECTION_TYPES",
    "LOSE_MODES",
    "RESETS",
    "ClientSpec",
    "Condition",
    "Node",
    "Scenario",
    "ScenarioError",
    "TopicSpec",
    "is_controller",
    "configs_at_level",
]

#: The controller's node name; brokers are named by their int id.
CONTROLLER = "controller"
#: A node of the cluster: a broker id, ``CONTROLLER`` (the one controller) or a controller id of a quorum.
Node = int | str
#: The node id of a quorum's first controller (``cluster: {controllers: N}``, N > 1: ids 3000 .. 3000+N-1, the
#: ``controller.quorum.voters`` of kraft.version 0, as Kafka's examples number controllers).
CONTROLLER_ID_BASE = 3000
#: The most controllers a scenario's quorum has.
MAX_CONTROLLERS = 9


#: ``controller: active`` of a crash or pause: the quorum's active controller when the step runs; of a restart
#: or resume: the controller the last ``controller: active`` crash or pause stopped.
ACTIVE_CONTROLLER = "active"


def is_controller(node: object) -> bool:
    """``node`` is the one controller, a controller of a quorum (an id >= :data:`CONTROLLER_ID_BASE`) or
    :data:`ACTIVE_CONTROLLER`."""
    return node in (CONTROLLER, ACTIVE_CONTROLLER) or (
        isinstance(node, int) and not isinstance(node, bool) and node >= CONTROLLER_ID_BASE)

#: ``corrupt`` ``at`` values besides an offset: the batch holding the middle offset of the replica's
#: log (LEO // 2), or its last batch.
CORRUPT_AT: tuple[str, ...] = ("middle", "last")
#: The most bytes one ``corrupt`` step flips.
MAX_CORRUPT_BYTES = 1024

#: Normalised producer acks values.
ACKS: tuple[str, ...] = ("all", "1", "0")
#: ``crash`` ``lose`` modes: nothing, the page cache (unflushed writes), the whole disk.
LOSE_MODES: tuple[str, ...] = ("none", "unflushed", "all")
#: Consumer ``reset`` policies (Kafka's ``auto.offset.reset``).
RESETS: tuple[str, ...] = ("none", "earliest", "latest")
#: ``elect`` types: ElectLeaders v3 types 0..4 (KIP-966).
ELECTION_TYPES: tuple[str, ...] = (
    "preferred",
    "unclean",
    "longest_log_balanced",
    "longest_log_aggressive",
    "designation",
)

#: Limits of a scenario file (a bigger story is refused with the limit named, rather than run for hours or
#: out of memory): brokers per cluster, partitions per topic, records per produce step, and simulated time
#: (every duration, and the time the steps take at least: their at/after offsets and run_for).
MAX_BROKERS = 50
MAX_PARTITIONS = 1000
MAX_RECORDS_PER_PRODUCE = 1_000_000
MAX_SIMULATED_MS = 24 * 3_600_000

_TOP_KEYS = ("name", "description", "seed", "level", "cluster", "sim", "topics", "clients", "steps", "until")
_CLUSTER_KEYS = ("brokers", "controllers", "kraft_version", "config")
_SIM_KEYS = ("writeback", "network_delay")
_TOPIC_KEYS = ("name", "partitions", "replication_factor", "assignment", "config")
_PRODUCER_KEYS = ("id", "producer", "partition", "acks", "interval", "keys", "tombstones")
_CONSUMER_KEYS = ("id", "consumer", "partition", "reset", "group", "commit_interval")
#: Kafka's ``auto.commit.interval.ms`` default (ms): how often a scenario's consumer commits its positions.
DEFAULT_COMMIT_INTERVAL_MS = 5000
_PARTITION_CHECKS = (
    "leader",
    "isr",
    "elr",
    "last_known_elr",
    "leader_epoch_at_least",
    "hwm",
    "hwm_at_least",
    "recovering",
)
_BROKER_CHECKS = ("fenced", "alive", "in_controlled_shutdown", "log_dir_offline", "metadata_offset_at_least",
                  "stray_partitions")
#: A metadata log condition's checks (the single controller's metadata log and its snapshots).
_METADATA_CHECKS = ("metadata_log_start_at_least", "metadata_snapshot_at_least")
#: A quorum condition's checks: the active controller (an id, ``none`` or ``any``) and the Raft epoch.
_QUORUM_CHECKS = ("active_controller", "quorum_epoch", "quorum_epoch_at_least")
_SET_CHECKS = ("isr", "elr", "last_known_elr")
_INT_CHECKS = ("leader_epoch_at_least", "hwm", "hwm_at_least", "metadata_offset_at_least")

_DEFAULT_WRITEBACK_MS = 30_000
_DEFAULT_DELAY_MS = (1, 5)
_DEFAULT_INTERVAL_MS = 100
_DEFAULT_PRODUCE_TIMEOUT_MS = 120_000  # Kafka's delivery.timeout.ms default (SCENARIOS.md)
_DEFAULT_WAIT_TIMEOUT_MS = 60_000

_DURATION_RE = re.compile(r"(0|[1-9][0-9]*)(ms|s|m)")
_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000}
_PARTITION_RE = re.compile(r"(.+)-(0|[1-9][0-9]*)")
_TOPIC_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


# ----------------------------------------------------------------------------------------- errors
class ScenarioError(Exception):
    """An invalid or unreadable scenario file.

    ``str(error)`` is ``<source>:<line>: step <n> (<verb>): <problem>``; the line part is left out
    when unknown and the step part when the problem is not inside a step (the verb part when the
    step's verb is unknown). Attributes: ``source``, ``line`` (1-based or None), ``step`` (1-based
    index or None), ``verb`` (or None) and ``problem``. The CLI reports it with exit code 2.
    """

    def __init__(
        self,
        problem: str,
        *,
        source: str = "<string>",
        line: int | None = None,
        step: int | None = None,
        verb: str | None = None,
    ) -> None:
        self.problem = problem
        self.source = source
        self.line = line
        self.step = step
        self.verb = verb
        where = source if line is None else f"{source}:{line}"
        if step is not None:
            where += f": step {step}" + (f" ({verb})" if verb is not None else "")
        super().__init__(f"{where}: {problem}")

    def __reduce__(self) -> tuple[Callable[..., ScenarioError], tuple[str, str, int | None, int | None, str | None]]:
        # keep keyword-only fields across pickling (Spark executors)
        return (_rebuild_error, (self.problem, self.source, self.line, self.step, self.verb))


def _rebuild_error(problem: str, source: str, line: int | None, step: int | None, verb: str | None) -> ScenarioError:
    return ScenarioError(problem, source=source, line=line, step=step, verb=verb)


# ------------------------------------------------------------------------------------ data model
@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A topic created at t=0.

    ``replication_factor`` and ``assignment`` are as given (at least one is set; when both are,
    they agree). ``assignment[p]`` is partition ``p``'s replica list, preferred leader first.
    ``config`` holds topic-level Kafka configs as strings.
    """

    name: str
    partitions: int
    replication_factor: int | None
    assignment: tuple[tuple[int, ...], ...] | None
    config: dict[str, str]


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """A background client running from t=0.

    ``kind`` is ``"producer"`` or ``"consumer"``; ``partition`` None means the client's choice.
    Producers use ``acks`` (``"all"|"1"|"0"``, default ``"all"``) and send every ``interval_ms``
    (default 100 ms); with ``keys`` > 0 the record ``n`` a producer sends has the key ``k<n % keys>`` (0: no
    key; a compacted topic needs keys), and with ``tombstones`` > 0 (and keys) every ``tombstones``-th record is a
    tombstone (a null value; its identity in a ``kraftlog-id`` header); consumers use ``reset``
    (``"none"|"earliest"|"latest"``, default ``"none"``), commit their positions to ``group`` (None: the
    client's id) every ``commit_interval_ms``. The fields a kind does not use keep their defaults.
    """

    id: str
    kind: str
    topic: str
    partition: int | None
    acks: str = "all"
    interval_ms: int = _DEFAULT_INTERVAL_MS
    reset: str = "none"
    keys: int = 0
    tombstones: int = 0
    group: str | None = None
    commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS

    @property
    def group_id(self) -> str:
        """The consumer's group id: ``group``, else its id."""
        return self.group if self.group is not None else self.id


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition for ``wait_until`` / ``expect``; every check must hold.

    ``kind == "partition"``: ``target`` is the canonical partition name (``"t-0"``); checks are
    ``leader`` (int, or None for ``none``), ``isr``/``elr``/``last_known_elr`` (frozenset[int]),
    ``leader_epoch_at_least``/``hwm``/``hwm_at_least`` (int) and ``recovering`` (bool). All read the
    controller's committed partition state except ``hwm``/``hwm_at_least`` (the leader's HWM).

    ``kind == "broker"``: ``target`` is the broker id; checks are ``fenced``/``alive``/
    ``in_controlled_shutdown``/``log_dir_offline`` (bool), ``metadata_offset_at_least`` (int: the offset of
    the last metadata record the running broker replayed) and ``stray_partitions`` (frozenset of partition names:
    exactly those are kept as ``-stray`` directories on its disk).

    ``kind == "metadata"``: ``target`` is ``"controller"``; checks are ``metadata_log_start_at_least`` and
    ``metadata_snapshot_at_least`` (int: the single controller's metadata log start offset, its latest
    snapshot's end offset; of a quorum, the least of those over its running controllers).

    ``kind == "quorum"``: ``target`` is ``"controllers"``; checks are ``active_controller`` (a controller id,
    None for ``none``, ``"any"``) and ``quorum_epoch`` / ``quorum_epoch_at_least`` (int: the highest Raft epoch
    a running controller is in). ``checks`` is never empty.
    """

    kind: str
    target: str | int
    checks: dict[str, object]


@dataclass(frozen=True, slots=True)
class Scenario:
    """A parsed scenario file.

    ``level`` is a level label (``"classic"``, ``"kip903"``, ``"elr"``, ``"urm"``) or None for the
    default; ``writeback_ms`` None means ``never``; ``delay_min_ms``..``delay_max_ms`` is the
    per-message network delay range; ``until_ms`` None means the run ends after the last step.
    ``source`` names where it came from (not part of equality).
    """

    name: str
    description: str
    seed: int
    level: str | None
    brokers: int
    config: dict[str, str]
    writeback_ms: int | None
    delay_min_ms: int
    delay_max_ms: int
    topics: tuple[TopicSpec, ...]
    clients: tuple[ClientSpec, ...]
    steps: tuple[Step, ...]
    until_ms: int | None
    #: how many controllers: 1 (the one controller, ``"controller"``) or a KRaft quorum of that many voters
    controllers: int = 1
    #: a quorum's ``kraft.version``: 0 (static voters, ``controller.quorum.voters``) or 1 (KIP-853: voters with
    #: directory ids, formatted with ``--initial-controllers``)
    kraft_version: int = 0
    source: str = field(default="<string>", compare=False)

    @property
    def controller_ids(self) -> tuple[Node, ...]:
        """The controllers' node ids: ``("controller",)``, or 3000, 3001, ... for a quorum."""
        if self.controllers == 1:
            return (CONTROLLER,)
        return tuple(CONTROLLER_ID_BASE + i for i in range(self.controllers))

    def topic(self, name: str) -> TopicSpec | None:
        """The topic called ``name``, or None."""
        for spec in self.topics:
            if spec.name == name:
                return spec
        return None



# ------------------------------------------------------------------------------- shared helpers
def _show(value: object) -> str:
    """A value as the user would write it in YAML, for messages."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_show(k)}: {_show(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return str(value)


def _is_int(value: object) -> TypeGuard[int]:
    """An int that is not a bool (YAML's true/false)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _ms(ms: int) -> str:
    return f"{ms}ms"



# ---------------------------------------------------------------------------------- other levels
def configs_at_level(scenario: Scenario, level: Level) -> tuple[Scenario, list[str]]:
    """``scenario`` as a cluster at ``level`` can run it: the cluster and topic configs that do not
    exist at ``level`` (:data:`kraftlog.metadata.config.CONFIG_LEVELS`, e.g. ``unclean.recovery.strategy``
    below ``urm``) left out, since its controller would refuse them; ``alter_config`` steps are kept
    as written (the controller answers INVALID_CONFIG, as Kafka does). Returns ``(scenario, notes)``,
    ``notes`` saying what was left out, one line each ([] and ``scenario`` itself when nothing was).
    A file whose own ``level:`` is below a config's level is refused when it is parsed; this serves a
    run at another level (``--level``, the campaign's library at every level)."""
    notes: list[str] = []

    def keep(config: dict[str, str], where: str) -> dict[str, str]:
        dropped = [k for k in sorted(config) if unknown_at_level(k, level)]
        for key in dropped:
            notes.append(f"{unknown_at_level(key, level)}; {key}={config[key]} in {where} left out")
        return {k: v for k, v in config.items() if k not in dropped} if dropped else config

    config = keep(scenario.config, "the cluster config")
    topics = tuple(t if (c := keep(t.config, f"topic {t.name}'s config")) is t.config else
                   TopicSpec(t.name, t.partitions, t.replication_factor, t.assignment, c) for t in scenario.topics)
    if not notes:
        return scenario, []
    return replace(scenario, config=config, topics=topics), notes
