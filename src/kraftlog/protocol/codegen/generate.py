"""Render :mod:`kraftlog.protocol.messages` from the table in :mod:`kraftlog.protocol.codegen.spec`.

:func:`generate` returns the module's text; ``python -m kraftlog.protocol.codegen`` writes it and
``python -m kraftlog.protocol.codegen --check`` exits 1 when the checked-in file differs
(tests/test_generated_messages.py does the same in memory). Every :class:`~.spec.F` is resolved
against the API's schema (kio's entities or the JSON files in ``schemas/``): a path that does not
exist raises :class:`SpecError`, so the core cannot name a field Kafka does not have.

Type rules (core annotation from a schema field): Kafka's integers, error codes and durations (ms) are
``int``, ``string`` ``str``, ``bytes`` ``bytes``, ``uuid`` ``uuid.UUID`` (Kafka's zero UUID for none:
never ``None`` unless the spec says), ``records`` ``tuple[RecordBatch, ...]`` (() for none), a struct
the core class made from the struct at that path, ``[]T`` ``tuple[T, ...]``; a path through an array
(``topics.partitions``) is flattened into one tuple; a nullable field is ``T | None``. Defaults: the
spec's, else the schema's (none for a flattened path: an element's default is not the list's).
"""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from kio.index import load_request_schema, load_response_schema

from . import spec as s
from .schema import NO_DEFAULT, SchemaField, SchemaStruct, json_struct, kio_struct

SCHEMAS = Path(__file__).parent / "schemas"
#: The generated module, beside this package.
TARGET = Path(__file__).parent.parent / "messages.py"
COMMAND = "python -m kraftlog.protocol.codegen"
WIDTH = 116


class SpecError(ValueError):
    """The spec names a field, path or class the schema or the spec does not have."""


_SCALARS = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int", "error_code": "int",
    "timedelta_i32": "int", "timedelta_i64": "int", "datetime_i64": "int", "float64": "float",
    "bool": "bool", "string": "str", "bytes": "bytes", "uuid": "uuid.UUID",
    "records": "tuple[RecordBatch, ...]",
}
#: Kafka types whose null the core holds as a value (the zero UUID, no batches), not as None.
_NULL_AS_VALUE = {"uuid", "records"}


def _schema(api: s.Api, side: str, version: int | None = None) -> SchemaStruct:
    v = api.source.version if version is None else version
    if isinstance(api.source, s.Json):
        return json_struct(SCHEMAS / f"{api.name}{side.capitalize()}.json", v)
    load = load_request_schema if side == s.REQUEST else load_response_schema
    return kio_struct(load(api.key, v))


def _join(at: str, path: str) -> str:
    """``path`` relative to ``at`` ("../x": a field of the enclosing struct) -> a path from the root."""
    parts = at.split(".") if at else []
    while path.startswith("../"):
        if not parts:
            raise SpecError(f"{path!r} climbs above the root from {at!r}")
        parts.pop()
        path = path[3:]
    return ".".join(parts + ([path] if path else []))


def _walk(root: SchemaStruct, path: str) -> list[SchemaField]:
    """The fields along ``path`` from ``root``."""
    out: list[SchemaField] = []
    struct: SchemaStruct | None = root
    for name in path.split("."):
        if struct is None or name not in struct.fields:
            where = f"{root.source} {root.name}"
            raise SpecError(f"{where} has no field {path!r} (no {name!r} {'there' if struct else 'in a scalar'})")
        f = struct.fields[name]
        out.append(f)
        struct = f.struct
    return out


def _shown(path: list[SchemaField]) -> str:
    return ".".join(f.name + ("[]" if f.array else "") for f in path)


@dataclass(frozen=True, slots=True)
class _Field:
    """A rendered field: name, annotation, default source (None: required), comment."""

    name: str
    annotation: str
    default: str | None
    doc: str


def _default_source(value: object) -> str | None:
    if value is s.REQUIRED or value is NO_DEFAULT:
        return None
    if isinstance(value, s.Expr):
        return value.source
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, bytes | int | float | tuple) or value is None:
        return repr(value).replace("b''", 'b""')
    raise SpecError(f"no source for default {value!r}")


