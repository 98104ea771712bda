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
  :mod:`kraftlog.metadata.codec`, as record values inside one metadata-log batch; its ``batches`` (the
  KRaft log's, :class:`~kraftlog.protocol.raft_records.RaftBatch`) are one record batch each, in the batch's
  leader epoch, a control batch's records KRaft's control records as Kafka writes them (:mod:`.raft_batches`).
  The metadata fetch is Fetch v15-v18 (v17: the fetcher's directory id, KIP-853; v18: its high watermark),
  sent at the lowest version that carries it (:func:`default_version`); a data Fetch stops at v15.

Kafka nests partitions by topic; the core flattens them (each partition names its topic). Encoding
groups partitions by topic in order of first appearance, as Kafka builds these lists, and decoding
flattens topic by topic: a message whose partitions of one topic are contiguous (the normal case)
round-trips to an equal message; one that interleaves topics comes back grouped by topic. Fetch groups
by topic name (``topic``) at v4-v12 and by topic id (``topic_id``) at v13-v15: the table's group rows
carry a version range.
OffsetFetch v8 nests one level more (a list of groups): the core's one group is a one-element
``Groups`` list, and bytes naming any other number of groups are a :class:`WireError`. KRaft's quorum APIs
(Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum; KIP-595) nest exactly ``__cluster_metadata``
partition 0, which the core flattens away: bytes naming anything else are a :class:`WireError` (Kafka's
KafkaRaftClient answers INVALID_REQUEST), and a response without topics (Kafka's answer to a top-level
error) decodes with the partition's fields at their none values (``apis._one_partition``).

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

Untrusted lengths: kio 0.6.5's native reader allocates an array from its length field before reading it
and aborts the process (not an exception) when that allocation fails, so the bytes of every request and
response body and KRaft control record are walked first (:mod:`.prescan`, generated per schema; the
headers have no arrays): an array longer than the bytes left can hold is a :class:`WireError`.

The package's modules, each usable on its own: :mod:`.mapper` (the generic mapper and the row types of
the table), :mod:`.apis` (the table and the version lookups), :mod:`.shapes` (the messages mapped by
hand), :mod:`.codec` (:func:`to_kio` / :func:`from_kio` and the bytes), :mod:`.prescan` (the length
check before kio reads). This module exports what callers use.
"""

from __future__ import annotations

from ..errors import WireError
from ..records import CorruptRecordError, UnsupportedCompressionError, decode_batches, encode_batches
from .apis import (
    RESPONSE_TYPES,
    mapped_versions,
    response_type_for,
    supported_api_versions,
    supported_versions,
)
from .codec import (
    GATHER_MIN_BYTES,
    decode_request,
    decode_request_frame,
    decode_response,
    default_version,
    encode_request,
    encode_response,
    frame,
    frame_response,
    from_kio,
    peek_request_header,
    roundtrip,
    to_kio,
)
from .mapper import UnsupportedVersionError

__all__ = [
    "WireError", "UnsupportedVersionError", "CorruptRecordError", "UnsupportedCompressionError",
    "to_kio", "from_kio",
    "encode_request", "decode_request", "decode_request_frame", "encode_response", "decode_response",
    "supported_versions", "mapped_versions", "supported_api_versions", "default_version",
    "peek_request_header", "frame", "frame_response", "roundtrip", "response_type_for", "RESPONSE_TYPES",
    "encode_batches", "decode_batches", "GATHER_MIN_BYTES",
]
