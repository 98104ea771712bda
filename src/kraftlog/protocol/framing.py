"""Kafka's connection framing, sans I/O: bytes in, request frames (or a reason to close) out.

A reader feeds whatever a socket returns to :meth:`ServerConnection.receive_data`, or (the TCP driver,
an asyncio ``BufferedProtocol``) lets the socket read into :meth:`ServerConnection.get_buffer` and
reports :meth:`ServerConnection.buffer_updated`, and acts on the events it gets back; nothing here
touches a socket, a clock or a thread (like h11's ``Connection``). The body of a request is left as
bytes (a read-only memoryview for one larger than :data:`STAGING_BYTES` read into its own buffer) for
:mod:`kraftlog.protocol.wire` to decode.

Connection rules, as Kafka's ``SocketServer`` / ``NetworkReceive`` / ``RequestContext`` apply them:

* Every frame is a 4-byte big-endian size, then that many bytes. A negative size or one above
  ``socket.request.max.bytes`` (default 104,857,600 bytes, 100 MiB) is an ``InvalidReceiveException``:
  the connection is closed at once, before any of the body is buffered.
* A request starts with its API key (int16), API version (int16) and correlation id (int32); a frame
  shorter than that, an unknown API key, or a header that does not parse (e.g. a client id running past
  the frame) is an ``InvalidRequestException``: the connection is closed. The reason names an API
  kraftlog deliberately leaves out (:data:`NOT_BUILT_APIS`: transactions, KIP-848's consumer groups) and
  what to use instead.
* ApiVersions at a version the broker does not support is answered, not refused (KIP-511): a v0-format
  ApiVersionsResponse with UNSUPPORTED_VERSION (35) and the supported ranges, so the client can pick a
  version. Any other API at an unsupported version closes the connection.
* ApiVersions at a supported version is answered here too, with this listener's ranges (the
  connection's ``supported``): what a node advertises is a property of its listener, not of its
  replication state, and Kafka answers it before authentication on every listener. A v3 request whose
  body does not parse gets INVALID_REQUEST (Kafka's ``ApiVersionsRequest.isValid``).

``supported`` maps API key → (min version, max version), the ranges the wire layer implements.
"""

from __future__ import annotations

import datetime
import io
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.api_versions.v0.response import ApiVersion, ApiVersionsResponse
from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer
from kio.serial.readers import Reader
from kio.static.primitive import i16, i32, i32Timedelta

from . import kio_extra
from .sasl import ANONYMOUS, SASL_SERVER_MAX_RECEIVE_SIZE, SASL_VERSIONS, SaslAuthenticator, SaslConfig, SaslStep

__all__ = [
    "DEFAULT_MAX_REQUEST_BYTES", "API_VERSIONS_KEY", "RequestHeader", "Request", "Reply", "Close",
    "ServerConnection", "ResponseDecoder", "api_versions_error_reply", "NOT_BUILT_APIS", "Authenticated",
]

#: Kafka's ``socket.request.max.bytes`` default (bytes).
DEFAULT_MAX_REQUEST_BYTES = 104_857_600
#: The API key of ApiVersions.
API_VERSIONS_KEY = 18

_TRANSACTIONS = "kraftlog has no transactions; use an idempotent producer without transactional.id"
_KIP_848 = ("KIP-848's consumer group protocol (group.protocol=consumer) is not built; "
            "use group.protocol=classic")
#: API key -> (Kafka's API name, why it is refused): the APIs kraftlog deliberately does not serve (nor
#: advertise), named in the reason the connection is closed when a client sends one anyway -- the broker's
#: log line says what to use instead of "unknown API key".
NOT_BUILT_APIS: dict[int, tuple[str, str]] = {
    24: ("AddPartitionsToTxn", _TRANSACTIONS),
    25: ("AddOffsetsToTxn", _TRANSACTIONS),
    26: ("EndTxn", _TRANSACTIONS),
    27: ("WriteTxnMarkers", _TRANSACTIONS),
    28: ("TxnOffsetCommit", _TRANSACTIONS),
    65: ("DescribeTransactions", _TRANSACTIONS),
    66: ("ListTransactions", _TRANSACTIONS),
    68: ("ConsumerGroupHeartbeat", _KIP_848),
    69: ("ConsumerGroupDescribe", _KIP_848),
}

