"""The broker's view of the metadata log (Kafka's ``KRaftMetadataCache``): the latest
:class:`~kraftlog.metadata.image.MetadataImage` and what the broker derives from it per topic, cached per
image (effective min ISR, the limits on produced batches, the log's flush configs)."""

from __future__ import annotations

from collections.abc import Sequence

from ..metadata import config as cfg
from ..metadata.image import MetadataDelta, MetadataImage
from ..protocol.validation import RecordLimits
from ..storage.log import LogConfig


class MetadataCache:
    """``image``: the metadata image replayed so far; ``static``: the broker's static config (Kafka names →
    strings), the layer below the image's dynamic configs."""

    def __init__(self, static: dict[str, str]) -> None:
        self.static = static
        self.image = MetadataImage()
        self._min_isr: dict[str, int] = {}
        self._limits: dict[str, RecordLimits] = {}

    def replay(self, records: Sequence[object], base_offset: int) -> MetadataDelta:
        """Replay ``records`` (the first at metadata offset ``base_offset``) into the image
        (:meth:`MetadataImage.replay`) and forget what was derived from the previous one; the delta."""
        self.image, delta = self.image.replay(records, base_offset)
        self._min_isr.clear()
        self._limits.clear()
        return delta

    def set_image(self, image: MetadataImage) -> None:
        """Replace the image (a snapshot loaded) and forget what was derived from the previous one."""
        self.image = image
        self._min_isr.clear()
        self._limits.clear()

    def min_isr(self, topic: str) -> int:
        """Effective min ISR of ``topic``: min(min.insync.replicas, RF) (KIP-966), cached per image."""
        cached = self._min_isr.get(topic)
        if cached is None:
            cached = self._min_isr[topic] = self.image.min_isr(topic, self.static)
        return cached

    def record_limits(self, topic: str) -> RecordLimits:
        """``topic``'s limits on produced batches (``max.message.bytes``, ``message.timestamp.*``, through the
        broker defaults), cached per metadata image for the topics the image has."""
        cached = self._limits.get(topic)
        if cached is None:
            def get(name: str) -> int:
                return int(self.image.config(name, topic, self.static))
            policy = cfg.parse_cleanup_policy(self.image.config("log.cleanup.policy", topic, self.static))
            cached = RecordLimits(get("message.max.bytes"), get("log.message.timestamp.before.max.ms"),
                                  get("log.message.timestamp.after.max.ms"), "compact" in (policy or ()))
            if topic in self.image.topics:
                self._limits[topic] = cached
        return cached

    def log_config(self, topic: str | None) -> LogConfig:
        """``topic``'s log configs (Kafka's ``LogConfig``) through their broker synonyms
        (``flush.messages``/``log.flush.interval.messages``, ``retention.ms``/``log.retention.ms``/``minutes``/
        ``hours``, ...): None for a flush policy that never runs (unset or Kafka's Long.MAX_VALUE)."""
        image, static = self.image, self.static

        def get(name: str) -> int | None:
            value = cfg.as_int(image.config(name, topic, static))
            return None if value is None or value >= _NEVER else value

        def need(name: str) -> int:  # a config with a default (through its synonyms)
            return int(image.config(name, topic, static))

        policy = cfg.parse_cleanup_policy(image.config("log.cleanup.policy", topic, static)) or frozenset({"delete"})

        return LogConfig(flush_interval_messages=get("log.flush.interval.messages"),
                         flush_interval_ms=get("log.flush.interval.ms"),
                         segment_bytes=need("log.segment.bytes"), segment_ms=need("log.roll.ms"),
                         segment_jitter_ms=need("log.roll.jitter.ms"),
                         segment_index_bytes=need("log.index.size.max.bytes"),
                         index_interval_bytes=need("log.index.interval.bytes"),
                         retention_ms=need("log.retention.ms"), retention_bytes=need("log.retention.bytes"),
                         file_delete_delay_ms=need("log.segment.delete.delay.ms"),
                         delete="delete" in policy, compact="compact" in policy,
                         min_cleanable_ratio=float(image.config("log.cleaner.min.cleanable.ratio", topic, static)),
                         min_compaction_lag_ms=need("log.cleaner.min.compaction.lag.ms"),
                         max_compaction_lag_ms=need("log.cleaner.max.compaction.lag.ms"),
                         delete_retention_ms=need("log.cleaner.delete.retention.ms"))


#: A flush policy at or above this (Kafka's Long.MAX_VALUE defaults) never runs.
_NEVER = 1 << 62
