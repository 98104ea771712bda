"""The group and producer-id APIs a broker serves: FindCoordinator, the classic group protocol (JoinGroup,
SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch) routed to this broker's
:class:`~kraftlog.broker.group_coordinator.GroupCoordinator` when it coordinates the group (it leads the group's
``__consumer_offsets`` partition and has loaded it; Kafka's ``KafkaApis`` over its ``GroupCoordinatorService``),
and InitProducerId (Kafka's ``ProducerIdManager``)."""

from __future__ import annotations

from ...protocol import messages as m
from ...protocol.errors import Errors
from ...protocol.listeners import error_response
from ...protocol.node import Envelope, Message
from ..channel import BrokerChannel, LogDirFailureHandler
from ..group_coordinator import GroupCoordinator, coordinator_for
from ..group_metadata import OFFSETS_TOPIC
from ..lifecycle import BrokerLifecycleManager
from ..log_manager import LogManager
from ..metadata_cache import MetadataCache
from .auto_topic_creation import AutoTopicCreationManager
from .metadata import endpoint
from .table import HandlerTable, entry

#: The group coordinator's requests (routed by ``coordinator_for``).
GROUP_APIS = (m.JoinGroupRequest, m.SyncGroupRequest, m.HeartbeatRequest, m.LeaveGroupRequest,
              m.OffsetCommitRequest, m.OffsetFetchRequest)
#: Producer ids per broker epoch (``broker_epoch << 20 | n``).
PRODUCER_IDS_PER_EPOCH = 1 << 20


#: The answer to a FindCoordinator for a transactional id (:meth:`GroupApis.find_coordinator`).
TRANSACTIONS_REFUSED = ("kraftlog does not support transactions (no transaction coordinator); "
                        "use an idempotent producer without transactional.id")


def _refused_coordinator(key: str, key_type: int) -> m.Coordinator:
    """FindCoordinator's answer for a key type other than a group's (see :meth:`GroupApis.find_coordinator`)."""
    if key_type == m.COORDINATOR_TRANSACTION:
        return m.Coordinator(key, -1, "", -1, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, TRANSACTIONS_REFUSED)
    return m.Coordinator(key, -1, "", -1, Errors.INVALID_REQUEST, f"unknown coordinator key type {key_type}")