_SIZE = struct.Struct(">i")
_PEEK = struct.Struct(">hhi")  # api key, api version, correlation id


#: One complete frame without its size prefix: bytes, or a read-only memoryview for a frame too large for
#: the staging buffer (:class:`_FrameBuffer`).
Frame: TypeAlias = bytes | memoryview


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A parsed request header: ``header_size`` is its length in bytes (the body starts there)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_size: int


@dataclass(frozen=True, slots=True)
class Request:
    """Event: one complete request. ``payload`` is the frame without its size prefix (header + body);
    the body is ``payload[header.header_size:]``."""

    header: RequestHeader
    payload: Frame

    @property
    def body(self) -> Frame:
        return self.payload[self.header.header_size:]


@dataclass(frozen=True, slots=True)
class Reply:
    """Event: bytes to send back as they are (a framed response the framing layer answered itself)."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """Event: close the connection (Kafka's InvalidReceiveException / InvalidRequestException, a failed SASL
    authentication); ``reason`` says why, for the node's log. ``delay_ms``: close that long after the replies
    before it are written (``connection.failed.authentication.delay.ms``), reading nothing more meanwhile;
    ``failed_authentication``: a SASL authentication failed (Kafka's ``failed-authentication-total``)."""

    reason: str
    delay_ms: int = 0
    failed_authentication: bool = False


@dataclass(frozen=True, slots=True)
class Authenticated:
    """Event: the connection's SASL authentication succeeded; its requests now come from ``principal``
    (``User:<name>``; Kafka's ``successful-authentication-total``)."""

    principal: str


def api_versions_error_reply(correlation_id: int, supported: Mapping[int, tuple[int, int]]) -> bytes:
    """KIP-511: the framed v0-format ApiVersionsResponse (response header v0) with UNSUPPORTED_VERSION
    and every supported (API key, min, max), sorted by key, that answers an ApiVersions request at an
    unsupported version."""
    response = ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=tuple(ApiVersion(api_key=i16(k), min_version=i16(lo), max_version=i16(hi))
                       for k, (lo, hi) in sorted(supported.items())))
    out = io.BytesIO()
    entity_writer(ApiVersionsResponse.__header_schema__)(
        out, ApiVersionsResponse.__header_schema__(correlation_id=i32(correlation_id)))
    entity_writer(ApiVersionsResponse)(out, response)
    payload = out.getvalue()
    return _SIZE.pack(len(payload)) + payload


def api_versions_reply(header: RequestHeader, payload: Frame,
                       supported: Mapping[int, tuple[int, int]]) -> bytes:
    """The framed ApiVersionsResponse (at the request's version, response header v0 as Kafka always
    sends for ApiVersions) listing ``supported``; INVALID_REQUEST when the body does not parse."""
    version = header.api_version
    request_type = load_request_schema(API_VERSIONS_KEY, version)
    error = ErrorCode.none
    try:
        entity_reader(request_type)(payload, header.header_size)
    except Exception:  # kio's readers raise their own errors on a malformed body
        error = ErrorCode.invalid_request
    response_type = load_response_schema(API_VERSIONS_KEY, version)
    entry = _API_VERSION_ENTRY.get(version)
    if entry is None:
        entry = _API_VERSION_ENTRY[version] = _entry_type(response_type)
    kwargs = {"error_code": error,
              "api_keys": tuple(entry(api_key=i16(k), min_version=i16(lo), max_version=i16(hi))
                                for k, (lo, hi) in sorted(supported.items()))}
    if "throttle_time" in response_type.__dataclass_fields__:
        kwargs["throttle_time"] = i32Timedelta.parse(datetime.timedelta(0))
    response = response_type(**kwargs)
    out = io.BytesIO()
    header_schema = response_type.__header_schema__
    entity_writer(header_schema)(out, header_schema(correlation_id=i32(header.correlation_id)))
    entity_writer(response_type)(out, response)
    data = out.getvalue()
    return _SIZE.pack(len(data)) + data


_API_VERSION_ENTRY: dict[int, type] = {}


def _entry_type(response_type: type) -> type:
    """kio's ApiVersion entry class of one ApiVersionsResponse version (the element type of api_keys)."""
    import typing
    hint = typing.get_type_hints(response_type)["api_keys"]
    entry: type = typing.get_args(hint)[0]
    return entry


