"""DescribeTopicPartitions (KIP-966, API key 75 v0): the broker's answer from its MetadataImage.

A pure function over an immutable image, so the broker (and tests) can call it with any image.
It follows Kafka's ``DescribeTopicPartitionsRequestHandler`` and
``KRaftMetadataCache.describeTopicResponse`` / ``getPartitionMetadataForDescribeTopicResponse``
(Kafka 3.8+), without ACLs (every topic is authorized) and without listeners or log directories
(every registered broker has the one listener and only online directories).
"""

from __future__ import annotations

import re
import uuid

from ..metadata import config as cfg
from ..metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataImage
from ..protocol import messages as m
from ..protocol.errors import Errors

__all__ = ["describe_topic_partitions", "describe_configs", "INTERNAL_TOPICS"]

#: Kafka's ``Topic.INTERNAL_TOPICS`` (reported with ``is_internal`` true).
INTERNAL_TOPICS: frozenset[str] = frozenset(
    {"__consumer_offsets", "__transaction_state", "__share_group_state"}
)

_ZERO_UUID = uuid.UUID(int=0)
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
_MAX_TOPIC_NAME_LENGTH = 249


def _valid_topic_name(name: str) -> bool:
    """Kafka's ``Topic.validate``: non-empty, not "." or "..", at most 249 chars of [a-zA-Z0-9._-]."""
    return (
        bool(name) and name not in (".", "..") and len(name) <= _MAX_TOPIC_NAME_LENGTH
        and _LEGAL_TOPIC.fullmatch(name) is not None
    )


def _error_response(
    request: m.DescribeTopicPartitionsRequest, error: int
) -> m.DescribeTopicPartitionsResponse:
    """Kafka's ``DescribeTopicPartitionsRequest.getErrorResponse``: every requested topic, in request
    order, with ``error``, the zero topic id, not internal, no partitions; no next cursor."""
    return m.DescribeTopicPartitionsResponse(
        topics=tuple(
            m.DescribeTopicPartitionsResponseTopic(error, name, _ZERO_UUID, False, ())
            for name in request.topics
        ),
        next_cursor=None,
    )


def _partition(
    image: MetadataImage, topic: str, index: int
) -> m.DescribeTopicPartitionsResponsePartition | None:
    part = image.partition(topic, index)
    if part is None:
        return None  # Kafka logs "partition does not exist" and skips it
    brokers = image.brokers
    # Kafka's getAliveEndpoint: the leader must be registered (fenced or not); else NO_LEADER_ID.
    leader = part.leader if part.leader in brokers else -1
    # Kafka's getOfflineReplicas: unregistered or fenced (or without the listener / dir offline).
    offline = tuple(
        r for r in part.replicas if (b := brokers.get(r)) is None or b.fenced
    )
    return m.DescribeTopicPartitionsResponsePartition(
        error_code=Errors.NONE,
        partition_index=index,
        leader_id=leader,
        leader_epoch=part.leader_epoch,
        # filterUnavailableEndpoints = false: replicas and ISR are reported unfiltered.
        replica_nodes=part.replicas,
        isr_nodes=part.isr,
        eligible_leader_replicas=part.elr,
        last_known_elr=part.last_known_elr,  # KIP-966's meaning; Kafka 4.1/4.2 put the last known leader here
        offline_replicas=offline,
    )


