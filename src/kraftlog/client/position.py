"""KIP-320's position rule, sans-I/O: a consumer's fetch position and what the leader's
OffsetForLeaderEpoch answer makes of it. Used by the consumer (:mod:`kraftlog.client.consumer`) and the
Spark source (:mod:`kraftlog.spark.source`); nothing here sends, waits or reads a clock.

**The position** (Kafka's ``SubscriptionState.FetchPosition``): ``offset`` is the next offset to fetch,
``offset_epoch`` the leader epoch of the last consumed record (record ``offset - 1``), None when unknown
(Kafka's empty ``offsetEpoch``; -1, ``RecordBatch.NO_PARTITION_LEADER_EPOCH``, on the wire). Kafka's
FetchPosition also holds ``currentLeader`` (the leader and its epoch from Metadata); here both callers
read the current leader from their metadata when they send, and put its epoch in the request as
CurrentLeaderEpoch, so the position is the pair. A position without an epoch is never validated
(KIP-320: "If we do not have one ... the consumer will skip this step").

**The rule** (:func:`validate_position`, Kafka's ``SubscriptionState.maybeCompleteValidation`` with the
error handling of ``OffsetsForLeaderEpochUtils.handleResponse``): the leader answered
OffsetForLeaderEpoch(``offset_epoch``) with :class:`EpochEndOffset` ``(error, leader epoch, end offset)``,
the end of that epoch (or of the largest epoch below it) in the leader's log.

* an error: :attr:`Validation.RETRIABLE` (refresh metadata, ask again). Kafka retries every error but
  TOPIC_AUTHORIZATION_FAILED, which kraftlog does not have;
* end offset >= position offset: :attr:`Validation.VALID`, the log still holds what was read;
* end offset < position offset: the log was truncated under the position and diverges from
  ``end offset`` on ("the first offset known to diverge", KIP-320); the divergent position is
  ``(end offset, leader epoch)``. With an auto reset policy :attr:`Validation.TRUNCATED` (seek there,
  Kafka's ``seekValidated``), without one :attr:`Validation.LOG_TRUNCATION` (raise
  ``LogTruncationException`` with that divergent offset);
* an undefined answer (end offset or epoch -1: the leader knows no epoch at or below ours): a truncation
  whose divergence is unknown. With an auto reset policy :attr:`Validation.RESET` (Kafka's
  ``requestOffsetReset``), without one :attr:`Validation.LOG_TRUNCATION` with no divergent position.

What "an auto reset policy" is belongs to the caller: the consumer's ``auto.offset.reset`` other than
``none``; the Spark source's ``failOnDataLoss=false``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

#: Kafka's ``RecordBatch.NO_PARTITION_LEADER_EPOCH`` (and ``UNDEFINED_EPOCH``): no epoch, on the wire.
NO_EPOCH = -1
#: Kafka's ``UNDEFINED_EPOCH_OFFSET``: OffsetForLeaderEpoch found no end offset.
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """Kafka's ``FetchPosition``: ``offset`` the next offset to fetch, ``offset_epoch`` the leader epoch of
    record ``offset - 1`` (>= 0), None when unknown. Hashable; equal when both fields are. (The Spark
    source's offset options also hold offset -2 / -1, earliest / latest, until they are resolved.)"""

    offset: int
    offset_epoch: int | None = None

    @classmethod
    def from_wire(cls, offset: int, leader_epoch: int) -> FetchPosition:
        """A position from a wire epoch (OffsetFetch's committed leader epoch, a batch's partition leader
        epoch): a negative epoch (-1, no epoch) is None."""
        return cls(offset, leader_epoch if leader_epoch >= 0 else None)

    @property
    def wire_epoch(self) -> int:
        """``offset_epoch`` as the wire carries it (OffsetCommit, OffsetForLeaderEpoch): -1 when None."""
        return NO_EPOCH if self.offset_epoch is None else self.offset_epoch


@dataclass(frozen=True, slots=True)
class EpochEndOffset:
    """One partition of an OffsetForLeaderEpoch answer (Kafka's ``EpochEndOffset``): ``error_code``
    (Kafka's, 0 = NONE), ``leader_epoch`` the largest epoch <= the one asked for that the leader knows and
    ``end_offset`` where it ends in the leader's log (both -1 when undefined)."""

    error_code: int
    leader_epoch: int
    end_offset: int

    @property
    def has_undefined_epoch_or_offset(self) -> bool:
        """Kafka's ``hasUndefinedEpochOrOffset``: no end offset or no epoch (the leader's log has no epoch at
        or below the one asked for)."""
        return self.end_offset < 0 or self.leader_epoch < 0


class Validation(enum.Enum):
    """What an OffsetForLeaderEpoch answer makes of a position (KIP-320; see the module doc)."""

    #: the log holds the position: fetch from it (Kafka's ``completeValidation``)
    VALID = "valid"
    #: the answer carried an error: refresh metadata and validate again (``partitionsToRetry``)
    RETRIABLE = "retriable"
    #: truncated under the position, reset policy: seek to the divergent offset (``seekValidated``)
    TRUNCATED = "truncated"
    #: truncated, divergence unknown, reset policy: reset the offset by the policy (``requestOffsetReset``)
    RESET = "reset"
    #: truncated, no reset policy: report it (Kafka's ``LogTruncation`` / ``LogTruncationException``)
    LOG_TRUNCATION = "log truncation"


@dataclass(frozen=True, slots=True)
class PositionValidation:
    """The outcome of :func:`validate_position`: ``validation`` what to do, ``position`` the position
    validated, ``divergent`` the first offset known to diverge with its epoch (the answer's end offset and
    leader epoch) for a truncation with a known divergence, else None; ``error_code`` the answer's error
    (0 unless RETRIABLE)."""

    validation: Validation
    position: FetchPosition
    divergent: FetchPosition | None = None
    error_code: int = 0

    @property
    def truncated(self) -> bool:
        """The log was truncated under the position (TRUNCATED, RESET or LOG_TRUNCATION)."""
        return self.validation in _TRUNCATIONS


_TRUNCATIONS = frozenset({Validation.TRUNCATED, Validation.RESET, Validation.LOG_TRUNCATION})


def validate_position(position: FetchPosition, answer: EpochEndOffset, *, reset_policy: bool) -> PositionValidation:
    """KIP-320's check of ``position`` against the leader's OffsetForLeaderEpoch ``answer`` for
    ``position.offset_epoch`` (Kafka's ``SubscriptionState.maybeCompleteValidation``; errors as
    ``OffsetsForLeaderEpochUtils.handleResponse``). ``reset_policy``: an auto reset policy applies (the
    consumer's earliest/latest, the Spark source's failOnDataLoss=false). Returns the
    :class:`PositionValidation` (see the module doc for each outcome). ValueError for a position without
    an epoch: such a position is not validated."""
    if position.offset_epoch is None:
        raise ValueError(f"position {position} has no leader epoch to validate (KIP-320 skips validation)")
    if answer.error_code != 0:
        return PositionValidation(Validation.RETRIABLE, position, None, answer.error_code)
    if answer.has_undefined_epoch_or_offset:
        return PositionValidation(Validation.RESET if reset_policy else Validation.LOG_TRUNCATION, position)
    if answer.end_offset < position.offset:
        divergent = FetchPosition(answer.end_offset, answer.leader_epoch)
        return PositionValidation(Validation.TRUNCATED if reset_policy else Validation.LOG_TRUNCATION, position,
                                  divergent)
    return PositionValidation(Validation.VALID, position)
