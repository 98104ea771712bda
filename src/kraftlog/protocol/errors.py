"""Kafka error codes under Kafka's own (upper-case) names.

Built from kio's generated ``ErrorCode`` table so the codes are exactly Kafka's; e.g.
``Errors.FENCED_LEADER_EPOCH == 74``, ``Errors.INELIGIBLE_REPLICA == 107``.
"""

from __future__ import annotations

from enum import IntEnum

from kio.schema.errors import ErrorCode

#: KIP-966's REQUEST_LIMIT_REACHED ("the items sent in the request but over the limit will be returned
#: with REQUEST_LIMIT_REACHED. It is a retriable error"): Kafka never assigned it a number, since the
#: Unclean Recovery Manager was not merged. kraftlog uses this code, far above Kafka's (133 in 4.x) so
#: that no Kafka release can give it another meaning.
REQUEST_LIMIT_REACHED_CODE = 20000

Errors = IntEnum("Errors", {code.name.upper(): int(code) for code in ErrorCode}
                 | {"REQUEST_LIMIT_REACHED": REQUEST_LIMIT_REACHED_CODE})
Errors.__doc__ = ("Kafka error codes (Kafka's names, Kafka's numbers), generated from kio, plus KIP-966's "
                  "REQUEST_LIMIT_REACHED (kraftlog's number, see REQUEST_LIMIT_REACHED_CODE).")

#: Errors a client or broker retries after refreshing metadata (Kafka's RetriableException set).
RETRIABLE: frozenset[int] = (frozenset(int(code) for code in ErrorCode if code.retriable)
                             | {REQUEST_LIMIT_REACHED_CODE})


def is_retriable(code: int) -> bool:
    """True when Kafka classifies ``code`` as retriable."""
    return code in RETRIABLE


class WireError(ValueError):
    """Bytes or a message that cannot cross the wire; ``error_code`` is the Kafka error it maps to
    (INVALID_REQUEST unless a subclass says otherwise)."""

    error_code: int = Errors.INVALID_REQUEST
