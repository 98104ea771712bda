"""The wire edge: core messages <-> kio entities <-> Kafka bytes, driven by a table.

A frame's API key and version select kio's entity (``kio.index.load_request_schema`` /
``load_response_schema``, Kafka's message JSON as generated Python), and ONE generic mapper converts
between that entity and the core dataclass of :mod:`kraftlog.protocol.messages` (Kafka's schema and
field names). What is not one-for-one is a row of ``_APIS``: the supported version range, field
renames, how flat core partition lists are grouped by topic, the values of core fields a version lacks,
and the few converters for shapes that really differ (each says why). Supporting another version is a
range in that row, not a function pair (DESIGN.md, "Real cluster"; STYLE.md, "A protocol codec is a
table"). Without a version, a message maps at the version its request class names (``VERSION``; a
response at its request's), which is what the simulator's *wire switch* uses: it calls
:func:`roundtrip` on every message it delivers, so a mapping bug surfaces in simulation. The TCP driver
uses :func:`decode_request_frame` / :func:`encode_response` with the version the client sent (broker
side) and :func:`encode_request` / :func:`decode_response` (client side).

Layers, each usable on its own:

* :func:`to_kio` / :func:`from_kio` -- core message <-> kio entity (kio's frozen dataclasses).
* :func:`encode_request` / :func:`decode_request_frame` (:func:`decode_request`),
  :func:`encode_response` / :func:`decode_response` -- header + body bytes (kio's ``entity_writer`` /
  ``entity_reader``, the header version kio's ``__header_schema__`` names), without the 4-byte size
  prefix; :func:`frame` adds it. :func:`supported_versions` gives an API's range.
  :func:`frame_response` is ``frame(encode_response(...))`` as a list of pieces for a vectored write,
  record batches by reference (the TCP driver's Fetch responses).
* :func:`encode_batches` / :func:`decode_batches` -- v2 record batches (magic 2, CRC-32C), record
  headers included (below).
* a MetadataFetch response's records are metadata records in the compact JSON form of
  :mod:`kraftlog.metadata.codec`, as record values inside one metadata-log batch.

Kafka nests partitions by topic; the core flattens them (each partition names its topic). Encoding
groups partitions by topic in order of first appearance, as Kafka builds these lists, and decoding
flattens topic by topic: a message whose partitions of one topic are contiguous (the normal case)
round-trips to an equal message; one that interleaves topics comes back grouped by topic. Fetch groups
by topic name (``topic``) at v4-v12 and by topic id (``topic_id``) at v13-v15: the table's group rows
carry a version range.
OffsetFetch v8 nests one level more (a list of groups): the core's one group is a one-element
``Groups`` list, and bytes naming any other number of groups are a :class:`WireError`.

Conversions: error codes are ``Errors`` ints in the core and kio ``ErrorCode`` members on the kio side;
durations are int ms in the core and timedeltas in kio; ``None`` for an absent nested struct in the
core (``diverging_epoch``, ``current_leader``) is kio's all-default (-1, -1) struct; the zero UUID on the
wire is ``None`` in kio. A field a version lacks is dropped on the way out and comes back as the
table's ``absent`` value or the core's default (tests/test_wire_versions.py lists each such loss).

Record batches (``records`` fields) cross as :class:`~kraftlog.protocol.records.RecordBatch` objects:
:func:`decode_batches` wraps each batch's bytes without decoding its records (header parsed, CRC-32C
checked: a Produce request's batches stay opaque, DESIGN.md "Real cluster") and :func:`encode_batches`
writes an encoded batch's bytes verbatim. The v2 codec itself, and why it is not kio's ``kio.records``,
is in :mod:`kraftlog.protocol.records`; both names are re-exported here.

kio 0.6.5 has no schema for KIP-966 part 2's GetReplicaLogInfo (API key 93, v0) and ElectLeaders v3:
:mod:`kraftlog.protocol.kio_extra` holds them, in kio's generated style, and :func:`_schema` falls back
to it. Only level ``urm`` serves them: a node below it neither accepts nor advertises them
(``_NOT_ADVERTISED_UNTIL_URM``, :func:`supported_versions`, :func:`supported_api_versions`; DESIGN.md:
advertise only what is implemented).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import json
import operator
import struct
import sys
import types
import typing
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial._implicit_defaults import get_implicit_default
from kio.static.constants import EntityType

from ..metadata.codec import MetadataRecordError, decode_metadata_record, encode_metadata_record
from . import kio_extra
from . import messages as m
from .errors import Errors, WireError
from ..level import DEFAULT as DEFAULT_LEVEL, Level
from .records import (CorruptRecordError, Record, RecordBatch, UnsupportedCompressionError,
                      decode_batches, decode_produce_records, encode_batches)

__all__ = [
    "WireError", "UnsupportedVersionError", "CorruptRecordError", "UnsupportedCompressionError",
    "to_kio", "from_kio",
    "encode_request", "decode_request", "decode_request_frame", "encode_response", "decode_response",
    "supported_versions", "mapped_versions", "supported_api_versions", "default_version",
    "peek_request_header", "frame", "frame_response", "roundtrip", "response_type_for", "RESPONSE_TYPES",
    "encode_batches", "decode_batches",
]


# ------------------------------------------------------------------------------------- errors
class UnsupportedVersionError(WireError):
    """The message needs an API version this module does not map or its content cannot carry (e.g.
    ElectLeaders types 2..4 below v3, KIP-966), or the bytes name an API key/version this module does not
    map (Kafka's UNSUPPORTED_VERSION, 35)."""

    error_code: int = Errors.UNSUPPORTED_VERSION


# ---------------------------------------------------------------------------- small converters
_ONE_MS = datetime.timedelta(milliseconds=1)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_UUID = uuid.UUID(int=0)


def _ms(td: datetime.timedelta) -> int:
    return td // _ONE_MS


def _ec(code: int) -> ErrorCode:
    return ErrorCode(int(code))


def _code(ec: int) -> int:
    return Errors(int(ec))


K = TypeVar("K")
T = TypeVar("T")


def _group(items: Iterable[T], key: Callable[[T], K]) -> dict[K, list[T]]:
    """Group by key in order of first appearance, keeping item order within a group."""
    groups: dict[K, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


# ====================================================================== the generic mapper
# One mapper converts any core dataclass to any kio entity and back, field by field, from a *plan*
# built once per (core class, kio class) pair -- i.e. once per (API, version) -- and cached. The
# rules, in the order a plan applies them to one field:
#
# * a kio field the table's ``_Group`` names holds Kafka's per-topic nesting of a flat core list
#   (a group may hold for some versions only: Fetch nests by topic name before v13, by id after);
# * a kio field a ``_Custom`` converter names is computed by it (shapes that really differ);
# * otherwise the kio field takes the core field of the same name, or the table's rename, or the
#   core's ``<name>_ms`` for a duration/timestamp: error codes become kio ``ErrorCode`` members,
#   int ms become timedeltas (``timedelta_i32/i64``) or aware datetimes (``datetime_i64``, -1 = null),
#   ``tuple[RecordBatch, ...]`` becomes v2 batch bytes (``records``), nested dataclasses recurse; a
#   core ``None`` where the version's field is not nullable becomes kio's default for that field
#   (JoinGroup's ProtocolName before v7: "", as Kafka writes it);
# * a kio field the core lacks (a field this version adds, or one kraftlog never sets) gets the
#   table's ``kio_values`` value, else kio's default, else null if nullable, else () for an array,
#   else Kafka's implicit default (0, "", False).
#
# Decoding walks the core fields the same way; a core field the version lacks gets the table's
# ``absent`` value or the core default. A null the core cannot hold (a non-nullable core str, UUID or
# tuple) becomes "", Kafka's ZERO_UUID or (); a core nested struct that is ``None`` travels as kio's
# all-default struct (Fetch's tagged DivergingEpoch) when the kio field is not nullable.


@dataclass(frozen=True, slots=True)
class _Group:
    """Kafka nests ``owner.<core>`` (a flat core list whose items name their topic in ``key[0]``)
    as ``<kio>`` = one entity per topic (topic named by ``key[1]``) holding the items in ``inner``,
    in order of first appearance. ``scalar``: the inner list holds bare values for that core field
    (ElectLeaders' partition indexes). ``versions``: the API versions the group holds for (None:
    all); two groups of one field with disjoint ranges nest differently by version (Fetch: by topic
    name before v13, by topic id from v13). ``parallel`` (scalar groups only): (core item field, kio
    topic field) pairs for lists that sit beside ``inner`` and match it by index (ElectLeaders v3's
    DesiredLeaders, KIP-966), used where the topic entity has that field; a topic whose items all
    hold the core field's default sends kio's default (()), and a null or empty list decodes as that
    default for every item."""

    owner: type
    core: str
    kio: str
    key: tuple[str, str]
    inner: str
    scalar: str | None = None
    versions: range | None = None
    parallel: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class _Custom:
    """A kio field whose value is computed from the whole core message (``to``) and that fills the
    core fields ``covers`` when decoding (``frm``: entity -> {core field: value}). For shapes that
    really differ; each use says why. ``versions``: the API versions it holds for (None: every
    version whose entity has the field)."""

    owner: type
    kio: str
    covers: tuple[str, ...]
    to: Callable[[Any, type], Any]
    frm: Callable[[Any], dict[str, Any]]
    versions: range | None = None


@dataclass(frozen=True, slots=True)
class _Api:
    """One row of the table: a core request/response pair, the versions decoded and answered, and
    what is not one-for-one. ``renames`` (core field -> kio field) hold for every class of the API;
    ``absent`` gives a core field its value at a version whose schema lacks it; ``kio_values`` gives
    a kio field the core has no field for the value Kafka sends (where kio's default is not it).
    ``error_response_version``: a response whose ``error_code`` is not NONE is written and read at
    this version, whatever the request's (ApiVersions: v0); its body must start with the error code."""

    request: type
    response: type
    versions: range
    renames: dict[str, str] = dataclasses.field(default_factory=dict)
    groups: tuple[_Group, ...] = ()
    custom: tuple[_Custom, ...] = ()
    absent: dict[str, Any] = dataclasses.field(default_factory=dict)
    check: Callable[[Any, int], None] | None = None
    kio_values: dict[str, Any] = dataclasses.field(default_factory=dict)
    error_response_version: int | None = None


def _holds(rule: _Group | _Custom, kio: type) -> bool:
    """A group or custom converter applies to this kio entity's version."""
    return rule.versions is None or kio.__version__ in rule.versions


def _td(ms: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=ms)


def _ms_to_datetime(ms: int) -> datetime.datetime | None:
    return None if ms == -1 else _EPOCH + datetime.timedelta(milliseconds=ms)


def _datetime_to_ms(dt: datetime.datetime | None) -> int:
    return -1 if dt is None else (dt - _EPOCH) // _ONE_MS


_TO_KIO_BY_KAFKA_TYPE: dict[str, Callable[[Any], Any]] = {
    "error_code": _ec, "timedelta_i32": _td, "timedelta_i64": _td,
    "datetime_i64": _ms_to_datetime, "records": encode_batches,
}
_FROM_KIO_BY_KAFKA_TYPE: dict[str, Callable[[Any], Any]] = {
    "error_code": _code, "timedelta_i32": _ms, "timedelta_i64": _ms,
    "datetime_i64": _datetime_to_ms, "records": decode_batches,
}


@dataclass(frozen=True, slots=True)
class _TypeInfo:
    """What a field annotation says: nullable, an array, and the dataclass inside (if any)."""

    optional: bool
    array: bool
    inner: type | None
    base: Any


def _type_info(annotation: Any) -> _TypeInfo:
    optional = False
    tp = annotation
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) != len(typing.get_args(tp))
        tp = args[0]
    array = typing.get_origin(tp) is tuple
    inner = typing.get_args(tp)[0] if array else tp
    return _TypeInfo(optional, array, inner if dataclasses.is_dataclass(inner) else None, inner)


_HINTS: dict[type, dict[str, _TypeInfo]] = {}


def _hints(cls: type) -> dict[str, _TypeInfo]:
    info = _HINTS.get(cls)
    if info is None:
        hints = typing.get_type_hints(cls)
        info = _HINTS[cls] = {f.name: _type_info(hints[f.name]) for f in dataclasses.fields(cls)}
    return info


def _kio_default(f: dataclasses.Field, info: _TypeInfo) -> Any:
    """Kafka's value for a kio field kraftlog does not set (see the rules above)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    if info.optional:
        return None
    if info.array:
        return ()
    if info.inner is not None:
        return info.inner()
    if info.base is bool:
        return False
    if info.base is ErrorCode:
        return ErrorCode.none
    return get_implicit_default(info.base)


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _core_null(info: _TypeInfo) -> Any:
    """The core value for a kio null where the core field is not nullable (None: no such value)."""
    if info.array:
        return ()
    return {uuid.UUID: _ZERO_UUID, str: ""}.get(info.base)


def _kio_name(api: _Api, core_name: str, kio_fields: dict[str, dataclasses.Field]) -> str | None:
    """The kio field a core field maps to: the table's rename, the same name, or ``x`` for ``x_ms``."""
    for name in (api.renames.get(core_name), core_name):
        if name in kio_fields:
            return name
    if core_name.endswith("_ms") and core_name[:-3] in kio_fields:
        return core_name[:-3]
    return None


def _value_to_kio(core_info: _TypeInfo, kf: dataclasses.Field, api: _Api) -> Callable[[Any], Any] | None:
    """Converter for one core value -> kio value (None = identity)."""
    kinfo = _type_info(kf.type)
    if core_info.inner is not None and kinfo.inner is not None:
        plan = _to_plan(api, core_info.inner, kinfo.inner)
        if core_info.array:
            return lambda v: None if v is None else tuple(plan(x) for x in v)
        if core_info.optional and not kinfo.optional:
            default = _kio_default(kf, kinfo)  # e.g. Fetch's tagged DivergingEpoch: (-1, -1)
            return lambda v: default if v is None else plan(v)
        return lambda v: None if v is None else plan(v)
    conv = _TO_KIO_BY_KAFKA_TYPE.get(kf.metadata.get("kafka_type", ""))
    if conv is not None and kinfo.array:
        return lambda v: tuple(conv(x) for x in v)
    if core_info.optional and not kinfo.optional and not kinfo.array:
        default = _kio_default(kf, kinfo)  # a None this version cannot carry: Kafka's default
        if conv is None:
            return lambda v: default if v is None else v
        return lambda v: default if v is None else conv(v)
    return conv


def _value_from_kio(core_info: _TypeInfo, kf: dataclasses.Field, api: _Api) -> Callable[[Any], Any] | None:
    """Converter for one kio value -> core value (None = identity)."""
    kinfo = _type_info(kf.type)
    needs_empty = kinfo.optional and not core_info.optional
    if kinfo.array and not core_info.optional:
        # kio's reader returns None for a null (-1 length) array even where Kafka's schema says the array
        # is not nullable: a core field that cannot hold None gets the empty array instead.
        needs_empty = True
    if core_info.inner is not None and kinfo.inner is not None:
        plan = _from_plan(api, core_info.inner, kinfo.inner)
        if core_info.array:
            empty = () if needs_empty else None
            return lambda v: empty if v is None else tuple(plan(x) for x in v)
        if core_info.optional and not kinfo.optional:
            default = _kio_default(kf, kinfo)
            return lambda v: None if v == default else plan(v)
        return lambda v: None if v is None else plan(v)
    conv = _FROM_KIO_BY_KAFKA_TYPE.get(kf.metadata.get("kafka_type", ""))
    empty = _core_null(core_info) if needs_empty else None
    if kinfo.array:
        if conv is not None:
            return lambda v: empty if v is None else tuple(conv(x) for x in v)
        return (lambda v: empty if v is None else v) if needs_empty else None
    if needs_empty and empty is not None:
        if conv is not None:
            return lambda v: empty if v is None else conv(v)
        return lambda v: empty if v is None else v
    return conv


#: A plan step: (target field, source attribute or None, converter or None). With an attribute the
#: value is ``conv(source.attr)`` (or the attribute itself); without, ``conv(source)``.
_Step = tuple[str, str | None, Callable[[Any], Any] | None]


def _compile(target: type, steps: list[_Step], fixed: dict[str, Any],
             merges: tuple[Callable[[Any], dict[str, Any]], ...] = (), key: str | None = None
             ) -> Callable[..., Any]:
    """Compile a plan into one function ``source -> target(field=..., ...)`` (``(source, key)`` when
    ``key`` names the target field that a caller supplies: the topic of a grouped partition). One
    call per entity and no per-field loop: the wire switch runs it on every simulated message. The
    generated source holds only field names of our and kio's dataclass definitions, never wire data."""
    ns: dict[str, Any] = {"_T": target}
    args = []
    for i, (name, attr, conv) in enumerate(steps):
        if conv is not None:
            ns[f"_f{i}"] = conv
        if attr is None:
            args.append(f"{name}=_f{i}(o)")
        elif conv is None:
            args.append(f"{name}=o.{attr}")
        else:
            args.append(f"{name}=_f{i}(o.{attr})")
    for name, value in fixed.items():
        ns[f"_v_{name}"] = value
        args.append(f"{name}=_v_{name}")
    if key is not None:
        args.append(f"{key}=key")
    for j, merge in enumerate(merges):
        ns[f"_m{j}"] = merge
        args.append(f"**_m{j}(o)")
    params = "o, key" if key is not None else "o"
    exec(f"def _plan({params}):\n    return _T({', '.join(args)})\n", ns)  # noqa: S102
    return ns["_plan"]


_TO_PLANS: dict[tuple[type, type, str | None], Callable[..., Any]] = {}
_FROM_PLANS: dict[tuple[type, type, str | None], Callable[..., Any]] = {}


def _group_to_kio(api: _Api, g: _Group, kf: dataclasses.Field) -> Callable[[Any], Any]:
    topic_cls = _type_info(kf.type).inner
    inner_field = {f.name: f for f in dataclasses.fields(topic_cls)}[g.inner]
    item_cls = _hints(g.owner)[g.core].inner
    key_core, key_kio = g.key
    topic_fixed = {
        f.name: _kio_default(f, _type_info(f.type))
        for f in dataclasses.fields(topic_cls)
        if f.name not in (key_kio, g.inner) and not _has_default(f)
    }
    if g.scalar is not None:
        scalar = g.scalar
        item = operator.attrgetter(scalar)
    else:
        item = _to_plan(api, item_cls, _type_info(inner_field.type).inner, skip=key_core)
    key_of = operator.attrgetter(key_core)
    get = operator.attrgetter(g.core)
    parallel = _parallel_fields(g, topic_cls, item_cls)

    def to_kio(obj: Any) -> Any:
        items = get(obj)
        if items is None:
            return None
        if not parallel:
            return tuple(
                topic_cls(**topic_fixed, **{key_kio: key, g.inner: tuple(item(p) for p in parts)})
                for key, parts in _group(items, key_of).items()
            )
        out = []
        for key, parts in _group(items, key_of).items():
            columns = {}
            for core_name, kio_name, default in parallel:
                values = tuple(getattr(p, core_name) for p in parts)
                if any(v != default for v in values):
                    columns[kio_name] = values
            out.append(topic_cls(**topic_fixed, **columns,
                                 **{key_kio: key, g.inner: tuple(item(p) for p in parts)}))
        return tuple(out)

    return to_kio


def _parallel_fields(g: _Group, topic_cls: type, item_cls: type) -> tuple[tuple[str, str, Any], ...]:
    """(core item field, kio topic field, core default) of the group's ``parallel`` lists that this
    version's topic entity has."""
    if not g.parallel:
        return ()
    assert g.scalar is not None, "parallel lists sit beside a scalar inner list"
    topic_fields = {f.name for f in dataclasses.fields(topic_cls)}
    item_fields = {f.name: f for f in dataclasses.fields(item_cls)}
    return tuple((core_name, kio_name, item_fields[core_name].default)
                 for core_name, kio_name in g.parallel if kio_name in topic_fields)


def _group_from_kio(api: _Api, g: _Group, kf: dataclasses.Field) -> Callable[[Any], Any]:
    topic_cls = _type_info(kf.type).inner
    inner_field = {f.name: f for f in dataclasses.fields(topic_cls)}[g.inner]
    item_info = _hints(g.owner)[g.core]
    item_cls = item_info.inner
    key_core, key_kio = g.key
    key_info = _hints(item_cls)[key_core]
    key_conv = _value_from_kio(key_info, {f.name: f for f in dataclasses.fields(topic_cls)}[key_kio], api)
    key_conv = key_conv or (lambda v: v)
    get = operator.attrgetter(g.kio)
    get_key = operator.attrgetter(key_kio)
    get_inner = operator.attrgetter(g.inner)
    if g.scalar is not None:
        scalar = g.scalar

        def item(p: Any, key: Any) -> Any:
            return item_cls(**{key_core: key, scalar: p})
    else:
        item = _from_plan(api, item_cls, _type_info(inner_field.type).inner, key=key_core)
    parallel = _parallel_fields(g, topic_cls, item_cls)

    def columns_of(t: Any, inner: tuple) -> dict[str, tuple]:
        columns = {}
        for core_name, kio_name, _default in parallel:
            values = getattr(t, kio_name)
            if not values:  # null or empty: every item keeps the core default
                continue
            if len(values) != len(inner):
                raise WireError(f"{topic_cls.__name__}.{kio_name} has {len(values)} entries for "
                                f"{len(inner)} in {g.inner}: they match by index")
            columns[core_name] = values
        return columns

    def from_kio(entity: Any) -> Any:
        topics = get(entity)
        if topics is None:
            return None if item_info.optional else ()
        out = []
        for t in topics:
            key = key_conv(get_key(t))
            inner = get_inner(t)
            columns = columns_of(t, inner) if parallel else None
            if columns:
                out.extend(item_cls(**{key_core: key, scalar: p}, **{c: v[i] for c, v in columns.items()})
                           for i, p in enumerate(inner))
            else:
                out.extend(item(p, key) for p in inner)
        return tuple(out)

    return from_kio


def _to_plan(api: _Api, core: type, kio: type, skip: str | None = None) -> Callable[[Any], Any]:
    """The compiled core -> kio function for one (core class, kio class) pair; ``skip`` leaves out a
    core field (the topic of a grouped partition, carried by its topic entity)."""
    cached = _TO_PLANS.get((core, kio, skip))
    if cached is not None:
        return cached
    core_info = _hints(core)
    kio_fields = {f.name: f for f in dataclasses.fields(kio)}
    by_kio = {}
    for name in core_info:
        if name == skip:
            continue
        kname = _kio_name(api, name, kio_fields)
        if kname is not None:
            by_kio[kname] = name
    groups = {g.kio: g for g in api.groups if g.owner is core and _holds(g, kio)}
    custom = {c.kio: c for c in api.custom if c.owner is core and _holds(c, kio)}
    steps: list[_Step] = []
    fixed: dict[str, Any] = {}
    for kf in dataclasses.fields(kio):
        if kf.name in groups:
            steps.append((kf.name, None, _group_to_kio(api, groups[kf.name], kf)))
        elif kf.name in custom:
            c, kio_type = custom[kf.name], _type_info(kf.type).inner
            steps.append((kf.name, None, lambda obj, c=c, t=kio_type: c.to(obj, t)))
        elif kf.name in by_kio:
            cname = by_kio[kf.name]
            steps.append((kf.name, cname, _value_to_kio(core_info[cname], kf, api)))
        elif kf.name in api.kio_values:
            fixed[kf.name] = api.kio_values[kf.name]
        elif not _has_default(kf):
            fixed[kf.name] = _kio_default(kf, _type_info(kf.type))
    plan = _TO_PLANS[(core, kio, skip)] = _compile(kio, steps, fixed)
    return plan


def _from_plan(api: _Api, core: type, kio: type, key: str | None = None) -> Callable[..., Any]:
    """The compiled kio -> core function for one pair; with ``key`` it takes ``(entity, key)`` and
    ``key`` fills that core field (a grouped partition's topic)."""
    cached = _FROM_PLANS.get((core, kio, key))
    if cached is not None:
        return cached
    core_info = _hints(core)
    kio_fields = {f.name: f for f in dataclasses.fields(kio)}
    groups = {g.core: g for g in api.groups if g.owner is core and g.kio in kio_fields and _holds(g, kio)}
    customs = [c for c in api.custom if c.owner is core and c.kio in kio_fields and _holds(c, kio)]
    covered = {name for c in customs for name in c.covers}
    core_fields = {f.name: f for f in dataclasses.fields(core)}
    steps: list[_Step] = []
    fixed: dict[str, Any] = {}
    for name, info in core_info.items():
        if name == key or name in covered:
            continue
        if name in groups:
            g = groups[name]
            steps.append((name, None, _group_from_kio(api, g, kio_fields[g.kio])))
            continue
        kname = _kio_name(api, name, kio_fields)
        if kname is not None:
            steps.append((name, kname, _value_from_kio(info, kio_fields[kname], api)))
        elif name in api.absent:
            fixed[name] = api.absent[name]
        elif not _has_default(core_fields[name]):
            raise TypeError(f"{core.__name__}.{name} has no field in {kio.__module__}.{kio.__name__} "
                            "and no value in the table's `absent`")
    plan = _FROM_PLANS[(core, kio, key)] = _compile(core, steps, fixed, tuple(c.frm for c in customs), key)
    return plan


# ========================================================================= the table
# Custom converters, each for a shape that really differs between the core and Kafka.

def _replica_state_to(msg: Any, kio_type: type) -> Any:
    # Fetch v15 (KIP-903) moved ReplicaId into a ReplicaState struct with the broker epoch; the core
    # keeps the two flat, as every older version has them.
    return kio_type(replica_id=msg.replica_id, replica_epoch=msg.replica_epoch)


def _replica_state_from(e: Any) -> dict[str, Any]:
    return {"replica_id": e.replica_state.replica_id, "replica_epoch": e.replica_state.replica_epoch}


_NO_LEADER = (-1, -1)


def _current_leader_to(p: Any, kio_type: type) -> Any:
    # The core's CurrentLeader is a (leader id, leader epoch) pair, None for kio's tagged default.
    cl = p.current_leader
    return kio_type() if cl is None else kio_type(leader_id=cl[0], leader_epoch=cl[1])


def _current_leader_from(p: Any) -> dict[str, Any]:
    cl = (p.current_leader.leader_id, p.current_leader.leader_epoch)
    return {"current_leader": None if cl == _NO_LEADER else cl}


def _names_to(field: str) -> Callable[[Any, type], Any]:
    # A list of topic names in the core is a list of one-field topic entities in Kafka.
    def to(msg: Any, kio_type: type) -> Any:
        names = getattr(msg, field)
        if names is None:
            return None
        fixed = {f.name: _kio_default(f, _type_info(f.type)) for f in dataclasses.fields(kio_type)
                 if f.name != "name" and not _has_default(f)}
        return tuple(kio_type(name=n, **fixed) for n in names)

    return to


def _names_from(field: str) -> Callable[[Any], dict[str, Any]]:
    def frm(e: Any) -> dict[str, Any]:
        topics = getattr(e, "topics")
        return {field: None if topics is None else tuple(t.name or "" for t in topics)}

    return frm


def _assignment_to(t: Any, kio_type: type) -> Any:
    # CreateTopics: the core's assignment is positional (index = partition index) unless it names its
    # indexes (assignment_partitions); Kafka's names each.
    indexes = t.assignment_partitions or range(len(t.assignment))
    return tuple(kio_type(partition_index=i, broker_ids=tuple(r)) for i, r in zip(indexes, t.assignment))


def _assignment_from(t: Any) -> dict[str, Any]:
    # Indexes 0..n-1 in any order become the positional form; any others (duplicates, gaps) are kept for
    # the controller to answer INVALID_REPLICA_ASSIGNMENT, as Kafka's does.
    assignment = sorted(t.assignments, key=lambda a: a.partition_index)
    indexes = tuple(a.partition_index for a in assignment)
    return {"assignment": tuple(tuple(a.broker_ids) for a in assignment),
            "assignment_partitions": () if indexes == tuple(range(len(indexes))) else indexes}


def _configs_to(t: Any, kio_type: type) -> Any:
    # CreateTopics: the core's configs are (name, value) pairs.
    return tuple(kio_type(name=k, value=v) for k, v in t.configs)


def _configs_from(t: Any) -> dict[str, Any]:
    return {"configs": tuple((c.name, c.value) for c in t.configs)}


def _check_elect_leaders(msg: Any, version: int) -> None:
    # KIP-966's v3 (kio_extra) carries every election type and DesiredLeaders; older versions cannot.
    if version >= 3:
        return
    if msg.election_type not in (m.ELECTION_PREFERRED, m.ELECTION_UNCLEAN):
        raise UnsupportedVersionError(
            f"ElectLeaders election_type {msg.election_type} needs ElectLeaders v3 (KIP-966); "
            f"v{version} knows only 0 (PREFERRED) and 1 (UNCLEAN)"
        )
    if version == 0 and msg.election_type != m.ELECTION_PREFERRED:
        raise UnsupportedVersionError("ElectLeaders v0 elects preferred leaders only")
    if any(p.desired_leader != -1 for p in msg.partitions):
        raise UnsupportedVersionError(
            f"ElectLeaders DesiredLeaders needs ElectLeaders v3 (KIP-966), not v{version}")


# LeaveGroup v0-v2 names one member at the top level (KIP-345 batched them in v3): the core's
# ``members`` is then a one-element tuple, and the response's per-member errors fold into the top-level
# error code as Kafka's LeaveGroupResponse does for those versions (the top-level error if set, else
# the first member error).
def _one_member_to(msg: m.LeaveGroupRequest, _kio_type: type) -> str:
    if len(msg.members) != 1:
        raise UnsupportedVersionError(
            f"LeaveGroup before v3 names exactly one member, not {len(msg.members)}")
    return msg.members[0].member_id


def _one_member_from(e: Any) -> dict[str, Any]:
    return {"members": (m.MemberIdentity(e.member_id),)}


def _folded_leave_error_to(msg: m.LeaveGroupResponse, _kio_type: type) -> ErrorCode:
    if msg.error_code == Errors.NONE:
        for member in msg.members:
            if member.error_code != Errors.NONE:
                return _ec(member.error_code)
    return _ec(msg.error_code)


# DeleteTopics v6 (KIP-516) lists {Name, TopicId} structs, each naming a topic by name or (Name null) by
# id; the core keeps the two kinds apart (``topic_names``, ``topic_ids``), as Kafka's
# ControllerApis.deleteTopics splits them. Before v6 the request has names only (generic mapping).
def _delete_topics_to(msg: m.DeleteTopicsRequest, kio_type: type) -> tuple:
    by_name = tuple(kio_type(name=n, topic_id=None) for n in msg.topic_names)
    return by_name + tuple(kio_type(name=None, topic_id=t) for t in msg.topic_ids)


def _delete_topics_from(e: Any) -> dict[str, Any]:
    names = tuple(t.name for t in e.topics if t.name is not None)
    ids = tuple(t.topic_id if t.topic_id is not None else _ZERO_UUID for t in e.topics if t.name is None)
    return {"topic_names": names, "topic_ids": ids}


def _by_topic(owner: type, core: str, kio: str, inner: str, key: tuple[str, str] = ("topic", "name"),
              scalar: str | None = None) -> _Group:
    return _Group(owner, core, kio, key, inner, scalar)


_BY_ID = ("topic_id", "topic_id")
_BY_NAME = ("topic", "topic")
#: Fetch names its topics before v13 and identifies them by topic id from v13 (KIP-516).
_FETCH_BY_NAME = range(4, 13)
_FETCH_BY_ID = range(13, 16)

#: The table: one row per API. ``versions``: what decode_request accepts and encode_response answers.
_APIS: tuple[_Api, ...] = (
    # Fetch v4+ (v4: isolation level and LSO; Kafka 4 dropped v0-v3). Partitions nest by topic name
    # before v13 (the core's ``topic``; ``topic_id`` decodes as the zero UUID) and by topic id from
    # v13 (``topic`` decodes as ""). Fetch sessions (v7+, KIP-227) are not kept: a request's
    # SessionId/SessionEpoch are ignored and go out as 0/-1 (a full fetch, no session); a response
    # carries the core's session_id, 0 (Kafka's INVALID_SESSION_ID: session declined), which makes
    # a client send full fetches. AbortedTransactions is an empty list, never null (kraftlog has no
    # transactions to abort; librdkafka and kafka-python read both); PreferredReadReplica (v11+) is
    # kio's default -1 (read from the leader).
    _Api(m.FetchRequest, m.FetchResponse, range(4, 16),
         renames={"partition": "partition_index"},
         groups=(
             # FetchPartition keeps Kafka's name "partition"; the rename is for the response's.
             _Group(m.FetchRequest, "partitions", "topics", _BY_NAME, "partitions",
                    versions=_FETCH_BY_NAME),
             _Group(m.FetchRequest, "partitions", "topics", _BY_ID, "partitions",
                    versions=_FETCH_BY_ID),
             _Group(m.FetchResponse, "partitions", "responses", _BY_NAME, "partitions",
                    versions=_FETCH_BY_NAME),
             _Group(m.FetchResponse, "partitions", "responses", _BY_ID, "partitions",
                    versions=_FETCH_BY_ID),
         ),
         custom=(
             _Custom(m.FetchRequest, "replica_state", ("replica_id", "replica_epoch"),
                     _replica_state_to, _replica_state_from),
             _Custom(m.FetchPartitionResponse, "current_leader", ("current_leader",),
                     _current_leader_to, _current_leader_from),
         ),
         # ReplicaState's epoch is v15+, CurrentLeaderEpoch v9+, the top-level ErrorCode v7+.
         absent={"replica_epoch": -1, "topic_id": _ZERO_UUID, "current_leader_epoch": -1,
                 "error_code": Errors.NONE},
         kio_values={"aborted_transactions": ()}),
    # Inter-broker only (kraftlog to kraftlog): v3 (KIP-903's NewIsrWithEpochs) alone.
    _Api(m.AlterPartitionRequest, m.AlterPartitionResponse, range(3, 4),
         renames={"partition": "partition_index"},
         groups=(_Group(m.AlterPartitionRequest, "partitions", "topics", _BY_ID, "partitions"),
                 _Group(m.AlterPartitionResponse, "partitions", "topics", _BY_ID, "partitions"))),
    _Api(m.BrokerRegistrationRequest, m.BrokerRegistrationResponse, range(4, 5)),
    _Api(m.BrokerHeartbeatRequest, m.BrokerHeartbeatResponse, range(1, 2)),
    # A Produce partition's records are split leniently: bytes that do not frame as batches reach the
    # broker as MalformedRecords, which it answers per partition (CORRUPT_MESSAGE, INVALID_RECORD), as
    # Kafka parses them only when validating (ProduceRequest.validateRecords).
    _Api(m.ProduceRequest, m.ProduceResponse, range(3, 10),
         renames={"partition": "index"},
         groups=(_by_topic(m.ProduceRequest, "partitions", "topic_data", "partition_data"),
                 _by_topic(m.ProduceResponse, "partitions", "responses", "partition_responses")),
         custom=(_Custom(m.ProducePartition, "records", ("records",),
                         lambda p, _: encode_batches(p.records),
                         lambda e: {"records": decode_produce_records(e.records)}),)),
    _Api(m.ListOffsetsRequest, m.ListOffsetsResponse, range(1, 8),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.ListOffsetsRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.ListOffsetsResponse, "partitions", "topics", "partitions"))),
    _Api(m.OffsetForLeaderEpochRequest, m.OffsetForLeaderEpochResponse, range(2, 5),
         groups=(_by_topic(m.OffsetForLeaderEpochRequest, "partitions", "topics", "partitions",
                           key=("topic", "topic")),
                 _by_topic(m.OffsetForLeaderEpochResponse, "partitions", "topics", "partitions",
                           key=("topic", "topic"))),
         absent={"replica_id": -2}),  # before v3 only consumers sent it: Kafka's CONSUMER_REPLICA_ID
    # Topic ids are v10+ (older versions answer with names alone: the core's ZERO_UUID).
    _Api(m.MetadataRequest, m.MetadataResponse, range(1, 13),
         absent={"topic_id": _ZERO_UUID, "leader_epoch": -1},  # leader epochs are v7+
         custom=(_Custom(m.MetadataRequest, "topics", ("topics",), _names_to("topics"),
                         _names_from("topics")),)),
    _Api(m.CreateTopicsRequest, m.CreateTopicsResponse, range(2, 8),
         custom=(_Custom(m.CreatableTopic, "assignments", ("assignment", "assignment_partitions"),
                         _assignment_to, _assignment_from),
                 _Custom(m.CreatableTopic, "configs", ("configs",), _configs_to, _configs_from))),
    _Api(m.IncrementalAlterConfigsRequest, m.IncrementalAlterConfigsResponse, range(0, 2)),
    # v3 is KIP-966's (kio_extra): election types 2..4 and DesiredLeaders beside Partitions, matched by
    # index. Mapped, not yet served or advertised (_NOT_ADVERTISED_UNTIL_URM).
    _Api(m.ElectLeadersRequest, m.ElectLeadersResponse, range(0, 4),
         renames={"partition": "partition_id"},
         groups=(_Group(m.ElectLeadersRequest, "partitions", "topic_partitions", _BY_NAME, "partitions",
                        scalar="partition", parallel=(("desired_leader", "desired_leaders"),)),
                 _by_topic(m.ElectLeadersResponse, "results", "replica_election_results",
                           "partition_result", key=("topic", "topic"))),
         # v0 elects preferred leaders and has no top-level error code.
         absent={"election_type": m.ELECTION_PREFERRED, "error_code": Errors.NONE},
         check=_check_elect_leaders),
    _Api(m.DescribeTopicPartitionsRequest, m.DescribeTopicPartitionsResponse, range(0, 1),
         custom=(_Custom(m.DescribeTopicPartitionsRequest, "topics", ("topics",), _names_to("topics"),
                         _names_from("topics")),)),
    _Api(m.FindCoordinatorRequest, m.FindCoordinatorResponse, range(0, 5),
         custom=(_Custom(m.FindCoordinatorRequest, "key", ("coordinator_keys",),
                         lambda msg, t: _one_key(msg, t), lambda e: {"coordinator_keys": (e.key,)}),),
         absent={"key_type": m.COORDINATOR_GROUP, "key": ""}),  # v0: groups only
    _Api(m.OffsetCommitRequest, m.OffsetCommitResponse, range(2, 9),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.OffsetCommitRequest, "partitions", "topics", "partitions"),
                 _by_topic(m.OffsetCommitResponse, "partitions", "topics", "partitions"))),
    # v8 is mapped by hand (its Groups list, below); v1-v7 carry the one group at the top level.
    _Api(m.OffsetFetchRequest, m.OffsetFetchResponse, range(1, 9),
         renames={"partition": "partition_index"},
         groups=(_by_topic(m.OffsetFetchResponse, "partitions", "topics", "partitions"),),
         custom=(_Custom(m.OffsetFetchRequest, "topics", ("partitions",),
                         lambda msg, t: _pairs_to(msg, t), lambda e: _pairs_from(e)),),
         # Before v8 a response does not name its group; the top-level error code is v2+.
         absent={"group_id": "", "error_code": Errors.NONE}),
    _Api(m.InitProducerIdRequest, m.InitProducerIdResponse, range(0, 5)),
    # The classic group protocol. librdkafka (2.0.2 and 2.16) sends JoinGroup v5, SyncGroup v3,
    # Heartbeat v3, LeaveGroup v1; kafka-python 3.0.12 JoinGroup v7, SyncGroup v5, Heartbeat v4,
    # LeaveGroup v5. JoinGroup starts at v0: librdkafka with api.version.request=false (its 0.9.0
    # fallback table) and kafka-python with a pinned api_version send v0/v1.
    _Api(m.JoinGroupRequest, m.JoinGroupResponse, range(0, 10)),
    _Api(m.SyncGroupRequest, m.SyncGroupResponse, range(0, 6)),
    _Api(m.HeartbeatRequest, m.HeartbeatResponse, range(0, 5)),
    _Api(m.LeaveGroupRequest, m.LeaveGroupResponse, range(0, 6),
         custom=(_Custom(m.LeaveGroupRequest, "member_id", ("members",), _one_member_to,
                         _one_member_from),
                 _Custom(m.LeaveGroupResponse, "error_code", ("error_code",),
                         _folded_leave_error_to, lambda e: {"error_code": _code(e.error_code)},
                         versions=range(0, 3)))),
    # librdkafka asks at v3 (v0 if that fails); kafka-python at v4 first, then at the highest version
    # the v0-format UNSUPPORTED_VERSION answer (framing.api_versions_error_reply) lists. Every version's
    # response has response header v0 (KIP-511: a client must read it before it knows the version),
    # which kio's __header_schema__ gives. An error answer has a v0 body at every version: Kafka
    # answers UNSUPPORTED_VERSION so, kafka-python reads any error answer as v0 and librdkafka and
    # the Java client fall back to v0 when the requested version does not parse.
    _Api(m.ApiVersionsRequest, m.ApiVersionsResponse, range(0, 4), error_response_version=0),
    # librdkafka 2.0.2 sends v1 (2.16: v4), kafka-python v6; Kafka 4 and kio have no v0.
    _Api(m.DeleteTopicsRequest, m.DeleteTopicsResponse, range(1, 7),
         custom=(_Custom(m.DeleteTopicsRequest, "topics", ("topic_names", "topic_ids"), _delete_topics_to,
                         _delete_topics_from),)),
    # librdkafka sends v1, kafka-python v4; Kafka 4 and kio have no v0.
    _Api(m.DescribeConfigsRequest, m.DescribeConfigsResponse, range(1, 5)),
    # KIP-966 part 2, controller -> broker (kio_extra, from trunk's JSON): partitions by topic id; the
    # response's per-partition log info likewise. Mapped, not yet served or advertised.
    _Api(m.GetReplicaLogInfoRequest, m.GetReplicaLogInfoResponse, range(0, 1),
         groups=(_Group(m.GetReplicaLogInfoRequest, "partitions", "topic_partitions", _BY_ID, "partitions",
                        scalar="partition"),
                 _Group(m.GetReplicaLogInfoResponse, "partitions", "topic_partition_log_info_list", _BY_ID,
                        "partition_log_info"))),
)