class _Generator:
    def __init__(self) -> None:
        self._schemas: dict[tuple[str, str, int | None], SchemaStruct] = {}

    def schema(self, api: s.Api, side: str, version: int | None = None) -> SchemaStruct:
        key = (api.name + str(api.key), side, version)
        if key not in self._schemas:
            self._schemas[key] = _schema(api, side, version)
        return self._schemas[key]

    def field(self, api: s.Api, struct: s.Struct, f: s.F | s.Extra) -> _Field:
        if isinstance(f, s.Extra):
            return _Field(f.name, f.type, _default_source(f.default), f.doc)
        root = self.schema(api, struct.side, f.version)
        if f.kio is not None:
            rel = f.kio
        elif not f.name.endswith("_ms") or f.name in _fields_at(root, struct.at):
            rel = f.name
        else:
            rel = f.name[:-3]  # Kafka's XMs: kio's x (a timedelta)
        path = _join(struct.at, rel)
        walked = _walk(root, path)
        last = walked[-1]
        # Flattened: arrays on the way below the struct's own level (the struct itself may be an element).
        own_depth = len(struct.at.split(".")) if struct.at else 0
        flattened = any(w.array for w in walked[own_depth:-1]) and len(walked) > own_depth + 1
        if f.type is not None:
            annotation = f.type
        else:
            element = self.element_type(api, struct.side, path, last)
            array = last.array or flattened
            if path == struct.at:  # the element itself of a scalar array (ElectLeaders' partition)
                array = False
            annotation = f"tuple[{element}, ...]" if array else element
            nullable = f.nullable if f.nullable is not None else (
                last.nullable and last.kafka_type not in _NULL_AS_VALUE)
            if nullable:
                annotation += " | None"
        if f.default is not s.FROM_SCHEMA:
            default = _default_source(f.default)
        elif flattened or last.default is NO_DEFAULT:
            default = None
        elif last.kafka_type == "struct" and last.default is not None:
            raise SpecError(f"{struct.name}.{f.name}: the schema's default is a struct; say the core's")
        else:
            default = _default_source(last.default)
        doc = f.doc or last.about
        shown = _shown(walked)
        if struct.at and path.startswith(struct.at + "."):
            shown = _shown(walked[len(struct.at.split(".")):])  # below the struct: relative to it
        if shown != f.name:
            version = f" v{f.version}" if f.version is not None else ""
            doc = f"``{shown}``{version}: {doc}"
        return _Field(f.name, annotation, default, doc)

    def element_type(self, api: s.Api, side: str, path: str, last: SchemaField) -> str:
        for c in api.classes:  # a struct, or a scalar array whose elements a core class holds
            if c.side == side and c.at == path:
                return c.name
        if last.kafka_type in _SCALARS:
            return _SCALARS[last.kafka_type]
        raise SpecError(f"{api.name} {side}: no core class for the struct at {path!r}; add a Struct or a type")


def _fields_at(root: SchemaStruct, at: str) -> dict[str, SchemaField]:
    if not at:
        return root.fields
    struct = _walk(root, at)[-1].struct
    return struct.fields if struct is not None else {}


def _comment(text: str, indent: str) -> list[str]:
    lines: list[str] = []
    for para in text.split("\n"):
        lines += textwrap.wrap(para, WIDTH - len(indent) - 3, break_on_hyphens=False) or [""]
    return [f"{indent}#: {line}".rstrip() for line in lines]


def _docstring(text: str, indent: str) -> list[str]:
    lines: list[str] = []
    for para in text.split("\n"):
        lines += textwrap.wrap(para, WIDTH - len(indent) - 3, break_on_hyphens=False) or [""]
    lines[0] = '"""' + lines[0]
    lines[-1] += '"""'
    return [(indent + line).rstrip() for line in lines]


def _source_line(api: s.Api, struct: s.Struct, schema: SchemaStruct, version: int | None = None) -> str:
    if isinstance(api.source, s.Kio):
        where = f"``{schema.source}``"
    else:
        where = f"``codegen/schemas/{schema.source.split()[0]}``"
    at = f" ``{_shown(_walk(schema, struct.at))}``" if struct.at else ""
    return f"From Kafka's {schema.name} v{api.source.version if version is None else version}{at} ({where})."


def _heading(title: str) -> list[str]:
    first, *rest = title.split("\n")
    return ["# " + "-" * (100 - 3 - len(first)) + " " + first, *rest]


def _render_class(gen: _Generator, api: s.Api | None, struct: s.Struct) -> list[str]:
    out = ["@dataclass(slots=True)", f"class {struct.name}:"]
    doc = struct.doc
    if api is not None:
        # a struct that exists only from a later version (its fields say which) is read from that version
        since = max((f.version for f in struct.fields if isinstance(f, s.F) and f.version is not None), default=None)
        source = _source_line(api, struct, gen.schema(api, struct.side, since), since)
        doc = f"{doc}\n\n{source}" if doc else source
    if doc:
        out += _docstring(doc, "    ") + [""]
    if api is not None and struct.at == "":
        out.append(f'    API: ClassVar[str] = "{api.name}"')
        if struct.side == s.REQUEST:
            out.append(f"    API_KEY: ClassVar[int] = {api.key}")
            out.append(f"    VERSION: ClassVar[int] = {api.version}")
    for f in struct.fields:
        rendered = gen.field(api, struct, f) if api is not None else gen_extra(f)
        if rendered.doc:
            out += _comment(rendered.doc, "    ")
        default = "" if rendered.default is None else f" = {rendered.default}"
        out.append(f"    {rendered.name}: {rendered.annotation}{default}")
    return out


