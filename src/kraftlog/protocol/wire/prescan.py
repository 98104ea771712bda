"""A walk over an entity's bytes before kio reads them: every array length must fit the bytes left.

Why: kio 0.6.5's native reader (``_kio_native``, ``schema::read_field``) sizes the vector of an array
from the array's length field before reading one element (``Vec::with_capacity(n)``) and checks
nothing: a compact array's length is an unsigned varint of up to 35 bits, so the five bytes ``ff ff ff
ff 7f`` ask for 2**35 - 2 elements of 8 bytes, 275 GB; a legacy array's int32 2**31 - 1 asks for 17 GB.
When the allocation fails Rust aborts the process (``memory allocation of N bytes failed``): no Python
exception, nothing to catch, the node is gone. (Strings and bytes are safe: kio checks their lengths
against the buffer before slicing.) Kafka's readers refuse such a length instead: here
:func:`check_lengths` walks the bytes as kio will read them and raises :class:`WireError` (which the
TCP driver turns into a closed connection, as Kafka answers a malformed request) when an array's
length times its elements' least encoded size (at least 1 byte) exceeds the bytes left, before kio
allocates anything.

The walk mirrors kio's reader (``parse_entity``): fields in dataclass order, classified by kio's own
``kio.serial._introspect``; a nullable struct's int8 marker; a flexible struct's tagged fields read by
their schema, the declared size skipped, an unknown tag refused; the request header's ``client_id`` a
nullable legacy string. So it consumes what kio consumes (tests/test_wire_hostile_lengths.py checks
that against kio on every mapped schema). It does not check values (kio does).

Speed: the TCP driver decodes every request, so each entity type's walk is generated Python, compiled
once (as :mod:`dataclasses` generates ``__init__``): nested structs inlined, a run of fixed-size
fields one skip, an array of fixed-size elements one multiplication, a length's one-byte varint read
inline. A type without an array anywhere (the headers, most small requests) is not walked at all.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from ..errors import WireError

__all__ = ["check_lengths", "entity_size", "needs_check"]

Buffer = bytes | memoryview
#: (data, position, end) -> the position after the value; raises IndexError or struct.error at the end
#: of the bytes and _Refused for a length that cannot be (turned into a WireError by :func:`_walk`).
_Scan = Callable[[Any, int, int], int]

#: Bytes of kio's fixed-size kafka types.
_FIXED = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
          "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8, "timedelta_i64": 8,
          "datetime_i64": 8, "uuid": 16}


class _Refused(Exception):
    """A length that cannot be: :func:`_walk` names the entity."""


# ------------------------------------------------------------------------- the shapes
@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    """How kio reads one field or array element. ``kind``: "fixed" (``size`` bytes), "compact" (compact
    string or bytes), "string16" / "bytes32" (legacy string or bytes), "compact_array" / "array" (of
    ``element``), "entity" (``fields``, then ``tags`` if ``flexible``; an int8 marker first if
    ``nullable``). ``least`` is its shortest encoding in bytes, ``arrays`` whether an array is inside."""

    kind: str
    size: int = 0
    element: _Shape | None = None
    fields: tuple[_Shape, ...] = ()
    tags: tuple[tuple[int, _Shape], ...] = ()
    flexible: bool = False
    nullable: bool = False
    least: int = 0
    arrays: bool = False


_COMPACT = _Shape("compact", least=1)
_STRING16 = _Shape("string16", least=2)
_BYTES32 = _Shape("bytes32", least=4)
_SHAPES: dict[tuple[type, bool], _Shape] = {}


def _primitive(kafka_type: str, flexible: bool) -> _Shape:
    size = _FIXED.get(kafka_type)
    if size is not None:
        return _Shape("fixed", size=size, least=size)
    if kafka_type == "string":
        return _COMPACT if flexible else _STRING16
    if kafka_type in ("bytes", "records"):
        return _COMPACT if flexible else _BYTES32
    raise TypeError(f"no length check for kafka type {kafka_type!r}")


def _array(element: _Shape, compact: bool) -> _Shape:
    if compact:
        return _Shape("compact_array", element=element, least=1, arrays=True)
    return _Shape("array", element=element, least=4, arrays=True)


def _field(entity_type: type, field: dataclasses.Field[Any], flexible: bool) -> _Shape:
    """kio's ``build_field_schema`` for one field."""
    if entity_type.__name__ == "RequestHeader" and field.name == "client_id":
        return _STRING16  # kio reads every request header's client id as a nullable legacy string
    kind = classify_field(field)
    if isinstance(kind, EntityField):
        return _entity(kind.type_, is_optional(field))
    if isinstance(kind, EntityTupleField):
        return _array(_entity(kind.type_, False), flexible)
    shape = _primitive(get_schema_field_type(field), flexible)
    return _array(shape, flexible) if isinstance(kind, PrimitiveTupleField) else shape


