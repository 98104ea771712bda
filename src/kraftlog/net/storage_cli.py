"""``kraftlog server`` and ``kraftlog storage``: one node run from its ``server.properties``, as Kafka's
``kafka-server-start.sh`` and ``kafka-storage.sh`` do.

* ``kraftlog storage random-uuid`` prints a new cluster id (Kafka's ``Uuid.randomUuid`` in its 22-character
  URL-safe base64 form).
* ``kraftlog storage format --cluster-id ID --config FILE`` writes the node's ``meta.properties`` (version 1,
  ``cluster.id``, ``node.id`` and a new ``directory.id``, KIP-858) into the directory the file names
  (``metadata.log.dir`` for a controller, else ``log.dirs``), creating it. As Kafka's ``Formatter``: a
  directory already formatted is refused (exit 1) unless ``--ignore-formatted``; ``--standalone``,
  ``--initial-controllers`` and ``--no-initial-controllers`` bootstrap KIP-853's dynamic quorum and are
  refused for a node whose file names ``controller.quorum.voters`` (Kafka's message); on a broker they are
  refused too (they are a controller's).
* ``kraftlog server FILE`` runs the node (:func:`kraftlog.net.node.run_server`) until SIGTERM/SIGINT; it
  refuses an unformatted directory.

Bad options and properties exit 2 with one line (``error: ...``); a directory that cannot be written exits 1.
"""

from __future__ import annotations

import os
import sys
import uuid
from random import SystemRandom

import click

from ..storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    format_disk,
    kafka_uuid,
    new_directory_id,
    parse_kafka_uuid,
)
from .disk import FileDisk
from .server_config import ServerConfigError, load_server_config

__all__ = ["server", "storage", "format_storage", "random_uuid"]


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def random_uuid() -> str:
    """A new cluster id: Kafka's ``Uuid.randomUuid().toString()`` (22 characters of URL-safe base64)."""
    return kafka_uuid(new_directory_id(SystemRandom()))


def format_storage(config_path: str, cluster_id: str, ignore_formatted: bool = False) -> tuple[str, MetaProperties]:
    """Format the directory of the node ``config_path`` describes for cluster ``cluster_id``; returns (the
    directory, what was written). ValueError (a bad file or cluster id: exit 2), FileExistsError (already
    formatted and not ``ignore_formatted``), OSError (cannot write)."""
    server = load_server_config(config_path)
    try:
        parsed = parse_kafka_uuid(cluster_id)
    except ValueError:
        raise ValueError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID") from None
    if parsed == uuid.UUID(int=0):
        raise ValueError(f"Cluster ID string {cluster_id} is a reserved UUID")
    root = server.data_dir
    if os.path.exists(os.path.join(root, META_PROPERTIES)):
        if ignore_formatted:
            return root, MetaProperties(cluster_id, str(server.node_id))
        raise FileExistsError(f"Log directory {root} is already formatted. Use --ignore-formatted to ignore this "
                              "directory and format the others.")
    identity = MetaProperties(cluster_id, str(server.node_id), new_directory_id(SystemRandom()))
    with FileDisk(root) as disk:
        format_disk(disk, identity, 0)
    return root, identity


@click.group("storage")
def storage() -> None:
    """Prepare a node's directory (Kafka's `kafka-storage.sh`)."""


@storage.command("random-uuid")
def storage_random_uuid() -> None:
    """Print a new cluster id."""
    click.echo(random_uuid())


@storage.command("format")
@click.option("--cluster-id", "-t", "cluster_id", required=True, help="The cluster's id (`storage random-uuid`).")
@click.option("--config", "-c", "config_path", required=True, type=click.Path(dir_okay=False),
              help="The node's server.properties.")
@click.option("--ignore-formatted", "-g", is_flag=True, help="A directory already formatted is not an error.")
@click.option("--standalone", "-s", is_flag=True, help="KIP-853: this controller is the only initial voter.")
@click.option("--initial-controllers", "-I", "initial_controllers", default=None,
              metavar="ID@HOST:PORT:DIRID,...", help="KIP-853: the initial voters with their directory ids.")
@click.option("--no-initial-controllers", "-N", "no_initial", is_flag=True,
              help="KIP-853: this controller joins an existing dynamic quorum.")
def storage_format(cluster_id: str, config_path: str, ignore_formatted: bool, standalone: bool,
                   initial_controllers: str | None, no_initial: bool) -> None:
    """Write the node's meta.properties into its directory (Kafka's `kafka-storage.sh format`)."""
    flags = [f for f, on in (("--standalone", standalone), ("--initial-controllers", initial_controllers),
                             ("--no-initial-controllers", no_initial)) if on]
    if len(flags) > 1:
        _fail(f"only one of --standalone, --initial-controllers and --no-initial-controllers, got "
              f"{' and '.join(flags)}", 2)
    try:
        server = load_server_config(config_path)
    except ServerConfigError as exc:
        _fail(f"{config_path}: {exc}", 2)
        return
    if flags and not server.is_controller:
        _fail(f"{flags[0]} formats a controller; {config_path} describes a broker (process.roles=broker)", 2)
    if flags:  # Kafka's Formatter, word for word where it applies
        _fail(f"You cannot specify controller.quorum.voters and format the node with {flags[0]}. If you want to "
              "use dynamic quorum, please remove controller.quorum.voters and specify "
              "controller.quorum.bootstrap.servers instead (kraftlog server runs static voters only, for now).", 2)
    try:
        root, identity = format_storage(config_path, cluster_id, ignore_formatted)
    except ValueError as exc:
        _fail(str(exc), 2)
        return
    except FileExistsError as exc:
        _fail(str(exc), 1)
        return
    except OSError as exc:
        _fail(f"cannot format {server.data_dir}: {exc.strerror or exc}", 1)
        return
    if identity.directory_id is None:
        click.echo(f"All of the log directories are already formatted ({root}).")
    else:
        click.echo(f"Formatting {root} with cluster.id {cluster_id}, node.id {server.node_id}, directory.id "
                   f"{kafka_uuid(identity.directory_id)}.")


@click.command("server")
@click.argument("config_path", metavar="CONFIG.properties", type=click.Path(dir_okay=False))
def server(config_path: str) -> None:
    """Run one node from its server.properties (Kafka's `kafka-server-start.sh`) until SIGTERM or Ctrl-C."""
    from .node import run_server
    sys.exit(run_server(config_path))