class GroupApis:
    """FindCoordinator, the group requests and InitProducerId for broker ``broker_id``, whose group
    coordinator is ``groups``; ``fail``: the broker's log-directory failure handler."""

    def __init__(self, broker_id: int, cache: MetadataCache, groups: GroupCoordinator[Envelope],
                 logs: LogManager, lifecycle: BrokerLifecycleManager, channel: BrokerChannel,
                 fail: LogDirFailureHandler, topic_creation: AutoTopicCreationManager | None = None) -> None:
        self.broker_id = broker_id
        self._cache = cache
        #: creates ``__consumer_offsets`` at the first FindCoordinator (None: never, as in unit tests)
        self.topic_creation = topic_creation
        self.groups = groups
        self._logs = logs
        self._lifecycle = lifecycle
        self._channel = channel
        self._fail = fail
        self._next_producer_id = 0

    def handlers(self) -> HandlerTable:
        """This family's rows of the dispatch table."""
        table = dict((entry(m.FindCoordinatorRequest, self.find_coordinator),
                      entry(m.InitProducerIdRequest, self.init_producer_id)))
        for kind in GROUP_APIS:
            table[kind] = self.group_request
        return table

    def find_coordinator(self, now_ms: int, env: Envelope[m.FindCoordinatorRequest]) -> None:
        """The coordinator of each group key (the leader of its ``__consumer_offsets`` partition) with its
        endpoint on the request's listener (the simulator's placeholder ``broker-<id>:9092`` without one);
        COORDINATOR_NOT_AVAILABLE while the partition has no leader or the coordinator has no such listener.
        While ``__consumer_offsets`` does not exist, the broker asks the controller to create it
        (:meth:`AutoTopicCreationManager.create_internal`: ``offsets.topic.num.partitions`` partitions,
        ``offsets.topic.replication.factor`` replicas, ``cleanup.policy=compact``, ``offsets.topic.segment
        .bytes``) and answers COORDINATOR_NOT_AVAILABLE (Kafka's ``KafkaApis.getCoordinator``).

        A transactional id (key type 1) is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED and a message
        saying why: kraftlog has no transaction coordinator, and this is the one FindCoordinator error that
        librdkafka (``rd_kafka_txn_handle_FindCoordinator``), kafka-python (``FindCoordinatorHandler``) and
        the Java producer (``TransactionManager.FindCoordinatorHandler``) treat as fatal, so
        ``init_transactions()`` fails at once instead of retrying COORDINATOR_NOT_AVAILABLE until its
        timeout. Any other key type is INVALID_REQUEST, as Kafka's ``KafkaApis.getCoordinator`` answers an
        unknown ``CoordinatorType`` (a share group's, KIP-932, included: not built)."""
        req = env.message
        image = self._cache.image
        out = []
        if req.key_type == m.COORDINATOR_GROUP and OFFSETS_TOPIC not in image.topics:
            self._create_offsets_topic(now_ms)
        for key in req.coordinator_keys:
            if req.key_type != m.COORDINATOR_GROUP:
                out.append(_refused_coordinator(key, req.key_type))
                continue
            node = coordinator_for(key, image, self._cache.static)
            address = endpoint(image, node, env.listener) if node >= 0 else None
            if address is None:
                out.append(m.Coordinator(key, -1, "", -1, Errors.COORDINATOR_NOT_AVAILABLE))
            else:
                out.append(m.Coordinator(key, node, address[0], address[1]))
        self._channel.send_response(env, m.FindCoordinatorResponse(tuple(out)))

    def _create_offsets_topic(self, now_ms: int) -> None:
        if self.topic_creation is None:
            return
        image, static = self._cache.image, self._cache.static
        configs = (("cleanup.policy", "compact"),
                   ("segment.bytes", image.config("offsets.topic.segment.bytes", static=static)))
        self.topic_creation.create_internal(
            now_ms, OFFSETS_TOPIC, int(image.config("offsets.topic.num.partitions", static=static)),
            int(image.config("offsets.topic.replication.factor", static=static)), configs)

    def group_request(self, now_ms: int, env: Envelope) -> None:
        """JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch: NOT_COORDINATOR unless
        this broker leads the group's ``__consumer_offsets`` partition, COORDINATOR_LOAD_IN_PROGRESS while it
        loads it (``CoordinatorRuntime.status``), else the group coordinator's answer, now or (a parked join or
        sync, a write awaiting the HWM) later through :meth:`send_responses`."""
        msg = env.message
        assert isinstance(msg, GROUP_APIS)  # the dispatch table routes only these here
        status = self.groups.runtime.status(msg.group_id) if not self._logs.offline else Errors.NOT_COORDINATOR
        if status != Errors.NONE:
            self._channel.send_response(env, error_response(msg, status))
            return
        client_id = env.client_id if env.client_id is not None else str(env.src)
        resp: Message | None
        try:
            resp = self.groups.handle(now_ms, env, client_id, msg, env.api_version, env.client_host or "")
        except OSError as exc:  # a read of the offline directory: Kafka's coordinator answers NOT_COORDINATOR
            self._fail(now_ms, exc, "handling a group request")
            resp = error_response(msg, Errors.NOT_COORDINATOR)
        if resp is not None:
            self._channel.send_response(env, resp)

    def send_responses(self, now_ms: int) -> None:
        """Answer the parked group requests the coordinator completed (groups whose coordinator moved were
        resigned when their shard was unloaded: ``CoordinatorRuntime.sync``)."""
        groups = self.groups
        for env, resp in groups.take_responses():
            self._channel.send_response(env, resp)

    def init_producer_id(self, now_ms: int, env: Envelope[m.InitProducerIdRequest]) -> None:
        """Allocate a producer id for an idempotent producer. Kafka brokers take id blocks from the
        controller (AllocateProducerIds); kraftlog derives unique ids from this broker's epoch (an offset
        of the metadata log, unique in the cluster) and a counter: ``broker_epoch << 20 | n``. A
        transactional id is refused (no transactions); COORDINATOR_NOT_AVAILABLE while unregistered or
        fenced, or once the epoch's ids ran out."""
        req = env.message
        lifecycle = self._lifecycle
        if req.transactional_id is not None:
            resp = m.InitProducerIdResponse(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif (lifecycle.broker_epoch < 0 or lifecycle.fenced
              or self._next_producer_id >= PRODUCER_IDS_PER_EPOCH):
            resp = m.InitProducerIdResponse(Errors.COORDINATOR_NOT_AVAILABLE)
        else:
            self._next_producer_id += 1
            resp = m.InitProducerIdResponse(Errors.NONE, (lifecycle.broker_epoch << 20) | self._next_producer_id, 0)
        self._channel.send_response(env, resp)
