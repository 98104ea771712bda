"""Kafka's ``ConfigurationControlManager``: dynamic configs (IncrementalAlterConfigs and the legacy
AlterConfigs → ConfigRecord), the validation of a new topic's configs, and the configs the other managers
read as they are now.

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
        """:meth:`_refused_min_isr_records` for an IncrementalAlterConfigs resource (DELETE: a None value)."""
        return self._refused_min_isr_records(res.resource_type, res.resource_name, [
            (c.name, None if c.config_operation == m.OP_DELETE else c.value) for c in res.configs])

    def _refused_min_isr_records(self, resource_type: int, resource_name: str,
                                 changes: list[tuple[str, str | None]]) -> str | None:
        """While ELR is enabled (level ``elr``+) Kafka refuses a broker-level ``min.insync.replicas`` and
        the removal of the cluster-level one with INVALID_CONFIG (``ConfigurationControlManager``
        ``isDisallowedBrokerMinIsrTransition`` / ``isDisallowedClusterMinIsrTransition``), over the config
        records a request would write (``changes``: (name, value), None = removed); the message."""
        if self.level < Level.ELR or resource_type != RESOURCE_BROKER:
            return None
        for name, value in changes:
            if name != "min.insync.replicas":
                continue
            if resource_name != "":
                return "Broker-level min.insync.replicas cannot be altered while ELR is enabled."
            if value is None:
                return "Cluster-level min.insync.replicas cannot be removed while ELR is enabled."
        return None

    # ================================================================= AlterConfigs (legacy)
    def handle_legacy_alter_configs(self, now_ms: int, req: m.AlterConfigsRequest) -> m.AlterConfigsResponse:
        """The legacy AlterConfigs (API key 33; Kafka's ``ControllerApis.alterConfigs`` and
        ``ConfigurationControlManager.legacyAlterConfigs``): each resource's configs *replace* its dynamic
        configs: a ConfigRecord for each named config whose value changes, and a removal (value None) for
        each current dynamic config not named. A resource named twice: INVALID_REQUEST "Duplicate resource."
        (answered once, after the others, as ``ControllerApis`` does). Per resource, on the records it would
        write: an unknown topic → UNKNOWN_TOPIC_OR_PARTITION; a resource type other than topic or broker →
        INVALID_REQUEST; an unknown config name, one of a higher level or a value of the wrong type or range
        → INVALID_CONFIG; a refused ``min.insync.replicas`` change (:meth:`_refused_min_isr_records`: the
        cluster-level one cannot be dropped at level ``elr``+, even by leaving it out) → INVALID_CONFIG. A
        null value removes the config. Unless ``validate_only``, the accepted resources' records are
        appended together, with a ClearElrRecord per resource whose ``min.insync.replicas`` changes (level
        ``elr``+, KIP-966), as for IncrementalAlterConfigs."""
        counts: dict[tuple[int, str], int] = {}
        for res in req.resources:
            key = (res.resource_type, res.resource_name)
            counts[key] = counts.get(key, 0) + 1
        records: list[MetadataRecord] = []
        out = []
        for res in req.resources:
            if counts[(res.resource_type, res.resource_name)] > 1:
                continue
            refused, new = self._legacy_alter_resource(res)
            if refused is not None:
                out.append(m.LegacyAlterConfigsResourceResponse(refused[0], res.resource_type, res.resource_name,
                                                                refused[1]))
                continue
            records += new
            out.append(m.LegacyAlterConfigsResourceResponse(Errors.NONE, res.resource_type, res.resource_name))
        out += [m.LegacyAlterConfigsResourceResponse(Errors.INVALID_REQUEST, rtype, name, "Duplicate resource.")
                for (rtype, name), n in counts.items() if n > 1]
        if not req.validate_only:
            self.ctx.append(records, now_ms)
        return m.AlterConfigsResponse(tuple(out))

    def _legacy_alter_resource(self, res: m.LegacyAlterConfigsResource
                               ) -> tuple[tuple[int, str | None] | None, list[MetadataRecord]]:
        """((error, message), []) for a refused resource, else (None, the records that replace its configs)
        (:meth:`handle_legacy_alter_configs`)."""
        if res.resource_type == RESOURCE_TOPIC and res.resource_name not in self.ctx.image.topics:
            return (Errors.UNKNOWN_TOPIC_OR_PARTITION, None), []
        if res.resource_type not in (RESOURCE_TOPIC, RESOURCE_BROKER):
            return (Errors.INVALID_REQUEST, f"Unsupported resource type {res.resource_type}"), []
        wanted: dict[str, str | None] = {c.name: c.value for c in res.configs}
        current = self.ctx.image.configs.get((res.resource_type, res.resource_name)) or {}
        changes = [(name, value) for name, value in wanted.items() if current.get(name) != value]
        changes += [(name, None) for name in sorted(current) if name not in wanted]
        bad = [name for name, _ in changes if name not in cfg.KNOWN_CONFIGS]
        if bad:
            return (Errors.INVALID_CONFIG, f"unknown configs {bad}"), []
        problems = [cfg.unknown_at_level(name, self.level) for name, _ in changes]
        problems += [cfg.invalid_value(name, value) for name, value in changes if value is not None]
        problem = next((x for x in problems if x), None) or self._refused_min_isr_records(
            res.resource_type, res.resource_name, changes)
        if problem is not None:
            return (Errors.INVALID_CONFIG, problem), []
        records: list[MetadataRecord] = [ConfigRecord(res.resource_type, res.resource_name, name, value)
                                         for name, value in changes]
        if self.level >= Level.ELR and any(name == "min.insync.replicas" for name, _ in changes):
            records.append(ClearElrRecord(res.resource_name if res.resource_type == RESOURCE_TOPIC else None))
        return None, records