#: Versions only level ``urm`` serves (KIP-966 part 2: ElectLeaders v3 and GetReplicaLogInfo v0), held
#: back from what a node below ``urm`` accepts and advertises (:func:`supported_versions`,
#: :func:`supported_api_versions`; DESIGN.md: advertise only what is implemented). Each is the top of its
#: row's range, so what remains served is a range.
_NOT_ADVERTISED_UNTIL_URM: dict[type, range] = {
    m.ElectLeadersRequest: range(3, 4),
    m.GetReplicaLogInfoRequest: range(0, 1),
}


# ------------------------------------------------ whole-message shapes that really differ
# The metadata log fetch: the core's MetadataFetchRequest/Response is a KRaft observer's Fetch of
# ``__cluster_metadata`` partition 0 (Fetch v15, the only version a broker sends the controller):
# one fixed topic and partition, and the records are metadata records as JSON values of one v2
# batch -- nothing here is a field-for-field copy.
_METADATA_MIN_BYTES = 1
_METADATA_PARTITION_MAX_BYTES = 1048576
#: Timestamp and partition leader epoch of the batch that carries metadata records: the core's
#: metadata log has neither, so the wire form fixes them.
_METADATA_BATCH_TIMESTAMP = 0
_METADATA_BATCH_LEADER_EPOCH = 0


