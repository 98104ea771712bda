"""``kraftlog metadata-quorum``: the KRaft quorum as ``kafka-metadata-quorum.sh`` shows and changes it.

``describe --status|--replication`` (DescribeQuorum, API 55); ``add-controller`` and ``remove-controller``
(AddRaftVoter, API 80, and RemoveRaftVoter, API 81; KIP-853's dynamic quorum): what an operator runs when
``controller.quorum.auto.join.enable`` is false (Kafka's default), e.g. after a voter lost its disk and was
formatted again with a new directory id. A request goes to each ``--bootstrap-controller`` in turn until the leader
answers (a voter that does not lead answers NOT_LEADER_OR_FOLLOWER). Exit codes: 0 done; 1 the quorum refused or
no controller answered as its leader; 2 a bad option or file.
"""

from __future__ import annotations

import time

import click
from rich.console import Console
from rich.table import Table

from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.raft_records import RaftEndpoint
from ..storage.meta_properties import kafka_uuid, parse_kafka_uuid
from . import cluster as cl
from .cli import _error_name, _fail
from .meta_properties import read_meta_properties
from .server_config import ServerConfigError, load_server_config

__all__ = ["metadata_quorum"]


@click.group("metadata-quorum")
@click.option("--bootstrap-controller", "bootstrap", default=None, metavar="HOST:PORT[,HOST:PORT...]",
              help="Controllers to ask (Kafka's --bootstrap-controller); the active one answers.")
@click.option("--dir", "directory", default=None, type=click.Path(file_okay=False),
              help="Or a cluster directory: its controllers, from cluster.json.")
@click.pass_context
def metadata_quorum(ctx: click.Context, bootstrap: str | None, directory: str | None) -> None:
    """The KRaft quorum's state, as `kafka-metadata-quorum.sh` shows it (DescribeQuorum, API 55)."""
    if (bootstrap is None) == (directory is None):
        _fail("give exactly one of --bootstrap-controller HOST:PORT and --dir DIR", 2)
    if directory is not None:
        try:
            info = cl.load(directory)
        except cl.ClusterError as exc:
            _fail(str(exc), exc.code)
        voters = [n for n in info["nodes"] if n["role"] == "controller" and n["id"] != "controller"]
        if not voters:
            _fail(f"{directory} runs a single controller (`cluster up --controllers 1`): no KRaft quorum to "
                  "describe", 2)
        bootstrap = ",".join(f"{n['host']}:{n['port']}" for n in voters)
    ctx.obj = bootstrap


def _describe_quorum(bootstrap: str) -> m.DescribeQuorumResponse:
    """The quorum as its leader describes it (a voter that does not lead answers NOT_LEADER_OR_FOLLOWER, in the
    partition's error code; any error sends the question on to the next controller)."""
    resp = _ask_leader(bootstrap, m.DescribeQuorumRequest(), m.DescribeQuorumResponse, "describe",
                       code_of=lambda r: r.error_code or r.partition_error_code, any_error_next=True, timeout_s=30.0)
    assert isinstance(resp, m.DescribeQuorumResponse)
    return resp


@metadata_quorum.command("describe")
@click.option("--status", is_flag=True, help="The leader, its epoch, the high watermark, the voters and observers.")
@click.option("--replication", is_flag=True, help="Each replica's log end offset and lag, as the leader sees it.")
@click.pass_obj
def metadata_quorum_describe(bootstrap: str, status: bool, replication: bool) -> None:
    """`kafka-metadata-quorum.sh describe --status | --replication`."""
    if status == replication:
        _fail("give exactly one of --status and --replication", 2)
    resp = _describe_quorum(bootstrap)
    replicas = [(r, "Leader" if r.replica_id == resp.leader_id else "Follower") for r in resp.current_voters] + [
        (r, "Observer") for r in resp.observers]
    now = int(time.time() * 1000)
    if status:
        lags = [resp.high_watermark - r.log_end_offset for r, _ in replicas if r.log_end_offset >= 0]
        times = [now - r.last_caught_up_timestamp for r, kind in replicas
                 if kind == "Follower" and r.last_caught_up_timestamp >= 0]
        click.echo(f"LeaderId:               {resp.leader_id}")
        click.echo(f"LeaderEpoch:            {resp.leader_epoch}")
        click.echo(f"HighWatermark:          {resp.high_watermark}")
        click.echo(f"MaxFollowerLag:         {max(lags, default=0)}")
        click.echo(f"MaxFollowerLagTimeMs:   {max(times, default=0)}")
        click.echo(f"CurrentVoters:          {sorted(r.replica_id for r in resp.current_voters)}")
        click.echo(f"CurrentObservers:       {sorted(r.replica_id for r in resp.observers)}")
        return
    table = Table(title="metadata quorum replication")
    for col in ("NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp",
                "Status"):
        table.add_column(col)
    for r, kind in replicas:
        table.add_row(str(r.replica_id), kafka_uuid(r.replica_directory_id) if r.replica_directory_id else "-",
                      str(r.log_end_offset), str(resp.high_watermark - r.log_end_offset),
                      str(r.last_fetch_timestamp), str(r.last_caught_up_timestamp), kind)
    Console().print(table)


