"""``kraftlog server`` and ``kraftlog storage``: one node run from its ``server.properties``, as Kafka's
``kafka-server-start.sh`` and ``kafka-storage.sh`` do.

* ``kraftlog storage random-uuid`` prints a new cluster id (Kafka's ``Uuid.randomUuid`` in its 22-character
  URL-safe base64 form).
* ``kraftlog storage format --cluster-id ID --config FILE`` writes the node's ``meta.properties`` (version 1,
  ``cluster.id``, ``node.id`` and a new ``directory.id``, KIP-858) into the directory the file names
  (``metadata.log.dir`` for a controller, else ``log.dirs``), creating it. As Kafka's ``Formatter``: a
  directory already formatted is refused (exit 1) unless ``--ignore-formatted``. A controller of KIP-853's
  dynamic quorum (``controller.quorum.bootstrap.servers``) takes one of ``--standalone``,
  ``--initial-controllers`` and ``--no-initial-controllers`` (:func:`format_storage`); they are refused for a
  node whose file names ``controller.quorum.voters`` and for a broker (Kafka's messages). ``--add-scram`` (KIP-900,
  repeatable, :func:`parse_add_scram`) puts SCRAM credentials into a controller's bootstrap checkpoint: the first
  active controller writes them into the empty metadata log, so that a user can log in before an admin could
  create one.
* ``kraftlog server FILE`` runs the node (:func:`kraftlog.net.node.run_server`) until SIGTERM/SIGINT; it
  refuses an unformatted directory.

Bad options and properties exit 2 with one line (``error: ...``); a directory that cannot be written exits 1.
"""

from __future__ import annotations

import base64
import binascii
import os
import socket
import sys
import uuid
from random import SystemRandom

import click

from ..metadata.records import UserScramCredentialRecord
from ..protocol.raft_records import RaftEndpoint, Voter, VotersRecord
from ..protocol.sasl import (
    SCRAM_MAX_ITERATIONS,
    SCRAM_MECHANISM_TYPES,
    SCRAM_MIN_ITERATIONS,
    credential_from_salted_password,
    scram_credential,
)
from ..raft.bootstrap import format_quorum
from ..storage.meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    format_disk,
    kafka_uuid,
    new_directory_id,
    parse_kafka_uuid,
)
from .disk import FileDisk
from .server_config import ServerConfigError, load_server_config, parse_endpoint

__all__ = ["server", "storage", "format_storage", "random_uuid", "parse_add_scram"]


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def random_uuid() -> str:
    """A new cluster id: Kafka's ``Uuid.randomUuid().toString()`` (22 characters of URL-safe base64)."""
    return kafka_uuid(new_directory_id(SystemRandom()))


def parse_initial_controllers(text: str) -> list[Voter]:
    """``--initial-controllers``: ``ID@HOST:PORT:DIRID,...`` (Kafka's ``DynamicVoters`` form, the directory id
    in Kafka's Uuid form) as voters; ValueError naming the entry otherwise."""
    voters: list[Voter] = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        ident, sep, rest = item.partition("@")
        address, colon, dir_text = rest.rpartition(":")
        wrong = f"--initial-controllers: {item!r} is not ID@HOST:PORT:DIRECTORY_ID"
        if not sep or not colon or ":" not in address or not ident.isascii() or not ident.isdigit():
            raise ValueError(wrong)
        try:
            host, port = parse_endpoint(address, "--initial-controllers")
        except ValueError:
            raise ValueError(f"{wrong} (a port within 0..65535)") from None
        try:
            directory_id = parse_kafka_uuid(dir_text)
        except ValueError:
            raise ValueError(f"{wrong}: {dir_text!r} is not a directory id (`storage random-uuid` makes one)") from None
        if any(v.voter_id == int(ident) for v in voters):
            raise ValueError(f"--initial-controllers: voter {ident} is named twice")
        voters.append(Voter(int(ident), directory_id, (RaftEndpoint("CONTROLLER", host, port),)))
    if not voters:
        raise ValueError("--initial-controllers: no controller")
    return voters


