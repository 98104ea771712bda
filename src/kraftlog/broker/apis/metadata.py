"""The metadata APIs a broker serves from its metadata image (Kafka's ``KafkaApis`` over its
``KRaftMetadataCache``): Metadata, DescribeTopicPartitions (KIP-966), DescribeConfigs."""

from __future__ import annotations

import uuid

from ...metadata.image import BrokerRegistration, MetadataImage
from ...metadata.records import NO_LEADER
from ...metadata.topic_names import validate_topic_name
from ...protocol import messages as m
from ...protocol.errors import Errors
from ...protocol.node import Envelope
from ..channel import BrokerChannel
from ..config import BrokerConfig
from ..describe import describe_configs, describe_topic_partitions, describe_user_scram_credentials
from ..metadata_cache import MetadataCache
from .auto_topic_creation import AutoTopicCreationManager
from .table import HandlerTable, entry

NONE = Errors.NONE


def endpoint(image: MetadataImage, broker_id: int, listener: str | None) -> tuple[str, int] | None:
    """(host, port) of registered broker ``broker_id`` on ``listener`` (Kafka's MetadataCache answers by
    the request's listener name), None when it registered no such listener; the simulator's
    placeholder ``broker-<id>:9092`` when there is no listener."""
    if listener is None:
        return f"broker-{broker_id}", 9092
    registration: BrokerRegistration = image.brokers[broker_id]
    return registration.endpoint(listener)


class MetadataApis:
    """Metadata, DescribeTopicPartitions and DescribeConfigs for broker ``broker_id`` of cluster
    ``cluster_id``; ``auto_topic_creation`` creates the topics a Metadata request may create (configured
    from the broker's static config, ``cache.static``)."""

    def __init__(self, broker_id: int, cluster_id: str, cache: MetadataCache, channel: BrokerChannel) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._cache = cache
        self._channel = channel
        self.auto_topic_creation = AutoTopicCreationManager(channel, BrokerConfig.from_static(cache.static))

    def handlers(self) -> HandlerTable:
        """This family's rows of the dispatch table."""
        return dict((
            entry(m.MetadataRequest, self.metadata),
            entry(m.DescribeTopicPartitionsRequest, self.describe_topic_partitions),
            entry(m.DescribeConfigsRequest, self.describe_configs),
            entry(m.DescribeUserScramCredentialsRequest, self.describe_user_scram_credentials),
        ))

    def metadata(self, now_ms: int, env: Envelope[m.MetadataRequest]) -> None:
        """Kafka's ``KafkaApis.handleTopicMetadataRequest``: brokers are the unfenced ones, each with its
        endpoint on the listener the request arrived on (a broker without that listener is left out, as
        Kafka's MetadataCache does); in the simulator (no listener) the placeholder ``broker-<id>:9092``.

        A named topic the image lacks: when the request allows auto-creation (``allow_auto_topic_creation``;
        a client's Metadata before v4 always does), names topics (not all of them) and
        ``auto.create.topics.enable`` is true, it is created through the controller and answered as
        :meth:`AutoTopicCreationManager.create_topics` says (LEADER_NOT_AVAILABLE while it is created);
        otherwise INVALID_TOPIC_EXCEPTION for an illegal name, UNKNOWN_TOPIC_OR_PARTITION for a legal one.

        ``controller_id``: a broker of the response, as a KRaft broker answers (Kafka's
        ``KRaftMetadataCache.getControllerId`` names a random alive broker: clients send admin requests
        there and brokers forward them; librdkafka's admin client waits for one and times out on -1).
        This broker when it is in the response, else the first one (no random draw: the simulator's
        history stays as it was); -1 when there is none."""
        req, listener = env.message, env.listener
        image = self._cache.image
        brokers = []
        for b in sorted(image.brokers):
            reg = image.brokers[b]
            if reg.fenced:
                continue
            address = endpoint(image, b, listener)
            if address is not None:
                brokers.append(m.MetadataBroker(b, address[0], address[1], reg.rack))
        names = sorted(image.topics) if req.topics is None else list(req.topics)
        missing = [name for name in names if name not in image.topics]
        creating: dict[str, int] = {}
        if missing and req.topics is not None and req.allow_auto_topic_creation and self.auto_topic_creation.enabled:
            creating = self.auto_topic_creation.create_topics(now_ms, missing)
        topics = []
        for name in names:
            t = image.topics.get(name)
            if t is None:
                error = creating.get(name)
                if error is None:
                    error = (Errors.UNKNOWN_TOPIC_OR_PARTITION if validate_topic_name(name) is None
                             else Errors.INVALID_TOPIC_EXCEPTION)
                topics.append(m.MetadataTopic(error, name, uuid.UUID(int=0), ()))
                continue
            parts = []
            for i in range(t.partition_count):
                part = image.partitions[(name, i)]
                offline = tuple(r for r in part.replicas if not image.is_acceptable_leader(r))
                err = Errors.LEADER_NOT_AVAILABLE if part.leader == NO_LEADER else NONE
                parts.append(m.MetadataPartition(err, i, part.leader, part.leader_epoch, part.replicas, part.isr,
                                                 offline))
            topics.append(m.MetadataTopic(NONE, name, t.topic_id, tuple(parts)))
        ids = [b.node_id for b in brokers]
        controller_id = self.broker_id if self.broker_id in ids else (ids[0] if ids else -1)
        self._channel.send_response(env, m.MetadataResponse(tuple(brokers), controller_id, tuple(topics),
                                                            self.cluster_id))

    def describe_topic_partitions(self, now_ms: int, env: Envelope[m.DescribeTopicPartitionsRequest]) -> None:
        """DescribeTopicPartitions (KIP-966, API key 75): :func:`kraftlog.broker.describe.describe_topic_partitions`."""
        self._channel.send_response(env, describe_topic_partitions(self._cache.image, env.message,
                                                                   self._cache.static))

    def describe_configs(self, now_ms: int, env: Envelope[m.DescribeConfigsRequest]) -> None:
        """DescribeConfigs: :func:`kraftlog.broker.describe.describe_configs`."""
        self._channel.send_response(env, describe_configs(self._cache.image, env.message, self._cache.static,
                                                          self.broker_id))

    def describe_user_scram_credentials(self, now_ms: int, env: Envelope[m.DescribeUserScramCredentialsRequest]
                                        ) -> None:
        """DescribeUserScramCredentials (KIP-554): :func:`kraftlog.broker.describe.describe_user_scram_credentials`."""
        self._channel.send_response(env, describe_user_scram_credentials(self._cache.image, env.message))