def _ask_leader(bootstrap: str, request, response_type, what: str, code_of=lambda r: r.error_code,
                any_error_next: bool = False, timeout_s: float = 60.0):
    """Send ``request`` to each controller of ``bootstrap`` in turn until one answers as the leader (``code_of`` the
    response: NONE); NOT_LEADER_OR_FOLLOWER (with ``any_error_next``: any error) and a controller that cannot be
    reached send it on to the next one. Another error exits 1 naming it; no leader exits 1 naming what each said.
    ``timeout_s``: how long one controller may take to answer (AddRaftVoter waits for the new voters to commit)."""
    from .client import KafkaConnection
    problems = []
    for address in bootstrap.split(","):
        try:
            with KafkaConnection(address, timeout_s=timeout_s) as k:
                resp = k.request(request)
        except ValueError as exc:
            _fail(str(exc), 2)
        except OSError as exc:  # a controller that is down: ask the next one (one line at the end if none answers)
            problems.append(f"{address}: cannot connect ({exc.strerror or exc})")
            continue
        assert isinstance(resp, response_type)
        code = code_of(resp)
        if code == Errors.NONE:
            return resp
        if code == Errors.NOT_LEADER_OR_FOLLOWER or any_error_next:
            problems.append(f"{address}: {_error_name(code)}")
            continue
        message = getattr(resp, "error_message", None)
        _fail(f"{what}: {_error_name(code)}" + (f": {message}" if message else ""), 1)
    _fail(f"{what}: no controller answered as the quorum's leader (" + "; ".join(problems) + ")", 1)
    raise AssertionError  # _fail exits


@metadata_quorum.command("add-controller")
@click.option("--command-config", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The joining controller's server.properties (its node.id, listener and directory).")
@click.pass_obj
def metadata_quorum_add_controller(bootstrap: str, config_path: str) -> None:
    """Add the controller a properties file describes to the voters (AddRaftVoter, KIP-853): its node.id, the
    directory id of its formatted directory and its controller listener. It must be running and caught up."""
    try:
        server = load_server_config(config_path)
    except ServerConfigError as exc:
        _fail(f"{config_path}: {exc}", 2)
        raise AssertionError from exc
    if not server.is_controller or not server.dynamic_quorum:
        _fail(f"{config_path} must describe a controller of a dynamic quorum (process.roles=controller, "
              "controller.quorum.bootstrap.servers)", 2)
    try:
        identity = read_meta_properties(server.data_dir) or {}
        directory_id = parse_kafka_uuid(identity["directory.id"])
    except (KeyError, ValueError) as exc:
        _fail(f"{server.data_dir} is not formatted with a directory id ({exc}): run `kraftlog storage format`", 2)
        raise AssertionError from exc
    own = server.listeners[server.controller_listener]
    if not own.host or own.port == 0:
        _fail(f"{config_path}: the controller listener {own.name} needs a host and a port to be a voter's endpoint", 2)
    request = m.AddRaftVoterRequest(cluster_id=identity.get("cluster.id"), timeout_ms=30_000,
                                    voter_id=server.node_id, voter_directory_id=directory_id,
                                    listeners=(RaftEndpoint(own.name, own.host, own.port),))
    _ask_leader(bootstrap, request, m.AddRaftVoterResponse, f"add controller {server.node_id}")
    click.echo(f"Added controller {server.node_id} with directory id {kafka_uuid(directory_id)} and endpoint "
               f"{own.name}://{own.address()}")


@metadata_quorum.command("remove-controller")
@click.option("--controller-id", type=int, required=True, help="The voter's node id.")
@click.option("--controller-directory-id", "directory_id", required=True,
              help="The voter's directory id (`describe --replication` shows it).")
@click.pass_obj
def metadata_quorum_remove_controller(bootstrap: str, controller_id: int, directory_id: str) -> None:
    """Remove the voter (id, directory id) from the voters (RemoveRaftVoter, KIP-853), e.g. the old directory of a
    controller that lost its disk."""
    try:
        parsed = parse_kafka_uuid(directory_id)
    except ValueError:
        _fail(f"--controller-directory-id: {directory_id!r} is not a directory id", 2)
        raise AssertionError from None
    _ask_leader(bootstrap, m.RemoveRaftVoterRequest(cluster_id=None, voter_id=controller_id,
                                                    voter_directory_id=parsed),
                m.RemoveRaftVoterResponse, f"remove controller {controller_id}")
    click.echo(f"Removed controller {controller_id} with directory id {kafka_uuid(parsed)}")
