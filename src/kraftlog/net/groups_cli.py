"""``kraftlog groups list|describe|delete|reset-offsets``: consumer groups of a running cluster, read and
changed as ``kafka-consumer-groups.sh`` does, over the same requests (ListGroups to every broker,
FindCoordinator, DescribeGroups, OffsetFetch, ListOffsets, DeleteGroups, OffsetCommit).

``describe`` prints, per partition a group has committed or been assigned, Kafka's columns: GROUP, TOPIC,
PARTITION, CURRENT-OFFSET (the committed offset, ``-`` when none), LOG-END-OFFSET (the partition leader's
ListOffsets LATEST: its HWM), LAG (LOG-END-OFFSET - CURRENT-OFFSET, ``-`` without a commit), CONSUMER-ID,
HOST and CLIENT-ID (``-`` for a partition no member holds). ``reset-offsets`` is a dry run unless
``--execute``, and refused (exit 1) while the group has members, as Kafka's tool refuses an active group.
Exit codes: 0 done; 1 Kafka refused or the cluster could not be reached; 2 a bad option (one line).
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict

import click

from ..protocol import messages as m
from ..protocol.errors import Errors
from .client import KafkaConnection, cli_connection
from .client_security import command_config_option


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    raise SystemExit(code)


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


def _connect(address: str):
    return cli_connection(address, _fail, client_id="kraftlog-groups")


def _ask(conn: KafkaConnection, msg: object):  # type: ignore[no-untyped-def]
    try:
        return conn.request(msg)
    except (OSError, TimeoutError) as exc:
        _fail(f"{type(msg).__name__.removesuffix('Request')} to {conn.address[0]}:{conn.address[1]}: {exc}", 1)


def _metadata(bootstrap: str, topics: tuple[str, ...] | None = None) -> m.MetadataResponse:
    with _connect(bootstrap) as conn:
        return _ask(conn, m.MetadataRequest(topics))


def _coordinator(bootstrap: str, group: str) -> str:
    """``host:port`` of ``group``'s coordinator (FindCoordinator)."""
    with _connect(bootstrap) as conn:
        resp = _ask(conn, m.FindCoordinatorRequest((group,)))
    c = resp.coordinators[0]
    if c.error_code != Errors.NONE:
        _fail(f"group {group}: no coordinator: {_error_name(c.error_code)}", 1)
    return f"{c.host}:{c.port}"


def _check_group(group: str) -> None:
    if not group.strip():
        _fail("--group must not be empty", 2)


def assignment_partitions(assignment: bytes) -> list[tuple[str, int]]:
    """The (topic, partition) pairs of a consumer's assignment (``ConsumerProtocolAssignment``: int16
    version, then an int32 count of topics, each an int16-length name and an int32 count of int32
    partitions); [] when it does not parse (another protocol type's assignment)."""
    out: list[tuple[str, int]] = []
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", assignment, pos)
        pos += 4
        for _ in range(max(0, count)):
            (size,) = struct.unpack_from(">h", assignment, pos)
            pos += 2
            topic = assignment[pos:pos + size].decode()
            pos += size
            (n,) = struct.unpack_from(">i", assignment, pos)
            pos += 4
            for _ in range(max(0, n)):
                (p,) = struct.unpack_from(">i", assignment, pos)
                pos += 4
                out.append((topic, p))
    except (struct.error, UnicodeDecodeError):
        return []
    return out


def _log_end_offsets(bootstrap: str, keys: list[tuple[str, int]], timestamp: int = m.LATEST_TIMESTAMP
                     ) -> dict[tuple[str, int], int]:
    """ListOffsets (``timestamp``: LATEST, EARLIEST) of each partition, asked of its leader; -1 when it
    has none or answers an error."""
    if not keys:
        return {}
    meta = _metadata(bootstrap, tuple(sorted({t for t, _ in keys})))
    leaders = {(t.name, p.partition_index): p.leader_id for t in meta.topics for p in t.partitions}
    address = {b.node_id: f"{b.host}:{b.port}" for b in meta.brokers}
    by_leader: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for key in keys:
        by_leader[leaders.get(key, -1)].append(key)
    out = {key: -1 for key in keys}
    for leader, parts in sorted(by_leader.items()):
        if leader < 0 or leader not in address:
            continue
        with _connect(address[leader]) as conn:
            asked = tuple(m.ListOffsetsPartition(t, p, timestamp) for t, p in parts)
            resp = _ask(conn, m.ListOffsetsRequest(-1, asked))
        for r in resp.partitions:
            if r.error_code == Errors.NONE:
                out[(r.topic, r.partition)] = r.offset
    return out


