"""Kafka's ``AutoTopicCreationManager``: the topics a Metadata request names that do not exist are created
through the controller, with a CreateTopics the broker itself sends (``num.partitions`` partitions,
``default.replication.factor`` replicas, the broker's configs), while the client is told
LEADER_NOT_AVAILABLE and retries (``KafkaApis.handleTopicMetadataRequest``)."""

from __future__ import annotations

from ...metadata.topic_names import validate_topic_name
from ...protocol import messages as m
from ...protocol.errors import Errors
from ..channel import CONTROLLER, AutoTopicCreationContext, BrokerChannel
from ..config import BrokerConfig


class AutoTopicCreationManager:
    """Creates topics for broker Metadata requests through ``channel`` (``config``: ``auto.create.topics
    .enable``, ``num.partitions``, ``default.replication.factor``, ``request.timeout.ms``).

    ``inflight``: topic name -> the time (ms) its CreateTopics times out. A name stays in flight until the
    controller answers (Kafka's ``inflightTopics``, cleared in the response handler) or that time passes
    (Kafka clears it on a timeout too), so a client retrying meanwhile sends no second CreateTopics."""

    def __init__(self, channel: BrokerChannel, config: BrokerConfig) -> None:
        self._channel = channel
        self.config = config
        self.inflight: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        """``auto.create.topics.enable``."""
        return self.config.auto_create_topics_enable

    def create_topics(self, now_ms: int, names: list[str]) -> dict[str, int]:
        """Ask the controller to create ``names`` (topics the image lacks) and return each one's error in the
        Metadata response (Kafka's ``AutoTopicCreationManager.createTopics`` / ``filterCreatableTopics``):

        * an illegal name (:func:`~kraftlog.metadata.topic_names.validate_topic_name`): INVALID_TOPIC_EXCEPTION,
          never sent;
        * an internal name (a leading ``__``: ``__consumer_offsets`` and the like are the broker's own,
          never created for a client): UNKNOWN_TOPIC_OR_PARTITION;
        * a name already in flight: UNKNOWN_TOPIC_OR_PARTITION (Kafka's answer; the client retries);
        * the others: LEADER_NOT_AVAILABLE, all of them in one CreateTopics to the controller."""
        for name, deadline in list(self.inflight.items()):
            if deadline <= now_ms:  # its CreateTopics went unanswered: a retry may send another
                del self.inflight[name]
        errors: dict[str, int] = {}
        creatable = []
        for name in sorted(set(names)):
            if validate_topic_name(name) is not None:
                errors[name] = Errors.INVALID_TOPIC_EXCEPTION
            elif name.startswith("__") or name in self.inflight:
                errors[name] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                errors[name] = Errors.LEADER_NOT_AVAILABLE
                creatable.append(name)
        if creatable:
            timeout_ms = self.config.request_timeout_ms
            for name in creatable:
                self.inflight[name] = now_ms + timeout_ms
            request = m.CreateTopicsRequest(tuple(
                m.CreatableTopic(name, self.config.num_partitions, self.config.default_replication_factor)
                for name in creatable), timeout_ms)
            self._channel.send_request(CONTROLLER, request, now_ms, timeout_ms,
                                       AutoTopicCreationContext(tuple(creatable), self.on_done))
        return errors

    def create_internal(self, now_ms: int, name: str, num_partitions: int, replication_factor: int,
                        configs: tuple[tuple[str, str | None], ...]) -> None:
        """Ask the controller to create the internal topic ``name`` (``__consumer_offsets``: Kafka's
        ``AutoTopicCreationManager`` for a FindCoordinator, with ``offsets.topic.num.partitions``,
        ``offsets.topic.replication.factor`` and the group coordinator's topic configs) unless a CreateTopics
        for it is in flight. The controller refuses it (INVALID_REPLICATION_FACTOR) while fewer brokers are
        registered than ``replication_factor``; the next FindCoordinator asks again."""
        deadline = self.inflight.get(name)
        if deadline is not None and deadline > now_ms:
            return
        timeout_ms = self.config.request_timeout_ms
        self.inflight[name] = now_ms + timeout_ms
        request = m.CreateTopicsRequest((m.CreatableTopic(name, num_partitions, replication_factor,
                                                          configs=configs),), timeout_ms)
        self._channel.send_request(CONTROLLER, request, now_ms, timeout_ms,
                                   AutoTopicCreationContext((name,), self.on_done))

    def on_done(self, topics: tuple[str, ...]) -> None:
        """The controller answered the CreateTopics for ``topics``: they are no longer in flight (created, or
        refused: a later Metadata request asks again)."""
        for name in topics:
            self.inflight.pop(name, None)