#: Bytes of a :class:`_FrameBuffer`'s staging buffer; a frame larger than this is read into its own.
STAGING_BYTES = 64 * 1024
#: A large frame's buffer starts at this many times the bytes of it received (at least STAGING_BYTES) and
#: grows by this factor each time it is full: it never holds more than this many times what arrived.
GROWTH = 4
#: Where a closed connection's late bytes land (ignored; shared by every closed connection).
_DISCARD = memoryview(bytearray(4096))


class _FrameBuffer:
    """Splits a byte stream into size-prefixed frames, refusing a size outside [0, max_bytes], for a
    reader that receives into buffers it is given (asyncio's ``BufferedProtocol``): :meth:`get_buffer`
    names where the next bytes go, :meth:`buffer_updated` says how many arrived and returns (complete
    frames without their size prefix, the reason to close or None). A reader that has the bytes already
    (a blocking socket's ``recv``) hands them to :meth:`feed`, which copies them in.

    Small frames arrive in a staging buffer of :data:`STAGING_BYTES` (allocated when the first bytes
    come: an idle connection holds none) and are copied out as bytes. A frame that does not fit there
    is read into a buffer of its own, which the socket fills directly, and is handed over as a
    read-only memoryview of it: a 1 MiB produce request is not copied after it arrived. That buffer
    grows as the bytes arrive, never from the 4-byte size alone: it starts at :data:`GROWTH` times the
    bytes of the frame already received (at least :data:`STAGING_BYTES`) and grows by that factor each
    time it is full, up to the frame's size, so a header announcing 100 MiB costs what was sent, not
    what was announced (a 1 MB produce request takes two buffers: 256 KiB, then its size).
    :attr:`next_allocation` says what the next :meth:`get_buffer` will allocate, so that a reader can
    charge it to a budget first (the TCP driver's ``queued.max.request.bytes``) or stop reading."""

    __slots__ = ("max_bytes", "_buf", "_view", "_start", "_end", "_big", "_big_pos", "_big_size")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buf: bytearray | None = None  # the staging buffer, allocated by the first get_buffer
        self._view: memoryview | None = None
        self._start = 0  # first byte not yet parsed
        self._end = 0  # bytes received into the staging buffer
        self._big: bytearray | None = None  # the payload of a large frame received so far (its capacity)
        self._big_pos = 0  # bytes of that payload received (those still in staging included, before _grow)
        self._big_size = 0  # that frame's size; 0 while no large frame is being received

    def clear(self) -> None:
        self._start = self._end = 0
        self._big, self._big_pos, self._big_size = None, 0, 0

    @property
    def receiving(self) -> bool:
        """Whether part of a frame (its size or some of its body) was received and the rest was not."""
        return self._big_size != 0 or self._end > self._start

    @property
    def held_bytes(self) -> int:
        """Bytes of the buffer of the large frame being received (0 when none)."""
        big = self._big
        return 0 if big is None else len(big)

    @property
    def next_allocation(self) -> int:
        """Bytes the next :meth:`get_buffer` allocates for the large frame being received: its first
        buffer, or how much its buffer grows (0 when it allocates nothing)."""
        size = self._big_size
        if not size:
            return 0
        big = self._big
        if big is None:
            return min(size, max(STAGING_BYTES, GROWTH * self._big_pos))
        if self._big_pos < len(big):
            return 0
        return min(size, GROWTH * len(big)) - len(big)

    def get_buffer(self) -> memoryview:
        if self._big_size:
            big = self._big
            if big is None or self._big_pos == len(big):
                big = self._grow()
            return memoryview(big)[self._big_pos:]
        if self._buf is None:
            self._buf = bytearray(STAGING_BYTES)
            self._view = memoryview(self._buf)
        return self._view[self._end:]  # type: ignore[index]

    def _grow(self) -> bytearray:
        """Allocate the large frame's first buffer (with the bytes of it the staging buffer holds) or a
        buffer :data:`GROWTH` times as large as the full one (:attr:`next_allocation` more bytes)."""
        old = self._big
        big = bytearray(self.held_bytes + self.next_allocation)
        if old is None:  # its first bytes are at the front of the staging buffer
            big[:self._end] = self._view[:self._end]  # type: ignore[index]
            self._start = self._end = 0
        else:
            big[:len(old)] = old
        self._big = big
        return big

    def feed(self, data: bytes) -> tuple[list[bytes], str | None]:
        """:meth:`get_buffer` / :meth:`buffer_updated` over ``data`` (bytes a reader already has): the
        complete frames, each as bytes, and the reason to close or None."""
        frames: list[bytes] = []
        view = memoryview(data)
        while view:
            target = self.get_buffer()
            n = min(len(target), len(view))
            target[:n] = view[:n]
            view = view[n:]
            got, reason = self.buffer_updated(n)
            frames += [f if type(f) is bytes else bytes(f) for f in got]
            if reason is not None:
                return frames, reason
        return frames, None

    def buffer_updated(self, nbytes: int) -> tuple[list[Frame], str | None]:
        frames: list[Frame] = []
        if self._big_size:
            self._big_pos += nbytes
            if self._big_pos == self._big_size:
                frames.append(memoryview(self._big).toreadonly())  # type: ignore[arg-type]
                self._big, self._big_pos, self._big_size = None, 0, 0
            return frames, None
        end = self._end = self._end + nbytes
        buf, view = self._buf, self._view
        assert buf is not None and view is not None, "get_buffer allocated the staging buffer"
        pos = self._start
        unpack = _SIZE.unpack_from
        while end - pos >= 4:
            (size,) = unpack(buf, pos)
            if size < 0 or size > self.max_bytes:
                self.clear()
                return frames, f"invalid frame size {size} (socket.request.max.bytes {self.max_bytes})"
            stop = pos + 4 + size
            if stop <= end:
                frames.append(bytes(view[pos + 4:stop]))
                pos = stop
                continue
            if 4 + size > len(buf):  # too large for the staging buffer: read the rest into its own
                pos += 4  # its first bytes stay in staging (moved to the front) until _grow
                self._big_size, self._big_pos = size, end - pos
            break
        if pos == end:
            self._start = self._end = 0
        elif pos:  # an incomplete frame: move it to the front (less than STAGING_BYTES)
            view[:end - pos] = bytes(view[pos:end])
            self._start, self._end = 0, end - pos
        return frames, None


