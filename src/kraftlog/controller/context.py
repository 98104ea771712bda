"""What the controller's managers share: the metadata record type and the :class:`ControllerContext`.

Kafka's ``QuorumController`` owns the metadata log and hands its managers (``ClusterControlManager``,
``ReplicationControlManager``, ``ConfigurationControlManager``) what they need; here each manager holds an
explicit reference to the controller through :class:`ControllerContext`, the narrow face it may use: the
current :class:`~kraftlog.metadata.image.MetadataImage`, the log end offset, ``append`` (commit and replay
records at once: a single-node quorum) and the node's outbox (for requests that answer later).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..metadata.image import MetadataImage
from ..metadata.records import MetadataRecord
from ..protocol import messages as m

__all__ = ["ControllerContext", "MetadataRecord"]


class ControllerContext(Protocol):
    """The face of the ``QuorumController`` its managers use."""

    @property
    def image(self) -> MetadataImage:
        """The image replayed from the whole metadata log (replaced by every ``append``)."""

    @property
    def end_offset(self) -> int:
        """The metadata log end offset (the next record's offset; a RegisterBrokerRecord's is its broker
        epoch)."""

    def append(self, records: Sequence[MetadataRecord], now_ms: int) -> None:
        """Commit ``records`` as one batch and replay them into ``image`` (nothing for an empty list);
        raises ``MetadataLogFailure`` when the log cannot be written (the controller has stopped)."""

    def send_response(self, request: m.Envelope, message: m.ElectLeadersResponse) -> None:
        """Queue the response to ``request`` (an ElectLeaders request answered once its recoveries ended)."""

    def cancel_request(self, correlation_id: int) -> None:
        """Forget an in-flight request of the controller's: its answer, if any, is not read."""
