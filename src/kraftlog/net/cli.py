"""``kraftlog cluster``, ``kraftlog topics`` and ``kraftlog elect``: the real cluster's command line.

Exit codes: 0 done; 1 the cluster failed to do it (a broker did not come up, a request returned an
error); 2 a bad request (bad option, no cluster in DIR, mismatch with an existing cluster). Errors are one
line on stderr (with node log tails where they help), never a traceback.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from ..cli_options import level_option, sigterm_interrupts
from ..level import IMPLEMENTED, Level
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..storage.meta_properties import kafka_uuid
from . import cluster as cl
from .client import cli_connection
from .client_security import command_config_option
from .node import is_controller_id, node_name

__all__ = ["cluster", "topics", "elect", "chaos"]


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _configs(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not key=value", param_hint="--config")
        out[key.strip()] = value.strip()
    return out


# ====================================================================== cluster
@click.group()
def cluster() -> None:
    """Run a real kraftlog cluster on 127.0.0.1: one process per node, Kafka clients welcome."""


@cluster.command("up")
@click.option("--brokers", type=int, default=3, show_default=True, help="Number of brokers (ids 0..N-1).")
@click.option("--controllers", type=int, default=1, show_default=True,
              help="Number of controllers: 1, or a KRaft quorum of N voters (ids 3000..; 3 recommended).")
@click.option("--kraft-version", type=click.IntRange(0, 1), default=0, show_default=True,
              help="A quorum's kraft.version: 0 static voters, 1 KIP-853's dynamic quorum (bootstrap servers, "
                   "voters with directory ids, auto-join).")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False),
              help="Cluster directory (data, logs, cluster.json); reused if it holds this cluster.")
@click.option("--port", type=int, default=9092, show_default=True,
              help="Client port of broker 0 (broker i: port+i); 0 picks free ports.")
@click.option("--controller-port", type=int, default=None,
              help="The controller's port (controller i of a quorum: port+i; default: free ports, recorded).")
@click.option("--internal-port", type=int, default=None,
              help="Inter-broker port of broker 0 (broker i: internal-port+i; default: free ports, recorded).")
@click.option("--metrics-port", type=int, default=None,
              help="The first node's /metrics port (the controllers', then the brokers', one each; default: free "
                   "ports, recorded).")
@click.option("--level", callback=level_option, default=None,
              help=f"Protocol level: {', '.join(lv.label for lv in IMPLEMENTED)} (default: the highest).")
@click.option("--seed", type=int, default=None, help="Seed of the nodes' Random (default: drawn, recorded).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE",
              help="A cluster config for every node (Kafka's names), repeatable.")
@click.option("--detach", is_flag=True, help="Return once every broker is unfenced; the nodes keep running.")
@click.option("--chaos", is_flag=True,
              help="Chaos mode: every node serves a loopback control channel for link faults and keeps its "
                   "disk's shadow (for fault injectors such as `kraftlog chaos`).")
@click.option("--secure", is_flag=True,
              help="Every listener SASL_SSL: a CA and a certificate per node, one SASL user per node (node-<id>, "
                   "acting only as itself), an admin user whose client properties go to DIR/admin.properties.")
def cluster_up(brokers: int, controllers: int, kraft_version: int, directory: str, port: int,
               controller_port: int | None, internal_port: int | None, metrics_port: int | None, level: Level | None,
               seed: int | None, configs: tuple[str, ...], detach: bool, chaos: bool, secure: bool) -> None:
    """Start the controller (or a quorum of them) and N brokers as separate processes. A port in use exits 2
    naming the node and the port."""
    chosen = _configs(configs)
    try:
        info = cl.up(directory, brokers, port, level, seed, chosen, chaos=chaos,
                     controller_port=controller_port, internal_port=internal_port, controllers=controllers,
                     kraft_version=kraft_version, metrics_port=metrics_port, secure=secure)
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)
    if "default.replication.factor" not in chosen:
        click.echo(f"kraftlog cluster up: default.replication.factor={info['config']['default.replication.factor']} "
                   "in the cluster config (min(3, brokers); Kafka's default is 1; --config "
                   "default.replication.factor=N to choose)")
    if brokers < 3 and "offsets.topic.replication.factor" not in chosen:
        click.echo(f"kraftlog cluster up: offsets.topic.replication.factor={brokers} in the cluster config "
                   "(Kafka's 3 needs 3 brokers: consumer groups would find no coordinator; --config "
                   "offsets.topic.replication.factor=N to choose)")
    directory = os.path.abspath(directory)
    click.echo(f"kraftlog cluster up: {brokers} brokers, "
               + (f"a quorum of {controllers} controllers (kraft.version {kraft_version}), " if controllers > 1 else "")
               + f"level {info['level']}, seed {info['seed']}, "
               f"bootstrap {info['bootstrap']}" + (", chaos mode" if chaos else "")
               + (", every listener SASL_SSL" if info.get("secure") else ""))
    if info.get("secure"):
        click.echo(f"the admin's client properties (SASL_SSL, PLAIN, the cluster's CA): {directory}/admin.properties; "
                   f"kraftlog's admin commands take them with --command-config {directory}/admin.properties")
    if detach:
        click.echo(f"stop it with: kraftlog cluster down --dir {directory}")
        return
    _foreground(directory)


def _foreground(directory: str) -> None:
    """Show node status until Ctrl-C (or SIGTERM), then shut every node down cleanly."""
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    # Plain lines (never wrapped or cut, piped or not): one per change of any node's status.
    click.echo("Ctrl-C shuts every node down cleanly.")
    last = None
    try:
        while not stop["now"]:
            line = _status_line(cl.status(directory))
            if line != last:
                click.echo(time.strftime("%H:%M:%S ") + line)
                last = line
            time.sleep(0.5)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        click.echo("shutting down ...")
        for name, clean in cl.down(directory):
            click.echo(f"  {name}: {'stopped cleanly' if clean else 'killed after the shutdown timeout'}")


def _status_line(nodes: list[cl.NodeStatus]) -> str:
    parts = []
    for n in nodes:
        name = "controller" if n.role == "controller" else f"broker-{n.id}"
        if n.refused:
            parts.append(f"{name} REFUSED")
        elif not n.alive:
            parts.append(f"{name} DOWN")
        elif n.role == "broker":
            parts.append(f"{name} :{n.port} {'fenced' if n.fenced else 'unfenced'} epoch {n.broker_epoch}"
                         + (" LOG DIR OFFLINE" if n.log_dir_offline else ""))
        else:
            parts.append(f"{name} :{n.port} up")
    return " | ".join(parts)


@cluster.command("down")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
def cluster_down(directory: str) -> None:
    """Shut every node down cleanly (brokers with a controlled shutdown, then the controller)."""
    try:
        stopped = cl.down(directory)
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)
    if not stopped:
        click.echo("no node was running")
    for name, clean in stopped:
        click.echo(f"{name}: {'stopped cleanly' if clean else 'killed after the shutdown timeout'}")


@cluster.command("status")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the nodes as JSON.")
def cluster_status(directory: str, as_json: bool) -> None:
    """cluster.json's nodes with alive, fenced, broker epoch and state per node (REFUSED: the node refused
    to start on its directory, the reason below the table), each broker's stray partition
    directories (renamed ``-stray`` at startup, kept, never deleted), and each running node's key gauges
    (Kafka's names; every metric is on the node's /metrics)."""
    try:
        nodes = cl.status(directory)
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)
    if as_json:
        click.echo(json.dumps([n.as_dict() for n in nodes], indent=1))
        return
    table = Table(title=f"cluster {os.path.abspath(directory)}")
    for col in ("node", "pid", "port", "internal port", "metrics port", "alive", "fenced", "broker epoch", "state",
                "log dir", "counters", "stray dirs"):
        table.add_column(col)
    for n in nodes:
        table.add_row(str(n.id), str(n.pid), str(n.port), str(n.internal_port or "-"), str(n.metrics_port or "-"),
                      "yes" if n.alive else "NO",
                      "-" if n.fenced is None else ("yes" if n.fenced else "no"),
                      "-" if n.broker_epoch is None else str(n.broker_epoch), n.state or "-",
                      "-" if n.log_dir_offline is None else (f"OFFLINE: {n.log_dir_failure}" if n.log_dir_offline
                                                             else "online"),
                      ", ".join(f"{k} {v}" for k, v in sorted((n.counters or {}).items()) if v) or "-",
                      str(len(n.strays)) if n.role == "broker" else "-")
    Console().print(table)
    for n in nodes:
        name = "controller" if n.role == "controller" else f"broker-{n.id}"
        if n.refused:
            click.echo(f"{name} refused to start: {n.refused}")
        for stray in n.strays:
            click.echo(f"{name} keeps stray partition directory data/{stray}")
    for n in nodes:  # the key gauges of each running node (its /metrics has every metric)
        if n.gauges:
            name = "controller" if n.role == "controller" else f"broker-{n.id}"
            click.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in n.gauges.items()))


@cluster.command("start")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--broker", type=int, default=None, help="The broker to start.")
@click.option("--controller", is_flag=False, flag_value="controller", default=None, metavar="[ID]",
              help="Start the controller instead (a quorum's: give its id, e.g. 3001).")
def cluster_start(directory: str, broker: int | None, controller: str | None) -> None:
    """Start one stopped or killed node; a broker recovers its log and rejoins (waits until unfenced)."""
    if (broker is None) == (controller is None):
        _fail("give exactly one of --broker N and --controller [ID]", 2)
    try:
        if controller is not None:
            node = _controller_node(controller)
            entry = cl.start_controller(directory, node)
            click.echo(f"{node_name(node)} started (pid {entry['pid']}, port {entry['port']})")
        else:
            entry = cl.start_broker(directory, broker)
            click.echo(f"broker-{broker} started and unfenced (pid {entry['pid']}, port {entry['port']})"
                       + ("; its directory was missing or empty: formatted as a new one" if entry["formatted"]
                          else ""))
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)


@cluster.command("format")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--broker", type=int, default=None, help="The broker whose directory to format.")
@click.option("--controller", is_flag=False, flag_value="controller", default=None, metavar="[ID]",
              help="Format the controller's directory instead (a quorum's: give its id).")
def cluster_format(directory: str, broker: int | None, controller: str | None) -> None:
    """Format a stopped node's directory as `kafka-storage.sh format` does (meta.properties: this cluster's
    id, the node id, a new directory id). Refused when the node runs or its directory is already
    formatted. A controller formatted again starts with an EMPTY metadata log: every topic is forgotten
    and the brokers keep their partitions as -stray directories (nothing is deleted); do it only to
    rebuild a cluster whose metadata is lost for good."""
    if (broker is None) == (controller is None):
        _fail("give exactly one of --broker N and --controller [ID]", 2)
    node = _controller_node(controller) if controller is not None else broker
    try:
        identity = cl.format_node(directory, node)
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)
    name = node_name(node)
    click.echo(f"formatted {name}: cluster.id {identity.cluster_id}, node.id {identity.node_id}, directory.id "
               f"{kafka_uuid(identity.directory_id)}")


@cluster.command("stop")
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--broker", type=int, default=None, help="The broker to stop.")
@click.option("--controller", is_flag=False, flag_value="controller", default=None, metavar="[ID]",
              help="Stop the controller instead (a quorum's: give its id).")
@click.option("--kill", is_flag=True, help="SIGKILL instead of a clean shutdown.")
def cluster_stop(directory: str, broker: int | None, controller: str | None, kill: bool) -> None:
    """Stop one node: a clean (a broker's: controlled) shutdown, or SIGKILL with --kill."""
    if (broker is None) == (controller is None):
        _fail("give exactly one of --broker N and --controller [ID]", 2)
    node = _controller_node(controller) if controller is not None else broker
    try:
        was_running = cl.stop_broker(directory, node, kill=kill)
    except cl.ClusterError as exc:
        _fail(str(exc), exc.code)
    click.echo(f"{node_name(node)} {'killed' if kill else 'stopped'}" if was_running
               else f"{node_name(node)} was not running")


def _controller_node(value: str) -> str | int:
    """``--controller``'s node: ``controller`` (the single one), or a quorum voter's id (>= 3000)."""
    if value == "controller":
        return value
    try:
        node = int(value)
    except ValueError:
        _fail(f"--controller takes a controller id (3000, 3001, ...), got {value!r}", 2)
    if not is_controller_id(node):
        _fail(f"--controller {node}: a quorum's controller ids start at 3000", 2)
    return node


# ====================================================================== topics
def _connect(bootstrap: str):
    return cli_connection(bootstrap, _fail)


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return str(code)


def _fail_on_error(what: str, code: int, message: str | None) -> None:
    """Exit 1 naming ``what`` and Kafka's error (and its message) unless ``code`` is NONE."""
    if code != Errors.NONE:
        _fail(f"{what}: {_error_name(code)}" + (f": {message}" if message else ""), 1)


@click.group()
def topics() -> None:
    """Create, describe, configure and delete topics of a running cluster."""


def _BOOTSTRAP(f):  # noqa: N802 - a decorator named as the other option constants
    """``--bootstrap-server`` (a broker's client listener) and ``--command-config`` (its security)."""
    f = command_config_option(f)
    return click.option("--bootstrap-server", "bootstrap", required=True, metavar="HOST:PORT",
                        help="A broker's client listener.")(f)
_TOPIC = click.option("--topic", required=True, help="Topic name.")


@topics.command("create")
@_BOOTSTRAP
@_TOPIC
@click.option("--partitions", type=int, default=1, show_default=True,
              help="-1: the cluster's num.partitions (KIP-464).")
@click.option("--replication-factor", type=int, default=3, show_default=True,
              help="-1: the cluster's default.replication.factor (KIP-464).")
@click.option("--config", "configs", multiple=True, metavar="KEY=VALUE", help="A topic config, repeatable.")
def topics_create(bootstrap: str, topic: str, partitions: int, replication_factor: int,
                  configs: tuple[str, ...]) -> None:
    """Create a topic (CreateTopics, forwarded by the broker to the controller)."""
    req = m.CreateTopicsRequest((m.CreatableTopic(topic, partitions, replication_factor,
                                                  configs=tuple(sorted(_configs(configs).items()))),))
    with _connect(bootstrap) as conn:
        resp = conn.request(req)
    for r in resp.topics:
        _fail_on_error(f"create {r.name}", r.error_code, r.error_message)
        # What the controller created (CreateTopics v5+), -1 resolved to num.partitions /
        # default.replication.factor (KIP-464).
        click.echo(f"created topic {r.name} ({r.num_partitions} partitions, replication factor "
                   f"{r.replication_factor}, topic id {r.topic_id})")


@topics.command("describe")
@_BOOTSTRAP
@_TOPIC
@click.option("--json", "as_json", is_flag=True)
def topics_describe(bootstrap: str, topic: str, as_json: bool) -> None:
    """Leader, leader epoch, replicas, ISR, ELR and LastKnownELR per partition (DescribeTopicPartitions)."""
    with _connect(bootstrap) as conn:
        resp = conn.request(m.DescribeTopicPartitionsRequest((topic,)))
    t = resp.topics[0] if resp.topics else None
    if t is None or t.error_code != Errors.NONE:
        _fail(f"describe {topic}: {_error_name(t.error_code if t else Errors.UNKNOWN_TOPIC_OR_PARTITION)}", 1)
    rows = [{"partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
             "replicas": list(p.replica_nodes), "isr": list(p.isr_nodes),
             "elr": list(p.eligible_leader_replicas), "last_known_elr": list(p.last_known_elr),
             "offline": list(p.offline_replicas)} for p in t.partitions]
    if as_json:
        click.echo(json.dumps({"topic": t.name, "topic_id": str(t.topic_id), "partitions": rows}, indent=1))
        return
    click.echo(f"Topic: {t.name}\tTopicId: {t.topic_id}\tPartitionCount: {len(rows)}")
    for r in rows:
        ids = lambda xs: ",".join(map(str, xs))  # noqa: E731
        click.echo(f"\tTopic: {t.name}\tPartition: {r['partition']}\tLeader: {r['leader']}\t"
                   f"LeaderEpoch: {r['leader_epoch']}\tReplicas: {ids(r['replicas'])}\tIsr: {ids(r['isr'])}\t"
                   f"Elr: {ids(r['elr'])}\tLastKnownElr: {ids(r['last_known_elr'])}")


@topics.command("alter-config")
@_BOOTSTRAP
@_TOPIC
@click.option("--config", "configs", multiple=True, required=True, metavar="KEY=VALUE",
              help="Set a topic config (KEY= deletes it), repeatable.")
def topics_alter_config(bootstrap: str, topic: str, configs: tuple[str, ...]) -> None:
    """Set or delete topic configs (IncrementalAlterConfigs)."""
    items = tuple(m.AlterableConfig(k, 0 if v != "" else 1, v if v != "" else None)
                  for k, v in sorted(_configs(configs).items()))
    with _connect(bootstrap) as conn:
        resp = conn.request(m.IncrementalAlterConfigsRequest((m.AlterConfigsResource(2, topic, items),)))
    for r in resp.responses:
        _fail_on_error(f"alter-config {topic}", r.error_code, r.error_message)
    click.echo(f"updated {topic}: " + ", ".join(f"{c.name}={c.value}" for c in items))


@topics.command("delete")
@_BOOTSTRAP
@_TOPIC
def topics_delete(bootstrap: str, topic: str) -> None:
    """Delete a topic (DeleteTopics, forwarded by the broker to the controller): exit 1 with Kafka's error
    name (UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED, ...) unless the controller deleted it. The
    brokers drop its partitions and files as they apply the metadata, shortly after."""
    with _connect(bootstrap) as conn:
        resp = conn.request(m.DeleteTopicsRequest((topic,)))
    for r in resp.responses:
        _fail_on_error(f"delete {r.name if r.name is not None else topic}", r.error_code, r.error_message)
    if not any(r.name == topic for r in resp.responses):
        _fail(f"delete {topic}: no answer for the topic", 1)
    click.echo(f"deleted topic {topic}")


# ====================================================================== elect
@click.command("elect")
@_BOOTSTRAP
@click.option("--type", "election", type=click.Choice(list(m.ELECTION_TYPES)), required=True,
              help="preferred, unclean (Kafka's, ElectLeaders v1+); longest_log_balanced, "
                   "longest_log_aggressive, designation (KIP-966, ElectLeaders v3, level urm).")
@_TOPIC
@click.option("--partition", type=int, required=True)
@click.option("--leader", type=int, default=None, help="The replica to elect (designation only).")
def elect(bootstrap: str, election: str, topic: str, partition: int, leader: int | None) -> None:
    """Elect a partition's leader: its preferred replica; any live replica (unclean, may lose data; at level
    urm an Aggressive unclean recovery: the longest log among the replicas that answer); for a leaderless
    partition, the longest log by a Balanced or Aggressive recovery, or a designated replica (KIP-966)."""
    if (election == "designation") != (leader is not None):
        _fail("elect: --leader is required with --type designation, and only there", 2)
    req = m.ElectLeadersRequest(m.ELECTION_TYPES[election], (m.ElectLeadersPartition(
        topic, partition, leader if leader is not None else -1),))
    with _connect(bootstrap) as conn:
        resp = conn.request(req)
    if resp.error_code != Errors.NONE:
        _fail(f"elect: {_error_name(resp.error_code)}", 1)
    for r in resp.results:
        if r.error_code == Errors.ELECTION_NOT_NEEDED:  # Kafka's tool: "Valid replica already elected"
            click.echo(f"no election needed: {r.topic}-{r.partition} already has a valid leader")
            continue
        _fail_on_error(f"elect {r.topic}-{r.partition}", r.error_code, r.error_message)
        click.echo(f"{election} election done for {r.topic}-{r.partition}")


# ====================================================================== chaos
def _duration_s(ctx, param, value: str) -> float:
    from ..scenario import parse_duration
    try:
        return parse_duration(value) / 1000
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.command("chaos")
@click.option("--dir", "directory", default=None, type=click.Path(file_okay=False),
              help="Cluster directory, kept afterwards with chaos.json, acks.parquet and the node logs "
                   "(default: a new directory under the system's temporary directory).")
@click.option("--brokers", type=int, default=3, show_default=True, help="Number of brokers (1..9).")
@click.option("--controllers", type=int, default=1, show_default=True,
              help="1, or a KRaft quorum of N voters: a controller fault then hits the active one.")
@click.option("--kraft-version", type=click.IntRange(0, 1), default=0, show_default=True,
              help="A quorum's kraft.version: 1 (KIP-853) adds controller_disk_loss to the plan.")
@click.option("--duration", default="120s", show_default=True, callback=_duration_s,
              help="How long faults and traffic go on once the cluster is ready (e.g. 90s, 5m); the heal, "
                   "settle and read-back come after.")
@click.option("--seed", type=int, default=None, help="Seed of the fault plan and the nodes (default: drawn, printed).")
@click.option("--level", callback=level_option, default=None,
              help=f"Protocol level: {', '.join(lv.label for lv in IMPLEMENTED)} (default: the highest).")
@click.option("--port-base", type=int, default=None,
              help="Ports from N on: the controller N, broker i's client port N+1+i and internal port "
                   "N+1+brokers+i (default: free ports).")
@click.option("--partitions", type=int, default=3, show_default=True, help="Partitions of the chaos topic.")
@click.option("--rate", type=float, default=100.0, show_default=True, help="Records/s of each producer.")
@click.option("--story", type=click.Choice(["random", "last-replica-standing"]), default="random",
              show_default=True, help="random: a seeded fault plan; last-replica-standing: KIP-966's story, "
                                      "which loses acknowledged records below level elr.")
@click.option("--faults", "kinds", default=None,
              help="Comma-separated fault kinds the random plan draws from (default: all of kill, pause, "
                   "shutdown, lose_unflushed, isolate, cut, partition, controller_kill, disk_full, corrupt).")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON (progress goes to stderr).")
@click.option("--fail-on-loss", is_flag=True, help="Also exit 1 when the run is not safe.")
@click.option("--dry-run", is_flag=True,
              help="Print the seed's fault plan as scenario steps (YAML, SCENARIOS.md's format) and exit: "
                   "nothing starts.")
def chaos(directory: str | None, brokers: int, controllers: int, kraft_version: int, duration: float, seed: int | None,
          level: Level | None, port_base: int | None, partitions: int, rate: float, story: str, kinds: str | None,
          as_json: bool, fail_on_loss: bool, dry_run: bool) -> None:
    """Start a real cluster, run real clients (a confluent-kafka idempotent acks=all producer, an acks=1
    producer, kraftlog's KIP-320 consumer) and inject seeded faults (SIGKILL, SIGSTOP, clean shutdown,
    lose-unflushed, isolation, cut links, partitions, controller kill, a full disk, a flipped byte in a
    log); then heal, read everything back and judge with the simulator's checkers.

    Exit codes: 0 the run completed (the cluster healed; with --fail-on-loss: and it is safe); 1
    otherwise; 2 a bad option; 130 interrupted (every node stopped)."""
    import tempfile
    from random import SystemRandom

    from .chaos import ChaosError, ChaosRun

    if seed is None:
        seed = SystemRandom().randrange(2 ** 31)
    kind_list = None if kinds is None else tuple(k.strip() for k in kinds.split(",") if k.strip())
    if dry_run:
        _print_plan(seed, brokers, partitions, duration, story, kind_list, controllers, kraft_version)
        return
    if directory is None:
        directory = tempfile.mkdtemp(prefix="kraftlog-chaos-")
    elif os.path.exists(os.path.join(directory, "cluster.json")):
        _fail(f"{directory} already holds a cluster: give a new --dir for a chaos run", 2)
    out = sys.stderr if as_json else sys.stdout

    def progress(line: str) -> None:
        print(line, file=out, flush=True)

    try:
        run = ChaosRun(directory, brokers=brokers, duration_s=duration, seed=seed, level=level,
                       partitions=partitions, rate=rate, story=story, progress=progress, kinds=kind_list,
                       port_base=port_base, controllers=controllers, kraft_version=kraft_version)
    except ValueError as exc:
        _fail(str(exc), 2)
    with sigterm_interrupts():
        try:
            verdict = run.run()
        except KeyboardInterrupt:
            click.echo(f"interrupted: every node of {os.path.abspath(directory)} stopped", err=True)
            sys.exit(130)
        except (ChaosError, cl.ClusterError) as exc:
            _fail(f"chaos run failed: {exc} (node logs in {os.path.abspath(directory)})", 1)
    if as_json:
        click.echo(json.dumps(verdict))
    else:
        _print_chaos(verdict, directory)
    code = 0 if verdict["passed"] else 1
    if code == 0 and fail_on_loss and not verdict["safe"]:
        code = 1
    sys.exit(code)


def _print_plan(seed: int, brokers: int, partitions: int, duration_s: float, story: str, kinds,
                controllers: int = 1, kraft_version: int = 0) -> None:
    """``chaos --dry-run``: the fault plan as the steps of a scenario file (exit 2 for a bad option or a
    story, whose steps depend on the running cluster)."""
    from ..scenario import dump_steps
    from .chaos import ChaosRun
    from .chaos_plan import RECOVERY_WAIT_S, plan_steps

    if story != "random":
        _fail(f"--dry-run prints random plans only: the {story} story's steps depend on the running cluster "
              "(its partition's leader)", 2)
    try:
        ChaosRun(os.devnull, brokers=brokers, duration_s=duration_s, seed=seed, partitions=partitions, kinds=kinds,
                 controllers=controllers, kraft_version=kraft_version)
        steps = plan_steps(seed, brokers, partitions, duration_s, kinds, controllers, kraft_version)
    except ValueError as exc:
        _fail(str(exc), 2)
    click.echo(f"# kraftlog chaos --seed {seed} --brokers {brokers} --partitions {partitions} "
               + (f"--controllers {controllers} " if controllers > 1 else "")
               + (f"--kraft-version {kraft_version} " if kraft_version else "")
               + f"--duration {duration_s:g}s: the fault plan as scenario steps (topic chaos). After each heal\n"
               f"# the run waits until every ISR is complete (at most {RECOVERY_WAIT_S:g}s), so its faults start "
               "later than these times and fewer may fit.")
    click.echo(dump_steps(steps), nl=False)


def _print_chaos(verdict: dict, directory: str) -> None:
    from ..verdict import outcome_words
    click.echo("")
    click.echo(f"faults injected ({len(verdict['faults'])}):")
    for f in verdict["faults"]:
        healed = "-" if f["healed_ms"] is None else f"{f['healed_ms'] / 1000:.1f}s"
        rec = "-" if f["recovered_ms"] is None else f"{f['recovered_ms'] / 1000:.1f}s"
        target = f["node"] if f["peer"] is None else f"{f['node']} -> {f['peer']}"
        click.echo(f"  {f['at_ms'] / 1000:7.1f}s  {f['kind']:<18} {str(target):<16} healed {healed:>7}  "
                   f"ISRs complete {rec:>7}" + (f"  ({f['detail']})" if f["detail"] else ""))
    a = verdict["acked"]
    click.echo(f"acknowledged: {a['all']:,} acks=all, {a['1']:,} acks=1; "
               f"consumed {verdict['metrics']['records_consumed']:,}; "
               f"truncations detected {verdict['detected_truncations']}, "
               f"undetected {verdict['undetected_truncations']}")
    g = verdict["metrics"].get("consumer_group") or {}
    if g:
        click.echo(f"consumer group {g['group']}: delivered {g['records_delivered']:,}, {g['commits']:,} commits, "
                   f"{g['restarts']} member restarts; committed offset regressions "
                   f"{verdict['committed_offset_regressions']}, records skipped {verdict['skipped_by_group']}")
    for name, c in verdict.get("client_sends", {}).items():
        errors = ", ".join(f"{k} {v:,}" for k, v in c["errors"].items())
        click.echo(f"  {name} (acks={c['acks']}): sent {c['sent']:,}, acknowledged {c['acknowledged']:,}, "
                   f"failed {c['failed']:,} ({c['timed_out']:,} timed out), replaced {c['replaced']}, "
                   f"unacknowledged at the end {c['unacknowledged_at_end']:,}"
                   + (f", abandoned {c['abandoned']:,}" if c["abandoned"] else "")
                   + (f"; errors: {errors}" if errors else ""))
    click.echo("anomalies: " + ", ".join(f"{k} {v}" for k, v in verdict["anomalies"].items()))
    for v in verdict["invariant_violations"]:
        click.echo(f"  invariant: {v}")
    budget = "within" if verdict["within_budget"] else "BEYOND"
    click.echo(f"level {verdict['level']}, seed {verdict['seed']}: {budget} the fault budget (at most "
               f"{verdict['fault_budget']} replica(s) of a partition down after an unclean shutdown at a time)")
    click.echo(f"verdict: {outcome_words(verdict)}")
    click.echo(f"written: {os.path.join(os.path.abspath(directory), 'chaos.json')}, "
               f"{os.path.join(os.path.abspath(directory), 'acks.parquet')}")
