"""Kafka's ``ConfigurationControlManager``: dynamic configs (IncrementalAlterConfigs → ConfigRecord), the
validation of a new topic's configs, and the configs the other managers read as they are now.

A config resolves topic override → cluster-level dynamic value → the controller's static config →
Kafka's default (:meth:`kraftlog.metadata.image.MetadataImage.config`); the effective min ISR is
min(``min.insync.replicas``, replication factor) (KIP-966).
"""

from __future__ import annotations

from ..level import Level
from ..metadata import config as cfg
from ..metadata.image import RESOURCE_BROKER, RESOURCE_TOPIC, MetadataImage
from ..metadata.records import ClearElrRecord, ConfigRecord
from ..protocol import messages as m
from ..protocol.errors import Errors
from .context import ControllerContext, MetadataRecord


class ConfigurationControlManager:
    """The controller's config control. ``ctx``: the controller (image, append); ``level``: the protocol
    level; ``static``: the controller's static configs (Kafka names → strings), never changed."""

    def __init__(self, ctx: ControllerContext, level: Level, static: dict[str, str]) -> None:
        self.ctx = ctx
        self.level = level
        self.static = static

    # ================================================================= configs as they are now
    def lookup_static(self, name: str) -> int:
        """A static integer config (``num.partitions``, ``broker.session.timeout.ms`` ...): the controller's
        static value, else Kafka's default."""
        return int(cfg.lookup(name, self.static))

    @property
    def unclean_recovery_enabled(self) -> bool:
        """Level ``urm`` with ``unclean.recovery.manager.enabled`` (a cluster config, static or dynamic):
        the Unclean Recovery Manager replaces the last-known-leader and unclean elections. False makes
        level ``urm`` behave exactly as ``elr``."""
        return self.level >= Level.URM and cfg.as_bool(
            self.ctx.image.config("unclean.recovery.manager.enabled", None, self.static))

    def recovery_timeout_ms(self) -> int:
        """``unclean.recovery.timeout.ms`` now (ms): the cluster's dynamic value, else the static config,
        else KIP-966's 5 minutes. A recovery reads it when it starts (issue 25, rule 5)."""
        return int(self.ctx.image.config("unclean.recovery.timeout.ms", None, self.static))

    def unclean_leader_election_enabled(self, topic: str, image: MetadataImage | None = None) -> bool:
        """``unclean.leader.election.enable`` for ``topic`` in ``image`` (default: the current image)."""
        image = self.ctx.image if image is None else image
        return cfg.as_bool(image.config("unclean.leader.election.enable", topic, self.static))

    def min_isr(self, topic: str, image: MetadataImage | None = None) -> int:
        """The effective min ISR of ``topic`` in ``image`` (default: the current image): min(
        ``min.insync.replicas``, replication factor), KIP-966."""
        image = self.ctx.image if image is None else image
        return image.min_isr(topic, self.static)

    def unclean_recovery_strategy(self, topic: str) -> str:
        """``None`` / ``Balanced`` / ``Aggressive`` for ``topic`` (KIP-966's ``unclean.recovery.strategy``,
        :meth:`kraftlog.metadata.image.MetadataImage.unclean_recovery_strategy`)."""
        return self.ctx.image.unclean_recovery_strategy(topic, self.static)

    def delete_topic_enabled(self) -> bool:
        """``delete.topic.enable``: a cluster config here (static or cluster-level dynamic; Kafka's is
        static only)."""
        return cfg.as_bool(self.ctx.image.config("delete.topic.enable", None, self.static))

    def elect_leaders_partition_limit(self) -> int:
        """How many partitions of an ElectLeaders v3 request are served (KIP-966): the cluster's dynamic
        or the static ``max.request.partition.size.limit`` when one is set, else KIP-966's 1,000."""
        name = "max.request.partition.size.limit"
        dynamic = self.ctx.image.configs.get((RESOURCE_BROKER, "")) or {}
        if name in dynamic or name in self.static:
            return int(cfg.lookup(name, dynamic, self.static))
        return cfg.ELECT_LEADERS_PARTITION_LIMIT

    # ================================================================= CreateTopics' configs
    def invalid_topic_configs(self, configs: tuple[tuple[str, str | None], ...]) -> tuple[int, str] | None:
        """A new topic's configs as Kafka's ``computeConfigChanges`` and ConfigurationControlManager check
        them: (INVALID_CONFIG, message) for null values, names kraftlog does not know (a broker config name
        is accepted and has no effect, docs/SCENARIOS.md), names of a higher level, and values of the wrong
        type or range (:func:`kraftlog.metadata.config.invalid_value`); else None."""
        nulls = [name for name, value in configs if value is None]
        if nulls:
            return Errors.INVALID_CONFIG, f"Null value not supported for topic configs: {','.join(nulls)}"
        unknown = [name for name, _ in configs if name not in cfg.KNOWN_CONFIGS]
        if unknown:
            return Errors.INVALID_CONFIG, f"Unknown topic config name: {unknown[0]}"
        for name, value in configs:
            problem = cfg.unknown_at_level(name, self.level) or cfg.invalid_value(name, value)
            if problem:
                return Errors.INVALID_CONFIG, problem
        return None

    # ================================================================= IncrementalAlterConfigs
    def handle_incremental_alter_configs(self, now_ms: int, req: m.IncrementalAlterConfigsRequest
                                         ) -> m.IncrementalAlterConfigsResponse:
        """IncrementalAlterConfigs (Kafka's ``ConfigurationControlManager.incrementalAlterConfigs``), each
        resource on its own, in request order: an unknown topic → UNKNOWN_TOPIC_OR_PARTITION; a resource
        type other than topic or broker → INVALID_REQUEST; APPEND / SUBTRACT (kraftlog has no list config)
        → INVALID_CONFIG, another unknown operation → INVALID_REQUEST; an unknown config name, one of a
        higher level or a value of the wrong type or range → INVALID_CONFIG (the whole resource); a
        refused ``min.insync.replicas`` change (:meth:`_refused_min_isr_change`) → INVALID_CONFIG. Unless
        ``validate_only``, one ConfigRecord per config (None value: DELETE), and at level ``elr``+ a
        ClearElrRecord when ``min.insync.replicas`` changes (KIP-966). No election here: Kafka elects on
        unfencing and in the periodic unclean-election task only."""
        out = []
        for res in req.resources:
            if res.resource_type == RESOURCE_TOPIC and res.resource_name not in self.ctx.image.topics:
                out.append(m.AlterConfigsResourceResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, res.resource_type,
                                                          res.resource_name))
                continue
            if res.resource_type not in (RESOURCE_TOPIC, RESOURCE_BROKER):
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_REQUEST, res.resource_type,
                                                          res.resource_name))
                continue
            ops = [c.config_operation for c in res.configs if c.config_operation not in (m.OP_SET, m.OP_DELETE)]
            if ops:
                # Kafka's OpType: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (for list configs, which kraftlog has
                # none of: INVALID_CONFIG); another id is INVALID_REQUEST.
                known = ops[0] in (m.OP_APPEND, m.OP_SUBTRACT)
                out.append(m.AlterConfigsResourceResponse(
                    Errors.INVALID_CONFIG if known else Errors.INVALID_REQUEST, res.resource_type, res.resource_name,
                    f"Can not apply {'APPEND' if ops[0] == m.OP_APPEND else 'SUBTRACT'} operation to a non-list "
                    "configuration" if known else f"Unknown operation type {ops[0]}"))
                continue
            bad = [c.name for c in res.configs if c.name not in cfg.KNOWN_CONFIGS]
            if bad:
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, f"unknown configs {bad}"))
                continue
            invalid = [cfg.unknown_at_level(c.name, self.level) for c in res.configs]
            invalid += [cfg.invalid_value(c.name, c.value) for c in res.configs if c.config_operation != m.OP_DELETE]
            problem = next((x for x in invalid if x), None)
            if problem is not None:  # Kafka's ConfigDef validation: the whole resource is refused
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, problem))
                continue
            refused = self._refused_min_isr_change(res)
            if refused:
                out.append(m.AlterConfigsResourceResponse(Errors.INVALID_CONFIG, res.resource_type,
                                                          res.resource_name, refused))
                continue
            if not req.validate_only:
                records: list[MetadataRecord] = []
                for c in res.configs:
                    value = None if c.config_operation == m.OP_DELETE else c.value
                    records.append(ConfigRecord(res.resource_type, res.resource_name, c.name, value))
                if self.level >= Level.ELR and any(c.name == "min.insync.replicas" for c in res.configs):
                    # KIP-966: any min.insync.replicas change clears the ELR, LastKnownELR and the last
                    # known leader (Kafka's createClearElrRecordsAsNeeded).
                    topic = res.resource_name if res.resource_type == RESOURCE_TOPIC else None
                    records.append(ClearElrRecord(topic))
                self.ctx.append(records, now_ms)
            out.append(m.AlterConfigsResourceResponse(Errors.NONE, res.resource_type, res.resource_name))
        return m.IncrementalAlterConfigsResponse(tuple(out))

    def _refused_min_isr_change(self, res: m.AlterConfigsResource) -> str | None:
        """While ELR is enabled (level ``elr``+) Kafka refuses a broker-level ``min.insync.replicas`` and
        the removal of the cluster-level one with INVALID_CONFIG (``ConfigurationControlManager``
        ``isDisallowedBrokerMinIsrTransition`` / ``isDisallowedClusterMinIsrTransition``); the message."""
        if self.level < Level.ELR or res.resource_type != RESOURCE_BROKER:
            return None
        for c in res.configs:
            if c.name != "min.insync.replicas":
                continue
            if res.resource_name != "":
                return "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
            if c.config_operation == m.OP_DELETE:
                return "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
        return None