def parse_add_scram(text: str, salt: bytes) -> UserScramCredentialRecord:
    """One ``--add-scram`` argument, Kafka's ``ScramParser`` syntax (KIP-900): ``SCRAM-SHA-512=[name=alice,
    password=alice-secret]``, with optional ``iterations=8192`` (default 4096) and ``salt="<base64>"`` (default: the
    ``salt`` drawn by the caller), or ``saltedpassword="<base64>"`` with ``salt`` instead of a password. The
    UserScramCredentialRecord the controller's metadata log starts with; ValueError naming the problem (never the
    password)."""
    mechanism, sep, rest = text.strip().partition("=")
    mechanism = mechanism.strip().upper()
    if mechanism not in SCRAM_MECHANISM_TYPES:
        raise ValueError(f"--add-scram: {mechanism!r} is not SCRAM-SHA-256 or SCRAM-SHA-512 (Kafka's "
                         "SCRAM-SHA-512=[name=alice,password=alice-secret])")
    rest = rest.strip()
    if not sep or not rest.startswith("[") or not rest.endswith("]"):
        raise ValueError(f"--add-scram: expected {mechanism}=[name=...,password=...]")
    fields: dict[str, str] = {}
    for item in filter(None, (x.strip() for x in rest[1:-1].split(","))):
        key, eq, value = item.partition("=")
        key = key.strip().lower()
        if not eq or key not in ("name", "password", "iterations", "salt", "saltedpassword") or key in fields:
            raise ValueError(f"--add-scram: {key!r} is not one of name, password, iterations, salt, saltedpassword "
                             "(each once)")
        fields[key] = value.strip().strip('"')
    name = fields.get("name")
    if not name:
        raise ValueError("--add-scram: name=... is required")
    try:
        iterations = int(fields.get("iterations", "4096"))
        given_salt = base64.b64decode(fields["salt"], validate=True) if "salt" in fields else None
        if "saltedpassword" in fields:
            if "password" in fields or given_salt is None:
                raise ValueError(f"--add-scram {name}: saltedpassword goes with salt and without password")
            if not SCRAM_MIN_ITERATIONS <= iterations <= SCRAM_MAX_ITERATIONS:
                raise ValueError(f"--add-scram {name}: iterations {iterations} outside "
                                 f"{SCRAM_MIN_ITERATIONS}..{SCRAM_MAX_ITERATIONS}")
            credential = credential_from_salted_password(
                mechanism, given_salt, base64.b64decode(fields["saltedpassword"], validate=True), iterations)
        elif "password" in fields:
            try:
                credential = scram_credential(mechanism, fields["password"], given_salt or salt, iterations)
            except ValueError:
                raise
            except Exception as exc:  # scramp's ScramException (a salt shorter than 12 bytes, say)
                raise ValueError(str(exc).split(":")[0]) from None
        else:
            raise ValueError(f"--add-scram {name}: password=... (or salt and saltedpassword) is required")
    except (binascii.Error, ValueError) as exc:
        message = str(exc) if str(exc).startswith("--add-scram") else f"--add-scram {name}: {exc}"
        raise ValueError(message) from None
    return UserScramCredentialRecord(name, SCRAM_MECHANISM_TYPES[mechanism], credential.salt, credential.stored_key,
                                     credential.server_key, credential.iterations)


