"""A node's metrics, sans I/O: Kafka's metric names, values read over the injected time.

Each node (a :class:`~kraftlog.broker.broker.Broker`, a :class:`~kraftlog.controller.controller.QuorumController`)
owns one :class:`KafkaMetrics` -- no global registry: the simulator runs every node in one process. The
simulator reads it into a run's verdict; the TCP driver exposes it on ``/metrics``
(:mod:`kraftlog.net.metrics_http`, a ``prometheus_client`` collector). Simulated and real figures come from
this one code path.

Names are Kafka's, as JMX MBeans (:class:`MetricName`), and render to Prometheus as
``prometheus/jmx_exporter``'s ``examples/kafka-kraft-3_0_0.yml`` renders Kafka's MBeans
(``lowercaseOutputName: true``; :meth:`MetricName.prometheus`):

* a Yammer gauge ``kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions`` is
  ``kafka_server_replicamanager_underreplicatedpartitions`` (its other tags become labels);
* a Yammer meter ``...,name=<X>PerSec`` (its ``Count``) is the counter ``kafka_<domain>_<type>_<x>_total``,
  e.g. ``kafka_controller_controllerstats_uncleanleaderelections_total`` and
  ``kafka_network_requestmetrics_requests_total{request="Produce",version="9"}``;
* a Yammer histogram or timer (``TotalTimeMs``, ``EventQueueTimeMs``) is a summary: its percentiles as
  ``kafka_<domain>_<type>_<name>{quantile="0.99"}`` and its ``Count`` as ``..._count`` (jmx_exporter
  emulates exactly that; a Prometheus summary also gives ``_sum``);
* a Kafka-metrics attribute ``kafka.server:type=broker-metadata-metrics`` ``metadata-apply-error-count`` is
  ``kafka_server_broker_metadata_metrics_metadata_apply_error_count`` (a counter when it ends ``-total``);
* KIP-966's controller metrics keep the KIP's own snake_case names under ``kafka.controller.``:
  ``kafka_controller_unclean_recovery_partitions_count``.

A gauge is a function read when the metrics are collected; a meter counts events; a histogram keeps a
count, a sum and the last :data:`RESERVOIR_SIZE` values (Yammer's reservoirs keep 1028 samples; this one
is a sliding window, deterministic). Times are ms of the node's injected clock.
"""

from __future__ import annotations

import re
from bisect import insort
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["MetricName", "Meter", "Histogram", "KafkaMetrics", "Sample", "RESERVOIR_SIZE", "QUANTILES"]

#: Values a histogram keeps for its percentiles (Yammer's ExponentiallyDecayingReservoir's default size).
RESERVOIR_SIZE = 1028
#: The percentiles Kafka's Yammer histograms export (50th..999th), as quantiles.
QUANTILES = (0.5, 0.75, 0.95, 0.98, 0.99, 0.999)
#: Each quantile's label as jmx_exporter writes it (``50thPercentile`` -> ``"0.50"``).
QUANTILE_LABELS = {0.5: "0.50", 0.75: "0.75", 0.95: "0.95", 0.98: "0.98", 0.99: "0.99", 0.999: "0.999"}

Kind = Literal["gauge", "counter", "summary"]
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


@dataclass(frozen=True, slots=True)
class MetricName:
    """One of Kafka's metrics. ``domain`` and ``type`` as in the MBean (``kafka.server``,
    ``ReplicaManager``); ``name`` the Yammer metric's name (``UnderReplicatedPartitions``,
    ``BytesInPerSec``), or, with ``attribute``, None for a Kafka-metrics group whose attribute names the
    metric (``type=broker-metadata-metrics``, ``metadata-apply-error-count``); ``tags`` the MBean's other
    keys in order (``(("topic", "t"), ("partition", "0"))``). ``kip`` names a metric by a KIP's own
    dotted snake_case name instead (``kafka.controller.unclean_recovery_partitions_count``, KIP-966)."""

    domain: str
    type: str | None
    name: str | None
    tags: tuple[tuple[str, str], ...] = ()
    attribute: str | None = None
    kip: str | None = None

    @staticmethod
    def kip_name(dotted: str) -> MetricName:
        """A metric a KIP names ``<domain>.<snake_case>`` (KIP-966's ``kafka.controller.*``)."""
        domain, _, name = dotted.rpartition(".")
        return MetricName(domain, None, None, kip=name)

    def with_tags(self, *tags: tuple[str, str]) -> MetricName:
        """This metric with more MBean tags (labels)."""
        return MetricName(self.domain, self.type, self.name, self.tags + tags, self.attribute, self.kip)

    def mbean(self) -> str:
        """The JMX name, e.g. ``kafka.server:type=ReplicaManager,name=LeaderCount`` (an attribute after
        ``/``; a KIP's name as it is written)."""
        if self.kip is not None:
            return f"{self.domain}.{self.kip}"
        keys = [f"type={self.type}"] + ([f"name={self.name}"] if self.name else [])
        keys += [f"{k}={v}" for k, v in self.tags]
        base = f"{self.domain}:{','.join(keys)}"
        return base if self.attribute is None else f"{base}/{self.attribute}"

    def prometheus(self) -> str:
        """The Prometheus name jmx_exporter's kafka-kraft-3_0_0.yml gives it (without a counter's
        ``_total``, which :meth:`KafkaMetrics.collect`'s kind adds: see the module doc)."""
        domain = self.domain.replace(".", "_")
        if self.kip is not None:
            return _sanitize(f"{domain}_{self.kip}").lower()
        if self.attribute is not None:
            attribute = self.attribute.removesuffix("-total")
            return _sanitize(f"{domain}_{self.type}_{attribute}").lower()
        assert self.name is not None
        name = self.name
        if "PerSec" in name:
            name = name[:name.index("PerSec")]
        return _sanitize(f"{domain}_{self.type}_{name}").lower()

    def labels(self) -> dict[str, str]:
        """The MBean's tags as Prometheus labels."""
        return dict(self.tags)