class ServerConnection:
    """The server side of one Kafka connection (a broker's or the controller's listener).

    ``receive_data(data)`` returns the events the bytes complete, in order: :class:`Request` (decode the
    body with the wire layer and answer it), :class:`Reply` (send as is) or :class:`Close` (close the
    socket; it is always the last event, and the connection ignores anything after it).
    ``supported``: API key → (min, max) version; ``max_request_bytes``: ``socket.request.max.bytes``.

    Or, for a reader that receives into given buffers (one way or the other per connection):
    ``get_buffer()`` (where to put the next bytes) and ``buffer_updated(nbytes)`` (how many arrived: the
    events, as ``receive_data``); a request too large for the staging buffer then has a read-only
    memoryview as its payload (see :class:`_FrameBuffer`).

    ``sasl``: a SASL listener's settings (``SASL_PLAINTEXT``): the connection authenticates first
    (:mod:`kraftlog.protocol.sasl`: SaslHandshake and SaslAuthenticate are answered here, an
    :class:`Authenticated` event marks success) and only then hands requests over; None for ``PLAINTEXT``,
    whose requests come from ``principal`` (ANONYMOUS, or a TLS listener's client certificate's)."""

    def __init__(self, supported: Mapping[int, tuple[int, int]],
                 max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES, sasl: SaslConfig | None = None,
                 principal: str = ANONYMOUS) -> None:
        self.supported = dict(supported)
        if sasl is not None:
            self.supported.update(SASL_VERSIONS)
        self._buffer = _FrameBuffer(max_request_bytes)
        self._max_request_bytes = max_request_bytes
        self.closed: str | None = None
        self.authenticator = SaslAuthenticator(sasl) if sasl is not None else None
        self._principal = principal
        if sasl is not None:  # Kafka's sasl.server.max.receive.size bounds every frame until authenticated
            self._buffer.max_bytes = min(max_request_bytes, SASL_SERVER_MAX_RECEIVE_SIZE)

    @property
    def principal(self) -> str:
        """Who the connection's requests come from: ``User:<name>`` once SASL authenticated; on a listener without
        SASL, the ``principal`` given (a TLS client certificate's, Kafka's ``ssl.principal.mapping.rules``), else
        ANONYMOUS."""
        return self.authenticator.principal if self.authenticator is not None else self._principal

    def get_buffer(self) -> memoryview:
        if self.closed is not None:  # bytes after a Close are ignored: let them land in a scratch buffer
            return _DISCARD
        return self._buffer.get_buffer()

    @property
    def receiving(self) -> bool:
        """Whether a request was begun (part of its size or body received) and not finished."""
        return self._buffer.receiving

    @property
    def held_bytes(self) -> int:
        """Bytes of the buffer of the large request being received (0 when none: small requests use the
        connection's staging buffer)."""
        return self._buffer.held_bytes

    @property
    def next_allocation(self) -> int:
        """Bytes the next :meth:`get_buffer` allocates for the large request being received (0: none)."""
        return self._buffer.next_allocation

    def buffer_updated(self, nbytes: int) -> list[Event]:
        if self.closed is not None:
            return []
        return self._events(*self._buffer.buffer_updated(nbytes))

    def receive_data(self, data: bytes) -> list[Event]:
        if self.closed is not None:
            return []
        return self._events(*self._buffer.feed(data))

    def _events(self, frames: Sequence[Frame], reason: str | None) -> list[Event]:
        events: list[Event] = []
        auth = self.authenticator
        for payload in frames:
            if auth is not None and not auth.complete:
                step = self._authenticate(auth, payload)
                events.extend(step)
                if any(type(event) is Authenticated for event in step):
                    self._buffer.max_bytes = self._max_request_bytes
            else:
                events.append(self._request(payload))
            if isinstance(events[-1], Close):
                break
        else:
            if reason is not None:
                events.append(Close(reason))
        if events and isinstance(events[-1], Close):
            self.closed = events[-1].reason
            self._buffer.clear()
        return events

    def _request(self, payload: Frame) -> Request | Reply | Close:
        if len(payload) < _PEEK.size:
            return Close(f"request of {len(payload)} bytes is shorter than a request header")
        api_key, api_version, correlation_id = _PEEK.unpack_from(payload, 0)
        versions = self.supported.get(api_key)
        if versions is None:
            not_built = NOT_BUILT_APIS.get(api_key)
            if not_built is not None:
                return Close(f"unknown or unsupported API key {api_key} ({not_built[0]}): {not_built[1]}")
            return Close(f"unknown or unsupported API key {api_key}")
        if not versions[0] <= api_version <= versions[1]:
            if api_key == API_VERSIONS_KEY and api_version > versions[1]:
                return Reply(api_versions_error_reply(correlation_id, self.supported))
            return Close(f"API key {api_key} version {api_version} outside the supported "
                         f"{versions[0]}..{versions[1]}")
        header = _parse_header(payload, api_key, api_version)
        if isinstance(header, str):
            return Close(header)
        if api_key == API_VERSIONS_KEY:
            return Reply(api_versions_reply(header, payload, self.supported))
        if api_key in SASL_VERSIONS and self.authenticator is not None:  # after authentication (KafkaApis)
            step = self.authenticator.illegal_state(api_key, api_version, correlation_id,
                                                    "after successful authentication")
            return Reply(step.reply) if step.reply is not None else Close(step.failure or "")
        return Request(header, payload)

    def _authenticate(self, auth: SaslAuthenticator, payload: Frame) -> list[Event]:
        """A frame before SASL authentication completed: ApiVersions (once, before the handshake), the
        handshake, the tokens (in SaslAuthenticate requests, or raw after a v0 handshake)."""
        if auth.expects_raw_token():
            return _sasl_events(auth.receive_raw_token(payload))
        if len(payload) < _PEEK.size:
            return [Close(f"request of {len(payload)} bytes is shorter than a request header")]
        api_key, api_version, correlation_id = _PEEK.unpack_from(payload, 0)
        if api_key == API_VERSIONS_KEY:
            versions = self.supported.get(API_VERSIONS_KEY)
            if versions is not None and api_version > versions[1]:  # KIP-511's answer: the retry is the one
                return [self._request(payload)]
            if not auth.api_versions_allowed():
                return [Close("unexpected ApiVersions request during SASL authentication")]
            return [self._request(payload)]
        if api_key not in SASL_VERSIONS:
            return _sasl_events(auth.receive(payload, api_key, api_version, correlation_id, 0))
        low, high = SASL_VERSIONS[api_key]
        if not low <= api_version <= high:
            return [Close(f"API key {api_key} version {api_version} outside the supported {low}..{high}")]
        header = _parse_header(payload, api_key, api_version)
        if isinstance(header, str):
            return [Close(header)]
        return _sasl_events(auth.receive(payload, api_key, api_version, correlation_id, header.header_size))


