"""The codec: core message <-> kio entity (:func:`to_kio`, :func:`from_kio`, through the table and the
hand-mapped shapes) <-> Kafka bytes (request and response headers and bodies, the size prefix, the
gathered Fetch response). See :mod:`kraftlog.protocol.wire`.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from typing import Any, Protocol, cast

from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.protocol import Payload

from .. import messages as m
from ..errors import Errors, WireError
from ..node import Message, Request
from .apis import (
    _API,
    _BY_KEY,
    _REQUEST_FOR_RESPONSE,
    _REQUEST_OF,
    _WHOLE_VERSIONS,
    RESPONSE_TYPES,
    _row_of,
    _schema,
    _span,
    _version_for,
)
from .mapper import UnsupportedVersionError, _from_plan, _to_plan
from .prescan import check_lengths
from .shapes import _WHOLE, _is_metadata_fetch, metadata_fetch_version


class _ErrorResponse(Protocol):
    """A response with a top-level error code (the rows with an ``error_response_version``)."""

    error_code: int


# ----------------------------------------------------------------------- building blocks
def to_kio(msg: Message, version: int | None = None) -> Payload:
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
            and cast(_ErrorResponse, msg).error_code != Errors.NONE):
        version = row.error_response_version
    whole = _WHOLE.get(core_type)
    entity: Payload
    if whole is not None and version in whole[0]:
        entity = whole[1](msg, version)
    else:
        kio_type = _schema(request_type.API_KEY, version, request=core_type is request_type)
        entity = _to_plan(row, core_type, kio_type)(msg)
    return entity


def from_kio(payload: Payload, as_type: type[Message] | None = None) -> Message:
    """The core message for a kio entity (any mapped version). ``as_type`` forces the core class;
    without it a Fetch request/response whose only topic is ``METADATA_TOPIC_ID`` becomes a
    MetadataFetchRequest / MetadataFetchResponse and every other entity maps to its one core class.
    Raises TypeError for an unmapped entity and :class:`WireError` for content the core cannot
    represent."""
    entity: Any = payload  # a kio entity's fields depend on its API and version
    api_key = int(getattr(entity, "__api_key__", -1))
    row = _BY_KEY.get(api_key)
    if row is None or not dataclasses.is_dataclass(payload):
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
    msg: Message
    if whole is not None and entity.__version__ in whole[0]:
        msg = whole[2](entity)
    else:
        msg = _from_plan(row, as_type, type(entity))(entity)
    return msg


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
    # kio's native reader sizes an array from its length before reading it and aborts the process when
    # that allocation fails: lengths that cannot fit the bytes are refused first (.prescan)
    check_lengths(entity_type, data, offset)
    try:
        entity, size = reader(data, offset)
    except WireError:
        raise
    except Exception as exc:  # kio's native reader raises its own errors (underflow, bad values)
        raise WireError(f"cannot read {entity_type.__name__}: {exc}") from exc
    return entity, offset + size


def default_version(request: Request) -> int:
    """The version a request goes out at when none is given: its class's ``VERSION``, or the lowest version
    that can carry it (ElectLeaders v3 for KIP-966's election types 2-4; a metadata fetch v18 with a high
    watermark, v17 with a replica directory id, KIP-853). Its response is read at the same version."""
    if type(request) is m.ElectLeadersRequest and request.election_type > m.ELECTION_UNCLEAN:
        return 3
    if type(request) is m.MetadataFetchRequest:
        return metadata_fetch_version(request)
    return type(request).VERSION


def encode_request(msg: Request, correlation_id: int, client_id: str = "kraftlog",
                   version: int | None = None) -> bytes:
    """A Kafka request without the size prefix: the request header of that version (kio's
    ``__header_schema__``: v1, or v2 for flexible versions: API key, version, ``correlation_id``,
    ``client_id``) then the payload of :func:`to_kio` at ``version`` (default: the class's
    ``VERSION``, or the lowest version that can carry ``msg``: ElectLeaders v3 for KIP-966's election
    types 2-4, so that a broker forwards them to the controller). Raises as :func:`to_kio`."""
    if version is None:
        version = default_version(msg)
    entity: Any = to_kio(msg, version)  # kio types its header schema per entity class
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


def decode_request_frame(data: bytes | memoryview) -> tuple[int, int, int, str | None, Message]:
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


def decode_request(data: bytes | memoryview) -> tuple[int, Message]:
    """(correlation id, core message) of a request: :func:`decode_request_frame` without the rest."""
    _, _, correlation_id, _, msg = decode_request_frame(data)
    return correlation_id, msg


def encode_response(msg: Message, correlation_id: int, version: int | None = None) -> bytes:
    """A Kafka response without the size prefix: the response header of that version (kio's
    ``__header_schema__``: v0, or v1 for flexible versions) then the payload of :func:`to_kio` at
    ``version`` (default: the request class's ``VERSION``; the version the request came in, from
    :func:`decode_request_frame`, for a real client). An ApiVersions answer with an error has a v0
    body at every version (the table's ``error_response_version``). Raises as :func:`to_kio`."""
    entity: Any = to_kio(msg, version)  # kio types its header schema per entity class
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
        self.parts: list[bytes] = []
        self.write = self.parts.append


def frame_response(msg: Message, correlation_id: int, version: int | None = None) -> list[bytes]:
    """The framed response (4-byte size, header, body) as :func:`frame` of :func:`encode_response` gives
    it, as a list of byte strings to send in order (``transport.writelines``): the same bytes, but a
    piece of at least :data:`GATHER_MIN_BYTES` (a Fetch response's record batches, as read from the
    log) is not copied into one buffer, and the small pieces around it are joined. Raises as
    :func:`encode_response`."""
    entity: Any = to_kio(msg, version)  # kio types its header schema per entity class
    out = _Gather()
    _write(entity.__header_schema__(correlation_id=correlation_id), out)  # type: ignore[arg-type]
    _write(entity, out)  # type: ignore[arg-type]
    pieces: list[bytes] = []
    small: list[bytes] = []
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


def decode_response(data: bytes | memoryview, request_msg_type: type[Request],
                    version: int | None = None) -> tuple[int, Message]:
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


def roundtrip(msg: Message, correlation_id: int = 1, as_response_to: type[Request] | None = None,
              version: int | None = None) -> Message:
    """Send ``msg`` through the wire format and back: encode to bytes, decode, return the decoded core
    message (the simulator's wire switch). Requests go through :func:`decode_request`'s API-key
    dispatch; responses decode as the answer to ``as_response_to`` (default: the request class paired
    with the response's class). ``version`` defaults to the request class's ``VERSION``. Equal (==)
    to ``msg`` for every mapped type at that version, except that partitions of one topic come back
    contiguous (see the module docstring). Raises AssertionError if the correlation id does not
    survive, and what the encoders/decoders raise."""
    msg_type = type(msg)
    if msg_type in RESPONSE_TYPES:
        cid, out = decode_request(encode_request(cast(Request, msg), correlation_id, version=version))
    else:
        request_type = as_response_to or _REQUEST_FOR_RESPONSE.get(msg_type)
        if request_type is None:
            raise TypeError(f"{msg_type.__name__} has no wire mapping in kraftlog.protocol.wire")
        cid, out = decode_response(encode_response(msg, correlation_id, version), request_type,
                                   version)
    if cid != correlation_id:
        raise AssertionError(f"correlation id {correlation_id} came back as {cid}")
    return out