def describe_topic_partitions(
    image: MetadataImage,
    request: m.DescribeTopicPartitionsRequest,
    static_config: dict[str, str] | None = None,
) -> m.DescribeTopicPartitionsResponse:
    """Answer a DescribeTopicPartitions v0 request from ``image`` (KIP-966; Kafka's
    ``DescribeTopicPartitionsRequestHandler``). Pure: reads the image, returns the response.

    Topics: the requested names, de-duplicated, or every topic in the image when ``request.topics``
    is empty; only names >= the cursor's topic; described in sorted (name) order.

    Limit: ``max(1, min(request.response_partition_limit, max.request.partition.size.limit))``
    partitions, the config resolved by ``image.config`` (cluster default, then ``static_config``, then
    Kafka's 2000). A topic starts at partition 0, except the cursor topic, which starts at the cursor's
    ``partition_index``. When the limit stops a topic part-way, ``next_cursor`` = (that topic, next
    partition) and the response ends there; when the limit is used up exactly at the end of a topic and
    more topics follow, ``next_cursor`` = (next topic, 0) -- that topic may not exist; otherwise None.

    Per partition: ``leader_id`` is the leader if it is a registered broker, else -1; replicas and ISR
    unfiltered; ELR and LastKnownELR from the image (empty when none); ``offline_replicas`` = replicas
    whose broker is unregistered or fenced (Kafka's not-alive replicas). Error code always NONE.

    ``LastKnownElr`` keeps KIP-966's meaning here: the ELR members that left it after an unclean
    shutdown. Kafka 4.1/4.2 answer something else in that field: with
    ``useLastKnownLeaderInBalancedRecovery`` (their default) they store the partition's *last known
    leader* in it (``PartitionChangeBuilder.maybeUpdateLastKnownLeader``), so a Kafka 4.x broker reports
    ``[last known leader]`` there. kraftlog implements the KIP and keeps the last known leader in its
    own field (``PartitionRegistration.last_known_leader``), which this API does not carry.

    Errors, returned (never raised), per topic:

    * a requested topic missing from the image -> UNKNOWN_TOPIC_OR_PARTITION (an illegal name ->
      INVALID_TOPIC_EXCEPTION), zero topic id, no partitions, consuming none of the limit; not
      reported when listing all topics;
    * a cursor whose topic is not among the requested topics (with ``topics`` non-empty), or whose
      ``partition_index`` is negative -> Kafka throws InvalidRequestException and answers with its
      ``getErrorResponse``: every requested topic, in request order, with INVALID_REQUEST, zero topic
      id and no partitions, and no next cursor (an all-topics request gets an empty topic list).
    """
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    fetch_all = not request.topics
    if fetch_all:
        names = {t for t in image.topics if t >= cursor_topic}
    else:
        names = {t for t in request.topics if t >= cursor_topic}
        if cursor is not None and cursor.topic_name not in names:
            return _error_response(request, Errors.INVALID_REQUEST)
    if cursor is not None and cursor.partition_index < 0:
        return _error_response(request, Errors.INVALID_REQUEST)

    configured = cfg.as_int(image.config("max.request.partition.size.limit", static=static_config))
    broker_limit = int(cfg.DEFAULTS["max.request.partition.size.limit"]) if configured is None else configured
    remaining = max(1, min(broker_limit, request.response_partition_limit))

    topics: list[m.DescribeTopicPartitionsResponseTopic] = []
    next_cursor: m.DescribeTopicPartitionsCursor | None = None
    for name in sorted(names):
        if remaining == 0:
            # Every partition of the previous topics fitted: the next page starts at this topic.
            next_cursor = m.DescribeTopicPartitionsCursor(name, 0)
            break
        timage = image.topics.get(name)
        if timage is None:
            if not fetch_all:
                error = (Errors.UNKNOWN_TOPIC_OR_PARTITION if _valid_topic_name(name)
                         else Errors.INVALID_TOPIC_EXCEPTION)
                topics.append(m.DescribeTopicPartitionsResponseTopic(
                    error, name, _ZERO_UUID, name in INTERNAL_TOPICS, ()))
            continue
        start = cursor.partition_index if cursor is not None and name == cursor_topic else 0
        count = timage.partition_count
        upper = min(count, start + remaining)
        partitions = tuple(
            p for index in range(start, upper) if (p := _partition(image, name, index)) is not None
        )
        topics.append(m.DescribeTopicPartitionsResponseTopic(
            Errors.NONE, name, timage.topic_id, name in INTERNAL_TOPICS, partitions))
        if upper < count:
            next_cursor = m.DescribeTopicPartitionsCursor(name, upper)
            break
        remaining -= len(partitions)
    return m.DescribeTopicPartitionsResponse(topics=tuple(topics), next_cursor=next_cursor)


# ---------------------------------------------------------------- DescribeConfigs (API key 32)
#: Kafka's ``DescribeConfigsResponse.ConfigSource`` ids.
TOPIC_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 3, 4, 5


def _config_entry(image: MetadataImage, static: dict[str, str], broker_name: str, topic: str | None,
                  shown_name: str) -> m.DescribeConfigsResourceResult:
    """One config, resolved as Kafka's ``ConfigHelper`` does: the topic's own value, else the cluster-wide
    dynamic default, else the node's static config, else Kafka's default (the source says which). A topic
    config reads its broker synonyms in Kafka's order (``log.retention.ms``, ``log.retention.minutes``,
    ``log.retention.hours``: :data:`kraftlog.metadata.config.SYNONYM_FALLBACKS`), converted to ms; a broker
    config shows its own value."""
    cluster = image.configs.get((RESOURCE_BROKER, "")) or {}
    if topic is not None:
        tconf = image.configs.get((RESOURCE_TOPIC, topic)) or {}
        if shown_name in tconf:
            return m.DescribeConfigsResourceResult(shown_name, tconf[shown_name], False, TOPIC_CONFIG)
        found = cfg.synonym_source(broker_name, cluster, static)
        if found is not None:
            layer, value = found
            return m.DescribeConfigsResourceResult(
                shown_name, value, False, DYNAMIC_DEFAULT_BROKER_CONFIG if layer == 0 else STATIC_BROKER_CONFIG)
        value = cfg.lookup(broker_name)
        return m.DescribeConfigsResourceResult(shown_name, value if value != "" else None, False, DEFAULT_CONFIG)
    if broker_name in cluster:
        return m.DescribeConfigsResourceResult(shown_name, cluster[broker_name], False,
                                               DYNAMIC_DEFAULT_BROKER_CONFIG)
    if static and broker_name in static:
        return m.DescribeConfigsResourceResult(shown_name, str(static[broker_name]), True,
                                               STATIC_BROKER_CONFIG)
    value = cfg.DEFAULTS[broker_name]
    return m.DescribeConfigsResourceResult(shown_name, value if value != "" else None, False, DEFAULT_CONFIG)


