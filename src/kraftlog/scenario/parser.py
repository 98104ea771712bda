"""Scenario files (format v1, ``SCENARIOS.md``): parsing and validation.

A scenario file is YAML that replays a failure story (in the deterministic simulation or on real
processes). This module turns it into typed, normalised, immutable objects (:class:`Scenario`,
:class:`TopicSpec`, :class:`ClientSpec`, :class:`Condition`, and :class:`Step` whose action is one
class per verb) and never runs anything itself.

Normalisation rules:

* every duration (``<int>ms``, ``<int>s``, ``<int>m``) becomes an int in ms (fields ending ``_ms``);
* Kafka config values become strings, as Kafka configs are (``2`` → ``"2"``, ``true`` → ``"true"``);
* ``acks`` becomes ``"all"``, ``"1"`` or ``"0"`` (YAML ints ``1``/``0`` are accepted);
* nodes are broker ids (ints in ``0..brokers-1``) or the string ``"controller"``; lists of nodes
  become tuples, condition replica sets (``isr``, ``elr``, ``last_known_elr``) become frozensets;
* defaults from the format are filled in (``after: 0ms``, produce ``partition: 0``/``acks: all``/
  ``timeout: 120s``, ``wait_until`` ``timeout: 60s``, ``writeback: 30s``, ``network_delay: 1ms-5ms``...).

Every problem raises :class:`ScenarioError`, whose message names the file, the 1-based YAML line,
the step (``step 3 (crash)``) when the problem is in a step, and the problem. Unknown keys are errors
at every level, so a typo never passes silently; duplicate mapping keys are errors too.

:func:`~kraftlog.scenario.dump_scenario` writes a :class:`Scenario` back in the same format, with durations as
``<n>ms``; ``parse_scenario(dump_scenario(s)) == s`` (``Scenario.source`` and ``Step.line`` are excluded from
equality).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Collection

from kraftlog.level import Level
from kraftlog.metadata.config import KNOWN_CONFIGS, unknown_at_level
from kraftlog.metadata.config import invalid_value as invalid_config_value
from kraftlog.protocol.messages import API_NAMES

from . import model, steps
from .model import (
    CONTROLLER,
    MAX_SIMULATED_MS,
    ClientSpec,
    Condition,
    Node,
    Scenario,
    ScenarioError,
    TopicSpec,
    _is_int,
    _show,
)
from .parse_base import _Reader, parse_duration, parse_partition_name
from .steps import VERBS, Action, RunFor, Step
from .yaml_lines import LDict, load_yaml

__all__ = ["load_scenario", "parse_duration", "parse_partition_name", "parse_scenario"]


# ----------------------------------------------------------------------------------- the parser
class _Parser(_Reader):
    """Validation state: the source, the cluster size, the topics and the current step."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.brokers = 0
        #: the controllers' ids of a quorum (``cluster: {controllers: N}``, N > 1); empty for the one controller
        self.controller_ids: tuple[int, ...] = ()
        self.topics: dict[str, TopicSpec] = {}
        self.consumers: list[str] = []  # the ids of the consumers among the clients (restart_client names one)
        self.step: int | None = None
        self.verb: str | None = None
        #: the file's own ``level:`` (configs that do not exist at it are refused), None when absent
        self.level_: Level | None = None

    def broker_range(self) -> str:
        return f"brokers 0..{self.brokers - 1}" if self.brokers > 1 else "broker 0"

    def broker(self, value: object, line: int, what: str = "broker") -> int:
        if not _is_int(value):
            self.fail(line, f"{what} must be a broker id (an integer), got {_show(value)}")
        if not 0 <= value < self.brokers:
            self.fail(line, f"{what} {value} is not in the cluster ({self.broker_range()})")
        return value

    def controller_range(self) -> str:
        ids = self.controller_ids
        return f"controllers {ids[0]}..{ids[-1]}" if ids else repr(CONTROLLER)

    def node(self, value: object, line: int, what: str = "node") -> Node:
        if value == CONTROLLER and isinstance(value, str):
            if self.controller_ids:
                self.fail(line, f"{what}: this cluster has a quorum of {len(self.controller_ids)} controllers: name "
                                f"one by its id ({self.controller_range()})")
            return CONTROLLER
        if value == model.ACTIVE_CONTROLLER and self.controller_ids:
            return model.ACTIVE_CONTROLLER
        if not _is_int(value):
            self.fail(line, f"{what} must be a broker id or {self.controller_range()}, got {_show(value)}")
        if value in self.controller_ids:
            return value
        if not 0 <= value < self.brokers:
            self.fail(line, f"{what} {value} is not in the cluster ({self.broker_range()}, or "
                            f"{self.controller_range()})")
        return value

    def controller(self, value: object, line: int) -> Node:
        """``controller: <id>`` of a crash, restart, pause or resume: a quorum's controller id (the one
        controller is ``node: controller``)."""
        if not self.controller_ids:
            self.fail(line, f"controller: <id> names a controller of a quorum (cluster controllers > 1); this "
                            f"cluster has one controller: write node: {CONTROLLER}")
        if value == model.ACTIVE_CONTROLLER:
            return model.ACTIVE_CONTROLLER
        if not _is_int(value) or value not in self.controller_ids:
            self.fail(line, f"controller must be a controller id ({self.controller_range()}) or "
                            f"{model.ACTIVE_CONTROLLER!r}, got {_show(value)}")
        return value

    def nodes(self, value: object, line: int, what: str) -> tuple[Node, ...]:
        items = self.sequence(value, line, what)
        if not items:
            self.fail(line, f"{what} must not be empty")
        out: list[Node] = []
        for i, item in enumerate(items):
            node = self.node(item, items.item_line(i))
            if node in out:
                self.fail(items.item_line(i), f"node {_show(node)} is listed twice in {what}")
            out.append(node)
        return tuple(out)

    def brokers_set(self, value: object, line: int, what: str) -> frozenset[int]:
        items = self.sequence(value, line, what)
        out: list[int] = []
        for i, item in enumerate(items):
            broker = self.broker(item, items.item_line(i), f"{what} member")
            if broker in out:
                self.fail(items.item_line(i), f"broker {broker} is listed twice in {what}")
            out.append(broker)
        return frozenset(out)

    def config(self, value: object, line: int, what: str, *, allow_empty: bool = True) -> dict[str, str]:
        if value is None and allow_empty:
            return {}
        mapping = self.mapping(value, line, what)
        if not mapping and not allow_empty:
            self.fail(line, f"{what} must not be empty")
        out: dict[str, str] = {}
        for key, item in mapping.items():
            if not isinstance(key, str) or not key.strip():
                self.fail(mapping.key_line(key), f"config name {_show(key)} in {what} must be a string")
            item_line = mapping.value_line(key)
            if isinstance(item, bool):
                out[key] = "true" if item else "false"
            elif isinstance(item, (int, str)):
                out[key] = str(item)
            elif isinstance(item, float) and math.isfinite(item):
                out[key] = repr(item)
            else:
                self.fail(item_line, f"config {key!r} in {what} must be a string, number or boolean, got {_show(item)}")
            if key not in KNOWN_CONFIGS:  # Kafka refuses an unknown config name (INVALID_CONFIG)
                close = difflib.get_close_matches(key, sorted(KNOWN_CONFIGS), n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                self.fail(mapping.key_line(key), f"unknown config {key!r} in {what}{hint}")
            if self.level_ is not None and unknown_at_level(key, self.level_):
                self.fail(mapping.key_line(key), f"{unknown_at_level(key, self.level_)} (in {what}; the "
                                                 f"file's level is {self.level_.label})")
            problem = invalid_config_value(key, out[key])
            if problem is not None:  # e.g. unclean.recovery.strategy: Fast
                self.fail(item_line, f"{problem} (in {what})")
        return out

    def topic_ref(self, value: object, line: int, what: str = "topic") -> TopicSpec:
        name = self.str_(value, line, what)
        spec = self.topics.get(name)
        if spec is None:
            known = ", ".join(self.topics) or "none defined"
            self.fail(line, f"unknown topic {name!r} (topics: {known})")
        return spec

    def partition_index(self, spec: TopicSpec, value: object, line: int) -> int:
        index = self.int_(value, line, "partition", minimum=0)
        if index >= spec.partitions:
            self.fail(
                line,
                f"topic {spec.name!r} has no partition {index} "
                f"(partitions 0..{spec.partitions - 1})",
            )
        return index

    def partition_name(self, value: object, line: int) -> str:
        try:
            topic, index = parse_partition_name(value)
        except ValueError as exc:
            self.fail(line, str(exc))
        spec = self.topic_ref(topic, line)
        self.partition_index(spec, index, line)
        return f"{topic}-{index}"

    # ---------------------------------------------------------------------------- top level
    def scenario(self, data: object) -> Scenario:
        if data is None:
            self.fail(None, "the scenario file is empty")
        doc = self.mapping(data, 1, "a scenario file")
        self.keys(doc, model._TOP_KEYS, "the scenario")

        name = self.str_(self.require(doc, "name", "the scenario"), doc.value_line("name"), "name")
        description = doc.get("description")
        if description is None:
            description = ""
        elif not isinstance(description, str):
            self.fail(doc.value_line("description"), f"description must be a string, got {_show(description)}")

        seed = 0
        if doc.get("seed") is not None:
            seed = self.int_(doc["seed"], doc.value_line("seed"), "seed")

        level = None
        if doc.get("level") is not None:
            level = self.level(doc["level"], doc.value_line("level"))
            self.level_ = next(lv for lv in Level if lv.label == level)

        cluster = self.mapping(self.require(doc, "cluster", "the scenario"), doc.value_line("cluster"), "cluster")
        self.keys(cluster, model._CLUSTER_KEYS, "cluster")
        self.brokers = self.int_(
            self.require(cluster, "brokers", "cluster"), cluster.value_line("brokers"), "cluster brokers", minimum=1,
            maximum=model.MAX_BROKERS)
        controllers = 1
        if cluster.get("controllers") is not None:
            controllers = self.int_(cluster["controllers"], cluster.value_line("controllers"), "cluster controllers",
                                    minimum=1, maximum=model.MAX_CONTROLLERS)
        if controllers > 1:
            self.controller_ids = tuple(model.CONTROLLER_ID_BASE + i for i in range(controllers))
        kraft_version = 0
        if cluster.get("kraft_version") is not None:
            kraft_version = self.int_(cluster["kraft_version"], cluster.value_line("kraft_version"),
                                      "cluster kraft_version", minimum=0, maximum=1)
            if controllers == 1:
                self.fail(cluster.value_line("kraft_version"), "cluster kraft_version needs a controller quorum "
                                                               "(controllers > 1)")
        config = self.config(cluster.get("config"), cluster.value_line("config"), "cluster config")

        writeback_ms: int | None = model._DEFAULT_WRITEBACK_MS
        delay_min_ms, delay_max_ms = model._DEFAULT_DELAY_MS
        sim = self.mapping(doc.get("sim"), doc.value_line("sim"), "sim", optional=True)
        self.keys(sim, model._SIM_KEYS, "sim")
        if "writeback" in sim:
            value, line = sim["writeback"], sim.value_line("writeback")
            writeback_ms = (None if value == "never"
                            else self.duration(value, line, "sim writeback (never or a duration)"))
        if "network_delay" in sim:
            delay_min_ms, delay_max_ms = self.delay(sim["network_delay"], sim.value_line("network_delay"))

        topics = []
        if doc.get("topics") is not None:
            items = self.sequence(doc["topics"], doc.value_line("topics"), "topics")
            for i, item in enumerate(items):
                spec = self.topic(item, items.item_line(i), i)
                self.topics[spec.name] = spec
                topics.append(spec)

        clients = []
        if doc.get("clients") is not None:
            items = self.sequence(doc["clients"], doc.value_line("clients"), "clients")
            seen: set[str] = set()
            for i, item in enumerate(items):
                client = self.client(item, items.item_line(i), i)
                if client.id in seen:
                    self.fail(items.item_line(i), f"client id {client.id!r} is used twice")
                seen.add(client.id)
                clients.append(client)
                if client.kind == "consumer":
                    self.consumers.append(client.id)

        until_ms = None
        if doc.get("until") is not None:
            until_ms = self.duration(doc["until"], doc.value_line("until"), "until")

        parsed_steps = []
        if doc.get("steps") is not None:
            items = self.sequence(doc["steps"], doc.value_line("steps"), "steps")
            least_ms = 0  # the least simulated time the steps take: at/after offsets and run_for
            for i, item in enumerate(items):
                step = self.step_(item, items.item_line(i), i + 1, until_ms)
                parsed_steps.append(step)
                least_ms = (max(least_ms, step.at_ms) if step.at_ms is not None else least_ms + step.after_ms) + (
                    step.action.duration_ms if isinstance(step.action, RunFor) else 0)
                if least_ms > MAX_SIMULATED_MS:
                    self.fail(items.item_line(i), f"the steps take at least {least_ms // 1000}s of simulated time "
                                                  f"by here, more than the limit of {MAX_SIMULATED_MS // 3_600_000}h")
            self.step = self.verb = None

        return Scenario(
            name=name,
            description=description,
            seed=seed,
            level=level,
            brokers=self.brokers,
            config=config,
            writeback_ms=writeback_ms,
            delay_min_ms=delay_min_ms,
            delay_max_ms=delay_max_ms,
            topics=tuple(topics),
            clients=tuple(clients),
            steps=tuple(parsed_steps),
            until_ms=until_ms,
            controllers=controllers,
            kraft_version=kraft_version,
            source=self.source,
        )

    def level(self, value: object, line: int) -> str:
        if not isinstance(value, str):
            self.fail(line, f"level must be a string, got {_show(value)}")
        try:
            return Level.parse(value).label
        except ValueError as exc:
            # A level that exists but is not implemented yet is accepted here: --level overrides the
            # file, and the runner refuses an unimplemented effective level with Level.parse.
            wanted = value.strip().lower()
            for known in Level:
                if known.label == wanted:
                    return known.label
            self.fail(line, str(exc))

    def delay(self, value: object, line: int) -> tuple[int, int]:
        what = "sim network_delay (a duration or a range like 1ms-5ms)"
        if isinstance(value, str) and value.count("-") == 1:
            low_text, high_text = value.split("-")
            low = self.duration(low_text, line, what)
            high = self.duration(high_text, line, what)
        else:
            low = high = self.duration(value, line, what)
        if low > high:
            self.fail(line, f"sim network_delay: the minimum {low}ms is above the maximum {high}ms")
        return low, high

    # ------------------------------------------------------------------------- topics, clients
    def topic(self, value: object, line: int, position: int) -> TopicSpec:
        item = self.mapping(value, line, f"topics[{position}]")
        self.keys(item, model._TOPIC_KEYS, f"topics[{position}]")
        name = self.str_(self.require(item, "name", f"topics[{position}]"), item.value_line("name"), "topic name")
        if not model._TOPIC_RE.fullmatch(name) or name in (".", ".."):
            self.fail(
                item.value_line("name"),
                f"topic name {name!r} is not a legal Kafka topic name "
                "(1..249 of letters, digits, '.', '_' and '-'; not '.' or '..')",
            )
        if name in self.topics:
            self.fail(item.value_line("name"), f"topic {name!r} is defined twice")
        what = f"topic {name!r}"

        partitions = None
        if item.get("partitions") is not None:
            partitions = self.int_(item["partitions"], item.value_line("partitions"), f"{what}: partitions", minimum=1,
                                   maximum=model.MAX_PARTITIONS)
        rf = None
        if item.get("replication_factor") is not None:
            line_rf = item.value_line("replication_factor")
            rf = self.int_(item["replication_factor"], line_rf, f"{what}: replication_factor", minimum=1)
            if rf > self.brokers:
                self.fail(line_rf,
                          f"{what}: replication_factor {rf} is larger than the cluster ({self.broker_range()})")
        assignment = None
        if item.get("assignment") is not None:
            assignment = self.assignment(item["assignment"], item.value_line("assignment"), what)
            line_a = item.value_line("assignment")
            if partitions is not None and partitions != len(assignment):
                self.fail(
                    line_a,
                    f"{what}: assignment has {len(assignment)} replica lists but partitions is {partitions}",
                )
            partitions = len(assignment)
            if rf is not None and len(assignment[0]) != rf:
                self.fail(
                    line_a,
                    f"{what}: assignment has {len(assignment[0])} replicas per partition "
                    f"but replication_factor is {rf}",
                )
        if rf is None and assignment is None:
            self.fail(item.line, f"{what} needs replication_factor or assignment")
        config = self.config(item.get("config"), item.value_line("config"), f"{what} config")
        return TopicSpec(name, partitions if partitions is not None else 1, rf, assignment, config)

    def assignment(self, value: object, line: int, what: str) -> tuple[tuple[int, ...], ...]:
        lists = self.sequence(value, line, f"{what}: assignment")
        if not lists:
            self.fail(line, f"{what}: assignment must not be empty")
        out: list[tuple[int, ...]] = []
        for p, replicas_value in enumerate(lists):
            p_line = lists.item_line(p)
            replicas = self.sequence(replicas_value, p_line, f"{what}: assignment for partition {p}")
            if not replicas:
                self.fail(p_line, f"{what}: assignment for partition {p} is empty")
            ids: list[int] = []
            for r, replica in enumerate(replicas):
                r_line = replicas.item_line(r)
                if not _is_int(replica):
                    self.fail(r_line,
                              f"{what}: assignment for partition {p}: replica {_show(replica)} is not a broker id")
                if not 0 <= replica < self.brokers:
                    self.fail(
                        r_line,
                        f"{what}: assignment for partition {p} names broker {replica}, "
                        f"which is not in the cluster ({self.broker_range()})",
                    )
                if replica in ids:
                    self.fail(r_line, f"{what}: assignment for partition {p} lists broker {replica} twice")
                ids.append(replica)
            if out and len(ids) != len(out[0]):
                self.fail(p_line, f"{what}: every partition must have the same number of replicas")
            out.append(tuple(ids))
        return tuple(out)

    def client(self, value: object, line: int, position: int) -> ClientSpec:
        where = f"clients[{position}]"
        item = self.mapping(value, line, where)
        client_id = self.str_(self.require(item, "id", where), item.value_line("id"), f"{where} id")
        if client_id == CONTROLLER:
            self.fail(item.value_line("id"), f"client id {CONTROLLER!r} is the controller's node name")
        where = f"client {client_id!r}"
        kinds = [k for k in ("producer", "consumer") if k in item]
        if len(kinds) != 1:
            self.fail(line, f"{where} needs exactly one of 'producer: <topic>' or 'consumer: <topic>'")
        kind = kinds[0]
        self.keys(item, model._PRODUCER_KEYS if kind == "producer" else model._CONSUMER_KEYS, f"{where} ({kind})")
        spec = self.topic_ref(item[kind], item.value_line(kind), f"{where} topic")
        partition = None
        if item.get("partition") is not None:
            partition = self.partition_index(spec, item["partition"], item.value_line("partition"))
        acks, interval_ms, reset = "all", model._DEFAULT_INTERVAL_MS, "none"
        if "acks" in item:
            acks = self.acks(item["acks"], item.value_line("acks"))
        if "interval" in item:
            interval_ms = self.duration(item["interval"], item.value_line("interval"), f"{where} interval")
            if interval_ms < 1:
                self.fail(item.value_line("interval"), f"{where} interval must be at least 1ms")
        if "reset" in item:
            reset = self.choice(item["reset"], item.value_line("reset"), f"{where} reset", model.RESETS)
        keys, tombstones = (self.int_(item[k], item.value_line(k), f"{where} {k}", 1) if k in item else 0
                            for k in ("keys", "tombstones"))
        if tombstones and not keys:
            self.fail(item.value_line("tombstones"), f"{where} tombstones need keys (a tombstone deletes a key)")
        group = self.str_(item["group"], item.value_line("group"), f"{where} group") if "group" in item else None
        commit_ms = model.DEFAULT_COMMIT_INTERVAL_MS
        if "commit_interval" in item:
            commit_ms = self.duration(item["commit_interval"], item.value_line("commit_interval"),
                                      f"{where} commit_interval")
            if commit_ms < 1:
                self.fail(item.value_line("commit_interval"), f"{where} commit_interval must be at least 1ms")
        return ClientSpec(client_id, kind, spec.name, partition, acks, interval_ms, reset, keys, tombstones, group,
                          commit_ms)

    def acks(self, value: object, line: int) -> str:
        if _is_int(value) and value in (0, 1):
            return str(value)
        if isinstance(value, str) and value in model.ACKS:
            return value
        self.fail(line, f"acks must be one of all, 1, 0, got {_show(value)}")

    # ----------------------------------------------------------------------------------- steps
    def step_(self, value: object, line: int, index: int, until_ms: int | None) -> Step:
        self.step, self.verb = index, None
        item = self.mapping(value, line, "a step")
        line = item.line
        others = [k for k in item if k not in ("at", "after")]
        verbs = [k for k in others if k in VERBS]
        if not verbs:
            if not others:
                self.fail(line, f"no verb (expected one of: {', '.join(VERBS)})")
            bad = others[0]
            self.fail(item.key_line(bad), f"unknown verb {_show(bad)} (expected one of: {', '.join(VERBS)})")
        if len(verbs) > 1:
            self.fail(line, f"more than one verb ({', '.join(verbs)}); a step has exactly one")
        verb = self.verb = verbs[0]
        for key in others:
            if key != verb:
                self.fail(
                    item.key_line(key),
                    f"unknown key {_show(key)} next to the verb (a step holds the verb and at/after; "
                    f"the verb's arguments go inside its mapping)",
                )
        if "at" in item and "after" in item:
            self.fail(item.key_line("after"), "a step has 'at' or 'after', not both")
        at_ms, after_ms = None, 0
        if "at" in item:
            at_ms = self.duration(item["at"], item.value_line("at"), "at")
            if until_ms is not None and at_ms > until_ms:
                self.fail(item.value_line("at"), f"at {at_ms}ms is later than until ({until_ms}ms)")
        elif "after" in item:
            after_ms = self.duration(item["after"], item.value_line("after"), "after")
        action = getattr(self, "verb_" + verb)(item[verb], item.value_line(verb))
        return Step(index=index, line=line, at_ms=at_ms, after_ms=after_ms, action=action)

    def args(self, value: object, line: int, allowed: Collection[str], *, optional: bool = False) -> LDict:
        what = f"the arguments of {self.verb}"
        if value is None and not optional:
            self.fail(line, f"{self.verb} needs arguments ({', '.join(allowed)})")
        mapping = self.mapping(value, line, what, optional=optional)
        self.keys(mapping, allowed, self.step_verb())
        return mapping

    def verb_produce(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("topic", "partition", "count", "acks", "timeout"))
        spec = self.topic_ref(self.require(a, "topic", "produce"), a.value_line("topic"))
        partition = 0
        if "partition" in a:
            partition = self.partition_index(spec, a["partition"], a.value_line("partition"))
        count = self.int_(self.require(a, "count", "produce"), a.value_line("count"), "count", minimum=1,
                          maximum=model.MAX_RECORDS_PER_PRODUCE)
        acks = self.acks(a["acks"], a.value_line("acks")) if "acks" in a else "all"
        timeout_ms = model._DEFAULT_PRODUCE_TIMEOUT_MS
        if "timeout" in a:
            timeout_ms = self.duration(a["timeout"], a.value_line("timeout"), "timeout")
        return steps.Produce(spec.name, partition, count, acks, timeout_ms)

    def target(self, a: LDict) -> int | str:
        """The node of a crash, restart, pause or resume: exactly one of ``broker: <id>``,
        ``node: <id> | controller`` and (a quorum) ``controller: <id>``; a broker id (either spelling),
        ``"controller"`` or a quorum's controller id."""
        given = [k for k in ("broker", "node", "controller") if k in a]
        if not given:
            self.fail(a.line, f"{self.verb} needs 'broker' (or 'node: <id> | {CONTROLLER}', or 'controller: <id>')")
        if len(given) != 1:
            self.fail(a.line, f"{self.verb} names exactly one of 'broker: <id>', 'node: <id> | {CONTROLLER}' and "
                              "'controller: <id>'")
        if given[0] == "broker":
            return self.broker(a["broker"], a.value_line("broker"))
        if given[0] == "controller":
            return self.controller(a["controller"], a.value_line("controller"))
        return self.node(a["node"], a.value_line("node"))

    def verb_crash(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("broker", "node", "controller", "lose"))
        out = self.target(a)
        lose = "none"
        if "lose" in a:
            lose = self.choice(a["lose"], a.value_line("lose"), "lose", model.LOSE_MODES)
        return steps.Crash(out, lose)

    def verb_shutdown(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("broker",))
        return steps.Shutdown(self.broker(self.require(a, "broker", self.step_verb()), a.value_line("broker")))

    def verb_restart(self, value: object, line: int) -> Action:
        return steps.Restart(self.target(self.args(value, line, ("broker", "node", "controller"))))

    def verb_pause(self, value: object, line: int) -> Action:
        node = self.target(self.args(value, line, ("broker", "node", "controller")))
        return steps.Pause(node) if self.verb == "pause" else steps.Resume(node)

    verb_resume = verb_pause

    def verb_restart_controller(self, value: object, line: int) -> Action:
        a = self.mapping(value, line, "the arguments of restart_controller", optional=True)
        if a:
            self.fail(a.key_line(next(iter(a))), "restart_controller takes no arguments")
        return steps.RestartController()

    def verb_restart_client(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("client",))
        client = self.require(a, "client", "restart_client")
        if client not in self.consumers:
            known = ", ".join(self.consumers) or "none"
            self.fail(a.value_line("client"), f"client {_show(client)} is not a consumer of this scenario "
                                              f"(consumers: {known})")
        assert isinstance(client, str)
        return steps.RestartClient(client)

    def verb_disk_full(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("broker", "for"))
        broker = self.broker(self.require(a, "broker", "disk_full"), a.value_line("broker"))
        duration = self.duration(self.require(a, "for", "disk_full"), a.value_line("for"), "for")
        if duration < 1:
            self.fail(a.value_line("for"), "for must be at least 1ms")
        return steps.DiskFull(broker, duration)

    def verb_corrupt(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("broker", "partition", "at", "bytes"))
        broker = self.broker(self.require(a, "broker", "corrupt"), a.value_line("broker"))
        p_line = a.value_line("partition")
        partition = self.partition_name(self.require(a, "partition", "corrupt"), p_line)
        topic, index = parse_partition_name(partition)
        spec = self.topics[topic]
        if spec.assignment and broker not in spec.assignment[index]:
            self.fail(a.value_line("broker"), f"broker {broker} holds no replica of {partition} "
                                               f"(replicas {list(spec.assignment[index])})")
        at: int | str = "middle"
        if "at" in a:
            given = a["at"]
            if not ((isinstance(given, str) and given in model.CORRUPT_AT) or (_is_int(given) and given >= 0)):
                self.fail(a.value_line("at"), f"at must be one of {', '.join(model.CORRUPT_AT)} or an offset "
                                              f"(an integer >= 0), got {_show(given)}")
            at = given
        nbytes = 1
        if "bytes" in a:
            nbytes = self.int_(a["bytes"], a.value_line("bytes"), "bytes", minimum=1, maximum=model.MAX_CORRUPT_BYTES)
        return steps.Corrupt(broker, partition, at, nbytes)

    def verb_isolate(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("nodes",))
        return steps.Isolate(self.nodes(self.require(a, "nodes", "isolate"), a.value_line("nodes"), "nodes"))

    def verb_partition(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("groups",))
        g_line = a.value_line("groups")
        groups = self.sequence(self.require(a, "groups", "partition"), g_line, "groups")
        if not groups:
            self.fail(g_line, "groups must not be empty")
        out: list[tuple[Node, ...]] = []
        seen: set[Node] = set()
        for i, group in enumerate(groups):
            nodes = self.nodes(group, groups.item_line(i), f"groups[{i}]")
            for node in nodes:
                if node in seen:
                    self.fail(groups.item_line(i), f"node {_show(node)} is in more than one group")
                seen.add(node)
            out.append(nodes)
        return steps.Partition(tuple(out))

    def verb_cut(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("from", "to"))
        src = self.node(self.require(a, "from", "cut"), a.value_line("from"), "from")
        dst = self.node(self.require(a, "to", "cut"), a.value_line("to"), "to")
        if src == dst:
            self.fail(a.value_line("to"), f"from and to are the same node {_show(src)}")
        return steps.Cut(src, dst)

    def verb_heal(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("nodes",), optional=True)
        nodes = None
        if a.get("nodes") is not None:
            nodes = self.nodes(a["nodes"], a.value_line("nodes"), "nodes")
        return steps.Heal(nodes)

    def verb_hold(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("api", "from", "to"), optional=True)
        api: str | None = None
        src: Node | None = None
        dst: Node | None = None
        if a.get("api") is not None:
            given = a["api"]
            if not isinstance(given, str) or given not in API_NAMES:
                self.fail(
                    a.value_line("api"),
                    f"unknown api {_show(given)} (expected one of: {', '.join(sorted(API_NAMES))})",
                )
            api = given
        if a.get("from") is not None:
            src = self.node(a["from"], a.value_line("from"), "from")
        if a.get("to") is not None:
            dst = self.node(a["to"], a.value_line("to"), "to")
        return (steps.Hold if self.verb == "hold" else steps.Release)(api, src, dst)

    verb_release = verb_hold

    def verb_alter_config(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("topic", "config"))
        topic = None
        if a.get("topic") is not None:
            topic = self.topic_ref(a["topic"], a.value_line("topic")).name
        config = self.config(
            self.require(a, "config", "alter_config"), a.value_line("config"), "config", allow_empty=False
        )
        return steps.AlterConfig(topic, config)

    def verb_delete_topic(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("topic",))
        return steps.DeleteTopic(self.topic_ref(self.require(a, "topic", "delete_topic"), a.value_line("topic")).name)

    def verb_elect(self, value: object, line: int) -> Action:
        a = self.args(value, line, ("partition", "type", "leader"))
        partition = self.partition_name(self.require(a, "partition", "elect"), a.value_line("partition"))
        kind = self.choice(self.require(a, "type", "elect"), a.value_line("type"), "type", model.ELECTION_TYPES)
        leader = None
        if kind == "designation":
            leader = self.broker(self.require(a, "leader", "elect with type designation"), a.value_line("leader"),
                                 "leader")
        elif "leader" in a:
            self.fail(a.key_line("leader"), f"leader is only given with type designation, not {kind}")
        return steps.Elect(partition, kind, leader)

    def verb_wait_until(self, value: object, line: int) -> Action:
        a = self.mapping(value, line, "the condition of wait_until")
        timeout_ms = model._DEFAULT_WAIT_TIMEOUT_MS
        if "timeout" in a:
            timeout_ms = self.duration(a["timeout"], a.value_line("timeout"), "timeout")
        condition = self.condition(a, extra=("timeout",))
        return steps.WaitUntil(condition, timeout_ms)

    def verb_expect(self, value: object, line: int) -> Action:
        a = self.mapping(value, line, "the condition of expect")
        return steps.Expect(self.condition(a))

    def verb_run_for(self, value: object, line: int) -> Action:
        return RunFor(self.duration(value, line, "run_for"))

    # ------------------------------------------------------------------------------ conditions
    def condition(self, a: LDict, extra: tuple[str, ...] = ()) -> Condition:
        quorum_keys = [k for k in model._QUORUM_CHECKS if k in a]
        if quorum_keys and not any(k in a for k in ("partition", "broker")):
            return self.controller_condition(a, extra, "quorum")
        if any(k in a for k in model._METADATA_CHECKS) and not any(k in a for k in ("partition", "broker")):
            return self.controller_condition(a, extra, "metadata")
        kinds = [k for k in ("partition", "broker") if k in a]
        if len(kinds) != 1:
            self.fail(a.line, "a condition names exactly one 'partition: <topic>-<index>' or 'broker: <id>', or "
                              "checks the quorum (active_controller, quorum_epoch, quorum_epoch_at_least) or the "
                              "metadata log (metadata_log_start_at_least, metadata_snapshot_at_least)")
        kind = kinds[0]
        allowed = (kind, *(model._PARTITION_CHECKS if kind == "partition" else model._BROKER_CHECKS), *extra)
        self.keys(a, allowed, f"a {kind} condition")
        target: str | int
        if kind == "partition":
            target = self.partition_name(a["partition"], a.value_line("partition"))
        else:
            target = self.broker(a["broker"], a.value_line("broker"))
        checks: dict[str, object] = {}
        for key in allowed[1 : len(allowed) - len(extra)]:
            if key not in a:
                continue
            value, line = a[key], a.value_line(key)
            if key == "leader":
                checks[key] = None if value in ("none", None) else self.broker(value, line, "leader")
            elif key in model._SET_CHECKS:
                checks[key] = self.brokers_set(value, line, key)
            elif key in model._INT_CHECKS:
                checks[key] = self.int_(value, line, key, minimum=0)
            elif key == "stray_partitions":
                items = self.sequence(value, line, key)
                checks[key] = frozenset(self.partition_name(v, items.item_line(i)) for i, v in enumerate(items))
            else:
                checks[key] = self.bool_(value, line, key)
        if not checks:
            self.fail(a.line, f"the {kind} condition has no checks (expected any of: {', '.join(allowed[1:])})")
        return Condition(kind, target, checks)

    def controller_condition(self, a: LDict, extra: tuple[str, ...], kind: str) -> Condition:
        """``kind`` "quorum": ``active_controller: <id> | none | any`` and ``quorum_epoch[_at_least]: <n>`` (a quorum
        only); "metadata": ``metadata_log_start_at_least`` / ``metadata_snapshot_at_least: <n>`` (the single
        controller's metadata log; of a quorum, every running controller's)."""
        names = model._QUORUM_CHECKS if kind == "quorum" else model._METADATA_CHECKS
        self.keys(a, (*names, *extra), "a quorum condition" if kind == "quorum" else "a metadata log condition")
        if kind == "quorum" and not self.controller_ids:
            self.fail(a.line, "a quorum condition needs a quorum of controllers (cluster controllers > 1)")
        checks: dict[str, object] = {}
        for key in (k for k in names if k in a):
            value, line = a[key], a.value_line(key)
            if key != "active_controller":
                checks[key] = self.int_(value, line, key, minimum=0)
            else:
                checks[key] = None if value in ("none", None) else "any" if value == "any" else self.controller(value,
                                                                                                              line)
        return Condition(kind, "controllers" if kind == "quorum" else "controller", checks)



# --------------------------------------------------------------------------------- public API
def parse_scenario(text: str, source: str = "<string>") -> Scenario:
    """Parse and validate scenario YAML ``text``; ``source`` names it in messages.

    Returns a normalised :class:`Scenario` whose steps' actions are the verb classes of
    :mod:`kraftlog.scenario.steps` (durations in ms, nodes are broker ids or ``"controller"``);
    ``Step.args`` gives an action's arguments as a dict keyed as the file names them: ``produce``
    {topic, partition, count, acks, timeout_ms}; ``crash`` {broker, lose} (the controller:
    {node: "controller", lose}); ``restart``, ``pause``, ``resume`` {broker} (the controller: {node: "controller"});
    ``shutdown`` {broker}; ``restart_controller`` {}; ``isolate`` {nodes: tuple}; ``partition``
    {groups: tuple of tuples}; ``cut`` {from, to}; ``heal`` {nodes: tuple | None}; ``hold``/``release``
    {api, from, to} (each possibly None); ``alter_config`` {topic | None, config: dict[str, str]};
    ``elect`` {partition: "t-0", type, leader | None}; ``wait_until`` {condition, timeout_ms};
    ``expect`` {condition}; ``run_for`` {duration_ms}; ``restart_client`` {client}.

    Raises :class:`ScenarioError` naming the line (and step) of the first problem found.
    """
    if not isinstance(text, str):
        raise ScenarioError(f"scenario text must be a string, got {type(text).__name__}", source=source)
    data = load_yaml(text, source)
    return _Parser(source).scenario(data)


def load_scenario(path: str | os.PathLike[str]) -> Scenario:
    """Read and parse the scenario file at ``path`` (UTF-8).

    Raises :class:`ScenarioError` when the file cannot be read or is invalid.
    """
    source = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise ScenarioError(f"cannot read the scenario file: {exc.strerror or exc}", source=source) from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"the scenario file is not UTF-8 text: {exc.reason}", source=source) from None
    return parse_scenario(text, source)
