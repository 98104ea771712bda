"""Writing a :class:`~kraftlog.scenario.Scenario` back as YAML in the SCENARIOS.md format
(:func:`dump_scenario`); ``parse_scenario(dump_scenario(s)) == s``."""

from __future__ import annotations

import math
from collections.abc import Iterable

import yaml

from .model import CONTROLLER, DEFAULT_COMMIT_INTERVAL_MS, Condition, Scenario, _ms, is_controller
from .steps import (
    Action,
    AlterConfig,
    Corrupt,
    Crash,
    Cut,
    DeleteTopic,
    DiskFull,
    Elect,
    Expect,
    Heal,
    Hold,
    Isolate,
    Partition,
    Pause,
    Produce,
    Release,
    Restart,
    RestartClient,
    RestartController,
    Resume,
    RunFor,
    Shutdown,
    Step,
    WaitUntil,
)

__all__ = ["dump_scenario", "dump_step", "dump_steps"]


def _dump_condition(condition: Condition) -> dict[str, object]:
    out: dict[str, object] = {} if condition.kind == "quorum" else {condition.kind: condition.target}
    for key, value in condition.checks.items():
        if key in ("leader", "active_controller") and value is None:
            out[key] = "none"
        elif isinstance(value, (set, frozenset)):
            out[key] = sorted(value)
        else:
            out[key] = value
    return out


def _node_key(node: int | str) -> dict[str, object]:
    """A crash or restart's node as written: ``broker: <id>``, ``node: controller``, or ``controller: <id>`` (a
    quorum's, or ``active``)."""
    if node == CONTROLLER:
        return {"node": node}
    return {"controller": node} if is_controller(node) else {"broker": node}


def _hold_args(api: str | None, src: int | str | None, dst: int | str | None) -> dict[str, object]:
    return {k: v for k, v in (("api", api), ("from", src), ("to", dst)) if v is not None}


def _dump_args(action: Action) -> object:
    """A step's action as the value of its verb's key."""
    match action:
        case Produce(topic, partition, count, acks, timeout_ms):
            return {"topic": topic, "partition": partition, "count": count, "acks": acks, "timeout": _ms(timeout_ms)}
        case Crash(node, lose):
            return {**_node_key(node), "lose": lose}
        case Restart(node) | Pause(node) | Resume(node):
            return _node_key(node)
        case Shutdown(broker):
            return {"broker": broker}
        case RestartController():
            return {}
        case DiskFull(broker, for_ms):
            return {"broker": broker, "for": _ms(for_ms)}
        case Corrupt(broker, partition, at, nbytes):
            return {"broker": broker, "partition": partition, "at": at, "bytes": nbytes}
        case Isolate(nodes):
            return {"nodes": list(nodes)}
        case Partition(groups):
            return {"groups": [list(g) for g in groups]}
        case Cut(src, dst):
            return {"from": src, "to": dst}
        case Heal(nodes):
            return {} if nodes is None else {"nodes": list(nodes)}
        case Hold(api, src, dst) | Release(api, src, dst):
            return _hold_args(api, src, dst)
        case AlterConfig(topic, config):
            return {**({} if topic is None else {"topic": topic}), "config": dict(config)}
        case DeleteTopic(topic):
            return {"topic": topic}
        case Elect(partition, kind, leader):
            return {"partition": partition, "type": kind, **({} if leader is None else {"leader": leader})}
        case WaitUntil(condition, timeout_ms):
            return {**_dump_condition(condition), "timeout": _ms(timeout_ms)}
        case Expect(condition):
            return _dump_condition(condition)
        case RunFor(duration_ms):
            return _ms(duration_ms)
        case RestartClient(client):
            return {"client": client}
    raise ValueError(f"cannot dump {action!r}")


def _flow(value: object) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=math.inf).strip()


def _block(value: dict[str, object]) -> str:
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=False)


def dump_step(step: Step) -> str:
    """One step as its line of a scenario file: ``  - {at: 5000ms, crash: {broker: 1, lose: none}}``
    (a flow mapping, durations as ``<n>ms``; ``at`` or a non-zero ``after``), newline-terminated."""
    item: dict[str, object] = {}
    if step.at_ms is not None:
        item["at"] = _ms(step.at_ms)
    elif step.after_ms:
        item["after"] = _ms(step.after_ms)
    item[step.verb] = _dump_args(step.action)
    return f"  - {_flow(item)}\n"


def dump_steps(steps: Iterable[Step]) -> str:
    """``steps:`` and one :func:`dump_step` line per step: the steps section of a scenario file."""
    return "steps:\n" + "".join(dump_step(step) for step in steps)


def dump_scenario(scenario: Scenario) -> str:
    """Write ``scenario`` as YAML in the SCENARIOS.md format.

    Durations are written as ``<n>ms``, steps keep ``at``/``after`` as parsed, each topic, client and
    step is one flow mapping per line. ``parse_scenario(dump_scenario(s)) == s``.
    """
    s = scenario
    head: dict[str, object] = {"name": s.name}
    if s.description:
        head["description"] = s.description
    head["seed"] = s.seed
    if s.level is not None:
        head["level"] = s.level
    cluster: dict[str, object] = {"brokers": s.brokers}
    if s.controllers != 1:
        cluster["controllers"] = s.controllers
    if s.kraft_version != 0:
        cluster["kraft_version"] = s.kraft_version
    if s.config:
        cluster["config"] = dict(s.config)
    head["cluster"] = cluster
    delay = _ms(s.delay_min_ms) if s.delay_min_ms == s.delay_max_ms else f"{s.delay_min_ms}ms-{s.delay_max_ms}ms"
    head["sim"] = {"writeback": "never" if s.writeback_ms is None else _ms(s.writeback_ms), "network_delay": delay}
    parts = [_block(head)]

    if s.topics:
        parts.append("topics:\n")
        for t in s.topics:
            item: dict[str, object] = {"name": t.name, "partitions": t.partitions}
            if t.replication_factor is not None:
                item["replication_factor"] = t.replication_factor
            if t.assignment is not None:
                item["assignment"] = [list(r) for r in t.assignment]
            if t.config:
                item["config"] = dict(t.config)
            parts.append(f"  - {_flow(item)}\n")
    if s.clients:
        parts.append("clients:\n")
        for c in s.clients:
            item = {"id": c.id, c.kind: c.topic}
            if c.partition is not None:
                item["partition"] = c.partition
            if c.kind == "producer":
                item["acks"] = c.acks
                item["interval"] = _ms(c.interval_ms)
                if c.keys:
                    item["keys"] = c.keys
                if c.tombstones:
                    item["tombstones"] = c.tombstones
            else:
                item["reset"] = c.reset
                if c.group is not None:
                    item["group"] = c.group
                if c.commit_interval_ms != DEFAULT_COMMIT_INTERVAL_MS:
                    item["commit_interval"] = _ms(c.commit_interval_ms)
            parts.append(f"  - {_flow(item)}\n")
    if s.steps:
        parts.append(dump_steps(s.steps))
    if s.until_ms is not None:
        parts.append(_block({"until": _ms(s.until_ms)}))
    return "".join(parts)