def _metadata_fetch_request_to_kio(msg: m.MetadataFetchRequest, version: int) -> Any:
    f_req = _schema(m.FetchRequest.API_KEY, version, request=True)
    mod = sys.modules[f_req.__module__]
    return f_req(
        cluster_id=msg.cluster_id,
        replica_state=mod.ReplicaState(replica_id=msg.replica_id, replica_epoch=msg.replica_epoch),
        max_wait=_td(msg.max_wait_ms),
        min_bytes=_METADATA_MIN_BYTES,
        topics=(
            mod.FetchTopic(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    mod.FetchPartition(
                        partition=0, current_leader_epoch=-1, fetch_offset=msg.fetch_offset,
                        last_fetched_epoch=-1, log_start_offset=-1,
                        partition_max_bytes=_METADATA_PARTITION_MAX_BYTES,
                    ),
                ),
            ),
        ),
        forgotten_topics_data=(),
        rack_id="",
    )


def _metadata_fetch_request_from_kio(e: Any) -> m.MetadataFetchRequest:
    parts = [p for t in e.topics if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if len(parts) != 1 or parts[0].partition != 0:
        raise WireError("a metadata fetch names exactly __cluster_metadata partition 0")
    return m.MetadataFetchRequest(
        replica_id=e.replica_state.replica_id,
        replica_epoch=e.replica_state.replica_epoch,
        fetch_offset=parts[0].fetch_offset,
        max_wait_ms=_ms(e.max_wait),
        cluster_id=e.cluster_id,
    )


def _metadata_fetch_response_to_kio(msg: m.MetadataFetchResponse, version: int) -> Any:
    f_resp = _schema(m.FetchRequest.API_KEY, version, request=False)
    mod = sys.modules[f_resp.__module__]
    if msg.error_code == Errors.INCONSISTENT_CLUSTER_ID:
        # KafkaRaftClient.handleFetchRequest: a request-level error, no partition data (read back with
        # high watermark and base offset -1).
        return f_resp(throttle_time=_td(0), error_code=_ec(msg.error_code), session_id=0, responses=())
    if msg.records:
        batch = RecordBatch(
            base_offset=msg.base_offset,
            partition_leader_epoch=_METADATA_BATCH_LEADER_EPOCH,
            records=tuple(
                Record(_METADATA_BATCH_TIMESTAMP, None, encode_metadata_record(r))
                for r in msg.records
            ),
        )
        records = encode_batches((batch,))
        # The metadata log has no transactions: its LSO is its HWM.
        last_stable_offset = msg.high_watermark
    else:
        records = b""
        # No batch carries the base offset; the (otherwise unused) LSO does.
        last_stable_offset = msg.base_offset
    return f_resp(
        throttle_time=_td(0),
        error_code=ErrorCode.none,
        session_id=0,
        responses=(
            mod.FetchableTopicResponse(
                topic_id=m.METADATA_TOPIC_ID,
                partitions=(
                    mod.PartitionData(
                        partition_index=0,
                        error_code=_ec(msg.error_code),
                        high_watermark=msg.high_watermark,
                        last_stable_offset=last_stable_offset,
                        log_start_offset=0,
                        aborted_transactions=None,
                        records=records,
                    ),
                ),
            ),
        ),
    )


def _metadata_fetch_response_from_kio(e: Any) -> m.MetadataFetchResponse:
    parts = [p for t in e.responses if t.topic_id == m.METADATA_TOPIC_ID for p in t.partitions]
    if not parts:
        return m.MetadataFetchResponse(
            error_code=_code(e.error_code), high_watermark=-1, base_offset=-1
        )
    if len(parts) != 1:
        raise WireError("a metadata fetch response holds exactly __cluster_metadata partition 0")
    p = parts[0]
    error_code = e.error_code if e.error_code != ErrorCode.none else p.error_code
    batches = decode_batches(p.records)
    try:
        records = tuple(
            decode_metadata_record(r.value) for b in batches for r in b.records  # type: ignore[arg-type]
        )
    except MetadataRecordError as exc:
        raise WireError(str(exc)) from exc
    base_offset = batches[0].base_offset if batches else p.last_stable_offset
    return m.MetadataFetchResponse(
        error_code=_code(error_code),
        high_watermark=p.high_watermark,
        base_offset=base_offset,
        records=records,
    )


def _is_metadata_fetch(topics: Any) -> bool:
    return len(topics) == 1 and getattr(topics[0], "topic_id", None) == m.METADATA_TOPIC_ID


# OffsetFetch v8 is the multi-group form (KIP-709): ``Groups[]`` in the request and the response.
# The core message carries one group, which maps to a one-element ``Groups``; decoding bytes with
# any other number of groups raises WireError. The response's group entity maps generically (the
# core response minus throttle time); the request's partitions are (topic, partition) pairs, so
# they are grouped here. The core request's ``partitions`` None ("every committed partition") is
# Kafka's null ``Topics``; an empty tuple is an empty (non-null) list. A request topic with no
# partition indexes has no flat core form and decodes to nothing.
def _one_group(groups: tuple[T, ...], what: str) -> T:
    if len(groups) != 1:
        raise WireError(f"{what} with {len(groups)} groups: kraftlog maps exactly one group")
    return groups[0]


def _pairs_to(msg: m.OffsetFetchRequest, topic_type: type) -> Any:
    # The core request's partitions are (topic, partition) pairs, not dataclasses (v1-v8).
    if msg.partitions is None:
        return None
    return tuple(
        topic_type(name=topic, partition_indexes=tuple(p for _, p in parts))
        for topic, parts in _group(msg.partitions, lambda tp: tp[0]).items()
    )


def _pairs_from(e: Any) -> dict[str, Any]:
    topics = e.topics
    partitions = None if topics is None else tuple((t.name, p) for t in topics for p in t.partition_indexes)
    return {"partitions": partitions}


def _offset_fetch_request_to_kio(msg: m.OffsetFetchRequest, version: int) -> Any:
    of_req = _schema(m.OffsetFetchRequest.API_KEY, version, request=True)
    mod = sys.modules[of_req.__module__]
    topics = _pairs_to(msg, mod.OffsetFetchRequestTopics)
    return of_req(
        groups=(mod.OffsetFetchRequestGroup(group_id=msg.group_id, topics=topics),),
        require_stable=msg.require_stable,
    )


def _offset_fetch_request_from_kio(e: Any) -> m.OffsetFetchRequest:
    g = _one_group(e.groups, "OffsetFetch request")
    return m.OffsetFetchRequest(
        group_id=g.group_id, require_stable=e.require_stable, **_pairs_from(g)
    )


def _offset_fetch_response_to_kio(msg: m.OffsetFetchResponse, version: int) -> Any:
    of_resp = _schema(m.OffsetFetchRequest.API_KEY, version, request=False)
    group_type = sys.modules[of_resp.__module__].OffsetFetchResponseGroup
    return of_resp(throttle_time=_td(msg.throttle_time_ms),
                   groups=(_to_plan(_API[m.OffsetFetchRequest], type(msg), group_type)(msg),))


def _offset_fetch_response_from_kio(e: Any) -> m.OffsetFetchResponse:
    g = _one_group(e.groups, "OffsetFetch response")
    out = _from_plan(_API[m.OffsetFetchRequest], m.OffsetFetchResponse, type(g))(g)
    out.throttle_time_ms = _ms(e.throttle_time)
    return out


#: Core type -> (to kio at a version, from kio) for the messages mapped by hand above.
# FindCoordinator before v4 (KIP-699) asks for one key and answers with one coordinator at the top
# level of the response, without its key: the core's one Coordinator maps generically onto that
# top level, and the key comes back "" (the asker knows which key it sent).
def _one_key(msg: m.FindCoordinatorRequest, _kio_type: type) -> str:
    if len(msg.coordinator_keys) != 1:
        raise UnsupportedVersionError("FindCoordinator before v4 asks for exactly one key")
    return msg.coordinator_keys[0]


def _single_coordinator_to_kio(msg: m.FindCoordinatorResponse, version: int) -> Any:
    kio_type = _schema(m.FindCoordinatorRequest.API_KEY, version, request=False)
    if len(msg.coordinators) != 1:
        raise UnsupportedVersionError("FindCoordinator before v4 answers exactly one coordinator")
    entity = _to_plan(_API[m.FindCoordinatorRequest], m.Coordinator, kio_type)(msg.coordinators[0])
    if version >= 1:  # ThrottleTimeMs is v1+
        entity = dataclasses.replace(entity, throttle_time=_td(msg.throttle_time_ms))
    return entity


def _single_coordinator_from_kio(e: Any) -> m.FindCoordinatorResponse:
    coordinator = _from_plan(_API[m.FindCoordinatorRequest], m.Coordinator, type(e))(e)
    throttle = getattr(e, "throttle_time", None)
    return m.FindCoordinatorResponse((coordinator,), 0 if throttle is None else _ms(throttle))


#: Core type -> (the versions mapped by hand, to kio at a version, from kio); other versions of the
#: type map through the table. The metadata fetch is Fetch v15 only.
_WHOLE: dict[type, tuple[range, Callable[[Any, int], Any], Callable[[Any], Any]]] = {
    m.MetadataFetchRequest: (range(15, 16), _metadata_fetch_request_to_kio,
                             _metadata_fetch_request_from_kio),
    m.MetadataFetchResponse: (range(15, 16), _metadata_fetch_response_to_kio,
                              _metadata_fetch_response_from_kio),
    m.OffsetFetchRequest: (range(8, 9), _offset_fetch_request_to_kio, _offset_fetch_request_from_kio),
    m.OffsetFetchResponse: (range(8, 9), _offset_fetch_response_to_kio,
                            _offset_fetch_response_from_kio),
    m.FindCoordinatorResponse: (range(0, 4), _single_coordinator_to_kio, _single_coordinator_from_kio),
}
_WHOLE_VERSIONS: dict[type, range] = {
    m.MetadataFetchRequest: range(15, 16), m.MetadataFetchResponse: range(15, 16),
}


# ============================================================================ registry
#: Core request or response type -> its table row (MetadataFetch* share Fetch's).
_API: dict[type, _Api] = {}
for _row in _APIS:
    _API[_row.request] = _API[_row.response] = _row
_API[m.MetadataFetchRequest] = _API[m.MetadataFetchResponse] = _API[m.FetchRequest]
_BY_KEY: dict[int, _Api] = {row.request.API_KEY: row for row in _APIS}
_ALL_REQUEST_TYPES = m.REQUEST_TYPES
assert {row.request for row in _APIS} | {m.MetadataFetchRequest} == set(_ALL_REQUEST_TYPES)
assert all(held.stop == _API[t].versions.stop and held.start >= _API[t].versions.start
           for t, held in _NOT_ADVERTISED_UNTIL_URM.items())

#: Core request type -> core response type.
RESPONSE_TYPES: dict[type, type] = {
    req: getattr(m, req.__name__.removesuffix("Request") + "Response") for req in _ALL_REQUEST_TYPES
}
_REQUEST_FOR_RESPONSE: dict[type, type] = {resp: req for req, resp in RESPONSE_TYPES.items()}
_REQUEST_OF: dict[type, type] = {t: t for t in RESPONSE_TYPES} | _REQUEST_FOR_RESPONSE


def response_type_for(request_type: type) -> type:
    """The core response class answering ``request_type`` (e.g. FetchRequest -> FetchResponse,
    MetadataFetchRequest -> MetadataFetchResponse). Raises KeyError for a non-request type."""
    return RESPONSE_TYPES[request_type]


def mapped_versions(request_type: type) -> range:
    """The API versions this module maps for ``request_type`` (a core request class): what
    :func:`decode_request` accepts and :func:`encode_request` / :func:`encode_response` write -- its
    table row's range, including versions no node serves yet (``_NOT_ADVERTISED_UNTIL_URM``)."""
    return _WHOLE_VERSIONS.get(request_type) or _row_of(request_type).versions


def supported_versions(request_type: type, level: Level = DEFAULT_LEVEL) -> range:
    """The API versions a kraftlog node at ``level`` serves for ``request_type`` (a core request class):
    the mapped range (:func:`mapped_versions`); below level ``urm`` without the versions only ``urm``
    serves (ElectLeaders 0-2, not 3; no GetReplicaLogInfo)."""
    versions = mapped_versions(request_type)
    held = _NOT_ADVERTISED_UNTIL_URM.get(request_type)
    return versions if held is None or level >= Level.URM else range(versions.start, held.start)


def supported_api_versions(level: Level = DEFAULT_LEVEL) -> dict[int, tuple[int, int]]:
    """API key -> (min version, max version) of every API a node at ``level`` serves, by key: what the
    framing layer checks before decoding and what an ApiVersions answer advertises. Below level ``urm``
    the versions only ``urm`` serves (``_NOT_ADVERTISED_UNTIL_URM``) are left out, and an API with none
    left is absent."""
    out = {}
    for key, row in sorted(_BY_KEY.items()):
        versions = supported_versions(row.request, level)
        if versions:
            out[key] = (versions.start, versions.stop - 1)
    return out


_SCHEMAS: dict[tuple[int, int, bool], type] = {}


def _schema(api_key: int, version: int, request: bool) -> type:
    """kio's request or response payload entity for (API key, version), else kio_extra's (the KIP-966
    schemas kio 0.6.5 lacks), cached."""
    key = (api_key, version, request)
    cls = _SCHEMAS.get(key)
    if cls is None:
        load = load_request_schema if request else load_response_schema
        extra = kio_extra.load_request_schema if request else kio_extra.load_response_schema
        try:
            cls = load(api_key, version)
        except (KioIndexError, ImportError) as exc:
            try:
                cls = extra(api_key, version)
            except KioIndexError:
                raise UnsupportedVersionError(f"API key {api_key} version {version}: {exc}") from None
        _SCHEMAS[key] = cls
    return cls


def _row_of(core_type: type) -> _Api:
    try:
        return _API[core_type]
    except KeyError:
        raise TypeError(f"{core_type.__name__} has no wire mapping in kraftlog.protocol.wire") from None


def _version_for(core_type: type, version: int | None) -> int:
    request_type = _REQUEST_OF[core_type]
    if version is None:
        return request_type.VERSION
    if version not in mapped_versions(request_type):
        raise UnsupportedVersionError(
            f"{request_type.API} v{version}: kraftlog maps versions {_span(mapped_versions(request_type))}"
        )
    return version


def _span(r: range) -> str:
    return f"{r.start}-{r.stop - 1}" if len(r) > 1 else str(r.start)


# ----------------------------------------------------------------------- building blocks
def to_kio(msg: object, version: int | None = None) -> Any:
    """The kio entity (request or response payload) for a core message at ``version`` (default: the
    request class's ``VERSION``; a response uses its request's). Raises TypeError for an unmapped
    type and :class:`UnsupportedVersionError` for a version outside the API's range or content the
    version cannot carry (ElectLeaders types 2..4 and DesiredLeaders below KIP-966's v3)."""
    core_type = type(msg)
    row = _row_of(core_type)
    request_type = _REQUEST_OF[core_type]
    version = _version_for(core_type, version)
    if row.check is not None and core_type is row.request:
        row.check(msg, version)
    if (row.error_response_version is not None and core_type is row.response
            and msg.error_code != Errors.NONE):
        version = row.error_response_version
    whole = _WHOLE.get(core_type)
    if whole is not None and version in whole[0]:
        return whole[1](msg, version)
    kio_type = _schema(request_type.API_KEY, version, request=core_type is request_type)
    return _to_plan(row, core_type, kio_type)(msg)


def from_kio(entity: Any, as_type: type | None = None) -> object:
    """The core message for a kio entity (any mapped version). ``as_type`` forces the core class;
    without it a Fetch request/response whose only topic is ``METADATA_TOPIC_ID`` becomes a
    MetadataFetchRequest / MetadataFetchResponse and every other entity maps to its one core class.
    Raises TypeError for an unmapped entity and :class:`WireError` for content the core cannot
    represent."""
    api_key = int(getattr(entity, "__api_key__", -1))
    row = _BY_KEY.get(api_key)
    if row is None or not dataclasses.is_dataclass(entity):
        raise TypeError(f"{type(entity).__module__}.{type(entity).__name__} has no core mapping")
    is_request = entity.__type__ is EntityType.request
    if as_type is None:
        as_type = row.request if is_request else row.response
        if api_key == m.FetchRequest.API_KEY:
            topics = entity.topics if is_request else entity.responses
            if _is_metadata_fetch(topics):
                as_type = m.MetadataFetchRequest if is_request else m.MetadataFetchResponse
    elif _API.get(as_type) is not row or (as_type in RESPONSE_TYPES) != is_request:
        raise TypeError(f"{type(entity).__name__} is not the kio entity of {as_type.__name__}")
    only = _WHOLE_VERSIONS.get(as_type)
    if only is not None and entity.__version__ not in only:
        raise UnsupportedVersionError(f"{as_type.__name__} v{entity.__version__}: kraftlog maps "
                                      f"version {_span(only)}")
    whole = _WHOLE.get(as_type)
    if whole is not None and entity.__version__ in whole[0]:
        return whole[2](entity)
    return _from_plan(row, as_type, type(entity))(entity)


# --------------------------------------------------------------------------------- bytes
_HEADER_PEEK = struct.Struct(">hhi")


def frame(payload: bytes) -> bytes:
    """Prefix ``payload`` (a request or response without size) with Kafka's 4-byte big-endian size."""
    return struct.pack(">i", len(payload)) + payload


def _write(entity: Any, out: io.BytesIO) -> None:
    entity_writer(type(entity))(out, entity)


_READERS: dict[type, Any] = {}


def _read(entity_type: type, data: bytes | memoryview, offset: int) -> tuple[Any, int]:
    reader = _READERS.get(entity_type)
    if reader is None:
        reader = _READERS[entity_type] = entity_reader(entity_type)
    try:
        entity, size = reader(data, offset)
    except WireError:
        raise
    except Exception as exc:  # kio's native reader raises its own errors (underflow, bad values)
        raise WireError(f"cannot read {entity_type.__name__}: {exc}") from exc
    return entity, offset + size


def default_version(request: object) -> int:
    """The version a request goes out at when none is given: its class's ``VERSION``, or the lowest version
    that can carry it (ElectLeaders v3 for KIP-966's election types 2-4). Its response is read at the same
    version."""
    if type(request) is m.ElectLeadersRequest and request.election_type > m.ELECTION_UNCLEAN:
        return 3
    return type(request).VERSION


def encode_request(msg: object, correlation_id: int, client_id: str = "kraftlog",
                   version: int | None = None) -> bytes:
    """A Kafka request without the size prefix: the request header of that version (kio's
    ``__header_schema__``: v1, or v2 for flexible versions: API key, version, ``correlation_id``,
    ``client_id``) then the payload of :func:`to_kio` at ``version`` (default: the class's
    ``VERSION``, or the lowest version that can carry ``msg``: ElectLeaders v3 for KIP-966's election
    types 2-4, so that a broker forwards them to the controller). Raises as :func:`to_kio`."""
    if version is None:
        version = default_version(msg)
    entity = to_kio(msg, version)
    header = entity.__header_schema__(
        request_api_key=entity.__api_key__,
        request_api_version=entity.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
    )
    out = io.BytesIO()
    _write(header, out)
    _write(entity, out)
    return out.getvalue()


def peek_request_header(data: bytes | memoryview) -> tuple[int, int, int]:
    """(API key, API version, correlation id) of a request without the size prefix -- the fields
    every request header version starts with, for routing before decoding."""
    if len(data) < _HEADER_PEEK.size:
        raise WireError("request shorter than a request header")
    return _HEADER_PEEK.unpack_from(data, 0)


def decode_request_frame(data: bytes | memoryview) -> tuple[int, int, int, str | None, object]:
    """(API key, API version, correlation id, client id, core message) of a request without the size
    prefix, at any version in the API's table row (:func:`mapped_versions`). A Fetch whose only
    topic is ``METADATA_TOPIC_ID`` decodes to MetadataFetchRequest. Bytes after the body are ignored,
    as Kafka ignores them (``RequestContext.parseRequest`` reads the body and never checks that the
    buffer is used up; librdkafka's AdminClient sends Metadata v12 with three such bytes). Raises
    :class:`UnsupportedVersionError` for an API key or version this module does not map, and
    :class:`WireError` for malformed or missing bytes."""
    api_key, api_version, _ = peek_request_header(data)
    row = _BY_KEY.get(api_key)
    if row is None:
        raise UnsupportedVersionError(f"API key {api_key} is not mapped by kraftlog.protocol.wire")
    if api_version not in row.versions:
        raise UnsupportedVersionError(
            f"API key {api_key} version {api_version}: kraftlog maps versions {_span(row.versions)}"
        )
    kio_type = _schema(api_key, api_version, request=True)
    header, offset = _read(kio_type.__header_schema__, data, 0)
    entity, _ = _read(kio_type, data, offset)
    try:
        msg = from_kio(entity)
    except (UnsupportedVersionError, WireError):
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # e.g. a null where the schema has a non-nullable array: Kafka's generated parser throws
        # ("non-nullable field ... was serialized as null"), an InvalidRequestException
        raise WireError(f"malformed {kio_type.__name__}: {type(exc).__name__}: {exc}") from None
    return api_key, api_version, header.correlation_id, header.client_id, msg


def decode_request(data: bytes | memoryview) -> tuple[int, object]:
    """(correlation id, core message) of a request: :func:`decode_request_frame` without the rest."""
    _, _, correlation_id, _, msg = decode_request_frame(data)
    return correlation_id, msg


def encode_response(msg: object, correlation_id: int, version: int | None = None) -> bytes:
    """A Kafka response without the size prefix: the response header of that version (kio's
    ``__header_schema__``: v0, or v1 for flexible versions) then the payload of :func:`to_kio` at
    ``version`` (default: the request class's ``VERSION``; the version the request came in, from
    :func:`decode_request_frame`, for a real client). An ApiVersions answer with an error has a v0
    body at every version (the table's ``error_response_version``). Raises as :func:`to_kio`."""
    entity = to_kio(msg, version)
    out = io.BytesIO()
    _write(entity.__header_schema__(correlation_id=correlation_id), out)
    _write(entity, out)
    return out.getvalue()


#: Pieces of at least this many bytes (record batches) are kept by reference by :func:`frame_response`.
GATHER_MIN_BYTES = 16 * 1024


class _Gather:
    """A write-only stream for kio's writers that keeps each written piece (``write`` is ``list.append``)."""

    __slots__ = ("parts", "write")

    def __init__(self) -> None:
        self.parts: list = []
        self.write = self.parts.append


def frame_response(msg: object, correlation_id: int, version: int | None = None) -> list:
    """The framed response (4-byte size, header, body) as :func:`frame` of :func:`encode_response` gives
    it, as a list of byte strings to send in order (``transport.writelines``): the same bytes, but a
    piece of at least :data:`GATHER_MIN_BYTES` (a Fetch response's record batches, as read from the
    log) is not copied into one buffer, and the small pieces around it are joined. Raises as
    :func:`encode_response`."""
    entity = to_kio(msg, version)
    out = _Gather()
    _write(entity.__header_schema__(correlation_id=correlation_id), out)  # type: ignore[arg-type]
    _write(entity, out)  # type: ignore[arg-type]
    pieces: list = []
    small: list = []
    total = 0
    for part in out.parts:
        n = len(part)
        total += n
        if n >= GATHER_MIN_BYTES:
            if small:
                pieces.append(b"".join(small))
                small = []
            pieces.append(part)
        else:
            small.append(part)
    if small:
        pieces.append(b"".join(small))
    size = struct.pack(">i", total)
    if pieces and len(pieces[0]) < GATHER_MIN_BYTES:
        pieces[0] = size + pieces[0]
    else:
        pieces.insert(0, size)
    return pieces


def decode_response(data: bytes | memoryview, request_msg_type: type,
                    version: int | None = None) -> tuple[int, object]:
    """(correlation id, core message) of a response without the size prefix. Responses do not carry
    their API key, so ``request_msg_type`` (the core request class it answers) and ``version``
    (default: its ``VERSION``) pick the schema and the core class (MetadataFetchRequest ->
    MetadataFetchResponse); an ApiVersions answer whose error code is not NONE is read as v0, as
    kafka-python reads it. Raises :class:`WireError` for malformed or trailing bytes, KeyError for
    a non-request type."""
    response_type = RESPONSE_TYPES[request_msg_type]
    version = _version_for(request_msg_type, version)
    kio_type = _schema(request_msg_type.API_KEY, version, request=False)
    header, offset = _read(kio_type.__header_schema__, data, 0)
    error_version = _row_of(request_msg_type).error_response_version
    if (error_version is not None and len(data) >= offset + 2
            and struct.unpack_from(">h", data, offset)[0] != Errors.NONE):
        kio_type = _schema(request_msg_type.API_KEY, error_version, request=False)
    entity, offset = _read(kio_type, data, offset)
    if offset != len(data):
        raise WireError(f"{len(data) - offset} trailing bytes after {kio_type.__name__}")
    return header.correlation_id, from_kio(entity, response_type)


def roundtrip(msg: object, correlation_id: int = 1, as_response_to: type | None = None,
              version: int | None = None) -> object:
    """Send ``msg`` through the wire format and back: encode to bytes, decode, return the decoded core
    message (the simulator's wire switch). Requests go through :func:`decode_request`'s API-key
    dispatch; responses decode as the answer to ``as_response_to`` (default: the request class paired
    with the response's class). ``version`` defaults to the request class's ``VERSION``. Equal (==)
    to ``msg`` for every mapped type at that version, except that partitions of one topic come back
    contiguous (see the module docstring). Raises AssertionError if the correlation id does not
    survive, and what the encoders/decoders raise."""
    msg_type = type(msg)
    if msg_type in RESPONSE_TYPES:
        cid, out = decode_request(encode_request(msg, correlation_id, version=version))
    else:
        request_type = as_response_to or _REQUEST_FOR_RESPONSE.get(msg_type)
        if request_type is None:
            raise TypeError(f"{msg_type.__name__} has no wire mapping in kraftlog.protocol.wire")
        cid, out = decode_response(encode_response(msg, correlation_id, version), request_type,
                                   version)
    if cid != correlation_id:
        raise AssertionError(f"correlation id {correlation_id} came back as {cid}")
    return out
