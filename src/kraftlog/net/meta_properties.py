"""A real node's ``meta.properties`` file (Kafka's node identity, ``MetaProperties`` v1 as KRaft writes it):
written atomically and read back, in the text of :mod:`kraftlog.storage.meta_properties` (the core's
encoding, which the nodes verify at start). The file lives at the root of the node's data directory,
beside its FileDisk's files; it is not a Disk path.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..storage.meta_properties import META_PROPERTIES, decode_properties, encode_properties
from .files import atomic_write

__all__ = ["META_PROPERTIES", "write_meta_properties", "read_meta_properties"]


def write_meta_properties(root: str | os.PathLike[str], props: Mapping[str, str]) -> None:
    """Atomically write ``<root>/meta.properties``, Kafka's node identity file (``MetaProperties``, v1 as
    KRaft writes it): Java properties text, ``version=1`` first, then ``cluster.id``, ``node.id``, then the
    caller's other keys in its order. ``props`` must hold ``cluster.id`` and ``node.id``; a ``version``, if
    given, must be ``1`` (ValueError otherwise). Values are str()-ed. The write is tmp + fsync + rename +
    directory fsync; ``root`` is created if missing."""
    root = os.path.abspath(os.fspath(root))
    atomic_write(os.path.join(root, META_PROPERTIES), encode_properties(props).encode("latin-1"))


def read_meta_properties(root: str | os.PathLike[str]) -> dict[str, str] | None:
    """The properties of ``<root>/meta.properties`` (every key, ``version`` included), or None when the
    file is missing. Raises ValueError when it is not properties text or lacks ``version`` (Kafka refuses
    to start on an unreadable meta.properties); the caller checks ``cluster.id`` / ``node.id``."""
    path = os.path.join(os.path.abspath(os.fspath(root)), META_PROPERTIES)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return None
    try:
        return decode_properties(data.decode("latin-1"))  # java.util.Properties.load reads ISO 8859-1
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
