"""A node's identity on its disk: Kafka's ``meta.properties``, sans-I/O.

``kafka-storage.sh format`` writes ``meta.properties`` into every directory of a node before the node
first starts (Kafka's ``MetaProperties`` v1, as KRaft writes it): Java properties text with ``version=1``,
``cluster.id``, ``node.id`` and ``directory.id`` (a random Uuid per directory, KIP-858, in Kafka's
``Uuid.toString`` form). A node never writes it itself: at start it verifies what it finds (Kafka's
``MetaPropertiesEnsemble.verify``) and refuses to start, with a one-line reason, when

* a directory is not formatted (no ``meta.properties``): above all the controller's metadata directory,
  which would otherwise come up as an empty metadata log and let the brokers forget every topic;
* the file is unreadable, or not version 1, or lacks ``cluster.id`` / ``node.id``;
* the node's directories disagree on ``cluster.id`` or ``node.id``, or two share a ``directory.id``;
* the ``node.id`` differs from the node's configuration, or the ``cluster.id`` from the cluster's.

The core nodes read the file as a value file of their :class:`~kraftlog.storage.disk.Disk`
(:data:`META_PROPERTIES` at the root) through :func:`read_identity`; the drivers (``kraftlog cluster``,
the simulator's ``SimCluster``) format with :func:`format_disk`. The properties codec here
(:func:`encode_properties`, :func:`decode_properties`) is ``java.util.Properties``'s ``store``/``load``
for the ISO 8859-1 text Kafka writes; ``kraftlog.net.meta_properties`` uses it for the files of a real node.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from random import Random

from .disk import Disk

__all__ = [
    "META_PROPERTIES",
    "MetaProperties",
    "NodeIdentityError",
    "decode_properties",
    "encode_properties",
    "load_properties",
    "store_properties",
    "format_disk",
    "kafka_uuid",
    "new_directory_id",
    "parse_kafka_uuid",
    "read_identity",
    "verify_ensemble",
]

#: The node identity file at the root of a node's Disk (Kafka's ``meta.properties``).
META_PROPERTIES = "meta.properties"
#: The only ``version`` kraftlog reads and writes (KRaft's).
VERSION = "1"
_REQUIRED = ("cluster.id", "node.id")
#: Kafka reserves the Uuids below 100 for directory ids with a meaning (``DirectoryId.UNASSIGNED``,
#: ``LOST``, ``MIGRATING``); a drawn directory id is never one of them.
_RESERVED_DIRECTORY_IDS = 100


class NodeIdentityError(ValueError):
    """A node must not start on these directories; ``str()`` is the one-line reason."""


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """One directory's identity: ``cluster_id`` and ``node_id`` as written (``node_id`` is the broker id
    as text, or ``"controller"``), ``directory_id`` (None in a file written before KIP-858)."""

    cluster_id: str
    node_id: str
    directory_id: uuid.UUID | None = None

    def to_properties(self) -> dict[str, str]:
        """The file's keys in Kafka's order (``version`` first)."""
        props = {"version": VERSION, "cluster.id": self.cluster_id, "node.id": self.node_id}
        if self.directory_id is not None:
            props["directory.id"] = kafka_uuid(self.directory_id)
        return props


def kafka_uuid(u: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding (22 characters)."""
    return base64.urlsafe_b64encode(u.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """A Uuid as Kafka writes it (``Uuid.toString``: URL-safe base64 of 16 bytes, no padding) or in the
    canonical hex form; ValueError otherwise."""
    if len(text) == 22:
        raw = base64.urlsafe_b64decode(text + "==")
        if len(raw) == 16:
            return uuid.UUID(bytes=raw)
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a Kafka Uuid") from None


def new_directory_id(rng: Random) -> uuid.UUID:
    """A random directory id from ``rng`` (Kafka's ``Uuid.randomUuid``, never a reserved one)."""
    while True:
        u = uuid.UUID(int=rng.getrandbits(128))
        if u.int >= _RESERVED_DIRECTORY_IDS:
            return u


def format_disk(disk: Disk, identity: MetaProperties, now_ms: int) -> None:
    """Format a node's Disk (``kafka-storage.sh format``): write :data:`META_PROPERTIES` atomically.
    The caller decides that the directory is new; a node never formats itself."""
    disk.write_atomic(META_PROPERTIES, encode_properties(identity.to_properties()), now_ms)


def read_identity(disk: Disk, node_id: int | str, cluster_id: str) -> MetaProperties:
    """The verified identity of the node ``node_id`` of cluster ``cluster_id`` from its Disk's
    :data:`META_PROPERTIES` (a value file: no I/O of this module's own); raises
    :class:`NodeIdentityError` as :func:`verify_ensemble` does."""
    return verify_ensemble({"": disk.read_value(META_PROPERTIES)}, node_id, cluster_id)[""]


def verify_ensemble(texts: Mapping[str, object], node_id: int | str, cluster_id: str) -> dict[str, MetaProperties]:
    """Kafka's ``MetaPropertiesEnsemble.verify`` over the directories of one node.

    ``texts``: directory name -> the text of its ``meta.properties`` (None when missing). Returns directory
    -> MetaProperties, or raises :class:`NodeIdentityError` naming the first problem, in this order: a
    directory not formatted; a file that is not properties text, not version 1 or lacks ``cluster.id`` /
    ``node.id``; directories that disagree on ``cluster.id`` or ``node.id`` or share a ``directory.id``; a
    ``node.id`` other than ``node_id``; a ``cluster.id`` other than ``cluster_id``."""
    found: dict[str, MetaProperties] = {}
    for name in sorted(texts):
        where = f"{name}/{META_PROPERTIES}" if name else META_PROPERTIES
        text = texts[name]
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("latin-1")  # java.util.Properties.load(InputStream) reads ISO 8859-1
        if text is None:
            raise NodeIdentityError(f"not formatted: no {where} (format a directory only when it is new)")
        if not isinstance(text, str):
            raise NodeIdentityError(f"{where} is not properties text")
        try:
            props = decode_properties(text)
        except ValueError as exc:
            raise NodeIdentityError(f"{where} is unreadable: {exc}") from None
        if props.get("version") != VERSION:
            raise NodeIdentityError(f"{where} has version {props.get('version')!r}; only {VERSION} is supported")
        missing = [k for k in _REQUIRED if not props.get(k)]
        if missing:
            raise NodeIdentityError(f"{where} has no {', '.join(missing)}")
        directory_id = None
        if props.get("directory.id"):
            try:
                directory_id = parse_kafka_uuid(props["directory.id"])
            except ValueError as exc:
                raise NodeIdentityError(f"{where}: bad directory.id: {exc}") from None
        found[name] = MetaProperties(props["cluster.id"], props["node.id"], directory_id)
    first_name = next(iter(found))
    first = found[first_name]
    seen_ids: dict[uuid.UUID, str] = {}
    for name, mp in found.items():
        if mp.cluster_id != first.cluster_id:
            raise NodeIdentityError(f"the directories disagree on cluster.id: {first.cluster_id} in "
                                    f"{first_name or '.'}, {mp.cluster_id} in {name or '.'}")
        if mp.node_id != first.node_id:
            raise NodeIdentityError(f"the directories disagree on node.id: {first.node_id} in "
                                    f"{first_name or '.'}, {mp.node_id} in {name or '.'}")
        if mp.directory_id is not None:
            if mp.directory_id in seen_ids:
                raise NodeIdentityError(f"directory.id {kafka_uuid(mp.directory_id)} is both "
                                        f"{seen_ids[mp.directory_id] or '.'}'s and {name or '.'}'s")
            seen_ids[mp.directory_id] = name
    if first.node_id != str(node_id):
        raise NodeIdentityError(f"{META_PROPERTIES} belongs to node {first.node_id}, not to node {node_id}")
    if first.cluster_id != cluster_id:
        raise NodeIdentityError(f"{META_PROPERTIES} belongs to cluster {first.cluster_id}, not to this "
                                f"cluster {cluster_id}")
    return found


# ------------------------------------------------------------------------------ properties text
def encode_properties(props: Mapping[str, object]) -> str:
    """``meta.properties`` text (``java.util.Properties.store``'s escaping): ``version=1`` first, then
    ``cluster.id``, ``node.id``, then the other keys in the caller's order; values are str()-ed.
    ValueError when ``cluster.id`` or ``node.id`` is missing or ``version`` is given and not ``1``."""
    text = {str(k): str(v) for k, v in props.items()}
    version = text.pop("version", VERSION)
    if version != VERSION:
        raise ValueError(f"meta.properties version {version!r} is not supported (only {VERSION})")
    missing = [k for k in _REQUIRED if k not in text]
    if missing:
        raise ValueError(f"meta.properties needs {', '.join(missing)}")
    ordered = {"version": version}
    for k in _REQUIRED:
        ordered[k] = text.pop(k)
    ordered.update(text)
    lines = ["#", "#Written by kraftlog (Kafka meta.properties format)"]
    lines.extend(f"{_escape(k, True)}={_escape(v, False)}" for k, v in ordered.items())
    return "\n".join(lines) + "\n"


def store_properties(props: Mapping[str, object]) -> str:
    """``props`` as properties text, one ``key=value`` line each in the caller's order (no header); values are
    str()-ed. A value of printable ASCII without a backslash or a leading space is written as an operator writes it
    (``listeners=PLAINTEXT://host:9092``: ``load`` reads ``:`` and ``=`` in a value as themselves); any other is
    escaped as ``java.util.Properties.store`` escapes it."""
    def value(text: str) -> str:
        plain = text.isascii() and text.isprintable() and "\\" not in text and not text.startswith(" ")
        return text if plain else _escape(text, False)
    return "".join(f"{_escape(str(k), True)}={value(str(v))}\n" for k, v in props.items())


def load_properties(text: str) -> dict[str, str]:
    """Every key of properties ``text`` as ``java.util.Properties.load`` reads it (comments, continuation
    lines, escapes; a later key replaces an earlier one). ValueError when it is not properties text."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_property(line)
        props[key] = value
    return props


def decode_properties(text: str) -> dict[str, str]:
    """Every key of properties ``text`` (``java.util.Properties.load``). ValueError when it is not
    properties text or lacks ``version`` (Kafka refuses to start on an unreadable meta.properties)."""
    props = load_properties(text)
    if "version" not in props:
        raise ValueError("no version: not a meta.properties file")
    return props


def _escape(text: str, key: bool) -> str:
    """java.util.Properties.store escaping: ``\\``, ``=``, ``:``, ``#``, ``!``, control characters,
    spaces in keys and a value's leading space; characters outside printable ASCII as ``\\uXXXX``."""
    out = []
    for i, c in enumerate(text):
        if c == " ":
            out.append("\\ " if key or i == 0 else " ")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif c == "\f":
            out.append("\\f")
        elif c in "\\=:#!":
            out.append("\\" + c)
        elif " " < c <= "~":
            out.append(c)
        else:
            b = c.encode("utf-16-be", "surrogatepass")  # UTF-16 code units, as Java writes them
            out.extend(f"\\u{b[k] << 8 | b[k + 1]:04X}" for k in range(0, len(b), 2))
    return "".join(out)


def _unescape(text: str) -> str:
    out = []
    i = 0
    n = len(text)
    units: list[int] = []

    def flush_units() -> None:
        if units:
            out.append(b"".join(u.to_bytes(2, "big") for u in units).decode("utf-16-be", "surrogatepass"))
            units.clear()

    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt == "u":
                hexits = text[i + 2:i + 6]
                if len(hexits) != 4 or any(h not in "0123456789abcdefABCDEF" for h in hexits):
                    raise ValueError(f"malformed \\uXXXX escape in properties text: {text!r}")
                units.append(int(hexits, 16))
                i += 6
                continue
            flush_units()
            out.append({"t": "\t", "n": "\n", "r": "\r", "f": "\f"}.get(nxt, nxt))
            i += 2
            continue
        flush_units()
        out.append(c)
        i += 1
    flush_units()
    return "".join(out)


def _logical_lines(text: str) -> list[str]:
    """Java properties logical lines: comments and blank lines dropped, a line ending in an odd number
    of backslashes continued on the next (whose leading whitespace is dropped)."""
    lines = []
    pending = None
    for raw in text.splitlines():
        line = raw.lstrip(" \t\f")
        if pending is None and (not line or line[0] in "#!"):
            continue
        if pending is not None:
            line = pending + line
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            pending = line[:-1]
            continue
        pending = None
        lines.append(line)
    if pending is not None:
        lines.append(pending)
    return lines


def _split_property(line: str) -> tuple[str, str]:
    """(key, value) of a logical line, as ``java.util.Properties.load``: the key ends at the first
    unescaped ``=``, ``:`` or whitespace; whitespace and one ``=``/``:`` separate it from the value."""
    n = len(line)
    i = 0
    while i < n and line[i] not in "=: \t\f":
        i += 2 if line[i] == "\\" else 1
    i = min(i, n)
    j = i
    if j < n and line[j] in "=:":
        j += 1
    else:
        while j < n and line[j] in " \t\f":
            j += 1
        if j < n and line[j] in "=:":
            j += 1
    while j < n and line[j] in " \t\f":
        j += 1
    return _unescape(line[:i]), _unescape(line[j:])