def _describe(bootstrap: str, group: str) -> tuple[m.DescribedGroup, dict[tuple[str, int], int]]:
    """The group as its coordinator describes it, and its committed offsets (every partition)."""
    coordinator = _coordinator(bootstrap, group)
    with _connect(coordinator) as conn:
        described = _ask(conn, m.DescribeGroupsRequest((group,))).groups[0]
        fetched = _ask(conn, m.OffsetFetchRequest(group, None))
    if described.error_code != Errors.NONE:
        _fail(f"describe {group}: {_error_name(described.error_code)}", 1)
    if fetched.error_code != Errors.NONE:
        _fail(f"offsets of {group}: {_error_name(fetched.error_code)}", 1)
    committed = {(p.topic, p.partition): p.committed_offset for p in fetched.partitions if p.committed_offset >= 0}
    return described, committed


def describe_rows(bootstrap: str, group: str) -> tuple[m.DescribedGroup, list[dict]]:
    """``describe``'s rows: one per partition the group committed or a member holds, sorted."""
    described, committed = _describe(bootstrap, group)
    holder: dict[tuple[str, int], m.DescribedGroupMember] = {}
    for member in described.members:
        for key in assignment_partitions(member.member_assignment):
            holder[key] = member
    keys = sorted(set(committed) | set(holder))
    ends = _log_end_offsets(bootstrap, keys)
    rows = []
    for topic, partition in keys:
        current = committed.get((topic, partition))
        end = ends.get((topic, partition), -1)
        member = holder.get((topic, partition))
        rows.append({"group": group, "topic": topic, "partition": partition, "current_offset": current,
                     "log_end_offset": end if end >= 0 else None,
                     "lag": end - current if current is not None and end >= 0 else None,
                     "consumer_id": member.member_id if member else None,
                     "host": (member.client_host or None) if member else None,
                     "client_id": member.client_id if member else None})
    return described, rows


def _BOOTSTRAP(f):  # noqa: N802 - a decorator named as the other option constants
    """``--bootstrap-server`` (a broker's client listener) and ``--command-config`` (its security)."""
    f = command_config_option(f)
    return click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT",
                        help="A broker's client listener.")(f)


@click.group("groups")
def groups() -> None:
    """Consumer groups of a running cluster, as kafka-consumer-groups.sh shows and changes them."""


@groups.command("list")
@_BOOTSTRAP
@click.option("--state", "states", multiple=True, help="Only groups in this state (KIP-518), repeatable.")
@click.option("--json", "as_json", is_flag=True)
def groups_list(bootstrap: str, states: tuple[str, ...], as_json: bool) -> None:
    """Every group with its state and protocol type (ListGroups to every broker, as Kafka's admin client)."""
    meta = _metadata(bootstrap)
    found: dict[str, m.ListedGroup] = {}
    for broker in meta.brokers:
        with _connect(f"{broker.host}:{broker.port}") as conn:
            resp = _ask(conn, m.ListGroupsRequest(states))
        if resp.error_code != Errors.NONE:
            _fail(f"list groups on broker {broker.node_id}: {_error_name(resp.error_code)}", 1)
        for g in resp.groups:
            found[g.group_id] = g
    rows = [{"group": g.group_id, "state": g.group_state, "protocol_type": g.protocol_type}
            for _, g in sorted(found.items())]
    if as_json:
        click.echo(json.dumps(rows, indent=1))
        return
    _table(["GROUP", "STATE", "PROTOCOL-TYPE"], [[r["group"], r["state"], r["protocol_type"] or "-"] for r in rows])


@groups.command("describe")
@_BOOTSTRAP
@click.option("--group", required=True, help="The group.")
@click.option("--json", "as_json", is_flag=True)
def groups_describe(bootstrap: str, group: str, as_json: bool) -> None:
    """Per partition: committed offset, log end offset, lag and the member holding it."""
    _check_group(group)
    described, rows = describe_rows(bootstrap, group)
    if as_json:
        click.echo(json.dumps({"group": group, "state": described.group_state,
                               "protocol": described.protocol_data, "members": len(described.members),
                               "partitions": rows}, indent=1))
        return
    if not described.members:
        click.echo(f"Consumer group '{group}' has no active members.\n")
    if not rows:
        click.echo(f"Consumer group '{group}' ({described.group_state}) has no committed offsets and no assignment.")
        return
    dash = lambda v: "-" if v is None else str(v)  # noqa: E731
    _table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
            "CLIENT-ID"],
           [[r["group"], r["topic"], str(r["partition"]), dash(r["current_offset"]), dash(r["log_end_offset"]),
             dash(r["lag"]), dash(r["consumer_id"]), dash(r["host"]), dash(r["client_id"])] for r in rows])


