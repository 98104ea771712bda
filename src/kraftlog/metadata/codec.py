"""The metadata-record codec: a metadata record (:mod:`kraftlog.metadata.records`) as the compact JSON value a
KRaft ``__cluster_metadata`` batch carries, and back. The wire layer (a MetadataFetch response) and the
file-backed metadata log (``net/disk.py``, ``net/segment.py``) both use it. Kafka encodes these records with
its generated ``ApiMessageAndVersion`` serde; kraftlog's records are its own dataclasses, so their value is JSON."""

from __future__ import annotations

import base64
import json
import uuid
from dataclasses import fields
from typing import Any

from . import records as mdr

__all__ = ["MetadataRecordError", "encode_metadata_record", "decode_metadata_record"]


class MetadataRecordError(ValueError):
    """A value that is not a metadata record: malformed JSON, an unknown ``type``, bad fields."""


_METADATA_TYPES: dict[str, type] = {cls.__name__: cls for cls in mdr.METADATA_RECORD_TYPES}


def _field_kinds(cls: type) -> tuple[tuple[str, str], ...]:
    """(field name, kind) with kind "uuids" (a tuple of UUIDs), "uuid", "tuple", "bytes" (base64 in the JSON) or ""
    from the (string) annotations."""
    kinds = []
    for f in fields(cls):
        ann = str(f.type)
        kind = ("uuids" if ann.startswith("tuple[uuid.UUID") else "uuid" if "UUID" in ann
                else "tuple" if ann.startswith("tuple") else "bytes" if ann == "bytes" else "")
        kinds.append((f.name, kind))
    return tuple(kinds)


_METADATA_FIELDS: dict[type, tuple[tuple[str, str], ...]] = {
    cls: _field_kinds(cls) for cls in mdr.METADATA_RECORD_TYPES
}


def encode_metadata_record(rec: object) -> bytes:
    """A metadata record (``kraftlog.metadata.records``) as compact UTF-8 JSON:
    ``{"type": "<ClassName>", "<field>": value, ...}`` in field order; UUIDs as strings, tuples as
    lists, bytes as base64, None as null. Raises :class:`MetadataRecordError` for a type that is not a metadata
    record."""
    kinds = _METADATA_FIELDS.get(type(rec))
    if kinds is None:
        raise MetadataRecordError(f"{type(rec).__name__} is not a metadata record type")
    doc: dict[str, Any] = {"type": type(rec).__name__}
    for name, kind in kinds:
        value = getattr(rec, name)
        if kind == "uuid" and value is not None:
            value = str(value)
        elif kind == "uuids" and value is not None:
            value = [str(v) for v in value]
        elif kind == "bytes" and value is not None:
            value = base64.b64encode(value).decode("ascii")
        doc[name] = value
    return json.dumps(doc, separators=(",", ":")).encode()


def decode_metadata_record(data: bytes) -> mdr.MetadataRecord:
    """Inverse of :func:`encode_metadata_record`. Raises :class:`MetadataRecordError` on malformed JSON or an
    unknown ``type``."""
    try:
        doc = json.loads(data)
        cls = _METADATA_TYPES[doc.pop("type")]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MetadataRecordError(f"not a kraftlog metadata record: {data[:80]!r}") from exc
    kwargs = {}
    for name, kind in _METADATA_FIELDS[cls]:
        if name not in doc:
            continue
        value = doc[name]
        if value is not None:
            if kind == "uuid":
                value = uuid.UUID(value)
            elif kind == "uuids":
                value = tuple(uuid.UUID(v) for v in value)
            elif kind == "tuple":
                value = tuple(value)
            elif kind == "bytes":
                try:
                    value = base64.b64decode(value, validate=True)
                except (ValueError, TypeError) as exc:
                    raise MetadataRecordError(f"bad {cls.__name__} metadata record: {name} is not base64") from exc
        kwargs[name] = value
    try:
        record: mdr.MetadataRecord = cls(**kwargs)
        return record
    except TypeError as exc:
        raise MetadataRecordError(f"bad {cls.__name__} metadata record: {exc}") from exc
