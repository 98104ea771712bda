"""What a broker's components share to send requests: the contexts of the requests a broker sends and
the channel they go out through (Kafka's ``NodeToControllerChannelManager`` / ``RequestChannel``, here the
broker's :class:`~kraftlog.protocol.node.NodeBase` outbox).

Each request a component sends carries one of the contexts below; the :class:`~kraftlog.broker.broker.Broker`
hands its response (or its timeout) back to the component that owns that kind of request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ..protocol.node import Address, Envelope, Message

#: The controller's node id, the destination of every controller-bound request.
CONTROLLER = "controller"


@dataclass(slots=True, frozen=True)
class RegisterContext:
    """A BrokerRegistration in flight (:class:`~kraftlog.broker.lifecycle.BrokerLifecycleManager`)."""


@dataclass(slots=True, frozen=True)
class HeartbeatContext:
    """A BrokerHeartbeat in flight; ``reports_offline_dir``: it carries the offline log directory (KIP-858)."""

    reports_offline_dir: bool


@dataclass(slots=True, frozen=True)
class MetadataFetchContext:
    """A fetch of the metadata log in flight (:class:`~kraftlog.broker.metadata_publisher.MetadataLoader`)."""


@dataclass(slots=True, frozen=True)
class FetchSnapshotContext:
    """A FetchSnapshot in flight (:class:`~kraftlog.broker.metadata_loader.MetadataLoader`): the snapshot's end offset
    and epoch, and the byte position asked for."""

    end_offset: int
    epoch: int
    position: int


@dataclass(slots=True, frozen=True)
class FetchContext:
    """A follower Fetch to ``leader`` in flight, for ``keys`` (topic, partition) in the leader epochs
    ``epochs`` (parallel to ``keys``) (:class:`~kraftlog.broker.replica_fetcher.ReplicaFetcherManager`)."""

    leader: int
    keys: list[tuple[str, int]]
    epochs: list[int]


@dataclass(slots=True, frozen=True)
class AlterPartitionContext:
    """An AlterPartition in flight: per partition, its key and the sequence of the pending change sent
    (:class:`~kraftlog.broker.replica_manager.ReplicaManager`)."""

    items: tuple[tuple[tuple[str, int], int], ...]


@dataclass(slots=True, frozen=True)
class ForwardContext:
    """A client's admin request forwarded to the controller (Kafka's ``ForwardingManager``): ``request`` is
    the client's, answered with the controller's response."""

    request: Envelope


@dataclass(slots=True, frozen=True)
class AutoTopicCreationContext:
    """A CreateTopics the broker itself sent to the controller for the ``topics`` a Metadata request named
    (Kafka's ``AutoTopicCreationManager``); ``on_done(topics)`` is called when the controller answers, which
    the broker hands to the :class:`~kraftlog.broker.apis.forwarding.ForwardingManager` as it does every
    controller answer it does not route itself."""

    topics: tuple[str, ...]
    on_done: Callable[[tuple[str, ...]], None]


#: The context of any request a broker sends.
BrokerContext: TypeAlias = (RegisterContext | HeartbeatContext | MetadataFetchContext | FetchSnapshotContext
                            | FetchContext | AlterPartitionContext | ForwardContext | AutoTopicCreationContext)


class BrokerChannel(Protocol):
    """The broker's outbox as its components use it (implemented by :class:`~kraftlog.protocol.node.NodeBase`):
    ``send_request`` returns the request's correlation id; times in ms."""

    def send_request(self, dst: Address, message: Message, now_ms: int, timeout_ms: int,
                     context: BrokerContext) -> int: ...

    def send_response(self, request: Envelope, message: Message) -> None: ...


#: Takes the log directory offline after an I/O error: ``(now_ms, error, what the broker was doing)``
#: (the broker's ``_log_dir_failed``, Kafka's ``LogDirFailureChannel.maybeAddOfflineLogDir``).
LogDirFailureHandler: TypeAlias = Callable[[int, OSError, str], None]

#: Adds one line to the node's log.
Note: TypeAlias = Callable[[str], None]
