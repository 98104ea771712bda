"""Kafka message schemas as the generator reads them: from kio's entity classes or from Kafka's JSON.

Both sources become the same tree: a :class:`SchemaStruct` (one of Kafka's structs: a request, a
response or a nested ``"fields"`` entry) of :class:`SchemaField` s in Kafka's order, with the field's
snake_case name, its Kafka type, whether it is an array or nullable, its default and its ``about``
text. The generator (:mod:`kraftlog.protocol.codegen.generate`) resolves the core's fields against
this tree, so a field that does not exist in the schema fails generation.

* :func:`kio_struct` reads one of kio's generated entities (``kio.index.load_request_schema`` /
  ``load_response_schema``): types from the annotations and the ``kafka_type`` field metadata,
  defaults from the dataclass fields, ``about`` texts from the attribute docstrings of kio's source.
  kio turns Kafka's ``...Ms`` int32/int64 durations into timedeltas named without ``_ms``; their
  defaults are given back here in ms.
* :func:`json_struct` reads one of Kafka's message JSON files (``clients/src/main/resources/common/
  message/*.json``: ``//`` comment lines, ``validVersions``, per-field ``versions`` and
  ``nullableVersions``) at one version, naming fields as Kafka's generated Java does in snake_case
  (``ThrottleTimeMs`` -> ``throttle_time_ms``).
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import inspect
import json
import re
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path

from ..annotations import field_type

#: ``SchemaField.default`` when the field has none (Kafka's JSON without ``"default"``; a kio field
#: without a dataclass default).
NO_DEFAULT: object = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()

@dataclass(frozen=True, slots=True)
class SchemaField:
    """One field of a Kafka struct.

    ``kafka_type``: Kafka's scalar type (``int8`` .. ``int64``, ``uint16``, ``float64``, ``bool``,
    ``string``, ``bytes``, ``uuid``, ``records``, and kio's ``error_code``, ``timedelta_i32/i64``,
    ``datetime_i64``) or ``struct`` (then ``struct`` is set). ``array``: Kafka's ``[]`` type.
    ``nullable``: the field (the array itself for an array) may be null at this version.
    ``default``: :data:`NO_DEFAULT` or the value (durations in ms)."""

    name: str
    kafka_type: str
    array: bool
    nullable: bool
    default: object
    about: str
    struct: SchemaStruct | None = None


@dataclass(frozen=True, slots=True)
class SchemaStruct:
    """One of Kafka's structs at one version: ``name`` (the kio class or the JSON struct type),
    ``source`` (where it was read: kio module or JSON file and version), ``fields`` by snake_case
    name, in Kafka's order."""

    name: str
    source: str
    fields: dict[str, SchemaField]


# ------------------------------------------------------------------------------------- kio entities
def _attribute_docs(module: types.ModuleType) -> dict[tuple[str, str], str]:
    """(class name, field name) -> the docstring kio writes after each field."""
    tree = ast.parse(inspect.getsource(module))
    docs: dict[tuple[str, str], str] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        for stmt, after in zip(cls.body, cls.body[1:], strict=False):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                docs[(cls.name, stmt.target.id)] = after.value.value.strip()
    return docs


_DOCS: dict[str, dict[tuple[str, str], str]] = {}


def _kio_default(f: dataclasses.Field[object], kafka_type: str) -> object:
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    if f.default is dataclasses.MISSING:
        return NO_DEFAULT
    value: object = f.default
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, bool) or value is None or kafka_type == "struct":
        return value
    if isinstance(value, int):
        return int(value)  # kio's i32(-1), BrokerId(-1), ErrorCode.none
    if isinstance(value, str):
        return str(value)
    return value


def kio_struct(entity: type) -> SchemaStruct:
    """The struct of one of kio's entity classes (a request, a response or a nested entity)."""
    module = sys.modules[entity.__module__]
    docs = _DOCS.get(module.__name__)
    if docs is None:
        docs = _DOCS[module.__name__] = _attribute_docs(module)
    hints = typing.get_type_hints(entity)
    out: dict[str, SchemaField] = {}
    for f in dataclasses.fields(entity):
        ft = field_type(hints[f.name])
        struct = kio_struct(ft.inner) if ft.inner is not None else None
        kafka_type = "struct" if struct is not None else str(f.metadata["kafka_type"])
        out[f.name] = SchemaField(f.name, kafka_type, ft.array, ft.optional, _kio_default(f, kafka_type),
                                  docs.get((entity.__name__, f.name), ""), struct)
    return SchemaStruct(entity.__name__, module.__name__, out)


# ------------------------------------------------------------------------------- Kafka's JSON files
def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _in(versions: str | None, version: int) -> bool:
    """Kafka's version spec: ``"3+"``, ``"0-2"``, ``"1"`` or ``"none"``."""
    if versions is None or versions == "none":
        return False
    if versions.endswith("+"):
        return version >= int(versions[:-1])
    low, _, high = versions.partition("-")
    return int(low) <= version <= int(high or low)


_JSON_DEFAULTS = {"int8": int, "int16": int, "int32": int, "int64": int, "uint16": int, "float64": float}


def _json_fields(name: str, source: str, specs: list[dict[str, object]], version: int) -> SchemaStruct:
    out: dict[str, SchemaField] = {}
    for spec in specs:
        if not _in(str(spec["versions"]), version):
            continue
        kafka_type = str(spec["type"])
        array = kafka_type.startswith("[]")
        element = kafka_type.removeprefix("[]")
        struct = None
        nested = spec.get("fields")
        if isinstance(nested, list):
            struct = _json_fields(element, source, nested, version)
            element = "struct"
        default: object = NO_DEFAULT
        if "default" in spec:
            raw = spec["default"]
            convert = _JSON_DEFAULTS.get(element)
            default = convert(str(raw)) if convert is not None else raw
        nullable_versions = spec.get("nullableVersions")
        field_name = _snake(str(spec["name"]))
        out[field_name] = SchemaField(
            field_name, element, array,
            _in(str(nullable_versions) if nullable_versions is not None else None, version),
            default, str(spec.get("about", "")), struct)
    return SchemaStruct(name, source, out)


def json_struct(path: Path, version: int) -> SchemaStruct:
    """The top-level struct of a Kafka message JSON file at ``version`` (``ValueError`` if the file's
    ``validVersions`` exclude it)."""
    text = "\n".join(line for line in path.read_text().splitlines() if not line.lstrip().startswith("//"))
    doc = json.loads(text)
    if not _in(str(doc["validVersions"]), version):
        raise ValueError(f"{path.name}: version {version} not in validVersions {doc['validVersions']}")
    return _json_fields(str(doc["name"]), f"{path.name} v{version}", list(doc["fields"]), version)