def _entity(entity_type: Any, nullable: bool) -> _Shape:
    """kio's ``compile_entity_schema`` for an entity (cached); a non-flexible, non-nullable one of
    fixed-size fields is itself "fixed"."""
    key = (entity_type, nullable)
    shape = _SHAPES.get(key)
    if shape is None:
        flexible = bool(entity_type.__flexible__)
        fields: list[_Shape] = []
        tags: list[tuple[int, _Shape]] = []
        for field in dataclasses.fields(entity_type):
            tag = get_field_tag(field)
            if tag is None:
                fields.append(_field(entity_type, field, flexible))
            else:
                tags.append((int(tag), _field(entity_type, field, flexible)))
        size = sum(f.size for f in fields)
        if not flexible and not nullable and all(f.kind == "fixed" for f in fields):
            shape = _Shape("fixed", size=size, least=size)
        else:
            least = 1 if nullable else sum(f.least for f in fields) + flexible  # null: the marker alone
            arrays = any(f.arrays for f in fields) or any(t.arrays for _, t in tags)
            shape = _Shape("entity", fields=tuple(fields), tags=tuple(tags), flexible=flexible,
                           nullable=nullable, least=least, arrays=arrays)
        _SHAPES[key] = shape
    return shape


# ------------------------------------------------------------------- the walk's helpers
def _uvarint(data: Any, pos: int) -> tuple[int, int]:
    """kio's unsigned varint: at most 5 bytes, up to 35 bits (kio does not mask the 5th byte)."""
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    for i in range(1, 5):
        b = data[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise _Refused("Varint is too long, the most significant bit in the 5th byte is set")


def _long_compact(data: Any, pos: int) -> int:
    """Past a compact string or bytes whose length takes more than one byte."""
    n, pos = _uvarint(data, pos)
    return pos + n - 1


def _too_many(what: str, n: int, least: int, left: int) -> _Refused:
    if left < 0:
        return _Refused("Buffer is exhausted")
    return _Refused(f"{what} of {n} elements (at least {least} bytes each) with {left} bytes left")


def _tags(data: Any, pos: int, end: int, scans: dict[int, _Scan]) -> int:
    """Past a flexible struct's tagged fields (the count's first byte is not 0)."""
    count, pos = _uvarint(data, pos)
    if 2 * count > end - pos:  # each: a tag varint and a size varint at least
        raise _too_many("tagged fields", count, 2, end - pos)
    for _ in range(count):
        tag, pos = _uvarint(data, pos)
        _, pos = _uvarint(data, pos)  # kio reads the field by its schema, not by this size
        scan = scans.get(tag)
        if scan is None:
            raise _Refused(f"Unknown tagged field tag: {tag}")
        pos = scan(data, pos, end)
    return pos


def _negative(what: str) -> _Refused:
    return _Refused(f"negative {what} length")


# --------------------------------------------------------------------- the generated walk
class _Writer:
    """Python source of one walk: ``pos`` advances through ``data`` (up to ``end``); fixed-size bytes are
    added up (``pending``) and skipped at once before the next read."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, object] = {"_uvarint": _uvarint, "_long_compact": _long_compact,
                                         "_too_many": _too_many, "_tags": _tags, "_negative": _negative,
                                         "_i16": struct.Struct(">h").unpack_from,
                                         "_i32": struct.Struct(">i").unpack_from}
        self.pending = 0
        self.depth = 0

    def line(self, indent: int, text: str) -> None:
        self.lines.append("    " * indent + text)

    def flush(self, indent: int) -> None:
        if self.pending:
            self.line(indent, f"pos += {self.pending}")
            self.pending = 0

    def shape(self, s: _Shape, indent: int) -> None:
        if s.kind == "fixed":
            self.pending += s.size
            return
        self.flush(indent)
        if s.kind == "compact":  # length + 1 as a varint; 0 is null
            self.line(indent, "n = data[pos]")
            self.line(indent, "if n < 0x80: pos += n or 1")
            self.line(indent, "elif data[pos + 1] < 0x80: pos += 1 + (n & 0x7F | data[pos + 1] << 7)")
            self.line(indent, "else: pos = _long_compact(data, pos)")
        elif s.kind in ("string16", "bytes32"):  # int16 / int32 length; -1 is null
            unpack, width = ("_i16", 2) if s.kind == "string16" else ("_i32", 4)
            self.line(indent, f"n = {unpack}(data, pos)[0]")
            self.line(indent, f"if n > 0: pos += {width} + n")
            self.line(indent, "elif n < -1: raise _negative('byte')")
            self.line(indent, f"else: pos += {width}")
        elif s.kind in ("compact_array", "array"):
            self.array(s, indent)
        else:
            self.entity(s, indent)

    def array(self, s: _Shape, indent: int) -> None:
        element = s.element
        assert element is not None
        n = f"n{self.depth}"
        least = max(element.least, 1)  # every element takes a byte, whatever the schema says
        if s.kind == "compact_array":  # length + 1 as a varint; 0 is null
            self.line(indent, f"{n} = data[pos]")
            self.line(indent, f"if {n} < 0x80: pos += 1")
            self.line(indent, f"else: {n}, pos = _uvarint(data, pos)")
            self.line(indent, f"if {n} > 1:")
            self.line(indent + 1, f"{n} -= 1")
        else:  # int32 length; -1 is null
            self.line(indent, f"{n} = _i32(data, pos)[0]")
            self.line(indent, "pos += 4")
            self.line(indent, f"if {n} < -1: raise _negative('array')")
            self.line(indent, f"if {n} > 0:")
        what = s.kind.replace("_", " ")
        self.line(indent + 1, f"if {n} * {least} > end - pos: raise _too_many({what!r}, {n}, {least}, end - pos)")
        if element.kind == "fixed":
            self.line(indent + 1, f"pos += {n} * {element.size}")
            return
        self.line(indent + 1, f"for _ in range({n}):")
        self.depth += 1
        self.shape(element, indent + 2)
        self.flush(indent + 2)
        self.depth -= 1

    def entity(self, s: _Shape, indent: int) -> None:
        if s.nullable:  # an int8 marker: -1 is null
            self.line(indent, "if data[pos] == 0xFF: pos += 1")
            self.line(indent, "else:")
            indent += 1
            self.pending += 1
        for field in s.fields:
            self.shape(field, indent)
        if s.flexible:  # the tagged fields' count, nearly always 0
            self.flush(indent)
            table = f"_tags{len(self.names)}"
            self.names[table] = {tag: _function(shape) for tag, shape in s.tags}
            self.line(indent, f"if data[pos]: pos = _tags(data, pos, end, {table})")
            self.line(indent, "else: pos += 1")
        if s.nullable:
            self.line(indent, "pass")
            self.flush(indent)


_FUNCTIONS: dict[_Shape, _Scan] = {}


def _function(shape: _Shape) -> _Scan:
    """The generated walk of ``shape`` (cached)."""
    scan = _FUNCTIONS.get(shape)
    if scan is None:
        writer = _Writer()
        writer.shape(shape, 1)
        writer.flush(1)
        source = "\n".join(["def walk(data, pos, end):", *writer.lines, "    return pos"])
        namespace: dict[str, Any] = dict(writer.names)
        exec(compile(source, f"<kraftlog prescan of {shape.kind}>", "exec"), namespace)  # noqa: S102
        scan = _FUNCTIONS[shape] = namespace["walk"]
    return scan


# ------------------------------------------------------------------------------ entry
#: Entity type -> its walk, or None for a type without arrays (kio reads it safely as it is).
_TOP: dict[type, _Scan | None] = {}


def _top(entity_type: type) -> _Scan | None:
    try:
        return _TOP[entity_type]
    except KeyError:
        shape = _entity(entity_type, False)
        scan = _TOP[entity_type] = _function(shape) if shape.arrays else None
        return scan


def needs_check(entity_type: type) -> bool:
    """Whether an array is anywhere in ``entity_type`` (else :func:`check_lengths` does nothing)."""
    return _top(entity_type) is not None


def check_lengths(entity_type: type, data: Buffer, offset: int) -> None:
    """Raise :class:`WireError` if ``data`` from ``offset``, read as kio reads ``entity_type`` (a kio entity
    class, not nullable), holds an array whose length cannot fit the bytes left (module docstring), or
    ends before the entity does. Bytes after the entity are not looked at; a type without arrays is not
    walked. Raises TypeError for a field type kio cannot read either."""
    scan = _top(entity_type)
    if scan is not None:
        _walk(scan, entity_type, data, offset)


def entity_size(entity_type: type, data: Buffer, offset: int) -> int:
    """The bytes kio's reader consumes reading ``entity_type`` at ``offset`` (walked whether or not it has
    arrays), checked as :func:`check_lengths` checks them."""
    return _walk(_function(_entity(entity_type, False)), entity_type, data, offset) - offset


def _walk(scan: _Scan, entity_type: type, data: Buffer, offset: int) -> int:
    end = len(data)
    try:
        pos = scan(data, offset, end)
    except _Refused as exc:
        raise WireError(f"cannot read {entity_type.__name__}: {exc}") from None
    except (IndexError, struct.error):
        raise WireError(f"cannot read {entity_type.__name__}: Buffer is exhausted") from None
    if pos > end:
        raise WireError(f"cannot read {entity_type.__name__}: Buffer is exhausted")
    return pos