#: What :class:`ServerConnection` returns for the bytes it is given.
Event: TypeAlias = Request | Reply | Close | Authenticated


def _sasl_events(step: SaslStep) -> list[Event]:
    """The events of one step of a SASL exchange: its reply, then success or the delayed close."""
    events: list[Event] = []
    if step.reply is not None:
        events.append(Reply(step.reply))
    if step.principal is not None:
        events.append(Authenticated(step.principal))  # the connection's frames may be large again
    if step.failure is not None:
        events.append(Close(step.failure, step.delay_ms, failed_authentication=step.delay_ms > 0))
    return events


#: (API key, API version) -> kio's reader of that request's header (looking the schema up imports a
#: module path each time: ~10 us per request).
_HEADER_READERS: dict[tuple[int, int], Reader[RequestHeaderV1 | RequestHeaderV2]] = {}


def _parse_header(payload: Frame, api_key: int, api_version: int) -> RequestHeader | str:
    """The request header of ``payload`` (kio's header schema for the API and version: v1, or v2 with
    tagged fields for flexible versions), or the reason it does not parse."""
    reader = _HEADER_READERS.get((api_key, api_version))
    if reader is None:
        try:
            try:
                schema = load_request_schema(api_key, api_version).__header_schema__
            # KIP-966's schemas kio 0.6.5 lacks (GetReplicaLogInfo, ElectLeaders v3)
            except (KioIndexError, ImportError):
                schema = kio_extra.load_request_schema(api_key, api_version).__header_schema__
        except KioIndexError as exc:
            return f"no schema for API key {api_key} version {api_version}: {exc}"
        reader = _HEADER_READERS[(api_key, api_version)] = entity_reader(schema)
    try:
        header, size = reader(payload, 0)
    except Exception as exc:  # kio's native reader raises its own errors (underflow, bad values)
        return f"malformed request header (API key {api_key} version {api_version}): {exc}"
    return RequestHeader(api_key, api_version, int(header.correlation_id), header.client_id, size)