def gen_extra(f: s.F | s.Extra) -> _Field:
    if not isinstance(f, s.Extra):
        raise SpecError(f"{f.name}: a class outside every API holds Extra fields only")
    return _Field(f.name, f.type, _default_source(f.default), f.doc)


def _render_consts(consts: tuple[s.Const, ...]) -> list[str]:
    out: list[str] = []
    for c in consts:
        if c.doc:
            out += _comment(c.doc, "")
        out.append(f"{c.name} = {c.source}")
    return out


_HEADER = '''# Generated by `{command}` from kio {kio}'s entity classes and the JSON schemas in
# src/kraftlog/protocol/codegen/schemas/, as src/kraftlog/protocol/codegen/spec.py says. Do not edit: change the
# spec and regenerate (tests/test_generated_messages.py fails when this file differs from what it generates).
"""The core's message types: Kafka's schemas, Kafka's field names, lightweight slotted dataclasses.

Every request class has ``API`` (Kafka's API name, e.g. ``"AlterPartition"``), ``API_KEY`` and
``VERSION`` (the Kafka version whose semantics it carries); its response class has the same ``API``.
Nested Kafka structures are flattened where Kafka nests by topic: each partition entry names its topic
(``topic`` for APIs keyed by name, ``topic_id`` for Fetch v13+ and AlterPartition v2+).
``kraftlog.protocol.wire`` maps every class to kio entities and bytes and back.

Field conventions: offsets and epochs are ints (-1 = none), durations are ints in ms, error codes are
``Errors`` values (ints). Each class names the Kafka struct it is made from and each field's comment
is Kafka's ``about`` text (or kraftlog's, where the core means more), prefixed by the field's path
when the core flattens or renames it.

Generated for the {count} APIs the core speaks, each holding the fields the protocol uses:
{names}.
The other APIs kio has are not generated: kraftlog neither sends nor
serves them, kio's own entities already hold them in Kafka's shape, and a mirror nobody reads would
only drift (DESIGN.md: kio stays at the edge).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar

from ..metadata.records import MetadataRecord
from .node import Envelope as Envelope  # the typed Envelope (protocol/node.py), where callers have found it
from .raft_records import RaftBatch, RaftEndpoint
from .records import RecordBatch
'''


def generate() -> str:
    """The text of ``kraftlog/protocol/messages.py``."""
    gen = _Generator()
    names = sorted({api.name for api in s.APIS})
    wrapped = textwrap.fill(", ".join(names), 100)
    out = [_HEADER.format(command=COMMAND, kio=importlib.metadata.version("kio"), count=len(names),
                          names=wrapped)]
    out += _render_consts(s.HEAD_CONSTANTS)
    for api in s.APIS:
        title = api.title if api.title is not None else f"{api.name} (API key {api.key}, v{api.version})"
        if title:
            out += ["", ""] + _heading(title)
        for line in api.note.split("\n") if api.note else []:
            out.append(f"# {line}")
        if api.constants:
            out += _render_consts(api.constants) + ["", ""]
        for i, struct in enumerate(api.classes):
            out += ([] if i == 0 and (title or api.note or api.constants) else ["", ""])
            out += _render_class(gen, api, struct)
    requests = [c.name for api in s.APIS for c in api.classes if c.side == s.REQUEST and c.at == ""]
    out += ["", "", '#: Every request class, keyed by API name (MetadataFetchRequest shares "Fetch").',
            "REQUEST_TYPES: tuple[type, ...] = ("]
    out += textwrap.wrap(", ".join(requests) + ",", WIDTH - 4, initial_indent="    ", subsequent_indent="    ")
    out += [")", "#: The Kafka API names a scenario's ``hold``/``release`` may name.",
            "API_NAMES: frozenset[str] = frozenset({"]
    out += textwrap.wrap(", ".join(f'"{n}"' for n in names) + ",", WIDTH - 4, initial_indent="    ",
                         subsequent_indent="    ")
    out += ["})"]
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """``--check``: 1 if the checked-in module differs from what :func:`generate` returns; else write it."""
    text = generate()
    if argv[1:] == ["--check"]:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    if argv[1:]:
        print(f"usage: {COMMAND} [--check]", file=sys.stderr)
        return 2
    TARGET.write_text(text)
    return 0
