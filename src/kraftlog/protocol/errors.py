"""Kafka error codes under Kafka's own (upper-case) names.

Built from kio's generated ``ErrorCode`` table so the codes are exactly Kafka's; e.g.
``Errors.FENCED_LEADER_EPOCH == 74``, ``Errors.INELIGIBLE_REPLICA == 107``.
"""

from __future__ import annotations

from enum import IntEnum

from kio.schema.errors import ErrorCode

Errors = IntEnum("Errors", {code.name.upper(): int(code) for code in ErrorCode})
Errors.__doc__ = "Kafka error codes (Kafka's names, Kafka's numbers), generated from kio."

#: Errors a client or broker retries after refreshing metadata (Kafka's RetriableException set).
RETRIABLE: frozenset[int] = frozenset(int(code) for code in ErrorCode if code.retriable)


def is_retriable(code: int) -> bool:
    """True when Kafka classifies ``code`` as retriable."""
    return code in RETRIABLE


class WireError(ValueError):
    """Bytes or a message that cannot cross the wire; ``error_code`` is the Kafka error it maps to
    (INVALID_REQUEST unless a subclass says otherwise)."""

    error_code: int = Errors.INVALID_REQUEST
