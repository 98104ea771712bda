"""The /metrics endpoint against hostile scrapers (issue 29): a client that never sends its request, one
whose request line overruns the limit, a wrong path and a wrong method are each answered or closed without
affecting the next scrape."""

from __future__ import annotations

import asyncio
import socket

from kraftlog.metrics import KafkaMetrics, MetricName
from kraftlog.net import metrics_http
from kraftlog.net.metrics_http import MetricsEndpoint


async def _exchange(port: int, data: bytes, read_timeout: float = 10.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), read_timeout)
    finally:
        writer.close()


def test_metrics_endpoint_bounds_slow_oversized_and_wrong_requests(monkeypatch):
    monkeypatch.setattr(metrics_http, "REQUEST_TIMEOUT_S", 0.3)
    metrics = KafkaMetrics()
    metrics.gauge(MetricName("kafka.server", "ReplicaManager", "LeaderCount"), lambda: 2)

    async def run() -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        endpoint = MetricsEndpoint(lambda: metrics)
        port = await endpoint.start(sock)
        try:
            silent = await _exchange(port, b"", read_timeout=5.0)  # sends nothing: closed after the timeout
            assert silent == b""
            long_path = b"a" * (metrics_http.MAX_REQUEST_BYTES + 10)
            oversized = await _exchange(port, b"GET /" + long_path + b" HTTP/1.1\r\n")
            assert oversized == b""
            wrong_path = await _exchange(port, b"GET /admin HTTP/1.1\r\nHost: x\r\n\r\n")
            assert wrong_path.startswith(b"HTTP/1.1 404 ")
            wrong_method = await _exchange(port, b"DELETE /metrics HTTP/1.1\r\n\r\n")
            assert wrong_method.startswith(b"HTTP/1.1 404 ")
            ok = await _exchange(port, b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200 OK") and b"kafka_server_replicamanager_leadercount 2.0" in ok
            head = await _exchange(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK") and head.endswith(b"\r\n\r\n")
            assert endpoint.scrapes == 2
        finally:
            await endpoint.close()

    asyncio.run(run())
