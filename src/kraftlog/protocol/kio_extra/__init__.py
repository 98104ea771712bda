"""kio-style schemas for the two KIP-966 APIs kio 0.6.5 lacks: GetReplicaLogInfo v0 (API key 93) and
ElectLeaders v3 (API key 43).

Why they exist: KIP-966 part 2 (the Unclean Recovery Manager) needs both, and neither is in kio 0.6.5
(Kafka trunk has only GetReplicaLogInfo's JSON, marked unstable; ElectLeaders v3 exists only in the
KIP). Each module is written by hand from the KIP's JSON and trunk's
``GetReplicaLogInfoRequest.json`` / ``GetReplicaLogInfoResponse.json``, in the exact shape of kio's
generated modules (frozen slotted dataclasses with ``__type__``, ``__version__``, ``__flexible__``,
``__api_key__``, ``__header_schema__`` and ``kafka_type`` field metadata), so that kio's own
``kio.serial.entity_reader`` / ``entity_writer`` read and write them: no codec here. Each module's
docstring says where the KIP and trunk differ and which it follows.

:func:`load_request_schema` / :func:`load_response_schema` index them as ``kio.index`` indexes kio's
own entities, raising ``kio.index.UnknownEntity`` for any other (API key, version);
``kraftlog.protocol.wire`` falls back to them when kio has no schema.
"""

from __future__ import annotations

from kio.index import UnknownEntity
from kio.static.protocol import RequestPayload, ResponsePayload

from .elect_leaders.v3 import request as _elect_leaders_v3_request
from .elect_leaders.v3 import response as _elect_leaders_v3_response
from .get_replica_log_info.v0 import request as _get_replica_log_info_v0_request
from .get_replica_log_info.v0 import response as _get_replica_log_info_v0_response

__all__ = ["REQUESTS", "RESPONSES", "load_request_schema", "load_response_schema"]

#: (API key, version) -> request payload entity.
REQUESTS: dict[tuple[int, int], type[RequestPayload]] = {
    (43, 3): _elect_leaders_v3_request.ElectLeadersRequest,
    (93, 0): _get_replica_log_info_v0_request.GetReplicaLogInfoRequest,
}
#: (API key, version) -> response payload entity.
RESPONSES: dict[tuple[int, int], type[ResponsePayload]] = {
    (43, 3): _elect_leaders_v3_response.ElectLeadersResponse,
    (93, 0): _get_replica_log_info_v0_response.GetReplicaLogInfoResponse,
}


def load_request_schema(api_key: int, version: int) -> type[RequestPayload]:
    """The request payload entity for (API key, version), as ``kio.index.load_request_schema``."""
    try:
        return REQUESTS[(api_key, version)]
    except KeyError:
        raise UnknownEntity(f"kio_extra has no request schema for ({api_key=}, {version=})") from None


def load_response_schema(api_key: int, version: int) -> type[ResponsePayload]:
    """The response payload entity for (API key, version), as ``kio.index.load_response_schema``."""
    try:
        return RESPONSES[(api_key, version)]
    except KeyError:
        raise UnknownEntity(f"kio_extra has no response schema for ({api_key=}, {version=})") from None
