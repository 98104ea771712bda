"""What a field annotation of kio's entity classes (or of the core's messages) says about the field: whether
it is nullable (``X | None``), an array (``tuple[X, ...]``), and the dataclass it holds, if any. One reading
for the wire mapper (:mod:`kraftlog.protocol.wire.mapper`) and the message generator
(:mod:`kraftlog.protocol.codegen.schema`)."""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class FieldType:
    """``optional``: the annotation admits None; ``array``: a ``tuple[X, ...]``; ``inner``: ``X`` when it is
    a dataclass (a nested struct), else None; ``base``: ``X`` (the element type of an array)."""

    optional: bool
    array: bool
    inner: type[object] | None
    base: object


def field_type(annotation: object) -> FieldType:
    """The :class:`FieldType` of a resolved annotation (``typing.get_type_hints``'s value for the field)."""
    optional = False
    tp = annotation
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) != len(typing.get_args(tp))
        tp = args[0]
    array = typing.get_origin(tp) is tuple
    inner = typing.get_args(tp)[0] if array else tp
    return FieldType(optional, array, inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None,
                     inner)