class ResponseDecoder:
    """The client side of one connection: a byte stream in, ``(correlation id, payload)`` out, the
    payload being the response without its size prefix (header included) for the wire layer, which
    knows the API and version from the request it answers. ``feed`` raises ValueError when the stream is
    broken (a size outside [4, ``max_response_bytes``]): the connection must be closed."""

    def __init__(self, max_response_bytes: int = DEFAULT_MAX_REQUEST_BYTES) -> None:
        self._buffer = _FrameBuffer(max_response_bytes)

    def get_buffer(self) -> memoryview:
        """Where the next bytes go, for a reader that receives into given buffers (then
        :meth:`buffer_updated`, not :meth:`feed`); a response too large for the staging buffer is handed
        over as a read-only memoryview (:class:`_FrameBuffer`)."""
        return self._buffer.get_buffer()

    def buffer_updated(self, nbytes: int) -> list[tuple[int, Frame]]:
        """``nbytes`` arrived in :meth:`get_buffer`'s buffer: the responses they complete, as :meth:`feed`."""
        return self._responses(*self._buffer.buffer_updated(nbytes))

    def feed(self, data: bytes) -> list[tuple[int, Frame]]:
        return self._responses(*self._buffer.feed(data))

    def _responses(self, frames: Sequence[Frame], reason: str | None) -> list[tuple[int, Frame]]:
        out: list[tuple[int, Frame]] = []
        for payload in frames:
            if len(payload) < 4:
                raise ValueError(f"response of {len(payload)} bytes has no correlation id")
            out.append((_SIZE.unpack_from(payload, 0)[0], payload))
        if reason is not None:
            raise ValueError(reason)
        return out
