"""The generic mapper: one function pair converts any core dataclass to any kio entity and back, field by
field, from a plan compiled once per (core class, kio class) pair and cached; the API table's row types
(:class:`_Api`, :class:`_Group`, :class:`_Custom`) say what is not one-for-one. See
:mod:`kraftlog.protocol.wire` for the whole wire edge.
"""

from __future__ import annotations

import dataclasses
import datetime
import operator
import typing
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from kio.schema.errors import ErrorCode
from kio.serial._implicit_defaults import get_implicit_default

from ..annotations import FieldType, field_type
from ..errors import Errors, WireError
from ..node import Message, Request
from ..records import (
    decode_batches,
    encode_batches,
)


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
    to: Callable[[Any, Any], Any]  # (core message, kio entity class of the field or None) -> kio value
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

    request: type[Request]
    response: type[Message]
    versions: range
    renames: dict[str, str] = dataclasses.field(default_factory=dict)
    groups: tuple[_Group, ...] = ()
    custom: tuple[_Custom, ...] = ()
    absent: dict[str, Any] = dataclasses.field(default_factory=dict)
    check: Callable[[Any, int], None] | None = None
    kio_values: dict[str, Any] = dataclasses.field(default_factory=dict)
    error_response_version: int | None = None


def _holds(rule: _Group | _Custom, kio: type[Any]) -> bool:
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


#: the mapper's names for the shared reading of a field annotation (protocol/annotations.py)
_TypeInfo = FieldType
_type_info = field_type


def _dataclass(info: _TypeInfo) -> type[Any]:
    """The dataclass inside a field annotation, where the schema has one (a nested struct or array of them)."""
    assert info.inner is not None, "a nested entity's field"
    return info.inner


_HINTS: dict[type, dict[str, _TypeInfo]] = {}


def _hints(cls: type) -> dict[str, _TypeInfo]:
    info = _HINTS.get(cls)
    if info is None:
        hints = typing.get_type_hints(cls)
        info = _HINTS[cls] = {f.name: _type_info(hints[f.name]) for f in dataclasses.fields(cls)}
    return info


def _kio_default(f: dataclasses.Field[Any], info: _TypeInfo) -> Any:
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
    return get_implicit_default(typing.cast(Any, info.base))  # kio types its argument as a kio field type


def _has_default(f: dataclasses.Field[Any]) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _core_null(info: _TypeInfo) -> Any:
    """The core value for a kio null where the core field is not nullable (None: no such value)."""
    if info.array:
        return ()
    nulls: dict[object, object] = {uuid.UUID: _ZERO_UUID, str: ""}
    return nulls.get(info.base)


def _kio_name(api: _Api, core_name: str, kio_fields: dict[str, dataclasses.Field[Any]]) -> str | None:
    """The kio field a core field maps to: the table's rename, the same name, or ``x`` for ``x_ms``."""
    for name in (api.renames.get(core_name), core_name):
        if name in kio_fields:
            return name
    if core_name.endswith("_ms") and core_name[:-3] in kio_fields:
        return core_name[:-3]
    return None


def _value_to_kio(core_info: _TypeInfo, kf: dataclasses.Field[Any], api: _Api) -> Callable[[Any], Any] | None:
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


def _value_from_kio(core_info: _TypeInfo, kf: dataclasses.Field[Any], api: _Api) -> Callable[[Any], Any] | None:
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
    plan: Callable[..., Any] = ns["_plan"]
    return plan


_TO_PLANS: dict[tuple[type, type, str | None], Callable[..., Any]] = {}
_FROM_PLANS: dict[tuple[type, type, str | None], Callable[..., Any]] = {}


def _group_to_kio(api: _Api, g: _Group, kf: dataclasses.Field[Any]) -> Callable[[Any], Any]:
    topic_cls = _dataclass(_type_info(kf.type))
    inner_field = {f.name: f for f in dataclasses.fields(topic_cls)}[g.inner]
    item_cls = _dataclass(_hints(g.owner)[g.core])
    key_core, key_kio = g.key
    topic_fixed = {
        f.name: _kio_default(f, _type_info(f.type))
        for f in dataclasses.fields(topic_cls)
        if f.name not in (key_kio, g.inner) and not _has_default(f)
    }
    item: Callable[[Any], Any]
    if g.scalar is not None:
        scalar = g.scalar
        item = operator.attrgetter(scalar)
    else:
        item = _to_plan(api, item_cls, _dataclass(_type_info(inner_field.type)), skip=key_core)
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


def _group_from_kio(api: _Api, g: _Group, kf: dataclasses.Field[Any]) -> Callable[[Any], Any]:
    topic_cls = _dataclass(_type_info(kf.type))
    inner_field = {f.name: f for f in dataclasses.fields(topic_cls)}[g.inner]
    item_info = _hints(g.owner)[g.core]
    item_cls = _dataclass(item_info)
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
        item = _from_plan(api, item_cls, _dataclass(_type_info(inner_field.type)), key=key_core)
    parallel = _parallel_fields(g, topic_cls, item_cls)

    def columns_of(t: Any, inner: tuple[Any, ...]) -> dict[str, tuple[Any, ...]]:
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
        out: list[Any] = []
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


def _custom_to(c: _Custom, kio_type: type[Any] | None) -> Callable[[Any], Any]:
    """A plan step computing a kio field with a custom converter (``kio_type``: the field's entity class)."""
    return lambda obj: c.to(obj, kio_type)


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
            steps.append((kf.name, None, _custom_to(custom[kf.name], _type_info(kf.type).inner)))
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
