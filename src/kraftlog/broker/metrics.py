"""The broker's metrics under Kafka's names, registered in the broker's :class:`~kraftlog.metrics.KafkaMetrics`.

Gauges read from the broker's state when collected:

* ``kafka.server:type=ReplicaManager``: ``UnderReplicatedPartitions`` (led here, ISR smaller than the
  replica set), ``UnderMinIsrPartitionCount`` (led here, ISR below the effective min ISR),
  ``AtMinIsrPartitionCount`` (led here, ISR at it), ``OfflineReplicaCount`` (replicas hosted in an offline
  log directory), ``PartitionCount``, ``LeaderCount`` -- Kafka's ``ReplicaManager`` gauges;
* ``kafka.log:type=LogManager,name=OfflineLogDirectoryCount`` (0 or 1: one log directory per broker);
* ``kafka.log:type=Log,name=LogEndOffset|LogStartOffset|Size,topic=T,partition=P`` per hosted partition
  (``Size`` in bytes);
* ``kafka.server:type=broker-metadata-metrics`` ``metadata-apply-error-count`` and
  ``metadata-load-error-count`` (Kafka's ``BrokerServerMetrics``; kraftlog's load errors are the batches
  dropped when the logs were loaded);
* ``kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups|NumOffsets`` (Kafka's classic
  coordinator's);
* the log cleaner's (Kafka's ``LogCleaner`` and ``LogCleanerManager`` gauges): ``kafka.log:type=LogCleaner``
  ``max-buffer-utilization-percent``, ``cleaner-recopy-percent`` (of the last cleaning), ``max-clean-time-secs``,
  ``max-compaction-delay-secs`` (of the last cleaning, as Kafka's one cleaner thread reports them) and
  ``DeadThreadCount`` (always 0: kraftlog's cleaner is no thread), and ``kafka.log:type=LogCleanerManager``
  ``max-dirty-percent``, ``time-since-last-run-ms``, ``uncleanable-partitions-count`` and ``uncleanable-bytes``
  (tagged ``logDirectory``: the broker's one directory).

Meters: ``kafka.server:type=ReplicaManager,name=IsrShrinksPerSec|IsrExpandsPerSec`` (marked when the
controller commits a shrink or expansion this leader proposed, as Kafka's ``Partition`` marks them),
``kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec|MessagesInPerSec`` (appended as leader: batch
bytes and records) and ``BytesOutPerSec`` (record bytes in Fetch responses, to consumers and followers).

Request metrics (:class:`RequestMetrics`, ``kafka.network:type=RequestMetrics``): ``RequestsPerSec``
(``request``, ``version``), ``ErrorsPerSec`` (``request``, ``error``: every error code of each response,
NONE included, as Kafka's ``errorCounts``), ``TotalTimeMs`` (``request``: from the broker handling the
request to its response, in the node's clock -- a parked Fetch's or acks=all Produce's wait included; the
network's and the socket queue's time is not seen by the core). Fetch is split into ``FetchConsumer`` and
``FetchFollower`` as Kafka's ``RequestMetrics`` does. ApiVersions is answered by the connection's framing
and not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..metrics import Histogram, KafkaMetrics, Meter, MetricName
from ..protocol import messages as m
from ..protocol.errors import Errors
from ..protocol.node import Envelope, Message
from .log_manager import LOG_DIR

if TYPE_CHECKING:
    from ..storage.log import PartitionLog
    from .broker import Broker
    from .partition import Partition

Tags = tuple[tuple[str, str], ...]


def _rm(name: str) -> MetricName:
    return MetricName("kafka.server", "ReplicaManager", name)


UNDER_REPLICATED_PARTITIONS = _rm("UnderReplicatedPartitions")
UNDER_MIN_ISR_PARTITION_COUNT = _rm("UnderMinIsrPartitionCount")
AT_MIN_ISR_PARTITION_COUNT = _rm("AtMinIsrPartitionCount")
OFFLINE_REPLICA_COUNT = _rm("OfflineReplicaCount")
PARTITION_COUNT = _rm("PartitionCount")
LEADER_COUNT = _rm("LeaderCount")
ISR_SHRINKS = _rm("IsrShrinksPerSec")
ISR_EXPANDS = _rm("IsrExpandsPerSec")
BYTES_IN = MetricName("kafka.server", "BrokerTopicMetrics", "BytesInPerSec")
BYTES_OUT = MetricName("kafka.server", "BrokerTopicMetrics", "BytesOutPerSec")
MESSAGES_IN = MetricName("kafka.server", "BrokerTopicMetrics", "MessagesInPerSec")
OFFLINE_LOG_DIRECTORY_COUNT = MetricName("kafka.log", "LogManager", "OfflineLogDirectoryCount")
LOG_END_OFFSET = MetricName("kafka.log", "Log", "LogEndOffset")
LOG_START_OFFSET = MetricName("kafka.log", "Log", "LogStartOffset")
LOG_SIZE = MetricName("kafka.log", "Log", "Size")
METADATA_APPLY_ERROR_COUNT = MetricName("kafka.server", "broker-metadata-metrics", None,
                                        attribute="metadata-apply-error-count")
METADATA_LOAD_ERROR_COUNT = MetricName("kafka.server", "broker-metadata-metrics", None,
                                       attribute="metadata-load-error-count")
CLEANER_BUFFER_UTILIZATION = MetricName("kafka.log", "LogCleaner", "max-buffer-utilization-percent")
CLEANER_RECOPY = MetricName("kafka.log", "LogCleaner", "cleaner-recopy-percent")
CLEANER_MAX_CLEAN_TIME = MetricName("kafka.log", "LogCleaner", "max-clean-time-secs")
CLEANER_MAX_COMPACTION_DELAY = MetricName("kafka.log", "LogCleaner", "max-compaction-delay-secs")
CLEANER_DEAD_THREADS = MetricName("kafka.log", "LogCleaner", "DeadThreadCount")
CLEANER_MAX_DIRTY = MetricName("kafka.log", "LogCleanerManager", "max-dirty-percent")
CLEANER_TIME_SINCE_LAST_RUN = MetricName("kafka.log", "LogCleanerManager", "time-since-last-run-ms")
CLEANER_UNCLEANABLE_PARTITIONS = MetricName("kafka.log", "LogCleanerManager", "uncleanable-partitions-count")
CLEANER_UNCLEANABLE_BYTES = MetricName("kafka.log", "LogCleanerManager", "uncleanable-bytes")
NUM_GROUPS = MetricName("kafka.coordinator.group", "GroupMetadataManager", "NumGroups")
NUM_OFFSETS = MetricName("kafka.coordinator.group", "GroupMetadataManager", "NumOffsets")
REQUESTS = MetricName("kafka.network", "RequestMetrics", "RequestsPerSec")
ERRORS = MetricName("kafka.network", "RequestMetrics", "ErrorsPerSec")
TOTAL_TIME = MetricName("kafka.network", "RequestMetrics", "TotalTimeMs")


def register_broker_metrics(metrics: KafkaMetrics, broker: Broker) -> None:
    """Register the broker gauges and meters of the module doc in ``metrics``, read from ``broker``."""
    def hosted() -> dict[tuple[str, int], Partition]:
        return broker.replica_manager.partitions

    def led() -> list[tuple[int, int, int]]:
        """(ISR size, replica count, effective min ISR) of every partition led here."""
        cache = broker.cache
        return [(len(p.isr), len(p.replicas), cache.min_isr(key[0]))
                for key, p in hosted().items() if p.is_leader]

    metrics.gauge(UNDER_REPLICATED_PARTITIONS, lambda: sum(1 for isr, rf, _ in led() if isr < rf))
    metrics.gauge(UNDER_MIN_ISR_PARTITION_COUNT, lambda: sum(1 for isr, _, mi in led() if isr < mi))
    metrics.gauge(AT_MIN_ISR_PARTITION_COUNT, lambda: sum(1 for isr, _, mi in led() if isr == mi))
    metrics.gauge(OFFLINE_REPLICA_COUNT, lambda: len(hosted()) if broker.log_dir_offline else 0)
    metrics.gauge(PARTITION_COUNT, lambda: len(hosted()))
    metrics.gauge(LEADER_COUNT, lambda: sum(1 for p in hosted().values() if p.is_leader))
    metrics.gauge(OFFLINE_LOG_DIRECTORY_COUNT, lambda: 1 if broker.log_dir_offline else 0)
    metrics.gauge(METADATA_APPLY_ERROR_COUNT, lambda: broker.metadata_apply_errors.count)
    metrics.gauge(METADATA_LOAD_ERROR_COUNT, lambda: len(broker.dropped_at_load))
    metrics.gauge(NUM_GROUPS, lambda: len(set(broker.groups.groups()) | set(broker.coordinator_runtime.group_ids())))
    metrics.gauge(NUM_OFFSETS, lambda: sum(len(offsets) for shard in broker.coordinator_runtime.shards.values()
                                           for offsets in shard.stable.offsets.values()))

    def per_log(read: Callable[[PartitionLog], int]) -> Callable[[], list[tuple[Tags, float]]]:
        return lambda: [((("topic", t), ("partition", str(i))), read(p.log)) for (t, i), p in sorted(hosted().items())]

    metrics.gauge_family(LOG_END_OFFSET, per_log(lambda log: log.log_end_offset))
    metrics.gauge_family(LOG_START_OFFSET, per_log(lambda log: log.log_start_offset))
    metrics.gauge_family(LOG_SIZE, per_log(lambda log: log.size))
    cleaner = broker.log_manager.cleaner
    metrics.gauge(CLEANER_BUFFER_UTILIZATION, lambda: int(100 * cleaner.buffer_utilization))
    metrics.gauge(CLEANER_RECOPY, lambda: int(100 * cleaner.last_stats.recopy_ratio) if cleaner.last_stats else 0)
    metrics.gauge(CLEANER_MAX_CLEAN_TIME, lambda: ((cleaner.last_stats.end_ms - cleaner.last_stats.start_ms) // 1000
                                                   if cleaner.last_stats else 0))
    metrics.gauge(CLEANER_MAX_COMPACTION_DELAY, lambda: cleaner.compaction_delay_ms // 1000)
    log_dir: Tags = (("logDirectory", LOG_DIR),)
    metrics.gauge_family(CLEANER_UNCLEANABLE_PARTITIONS, lambda: [(log_dir, len(cleaner.uncleanable))])
    metrics.gauge_family(CLEANER_UNCLEANABLE_BYTES, lambda: [(log_dir, cleaner.uncleanable_bytes(broker.now_ms))])
    metrics.gauge(CLEANER_DEAD_THREADS, lambda: 0)
    metrics.gauge(CLEANER_MAX_DIRTY, lambda: int(100 * cleaner.max_dirty_ratio(broker.now_ms)))
    metrics.gauge(CLEANER_TIME_SINCE_LAST_RUN, lambda: (broker.now_ms - cleaner.last_run_ms
                                                        if cleaner.last_run_ms >= 0 else 0))
    replicas = broker.replica_manager
    metrics.meters.update({ISR_SHRINKS: replicas.isr_shrinks, ISR_EXPANDS: replicas.isr_expands,
                           BYTES_IN: replicas.bytes_in, MESSAGES_IN: replicas.messages_in})
    metrics.meter(BYTES_OUT)


#: Requests :class:`RequestMetrics` waits for at most; the oldest is forgotten beyond (bounded memory).
MAX_TRACKED = 100_000


class RequestMetrics:
    """Kafka's ``RequestMetrics`` for one node (see the module doc): :meth:`on_request` when a request is
    handled, :meth:`on_response` when its response is queued; times in ms of the node's clock."""

    def __init__(self, metrics: KafkaMetrics) -> None:
        self.metrics = metrics
        #: (source, correlation id) -> (request label, start ms) of each request not yet answered
        self._started: dict[tuple[object, int], tuple[str, int]] = {}
        self._requests: dict[tuple[str, int], Meter] = {}
        self._errors: dict[tuple[str, int], Meter] = {}
        self._times: dict[str, Histogram] = {}
        self._bytes_out = metrics.meter(BYTES_OUT)

    def on_request(self, now_ms: int, env: Envelope) -> None:
        """Count ``env``'s request and note when it was handled."""
        msg = env.message
        label = _request_label(msg)
        version = env.api_version if env.api_version is not None else int(getattr(type(msg), "VERSION", 0))
        meter = self._requests.get((label, version))
        if meter is None:
            meter = self._requests[(label, version)] = self.metrics.meter(
                REQUESTS.with_tags(("request", label), ("version", str(version))))
        meter.count += 1
        if type(msg) is m.ProduceRequest and msg.acks == 0:
            return  # no response will come (acks=0): no time to measure
        started = self._started
        if len(started) >= MAX_TRACKED:  # requests whose answer never came (a dropped connection's)
            del started[next(iter(started))]
        started[(env.src, env.correlation_id)] = (label, now_ms)

    def on_response(self, now_ms: int, request: Envelope, message: Message) -> None:
        """Count the error codes of ``message`` (answering ``request``) and the request's total time."""
        started = self._started.pop((request.src, request.correlation_id), None)
        if started is None:  # a request handled before this object existed, or answered twice
            return
        label, start_ms = started
        hist = self._times.get(label)
        if hist is None:
            hist = self._times[label] = self.metrics.histogram(TOTAL_TIME.with_tags(("request", label)))
        hist.update(now_ms - start_ms)
        for code in error_codes(message):
            meter = self._errors.get((label, code))
            if meter is None:
                meter = self._errors[(label, code)] = self.metrics.meter(
                    ERRORS.with_tags(("request", label), ("error", _error_name(code))))
            meter.count += 1
        if type(message) is m.FetchResponse:
            self._bytes_out.count += sum(b.size_bytes for p in message.partitions for b in p.records)


def _request_label(msg: object) -> str:
    """Kafka's request name in RequestMetrics: the API name, a Fetch split into FetchConsumer/FetchFollower."""
    if type(msg) is m.FetchRequest:
        return "FetchFollower" if msg.replica_id >= 0 else "FetchConsumer"
    return str(getattr(type(msg), "API", type(msg).__name__.removesuffix("Request")))


def _error_name(code: int) -> str:
    try:
        return Errors(code).name
    except ValueError:
        return f"UNKNOWN_{code}"


def error_codes(message: object) -> list[int]:
    """The error codes of a response as Kafka's ``AbstractResponse.errorCounts`` counts them: the top-level
    code, if any, and each entry's of its lists (partitions, topics, results), one level down."""
    codes = []
    top = getattr(message, "error_code", None)
    if isinstance(top, int):
        codes.append(top)
    for name in getattr(type(message), "__dataclass_fields__", ()):
        value = getattr(message, name)
        if isinstance(value, tuple) and value and hasattr(value[0], "error_code"):
            codes.extend(item.error_code for item in value)
    if not codes:
        codes.append(Errors.NONE)
    return codes
