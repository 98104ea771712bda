"""The model of the generator's table (:mod:`.spec`): the row and field classes, their markers and sides."""

from __future__ import annotations

from dataclasses import dataclass


class _Marker:
    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: ``F.default``: take the schema's default (none: the field is required).
FROM_SCHEMA = _Marker("FROM_SCHEMA")
#: ``F.default`` / ``Extra.default``: no default (the schema's, if any, is not the core's).
REQUIRED = _Marker("REQUIRED")


@dataclass(frozen=True, slots=True)
class Expr:
    """A default written as a Python expression (a constant's name)."""

    source: str


@dataclass(frozen=True, slots=True)
class F:
    """A core field read from the schema (see the module docstring)."""

    name: str
    kio: str | None = None
    type: str | None = None
    default: object = FROM_SCHEMA
    nullable: bool | None = None
    version: int | None = None
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Extra:
    """kraftlog's own field, in no Kafka schema."""

    name: str
    type: str
    doc: str
    default: object = REQUIRED


@dataclass(frozen=True, slots=True)
class Struct:
    """One core class made from the Kafka struct at ``at`` (``""``: the request/response itself)."""

    name: str
    side: str
    at: str
    fields: tuple[F | Extra, ...]
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Kio:
    """Read the schema from kio's entities (``kio.index``) at ``version``."""

    version: int


@dataclass(frozen=True, slots=True)
class Json:
    """Read the schema from ``codegen/schemas/<Api>Request.json`` / ``...Response.json`` at ``version``."""

    version: int


@dataclass(frozen=True, slots=True)
class Const:
    """A module constant: ``name = source``, documented."""

    name: str
    source: str
    doc: str = ""


@dataclass(frozen=True, slots=True)
class Api:
    """One API: Kafka's ``name`` and ``key``, the ``version`` whose semantics the core carries (the
    request's ``VERSION``), the schema ``source``, the ``title`` of its section's heading (None:
    ``"<name> (API key <key>, v<version>)"``; ``""``: no heading, the section before goes on), the
    section's ``note``, its ``constants`` and its classes (the root request class gets ``API``,
    ``API_KEY`` and ``VERSION``; the root response class ``API``)."""

    name: str
    key: int
    version: int
    source: Kio | Json
    classes: tuple[Struct, ...]
    title: str | None = None
    note: str = ""
    constants: tuple[Const, ...] = ()


REQUEST = "request"
RESPONSE = "response"