def describe_configs(image: MetadataImage, req: m.DescribeConfigsRequest, static: dict[str, str],
                     broker_id: int) -> m.DescribeConfigsResponse:
    """DescribeConfigs (Kafka's ``ConfigHelper.describeConfigs``) from the broker's image: a topic resource
    (type 2) lists the topic-level configs kraftlog knows (``flush.messages``, ``min.insync.replicas``,
    ...), a broker resource (type 4, this broker's id or "" for the cluster default) every broker config.
    UNKNOWN_TOPIC_OR_PARTITION for an unknown topic, INVALID_REQUEST for another broker's id or an
    unsupported resource type. ``configuration_keys`` filters the names (None: all)."""
    results = []
    for res in req.resources:
        keys = None if res.configuration_keys is None else set(res.configuration_keys)
        if res.resource_type == RESOURCE_TOPIC:
            if res.resource_name not in image.topics:
                results.append(m.DescribeConfigsResult(Errors.UNKNOWN_TOPIC_OR_PARTITION, res.resource_type,
                                                       res.resource_name, (), "unknown topic"))
                continue
            names = [(broker, topic) for broker, topic in sorted(cfg.TOPIC_SYNONYMS.items(), key=lambda kv: kv[1])]
            entries = tuple(_config_entry(image, static, broker, res.resource_name, topic)
                            for broker, topic in names if keys is None or topic in keys)
        elif res.resource_type == RESOURCE_BROKER and res.resource_name in ("", str(broker_id)):
            entries = tuple(_config_entry(image, static, name, None, name)
                            for name in sorted(cfg.DEFAULTS) if keys is None or name in keys)
        else:
            results.append(m.DescribeConfigsResult(Errors.INVALID_REQUEST, res.resource_type, res.resource_name,
                                                   (), "kraftlog describes topics and this broker only"))
            continue
        results.append(m.DescribeConfigsResult(Errors.NONE, res.resource_type, res.resource_name, entries))
    return m.DescribeConfigsResponse(tuple(results))


def describe_user_scram_credentials(image: MetadataImage, req: m.DescribeUserScramCredentialsRequest
                                    ) -> m.DescribeUserScramCredentialsResponse:
    """DescribeUserScramCredentials (KIP-554; Kafka's ``ScramImage.describe``): each user's mechanisms and
    iteration counts, never a salt or key. ``users`` None or empty describes every user with a credential (by
    name); a user named twice is DUPLICATE_RESOURCE, one without a credential RESOURCE_NOT_FOUND."""
    by_user: dict[str, list[m.CredentialInfo]] = {}
    for (name, mechanism), credential in sorted(image.scram_credentials.items()):
        by_user.setdefault(name, []).append(m.CredentialInfo(mechanism, credential.iterations))
    if not req.users:
        return m.DescribeUserScramCredentialsResponse(Errors.NONE, tuple(
            m.DescribeUserScramCredentialsResult(name, Errors.NONE, None, tuple(infos))
            for name, infos in by_user.items()))
    results = []
    counts = {name: req.users.count(name) for name in req.users}
    for name in dict.fromkeys(req.users):
        if counts[name] > 1:
            results.append(m.DescribeUserScramCredentialsResult(
                name, Errors.DUPLICATE_RESOURCE,
                f"Cannot describe SCRAM credentials for the same user twice in a single request: {name}"))
        elif name not in by_user:
            results.append(m.DescribeUserScramCredentialsResult(
                name, Errors.RESOURCE_NOT_FOUND, f"Attempt to describe a user credential that does not exist: {name}"))
        else:
            results.append(m.DescribeUserScramCredentialsResult(name, Errors.NONE, None, tuple(by_user[name])))
    return m.DescribeUserScramCredentialsResponse(Errors.NONE, tuple(results))