@groups.command("delete")
@_BOOTSTRAP
@click.option("--group", "group_ids", required=True, multiple=True, help="A group to delete, repeatable.")
def groups_delete(bootstrap: str, group_ids: tuple[str, ...]) -> None:
    """Delete groups and their committed offsets (DeleteGroups); a group with members is refused."""
    failed = []
    for group in group_ids:
        _check_group(group)
        with _connect(_coordinator(bootstrap, group)) as conn:
            (result,) = _ask(conn, m.DeleteGroupsRequest((group,))).results
        if result.error_code != Errors.NONE:
            failed.append(f"{group}: {_error_name(result.error_code)}")
    if failed:
        _fail("deletion failed: " + "; ".join(failed), 1)
    click.echo("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in group_ids)
               + ") was successful.")


@groups.command("reset-offsets")
@_BOOTSTRAP
@click.option("--group", required=True, help="The group.")
@click.option("--topic", "topics", multiple=True, help="A topic whose offsets to reset, repeatable.")
@click.option("--all-topics", is_flag=True, help="Every topic the group has committed offsets for.")
@click.option("--to-earliest", is_flag=True, help="To each partition's log start offset.")
@click.option("--to-latest", is_flag=True, help="To each partition's log end offset (its HWM).")
@click.option("--to-offset", type=int, default=None, help="To this offset (kept within the log's range).")
@click.option("--execute", is_flag=True, help="Commit the new offsets (without it: a dry run, nothing changes).")
def groups_reset_offsets(bootstrap: str, group: str, topics: tuple[str, ...], all_topics: bool, to_earliest: bool,
                         to_latest: bool, to_offset: int | None, execute: bool) -> None:
    """Reset a group's committed offsets; refused while the group has members (Kafka's tool too)."""
    _check_group(group)
    chosen = [name for name, on in (("--to-earliest", to_earliest), ("--to-latest", to_latest),
                                    ("--to-offset", to_offset is not None)) if on]
    if len(chosen) != 1:
        _fail("give exactly one of --to-earliest, --to-latest, --to-offset", 2)
    if bool(topics) == all_topics:
        _fail("give --topic (repeatable) or --all-topics", 2)
    described, committed = _describe(bootstrap, group)
    if described.members:
        _fail(f"Assignments can only be reset if the group '{group}' is inactive, but the current state is "
              f"{described.group_state}.", 1)
    if all_topics:
        keys = sorted(committed)
    else:
        meta = _metadata(bootstrap, topics)
        missing = [t.name for t in meta.topics if t.error_code != Errors.NONE]
        if missing:
            _fail(f"unknown topic(s): {', '.join(missing)}", 1)
        keys = sorted((t.name, p.partition_index) for t in meta.topics for p in t.partitions)
    earliest = _log_end_offsets(bootstrap, keys, m.EARLIEST_TIMESTAMP)
    latest = _log_end_offsets(bootstrap, keys, m.LATEST_TIMESTAMP)
    targets = {}
    for key in keys:
        low, high = earliest.get(key, -1), latest.get(key, -1)
        if low < 0 or high < 0:
            _fail(f"{key[0]}-{key[1]}: no leader to read its offsets from", 1)
        want = low if to_earliest else high if to_latest else to_offset
        assert want is not None
        targets[key] = min(max(want, low), high)
    _table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
           [[group, t, str(p), str(targets[(t, p)])] for t, p in keys])
    if not execute:
        click.echo("(dry run: nothing committed; add --execute to commit these offsets)")
        return
    with _connect(_coordinator(bootstrap, group)) as conn:
        resp = _ask(conn, m.OffsetCommitRequest(group, tuple(
            m.OffsetCommitPartition(t, p, targets[(t, p)]) for t, p in keys)))
    errors = [f"{r.topic}-{r.partition}: {_error_name(r.error_code)}" for r in resp.partitions
              if r.error_code != Errors.NONE]
    if errors:
        _fail("reset failed: " + "; ".join(errors), 1)
    click.echo(f"committed {len(keys)} offset(s) for group {group}")


def _table(headers: list[str], rows: list[list[str]]) -> None:
    """Columns padded as kafka-consumer-groups.sh prints them."""
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    for line in [headers] + rows:
        click.echo(" ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