def format_storage(config_path: str, cluster_id: str, ignore_formatted: bool = False, *, standalone: bool = False,
                   initial_controllers: str | None = None,
                   no_initial_controllers: bool = False, add_scram: tuple[str, ...] = ()) -> tuple[str, MetaProperties]:
    """Format the directory of the node ``config_path`` describes for cluster ``cluster_id`` (Kafka's
    ``Formatter``); returns (the directory, what was written: no directory id when it was already formatted and
    ``ignore_formatted``). A controller of a dynamic quorum (KIP-853: ``controller.quorum.bootstrap.servers``, no
    static voters) takes exactly one of ``standalone`` (it is the only initial voter), ``initial_controllers``
    (``ID@HOST:PORT:DIRID,...``: this node's entry gives its directory id) and ``no_initial_controllers`` (it
    joins later); the first two write the bootstrap checkpoint (KRaftVersionRecord 1 and the VotersRecord with
    each voter's endpoint). ``add_scram``: :func:`parse_add_scram` arguments, the SCRAM credentials a controller's
    metadata log starts with (bootstrap metadata, written by its first active controller; a broker's format takes
    and ignores them, as Kafka's). ValueError (a bad file, cluster id or flag: exit 2), FileExistsError (already
    formatted and not ``ignore_formatted``), OSError (cannot write)."""
    server = load_server_config(config_path)
    try:
        parsed = parse_kafka_uuid(cluster_id)
    except ValueError:
        raise ValueError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID") from None
    if parsed == uuid.UUID(int=0):
        raise ValueError(f"Cluster ID string {cluster_id} is a reserved UUID")
    flags = [f for f, on in (("--standalone", standalone), ("--initial-controllers", initial_controllers),
                             ("--no-initial-controllers", no_initial_controllers)) if on]
    if len(flags) > 1:
        raise ValueError(f"only one of --standalone, --initial-controllers and --no-initial-controllers, got "
                         f"{' and '.join(flags)}")
    if flags and not server.is_controller:
        raise ValueError(f"{flags[0]} formats a controller; {config_path} describes a broker (process.roles=broker)")
    if flags and not server.dynamic_quorum:  # Kafka's Formatter, word for word
        raise ValueError(f"You cannot specify controller.quorum.voters and format the node with {flags[0]}. If you "
                         "want to use dynamic quorum, please remove controller.quorum.voters and specify "
                         "controller.quorum.bootstrap.servers instead.")
    if server.is_controller and server.dynamic_quorum and not flags:
        raise ValueError("Because controller.quorum.voters is not set on this controller, you must specify one of "
                         "the following: --standalone, --initial-controllers, or --no-initial-controllers.")
    scram = [parse_add_scram(text, os.urandom(32)) for text in add_scram]
    directory_id = new_directory_id(SystemRandom())
    initial: VotersRecord | None = None
    own = server.listeners[server.controller_listener] if server.is_controller else None
    if standalone and own is not None:
        initial = VotersRecord((Voter(server.node_id, directory_id, (RaftEndpoint(
            own.name, own.host or socket.gethostname(), own.port),)),))
    elif initial_controllers is not None and own is not None:
        voters = parse_initial_controllers(initial_controllers)
        mine = next((v for v in voters if v.voter_id == server.node_id), None)
        if mine is None:
            raise ValueError(f"--initial-controllers does not name this node ({server.node_id}); format a controller "
                             "that joins later with --no-initial-controllers")
        assert mine.voter_directory_id is not None
        directory_id = mine.voter_directory_id  # Kafka: the metadata log directory takes the id given
        initial = VotersRecord(tuple(Voter(v.voter_id, v.voter_directory_id, tuple(
            RaftEndpoint(own.name, e.host, e.port) for e in v.endpoints)) for v in voters))
    root = server.data_dir
    if os.path.exists(os.path.join(root, META_PROPERTIES)):
        if ignore_formatted:
            return root, MetaProperties(cluster_id, str(server.node_id))
        raise FileExistsError(f"Log directory {root} is already formatted. Use --ignore-formatted to ignore this "
                              "directory and format the others.")
    identity = MetaProperties(cluster_id, str(server.node_id), directory_id)
    with FileDisk(root, raft_metadata=True) as disk:
        format_quorum(disk, 0, initial, records=scram if server.is_controller else ())
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
@click.option("--add-scram", "-S", "add_scram", multiple=True, metavar="'SCRAM-SHA-512=[name=U,password=P]'",
              help="KIP-900: a SCRAM credential the metadata log starts with (repeatable; read by the controllers).")
def storage_format(cluster_id: str, config_path: str, ignore_formatted: bool, standalone: bool,
                   initial_controllers: str | None, no_initial: bool, add_scram: tuple[str, ...]) -> None:
    """Write the node's meta.properties into its directory (Kafka's `kafka-storage.sh format`)."""
    try:
        root, identity = format_storage(config_path, cluster_id, ignore_formatted, standalone=standalone,
                                        initial_controllers=initial_controllers, no_initial_controllers=no_initial,
                                        add_scram=add_scram)
    except ServerConfigError as exc:
        _fail(f"{config_path}: {exc}", 2)
        return
    except ValueError as exc:
        _fail(str(exc), 2)
        return
    except FileExistsError as exc:
        _fail(str(exc), 1)
        return
    except OSError as exc:
        _fail(f"cannot format {config_path}'s directory: {exc.strerror or exc}", 1)
        return
    if identity.directory_id is None:
        click.echo(f"All of the log directories are already formatted ({root}).")
    else:
        click.echo(f"Formatting {root} with cluster.id {cluster_id}, node.id {identity.node_id}, directory.id "
                   f"{kafka_uuid(identity.directory_id)}.")


@click.command("server")
@click.argument("config_path", metavar="CONFIG.properties", type=click.Path(dir_okay=False))
def server(config_path: str) -> None:
    """Run one node from its server.properties (Kafka's `kafka-server-start.sh`) until SIGTERM or Ctrl-C."""
    from .node import run_server
    sys.exit(run_server(config_path))
