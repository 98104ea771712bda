"""A node's ``/metrics`` endpoint: its :class:`~kraftlog.metrics.KafkaMetrics` in Prometheus's text format.

:class:`KafkaMetricsCollector` is a ``prometheus_client`` custom collector that reads the node's metrics when
scraped (names as :meth:`kraftlog.metrics.MetricName.prometheus` renders them: jmx_exporter's
``kafka-kraft-3_0_0.yml``; each family's HELP is the MBean name). :class:`MetricsEndpoint` serves it
over HTTP on the node's own asyncio loop (on the socket the node bound: 127.0.0.1), so a scrape reads the
core's state between two events and never races it: ``GET /metrics`` (any query string) answers 200 with
``prometheus_client.generate_latest``'s body, any other path 404, a request line or header over
:data:`MAX_REQUEST_BYTES` or slower than :data:`REQUEST_TIMEOUT_S` closes the connection.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from ..metrics import QUANTILE_LABELS, KafkaMetrics, MetricName, Sample

#: Bytes a scrape's request line and headers may take.
MAX_REQUEST_BYTES = 16_384
#: Seconds a scraper has to send its request.
REQUEST_TIMEOUT_S = 5.0

_PROMETHEUS_TYPE = {"gauge": "gauge", "counter": "counter", "summary": "summary"}


class KafkaMetricsCollector(Collector):
    """Collects ``read()``'s metrics (the node's current :class:`KafkaMetrics`: a controller's is replaced
    by a failover) as Prometheus metric families, one per Prometheus name."""

    def __init__(self, read: Callable[[], KafkaMetrics]) -> None:
        self._read = read

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for sample in self._read().collect():
            name = sample.name.prometheus()
            family = families.get(name)
            if family is None:
                family = families[name] = Metric(name, _help(sample), _PROMETHEUS_TYPE[sample.kind])
            _add(family, name, sample)
        yield from families.values()


def _help(sample: Sample) -> str:
    """A family's HELP: the MBean name without the tags that became labels."""
    n = sample.name
    return MetricName(n.domain, n.type, n.name, (), n.attribute, n.kip).mbean()


def _add(family: Metric, name: str, sample: Sample) -> None:
    labels = sample.name.labels()
    if sample.kind == "counter":
        family.add_sample(name + "_total", labels, sample.value)
    elif sample.kind == "gauge":
        family.add_sample(name, labels, sample.value)
    else:
        for q, value in sample.quantiles:
            family.add_sample(name, {**labels, "quantile": QUANTILE_LABELS[q]}, value)
        family.add_sample(name + "_count", labels, float(sample.count))
        family.add_sample(name + "_sum", labels, sample.sum)


def exposition(read: Callable[[], KafkaMetrics]) -> bytes:
    """The Prometheus text exposition of ``read()``'s metrics (what ``/metrics`` answers)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(KafkaMetricsCollector(read))
    return generate_latest(registry)


class MetricsEndpoint:
    """``/metrics`` for one node on ``host``:``port`` (0: a free port; :attr:`port` once started)."""

    def __init__(self, read: Callable[[], KafkaMetrics]) -> None:
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(KafkaMetricsCollector(read))
        self._server: asyncio.Server | None = None
        self.port: int | None = None
        self.scrapes = 0

    async def start(self, sock: socket.socket) -> int:
        """Serve on ``sock`` (bound and listening: the node binds it with its listeners, so a port in use
        is refused before it starts); returns its port."""
        self._server = await asyncio.start_server(self._serve, sock=sock, limit=MAX_REQUEST_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), REQUEST_TIMEOUT_S)
            parts = head.split(b"\r\n", 1)[0].split()
            path = parts[1].split(b"?", 1)[0] if len(parts) >= 2 else b""
            if len(parts) >= 2 and parts[0] in (b"GET", b"HEAD") and path == b"/metrics":
                body = generate_latest(self._registry)
                self.scrapes += 1
                status, ctype = b"200 OK", CONTENT_TYPE_LATEST.encode()
            else:
                body, status, ctype = b"not found: GET /metrics\n", b"404 Not Found", b"text/plain"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: " + ctype + b"\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
                         + (b"" if parts[:1] == [b"HEAD"] else body))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        finally:
            writer.close()


#: The gauges ``cluster status`` shows per node (the run file's ``gauges``), by Kafka's short name.
KEY_GAUGES = ("ActiveControllerCount", "OfflinePartitionsCount", "ActiveBrokerCount", "FencedBrokerCount",
              "GlobalPartitionCount", "global_under_min_isr_partition_count", "unclean_recovery_partitions_count",
              "manual_leader_election_required_partition_count", "PartitionCount", "LeaderCount",
              "UnderReplicatedPartitions", "UnderMinIsrPartitionCount", "AtMinIsrPartitionCount",
              "OfflineReplicaCount", "OfflineLogDirectoryCount")


def key_gauges(metrics: KafkaMetrics) -> dict[str, int]:
    """The node's :data:`KEY_GAUGES` now, in that order (those it has)."""
    by_short = {(n.kip or n.name): read for n, read in metrics.gauges.items()}
    return {short: int(by_short[short]()) for short in KEY_GAUGES if short in by_short}


def scrape(port: int, timeout_s: float = 2.0) -> dict[str, float]:
    """One scrape of ``127.0.0.1:port/metrics``: sample name -> value of its unlabelled samples (OSError
    when the node does not answer)."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout_s) as r:
        text = r.read().decode()
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples
            if not s.labels}


class MetricsSampler:
    """Scrapes a node's ``/metrics`` every ``every_s`` seconds in a thread of its own (``port_of()``: the
    node's metrics port now, None while unknown; a node that does not answer -- down, restarting -- is
    skipped), keeping each of ``names``' last and largest value: the ``{"final", "max"}`` that
    ``scenario run --real`` reports as the simulator reports its gauges. :meth:`stop` scrapes once more and
    returns them; a name never seen is left out."""

    def __init__(self, port_of: Callable[[], int | None], names: tuple[str, ...], every_s: float = 0.2) -> None:
        import threading
        self._port_of, self.names, self.every_s = port_of, names, every_s
        self.values: dict[str, dict[str, float]] = {}
        self.scrapes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="metrics-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _sample(self) -> None:
        port = self._port_of()
        if port is None:
            return
        try:
            got = scrape(port)
        except (OSError, ValueError):
            return
        self.scrapes += 1
        for name in self.names:
            if name in got:
                seen = self.values.setdefault(name, {"final": got[name], "max": got[name]})
                seen["final"] = got[name]
                seen["max"] = max(seen["max"], got[name])

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            self._sample()

    def close(self) -> None:
        """Stop sampling, if not yet stopped (a thread scraping finishes its scrape on its own)."""
        self._stop.set()

    def stop(self) -> dict[str, dict[str, float]]:
        """Stop sampling (at most 10 s for a scrape in progress), take a last sample, return the values."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)
        self._sample()
        return self.values
