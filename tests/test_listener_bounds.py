"""The listener's bounds (issue 24, finding 3), in-process: the framing's growing request buffers, the
listener configs, ``queued.max.request.bytes``'s bookkeeping, and a :class:`NodeDriver` on a loopback
socket in this process with a stub node (no node process; the real-process tests are
``tests/test_hostile_listeners.py``):

* Muting: a client that pipelines requests and never reads is handed to the node only as far as its
  responses are written to the socket; once it reads, every request is answered, in order.
* ``max.connections.per.ip``: connections over the limit are closed at once and counted.
* ``queued.max.request.bytes``: a large request whose next buffer does not fit waits without being read
  while another holds the budget, and goes on once that one is closed by
  ``kraftlog.request.receive.timeout.ms``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import uuid

import pytest

from kraftlog.net.driver import NodeDriver
from kraftlog.net.listener_limits import ListenerLimits, RequestMemory
from kraftlog.protocol import listeners as lst
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.framing import GROWTH, STAGING_BYTES, ServerConnection
from kraftlog.protocol.records import Record, RecordBatch

MIB = 1 << 20


def _write(conn: ServerConnection, data: bytes) -> list:
    """Let ``data`` arrive on ``conn`` as a BufferedProtocol's reads would (into its buffers)."""
    events, pos = [], 0
    while pos < len(data):
        buf = conn.get_buffer()
        k = min(len(buf), len(data) - pos)
        buf[:k] = data[pos:pos + k]
        del buf
        events += conn.buffer_updated(k)
        pos += k
    return events


def test_a_large_request_buffer_grows_with_the_bytes_received_not_the_size_announced():
    """A 4-byte size announcing 100 MiB allocates nothing; the first body bytes get a buffer of four times
    what arrived (at least 64 KiB), which grows fourfold each time it fills: never more than four times
    what was received (or 64 KiB), whatever was announced."""
    conn = ServerConnection(wire.supported_api_versions())
    assert _write(conn, struct.pack(">i", 100 * MIB)) == []
    assert conn.receiving and conn.held_bytes == 0
    assert conn.next_allocation == STAGING_BYTES
    received = 0
    for chunk in (1000, 70_000, 300_000, 2 * MIB):
        _write(conn, bytes(chunk))
        received += chunk
        assert conn.held_bytes <= max(STAGING_BYTES, GROWTH * received)
        assert conn.held_bytes + conn.next_allocation <= max(STAGING_BYTES, GROWTH * received)
    assert conn.held_bytes < 12 * MIB


def test_an_idle_connection_holds_no_buffer_and_a_closed_one_takes_bytes_into_a_scratch():
    conn = ServerConnection(wire.supported_api_versions())
    assert conn._buffer._buf is None
    events = _write(conn, struct.pack(">i", -1))
    assert conn.closed and "invalid frame size" in conn.closed and len(events) == 1
    assert len(conn.get_buffer()) > 0 and conn.buffer_updated(10) == []


def test_listener_limits_have_kraftlogs_defaults_and_refuse_bad_values():
    limits = ListenerLimits.from_config({})
    assert limits == ListenerLimits()
    assert (limits.max_request_bytes, limits.queued_max_request_bytes, limits.max_connections,
            limits.max_connections_per_ip, limits.connections_max_idle_ms, limits.request_receive_timeout_ms) == (
        104_857_600, 256 * MIB, 1000, 1000, 600_000, 30_000)
    assert ListenerLimits.from_config({"queued.max.request.bytes": "-1"}).queued_max_request_bytes == -1
    for name, value in (("max.connections", "0"), ("queued.max.request.bytes", "0"),
                        ("kraftlog.request.receive.timeout.ms", "soon"), ("max.connections.per.ip", "-1")):
        with pytest.raises(ValueError, match=f"Invalid value {value} for configuration {name}"):
            ListenerLimits.from_config({name: value})


