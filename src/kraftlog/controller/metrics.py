"""The controller's metrics under Kafka's names (KRaft's ``QuorumControllerMetrics`` and
``ControllerMetadataMetrics``, KIP-966's), registered in the controller's
:class:`~kraftlog.metrics.KafkaMetrics` and read from its state when collected.

Gauges from the metadata image (``ControllerMetadataMetrics``, ``kafka.controller:type=KafkaController``):
``ActiveControllerCount`` (1 while this controller runs and is the active one -- a quorum's standby: 0 --, 0 once
its metadata log failed),
``OfflinePartitionsCount`` (no leader), ``PreferredReplicaImbalanceCount`` (the leader is not the first
replica), ``FencedBrokerCount``, ``ActiveBrokerCount`` (registered and unfenced), ``GlobalTopicCount``,
``GlobalPartitionCount``, ``MetadataErrorCount`` (records this controller could not apply),
``LastAppliedRecordOffset`` and ``LastCommittedRecordOffset`` (the same: a single-node quorum commits what
it appends), ``TimedOutBrokerHeartbeatCount`` (Kafka counts heartbeats that waited in the controller's
event queue past their deadline; kraftlog's controller handles each at once, so it stays 0).

Meters (``kafka.controller:type=ControllerStats``): ``UncleanLeaderElectionsPerSec`` (a leader elected
RECOVERING, KIP-704) and ``ElectionFromEligibleLeaderReplicasPerSec`` (a leader elected from the ELR,
Kafka 4.x's KIP-966 part 1 metric), counted as this controller appends each PartitionChangeRecord, by the
partition's state before it. Histograms (``type=ControllerEventManager``): ``EventQueueTimeMs`` and
``EventQueueProcessingTimeMs``, which the driver feeds (:data:`EVENT_QUEUE_TIME`): it alone sees an
event wait and run (the simulator's events take no simulated time: 0 ms each).

KIP-966 part 2, under the KIP's own names: ``kafka.controller.unclean_recovery_partitions_count``,
``kafka.controller.manual_leader_election_required_partition_count``,
``kafka.controller.unclean_recovery_finished_count`` (since this controller started: reset by a failover,
as the KIP says), ``kafka.controller.global_under_min_isr_partition_count`` (ISR smaller than the
effective min ISR), and ``kafka.controller.electable_replicas_count`` (the sum of |ISR| + |ELR| over the
partitions: the name of an earlier revision of KIP-966, which the current one dropped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..metadata.image import MetadataImage
from ..metadata.records import NO_LEADER, RECOVERING, PartitionChangeRecord
from ..metrics import KafkaMetrics, MetricName

if TYPE_CHECKING:
    from .controller import QuorumController

def _kafka_controller(name: str) -> MetricName:
    return MetricName("kafka.controller", "KafkaController", name)


ACTIVE_CONTROLLER_COUNT = _kafka_controller("ActiveControllerCount")
OFFLINE_PARTITIONS_COUNT = _kafka_controller("OfflinePartitionsCount")
PREFERRED_REPLICA_IMBALANCE_COUNT = _kafka_controller("PreferredReplicaImbalanceCount")
FENCED_BROKER_COUNT = _kafka_controller("FencedBrokerCount")
ACTIVE_BROKER_COUNT = _kafka_controller("ActiveBrokerCount")
GLOBAL_TOPIC_COUNT = _kafka_controller("GlobalTopicCount")
GLOBAL_PARTITION_COUNT = _kafka_controller("GlobalPartitionCount")
METADATA_ERROR_COUNT = _kafka_controller("MetadataErrorCount")
LAST_APPLIED_RECORD_OFFSET = _kafka_controller("LastAppliedRecordOffset")
LAST_COMMITTED_RECORD_OFFSET = _kafka_controller("LastCommittedRecordOffset")
TIMED_OUT_BROKER_HEARTBEAT_COUNT = _kafka_controller("TimedOutBrokerHeartbeatCount")
UNCLEAN_LEADER_ELECTIONS = MetricName("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec")
ELR_ELECTIONS = MetricName("kafka.controller", "ControllerStats", "ElectionFromEligibleLeaderReplicasPerSec")
EVENT_QUEUE_TIME = MetricName("kafka.controller", "ControllerEventManager", "EventQueueTimeMs")
EVENT_QUEUE_PROCESSING_TIME = MetricName("kafka.controller", "ControllerEventManager", "EventQueueProcessingTimeMs")
UNCLEAN_RECOVERY_PARTITIONS_COUNT = MetricName.kip_name("kafka.controller.unclean_recovery_partitions_count")
MANUAL_LEADER_ELECTION_REQUIRED = MetricName.kip_name(
    "kafka.controller.manual_leader_election_required_partition_count")
UNCLEAN_RECOVERY_FINISHED_COUNT = MetricName.kip_name("kafka.controller.unclean_recovery_finished_count")
GLOBAL_UNDER_MIN_ISR = MetricName.kip_name("kafka.controller.global_under_min_isr_partition_count")
ELECTABLE_REPLICAS_COUNT = MetricName.kip_name("kafka.controller.electable_replicas_count")

#: KIP-966's gauge names (as ``QuorumController.recovery_metrics`` keys them) -> their metric names.
KIP_966: dict[str, MetricName] = {
    "unclean_recovery_partitions_count": UNCLEAN_RECOVERY_PARTITIONS_COUNT,
    "manual_leader_election_required_partition_count": MANUAL_LEADER_ELECTION_REQUIRED,
    "unclean_recovery_finished_count": UNCLEAN_RECOVERY_FINISHED_COUNT,
    "electable_replicas_count": ELECTABLE_REPLICAS_COUNT,
}


def register_controller_metrics(metrics: KafkaMetrics, controller: QuorumController) -> None:
    """Register every controller metric of the module doc in ``metrics``, read from ``controller``."""
    def image() -> MetadataImage:
        return controller.image

    def count(pred: Callable[[MetadataImage], int]) -> Callable[[], float]:
        return lambda: pred(image())

    metrics.gauge(ACTIVE_CONTROLLER_COUNT, lambda: 0 if controller.fatal_error is not None or (
        controller.quorum is not None and not controller.quorum.is_active) else 1)
    metrics.gauge(OFFLINE_PARTITIONS_COUNT, count(
        lambda im: sum(1 for p in im.partitions.values() if p.leader == NO_LEADER)))
    metrics.gauge(PREFERRED_REPLICA_IMBALANCE_COUNT, count(
        lambda im: sum(1 for p in im.partitions.values() if not p.replicas or p.leader != p.replicas[0])))
    metrics.gauge(FENCED_BROKER_COUNT, count(lambda im: sum(1 for b in im.brokers.values() if b.fenced)))
    metrics.gauge(ACTIVE_BROKER_COUNT, count(lambda im: sum(1 for b in im.brokers.values() if not b.fenced)))
    metrics.gauge(GLOBAL_TOPIC_COUNT, count(lambda im: len(im.topics)))
    metrics.gauge(GLOBAL_PARTITION_COUNT, count(lambda im: len(im.partitions)))
    metrics.gauge(METADATA_ERROR_COUNT, lambda: controller.metadata_apply_errors.count)
    metrics.gauge(LAST_APPLIED_RECORD_OFFSET, lambda: controller.end_offset - 1)
    metrics.gauge(LAST_COMMITTED_RECORD_OFFSET, lambda: controller.end_offset - 1)
    metrics.gauge(TIMED_OUT_BROKER_HEARTBEAT_COUNT, lambda: 0)
    metrics.gauge(GLOBAL_UNDER_MIN_ISR, lambda: under_min_isr_count(image(), controller.static))
    for key, name in KIP_966.items():
        metrics.gauge(name, _recovery_metric(controller, key))
    metrics.meter(UNCLEAN_LEADER_ELECTIONS)
    metrics.meter(ELR_ELECTIONS)
    metrics.histogram(EVENT_QUEUE_TIME)
    metrics.histogram(EVENT_QUEUE_PROCESSING_TIME)


def _recovery_metric(controller: QuorumController, key: str) -> Callable[[], float]:
    return lambda: controller.recovery_metrics()[key]


def under_min_isr_count(image: MetadataImage, static: dict[str, str]) -> int:
    """Partitions whose ISR is smaller than their effective min ISR (KIP-966's
    ``global_under_min_isr_partition_count``; ``MetadataImage.min_isr``)."""
    under = 0
    for (topic, _), part in image.partitions.items():
        if len(part.isr) < image.min_isr(topic, static):
            under += 1
    return under


def count_elections(metrics: KafkaMetrics, before: MetadataImage, records: Sequence[object]) -> None:
    """Mark the election meters for the PartitionChangeRecords among ``records`` (about to be appended to
    the image ``before``): a leader elected RECOVERING is an unclean election, one from the partition's
    ELR an ELR election (each record judged by the state before the batch; a batch changes a partition's
    leader once)."""
    unclean = metrics.meter(UNCLEAN_LEADER_ELECTIONS)
    from_elr = metrics.meter(ELR_ELECTIONS)
    for rec in records:
        if type(rec) is not PartitionChangeRecord or rec.leader is None or rec.leader < 0:
            continue
        if rec.leader_recovery_state == RECOVERING:
            unclean.mark()
            continue
        name = before.topic_names.get(rec.topic_id)
        old = before.partitions.get((name, rec.partition_id)) if name is not None else None
        if old is not None and rec.leader in old.elr:
            from_elr.mark()
