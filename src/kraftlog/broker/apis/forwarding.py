"""Kafka's ``ForwardingManager``: an admin request a client sent to a broker (CreateTopics, DeleteTopics,
IncrementalAlterConfigs, ElectLeaders, CreatePartitions, the legacy AlterConfigs) goes to the controller,
and its answer is relayed to the client; REQUEST_TIMED_OUT when none comes within ``request.timeout.ms``.
The answer to a CreateTopics the broker sent itself (automatic topic creation) goes back to its sender."""

from __future__ import annotations

from ...protocol.errors import Errors
from ...protocol.listeners import error_response
from ...protocol.node import Envelope, Message
from ..channel import CONTROLLER, AutoTopicCreationContext, BrokerChannel, ForwardContext


class ForwardingManager:
    """Forwards through ``channel``; ``request_timeout_ms``: how long to wait for the controller."""

    def __init__(self, channel: BrokerChannel, request_timeout_ms: int) -> None:
        self._channel = channel
        self.request_timeout_ms = request_timeout_ms

    def forward(self, now_ms: int, env: Envelope) -> None:
        """Send the client's request in ``env`` to the controller."""
        self._channel.send_request(CONTROLLER, env.message, now_ms, self.request_timeout_ms, ForwardContext(env))

    def on_response(self, context: ForwardContext | AutoTopicCreationContext, message: Message) -> None:
        """Relay the controller's answer to the client; the answer to an automatic topic creation goes to
        its sender (:class:`~kraftlog.broker.apis.auto_topic_creation.AutoTopicCreationManager`)."""
        if isinstance(context, AutoTopicCreationContext):
            context.on_done(context.topics)
            return
        self._channel.send_response(context.request, message)

    def on_timeout(self, context: ForwardContext) -> None:
        """No answer from the controller: REQUEST_TIMED_OUT to the client."""
        self._channel.send_response(context.request, error_response(context.request.message,
                                                                    Errors.REQUEST_TIMED_OUT))