def test_request_memory_waits_for_room_but_never_wedges():
    """A step fits when the budget has room; without room it waits, unless every other connection
    holding request buffers waits too (then it goes over: nothing else could free the budget)."""
    memory = RequestMemory(100)
    memory.used = memory.frames = 80  # another connection's buffer, being read
    assert memory.fits(20, 0, False) and not memory.fits(21, 0, False)
    memory.waiting_frames = 80  # that connection now waits for room too
    assert memory.fits(50, 0, False)
    assert memory.fits(50, 80, True)  # the waiting one itself, when it is the only holder
    assert RequestMemory(-1).fits(10 ** 12, 0, False)


# ====================================================================== a driver on a loopback socket
class _Stub:
    """A node that records the requests handed to it and answers each at once when ``answer`` is set
    (the driver's ``_write_response`` is replaced by the test: the answer's bytes are the test's)."""

    node_id = 0

    def __init__(self, answer: bool = True) -> None:
        self.answer = answer
        self.got: list[int] = []
        self.outbox: list = []

    def deliver(self, now, env) -> None:
        self.got.append(env.correlation_id)
        if self.answer:
            self.outbox.append(m.Envelope(env.dst, env.src, env.correlation_id, object(), True))

    def poll(self):
        out, self.outbox = self.outbox, []
        return out

    def next_deadline(self):
        return None

    def tick(self, now) -> None:
        pass


async def _serve(node, limits: ListenerLimits, response_bytes: int = 0):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    sock.setblocking(False)
    log: list[str] = []
    driver = NodeDriver(node, {lst.CLIENT: sock}, lambda peer: None, log.append, client_id="broker-0",
                        limits=limits)
    if response_bytes:
        def write(conn, env, version):
            conn.last_io_ms = driver._coarse_ms
            conn.writer.write(struct.pack(">ii", response_bytes - 4, env.correlation_id) + bytes(response_bytes - 8))
        driver._write_response = write
    await driver.start(lambda listener: wire.supported_api_versions())
    return driver, sock.getsockname(), log


async def _connect(address) -> socket.socket:
    loop = asyncio.get_running_loop()
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.setblocking(False)
    await loop.sock_connect(s, address)
    return s


def _fetch_frame(corr: int) -> bytes:
    request = m.FetchRequest(-1, -1, 0, 1, (m.FetchPartition(uuid.UUID(int=0), 0, -1, 0, topic="t"),))
    return wire.frame(wire.encode_request(request, corr, client_id="c", version=12))


def _produce_frame(corr: int, size: int) -> bytes:
    batch = RecordBatch.from_bytes(RecordBatch(-1, -1, (Record(1_700_000_000_000, None, bytes(size)),)).data)
    request = m.ProduceRequest(-1, 30_000, (m.ProducePartition("t", 0, (batch,)),))
    return wire.frame(wire.encode_request(request, corr, "c", version=9))


def test_a_client_that_pipelines_and_never_reads_is_muted_and_served_once_it_reads():
    """Muting: 300 pipelined Fetches whose 256 KiB responses are never read are handed to the node
    only while their responses fit the socket buffers (a few dozen), with nothing waiting in the
    connection's write buffer beyond one response; once the client reads, every one is answered, in
    order."""
    async def main():
        node = _Stub()
        driver, address, _ = await _serve(node, ListenerLimits(), response_bytes=256 * 1024)
        loop = asyncio.get_running_loop()
        client = await _connect(address)
        try:
            await loop.sock_sendall(client, b"".join(_fetch_frame(corr) for corr in range(1, 301)))
            await asyncio.sleep(0.5)
            (conn,) = driver.connections
            handed = len(node.got)
            assert 1 <= handed < 100
            assert not conn.reading and conn.write_paused
            assert conn.writer.get_write_buffer_size() <= 256 * 1024
            await asyncio.sleep(0.3)
            assert len(node.got) == handed  # still muted: the client reads nothing
            got, pending = [], b""
            while len(got) < 300:
                pending += await asyncio.wait_for(loop.sock_recv(client, 1 << 20), 10)
                while len(pending) >= 8:
                    size, corr = struct.unpack_from(">ii", pending)
                    if len(pending) < 4 + size:
                        break
                    got.append(corr)
                    pending = pending[4 + size:]
            assert got == list(range(1, 301)) and node.got == got
        finally:
            client.close()
            await driver.close()
    asyncio.run(main())


