"""Kafka's ``KafkaApis``: the requests a broker serves, one handler per API in a dispatch table (request
type → handler), grouped by family: replication (:mod:`.replication`), metadata (:mod:`.metadata`), groups and
producer ids (:mod:`.groups`), group admin (:mod:`.group_admin`); admin requests from clients are forwarded to
the controller (:mod:`.forwarding`)."""

from __future__ import annotations

from ...protocol.errors import Errors
from ...protocol.listeners import (
    CLUSTER_ACTION_APIS,
    FORWARDED_APIS,
    cluster_action_refusal,
    error_response,
    node_identity_refusal,
)
from ...protocol.node import Envelope
from ..channel import BrokerChannel
from .forwarding import ForwardingManager
from .group_admin import GroupAdminApis
from .groups import GroupApis
from .metadata import MetadataApis
from .replication import ReplicationApis
from .table import Handler, HandlerTable

__all__ = ["KafkaApis", "ForwardingManager", "GroupApis", "GroupAdminApis", "MetadataApis", "ReplicationApis",
           "Handler", "HandlerTable"]


class KafkaApis:
    """Routes each request a broker receives to its handler (``table``: the families' rows, then
    NOT_CONTROLLER for the controller's inter-broker APIs no family serves: the broker is not the
    controller). On a listener (the TCP driver), Kafka's per-listener rules come first: an inter-broker or
    controller API on the client listener is refused with CLUSTER_AUTHORIZATION_FAILED, so is a request a node's
    principal sends in another node's name (the node identity rule; ``super_users``: ``super.users``, exempt), and
    an admin request is forwarded to the controller."""

    def __init__(self, channel: BrokerChannel, super_users: frozenset[str], forwarding: ForwardingManager,
                 replication: ReplicationApis, metadata: MetadataApis, groups: GroupApis,
                 group_admin: GroupAdminApis) -> None:
        self._channel = channel
        self._super_users = super_users
        self.forwarding = forwarding
        self.table: HandlerTable = {**replication.handlers(), **metadata.handlers(), **groups.handlers(),
                                    **group_admin.handlers()}
        for kind in sorted(CLUSTER_ACTION_APIS, key=lambda k: k.API_KEY):
            self.table.setdefault(kind, self._not_controller)

    def handle(self, now_ms: int, env: Envelope) -> bool:
        """Serve ``env``'s request; False when the listener's rules answered it (refused or forwarded), True
        when it went to its handler (or was ignored: no handler)."""
        kind = type(env.message)
        if env.listener is not None:  # the TCP driver: Kafka's per-listener authorization and forwarding
            refusal = cluster_action_refusal(env) or node_identity_refusal(env, self._super_users)
            if refusal is not None:
                self._channel.send_response(env, refusal)
                return False
            if kind in FORWARDED_APIS:
                self.forwarding.forward(now_ms, env)
                return False
        handler = self.table.get(kind)
        if handler is not None:
            handler(now_ms, env)
        return True

    def _not_controller(self, now_ms: int, env: Envelope) -> None:
        """A controller API sent to a broker (its internal listener): the broker is not the controller."""
        self._channel.send_response(env, error_response(env.message, Errors.NOT_CONTROLLER))