def _sanitize(name: str) -> str:
    return _INVALID.sub("_", name)


class Meter:
    """A Yammer meter (Kafka's ``*PerSec``): events counted since the node started (``count``)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def mark(self, n: int = 1) -> None:
        """``n`` more events."""
        self.count += n


class Histogram:
    """A Yammer histogram or timer: ``count`` and ``sum`` of every value (ms for a timer) and the last
    :data:`RESERVOIR_SIZE` values for the percentiles."""

    __slots__ = ("count", "sum", "_window", "_sorted")

    def __init__(self) -> None:
        self.count = 0
        self.sum = 0.0
        self._window: deque[float] = deque()
        self._sorted: list[float] = []

    def update(self, value: float) -> None:
        """Record one value."""
        self.count += 1
        self.sum += value
        self._window.append(value)
        insort(self._sorted, value)
        if len(self._window) > RESERVOIR_SIZE:
            old = self._window.popleft()
            del self._sorted[_index(self._sorted, old)]

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the kept values (Yammer's ``Snapshot.getValue``: linear between the two
        nearest ranks); 0.0 when there is none."""
        values = self._sorted
        if not values:
            return 0.0
        pos = q * (len(values) + 1)
        if pos < 1:
            return values[0]
        if pos >= len(values):
            return values[-1]
        lower = values[int(pos) - 1]
        upper = values[int(pos)]
        return lower + (pos - int(pos)) * (upper - lower)


def _index(values: list[float], value: float) -> int:
    from bisect import bisect_left
    return bisect_left(values, value)


@dataclass(frozen=True, slots=True)
class Sample:
    """One collected metric: ``kind`` gauge, counter or summary; ``value`` the gauge's value or the
    counter's count; a summary's ``count``, ``sum`` and ``quantiles`` ((q, value) pairs)."""

    name: MetricName
    kind: Kind
    value: float = 0.0
    count: int = 0
    sum: float = 0.0
    quantiles: tuple[tuple[float, float], ...] = ()


@dataclass(slots=True)
class KafkaMetrics:
    """One node's metrics: gauges (functions read at :meth:`collect`), meters and histograms, by name.
    Registering a name twice replaces a gauge and returns the existing meter or histogram."""

    gauges: dict[MetricName, Callable[[], float]] = field(default_factory=dict)
    meters: dict[MetricName, Meter] = field(default_factory=dict)
    histograms: dict[MetricName, Histogram] = field(default_factory=dict)
    #: name -> a function giving (tags, value) pairs: a family of gauges whose members come and go (one
    #: per partition, say)
    gauge_families: dict[MetricName, Callable[[], list[tuple[tuple[tuple[str, str], ...], float]]]] = field(
        default_factory=dict)

    def gauge(self, name: MetricName, read: Callable[[], float]) -> None:
        """Register gauge ``name`` read by ``read()``."""
        self.gauges[name] = read

    def gauge_family(self, name: MetricName,
                     read: Callable[[], list[tuple[tuple[tuple[str, str], ...], float]]]) -> None:
        """Register gauges ``name`` + tags, as many as ``read()`` returns (tags, value) pairs."""
        self.gauge_families[name] = read

    def meter(self, name: MetricName) -> Meter:
        """The meter ``name`` (created at the first call)."""
        meter = self.meters.get(name)
        if meter is None:
            meter = self.meters[name] = Meter()
        return meter

    def histogram(self, name: MetricName) -> Histogram:
        """The histogram ``name`` (created at the first call)."""
        hist = self.histograms.get(name)
        if hist is None:
            hist = self.histograms[name] = Histogram()
        return hist

    def value(self, name: MetricName) -> float:
        """A gauge's value now, a meter's count or a histogram's count; KeyError for an unknown name."""
        if name in self.gauges:
            return float(self.gauges[name]())
        if name in self.meters:
            return float(self.meters[name].count)
        if name in self.histograms:
            return float(self.histograms[name].count)
        base = MetricName(name.domain, name.type, name.name, (), name.attribute, name.kip)
        if base in self.gauge_families:
            for tags, v in self.gauge_families[base]():
                if tags == name.tags:
                    return float(v)
        raise KeyError(name.mbean())

    def collect(self) -> Iterator[Sample]:
        """Every metric now, sorted by name: gauges (``kind`` gauge), meters and ``-total`` attributes
        (counter), histograms (summary)."""
        out: list[Sample] = []
        for name, read in self.gauges.items():
            kind: Kind = "counter" if (name.attribute or "").endswith("-total") else "gauge"
            out.append(Sample(name, kind, float(read())))
        for name, family in self.gauge_families.items():
            for tags, value in family():
                out.append(Sample(name.with_tags(*tags), "gauge", float(value)))
        for name, meter in self.meters.items():
            out.append(Sample(name, "counter", float(meter.count)))
        for name, hist in self.histograms.items():
            out.append(Sample(name, "summary", count=hist.count, sum=hist.sum,
                              quantiles=tuple((q, hist.quantile(q)) for q in QUANTILES)))
        out.sort(key=lambda s: s.name.mbean())
        return iter(out)