def test_connections_over_max_connections_per_ip_are_closed_at_once_and_counted():
    async def main():
        driver, address, log = await _serve(_Stub(), ListenerLimits(max_connections=10, max_connections_per_ip=3))
        loop = asyncio.get_running_loop()
        clients = [await _connect(address) for _ in range(5)]
        try:
            await asyncio.sleep(0.2)
            closed = 0
            for c in clients:
                try:
                    data = await asyncio.wait_for(loop.sock_recv(c, 10), 0.2)
                except TimeoutError:
                    continue
                closed += data == b""
            assert closed == 2
            assert driver.listener_stats()["connections"] == {lst.CLIENT: 3}
            assert driver.listener_stats()["refused"] == 2
            driver._check_deadlines()
            assert any("refused 2 connection(s)" in line for line in log)
        finally:
            for c in clients:
                c.close()
            await driver.close()
    asyncio.run(main())


def test_a_large_request_waits_for_request_memory_until_a_stalled_one_is_closed_by_its_deadline():
    """queued.max.request.bytes 300 KiB: A sends 100 KiB of a 1 MiB produce request and stalls; its buffer
    holds the budget, so B's 1 MiB request waits after its first 64 KiB, not read. A is closed by
    kraftlog.request.receive.timeout.ms (400 ms here), which frees the budget: B's request is received
    whole and handed to the node. Nothing is charged afterwards."""
    async def main():
        node = _Stub(answer=False)
        limits = ListenerLimits(queued_max_request_bytes=300 * 1024, request_receive_timeout_ms=400)
        driver, address, log = await _serve(node, limits)
        loop = asyncio.get_running_loop()
        a, b = await _connect(address), await _connect(address)
        try:
            frame_a, frame_b = _produce_frame(1, MIB), _produce_frame(2, MIB)
            await loop.sock_sendall(a, frame_a[:100 * 1024])
            await asyncio.sleep(0.1)
            send_b = asyncio.ensure_future(loop.sock_sendall(b, frame_b))
            await asyncio.sleep(0.15)
            assert driver.listener_stats()["waiting_for_memory"] == 1 and node.got == []
            assert driver.memory.used <= limits.queued_max_request_bytes
            assert await asyncio.wait_for(loop.sock_recv(a, 10), 2) == b""  # A: closed by its deadline
            await asyncio.wait_for(send_b, 5)
            for _ in range(50):
                if node.got:
                    break
                await asyncio.sleep(0.05)
            assert node.got == [2]
            assert driver.memory.used == 0 and driver.listener_stats()["closed_receive_timeout"] == 1
        finally:
            a.close()
            b.close()
            await driver.close()
    asyncio.run(main())


def test_run_until_yields_every_pass_and_ticks_a_node_stuck_in_the_past_at_most_once_a_millisecond():
    """The livelock's class (issue 24, finding 4): a node whose deadline stays in the past after its tick
    (a node contract bug) no longer keeps the driver from ever awaiting: other tasks (the sockets, the
    signal handlers) still run, the driver logs the bug once and ticks the node at most once a ms."""
    class Stuck:
        node_id = 0
        ticks = 0

        def next_deadline(self):
            return 0

        def tick(self, now):
            self.ticks += 1

        def poll(self):
            return []

    async def main():
        loop = asyncio.get_running_loop()
        node, log, others = Stuck(), [], [0]
        driver = NodeDriver(node, {}, lambda peer: None, log.append, client_id="stuck")

        async def other():
            while True:
                others[0] += 1
                await asyncio.sleep(0)

        task = asyncio.ensure_future(other())
        start = loop.time()
        await driver.run_until(lambda: loop.time() - start > 0.2)
        task.cancel()
        assert others[0] > 10
        assert 1 <= node.ticks <= 0.2 * 1000 + 20
        assert sum("node contract" in line for line in log) == 1
    asyncio.run(main())
