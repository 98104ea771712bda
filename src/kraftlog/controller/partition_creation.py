"""CreatePartitions on the controller (Kafka's ``ControllerApis.createPartitions`` and
``ReplicationControlManager.createPartitions``): a topic's partition count grows, never shrinks; each new
partition is one PartitionRecord, as Kafka writes it.

The validation, per topic, in Kafka's order:

* a name given twice in the request: INVALID_REQUEST "Duplicate topic name." (answered after the others,
  as ``ControllerApis`` does);
* a topic the image does not have: UNKNOWN_TOPIC_OR_PARTITION;
* a count equal to the current one: INVALID_PARTITIONS "Topic already has N partition(s)."; a smaller one:
  INVALID_PARTITIONS "... would not be an increase.";
* manual assignments: as many as new partitions, each non-empty, of registered brokers, none twice, with
  the topic's replication factor (that of its partition 0), and at least one replica unfenced and not
  shutting down (the new partition's ISR): INVALID_REPLICA_ASSIGNMENT otherwise;
* without assignments the new partitions are placed as CreateTopics places (round-robin over the usable
  brokers from a seeded start), with the topic's replication factor: more replicas than usable brokers is
  INVALID_REPLICATION_FACTOR.

More than :data:`MAX_NEW_PARTITIONS_PER_REQUEST` new partitions in one request: every topic POLICY_VIOLATION,
nothing created (kraftlog's bound, CreateTopics' ``MAX_PARTITIONS_PER_BATCH`` and message: Kafka's
createPartitions has none, and a hostile count must not make the controller build billions of records).

The records of every topic that passed are appended together (``ControllerResult.atomicOf``); with
``validate_only`` nothing is appended and the answers are the same.
"""

from __future__ import annotations

from random import Random

from ..metadata.image import MetadataImage
from ..metadata.records import PartitionRecord
from ..protocol import messages as m
from ..protocol.errors import Errors
from .context import MetadataRecord

#: The most partitions one CreatePartitions request may add (POLICY_VIOLATION beyond; module docstring).
MAX_NEW_PARTITIONS_PER_REQUEST = 10_000


class PartitionCreationError(Exception):
    """A topic of a CreatePartitions request refused: ``code`` (Kafka's error) and the message."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def create_partitions(image: MetadataImage, rng: Random, req: m.CreatePartitionsRequest
                      ) -> tuple[list[MetadataRecord], list[m.CreatePartitionsTopicResult]]:
    """The records to append and the result per topic (request order, duplicates last) of ``req`` on
    ``image`` (module docstring). ``rng``: the controller's seeded Random (placement). The records are
    empty with ``validate_only``."""
    counts: dict[str, int] = {}
    for t in req.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    records: list[MetadataRecord] = []
    results = []
    unique = [t for t in req.topics if counts[t.name] == 1]
    adding = sum(max(0, t.count - image.topics[t.name].partition_count) for t in unique if t.name in image.topics)
    if adding > MAX_NEW_PARTITIONS_PER_REQUEST:
        unique = []
        results = [m.CreatePartitionsTopicResult(t.name, Errors.POLICY_VIOLATION,
                                                 "Excessively large number of partitions per request.")
                   for t in req.topics if counts[t.name] == 1]
    for t in unique:
        try:
            new = new_partition_records(image, rng, t)
        except PartitionCreationError as exc:
            results.append(m.CreatePartitionsTopicResult(t.name, exc.code, exc.message))
            continue
        records += new
        results.append(m.CreatePartitionsTopicResult(t.name, Errors.NONE))
    results += [m.CreatePartitionsTopicResult(name, Errors.INVALID_REQUEST, "Duplicate topic name.")
                for name, n in counts.items() if n > 1]
    return ([] if req.validate_only else records), results


def new_partition_records(image: MetadataImage, rng: Random, t: m.CreatePartitionsTopic) -> list[PartitionRecord]:
    """One PartitionRecord per partition ``t`` adds to its topic in ``image``: replicas as assigned or
    placed, ISR the usable replicas, leader the first of them, epochs 0 (Kafka's
    ``buildPartitionRegistration``). Raises :class:`PartitionCreationError` (module docstring)."""
    topic = image.topics.get(t.name)
    if topic is None:
        raise PartitionCreationError(Errors.UNKNOWN_TOPIC_OR_PARTITION)
    current = topic.partition_count
    if t.count == current:
        raise PartitionCreationError(Errors.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if t.count < current:
        raise PartitionCreationError(Errors.INVALID_PARTITIONS, f"The topic {t.name} currently has {current} "
                                     f"partition(s); {t.count} would not be an increase.")
    additional = t.count - current
    first = image.partitions.get((t.name, 0))
    if first is None:
        raise PartitionCreationError(Errors.UNKNOWN_SERVER_ERROR,
                                     f"Invalid state: topic {t.name} appears to have no partitions.")
    rf = len(first.replicas)
    usable = sorted(b for b in image.brokers if image.is_acceptable_leader(b))
    if t.assignments is not None:
        if len(t.assignments) != additional:
            raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT, (
                f"Attempted to add {additional} additional partition(s), but only {len(t.assignments)} "
                "assignment(s) were specified."))
        assignment = []
        for i, a in enumerate(t.assignments):
            _validate_manual_assignment(image, a.broker_ids, rf)
            if not any(image.is_acceptable_leader(b) for b in a.broker_ids):
                raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT, (
                    "All brokers specified in the manual partition assignment for partition "
                    f"{current + i} are fenced or in controlled shutdown."))
            assignment.append(tuple(a.broker_ids))
    else:
        if rf > len(usable):
            raise PartitionCreationError(Errors.INVALID_REPLICATION_FACTOR, (
                f"Unable to replicate the partition {rf} time(s): The target replication factor of {rf} cannot "
                f"be reached because only {len(usable)} broker(s) are unfenced with an online log directory."))
        start = rng.randrange(len(usable))
        assignment = [tuple(usable[(start + p + i) % len(usable)] for i in range(rf)) for p in range(additional)]
    out = []
    for i, replicas in enumerate(assignment):
        isr = tuple(r for r in replicas if image.is_acceptable_leader(r))
        assert isr, "a new partition has a usable replica"
        out.append(PartitionRecord(partition_id=current + i, topic_id=topic.topic_id, replicas=replicas, isr=isr,
                                   leader=isr[0], leader_epoch=0, partition_epoch=0))
    return out


def _validate_manual_assignment(image: MetadataImage, replicas: tuple[int, ...], rf: int) -> None:
    """Kafka's ``validateManualPartitionAssignment`` with the topic's replication factor ``rf``."""
    if not replicas:
        raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT,
                                     "The manual partition assignment includes an empty replica list.")
    previous = None
    for broker in sorted(replicas):
        if broker not in image.brokers:
            raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes broker {broker}, but no such broker is registered."))
        if broker == previous:
            raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes the broker {broker} more than once."))
        previous = broker
    if len(replicas) != rf:
        raise PartitionCreationError(Errors.INVALID_REPLICA_ASSIGNMENT, (
            f"The manual partition assignment includes a partition with {len(replicas)} replica(s), but this is "
            f"not consistent with previous partitions, which have {rf} replica(s)."))
