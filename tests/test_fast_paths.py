"""The produce/fetch fast paths of issue 13 ("Make it fast") give the same bytes and items as the plain ones.

* Framing: the buffered frame splitter (a BufferedProtocol's ``get_buffer``/``buffer_updated``, large
  frames read into buffers of their own) and the chunk-list splitter give the frames and the close
  reasons the byte stream holds, however the reads split it.
* Wire: ``frame_response`` (pieces for ``writelines``, record batches by reference) joins to exactly
  ``frame(encode_response(...))``, at every Fetch version.
* Records: ``with_offsets`` stamps with one copy and ``decode_batches`` wraps a single-batch buffer
  without copying, with the same batches as before.
* FileDisk's tail cache: a read of the batches just appended returns what a ``pread`` of the file gives,
  and a truncation or the byte bounds drop it.
"""

from __future__ import annotations

import os
import struct
import uuid
from random import Random

import pytest

from kraftlog.net import disk as file_disk
from kraftlog.net.disk import FileDisk
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.framing import STAGING_BYTES, ResponseDecoder, ServerConnection, _FrameBuffer
from kraftlog.protocol.records import Record, RecordBatch, decode_batches


def _stream(rng: Random, max_bytes: int) -> bytes:
    out = b""
    for _ in range(rng.randint(0, 7)):
        n = rng.choice([0, 1, 4, 100, STAGING_BYTES - 5, STAGING_BYTES - 4, STAGING_BYTES, 70_000, 300_000])
        out += struct.pack(">i", n) + bytes([rng.getrandbits(8)]) * n
    if rng.random() < 0.2:
        out += struct.pack(">i", rng.choice([-1, max_bytes + 1])) + b"xx"
    if rng.random() < 0.2:
        out += bytes(rng.randint(1, 3))
    return out


def _reference_frames(stream: bytes, max_bytes: int) -> tuple[list[bytes], str | None]:
    """The frames of a whole stream, split the plain way (Kafka's NetworkReceive: a 4-byte size, then
    that many bytes; a size outside [0, max_bytes] ends the stream)."""
    frames, pos = [], 0
    while len(stream) - pos >= 4:
        (size,) = struct.unpack_from(">i", stream, pos)
        if size < 0 or size > max_bytes:
            return frames, f"invalid frame size {size} (socket.request.max.bytes {max_bytes})"
        if len(stream) - pos - 4 < size:
            break
        frames.append(stream[pos + 4:pos + 4 + size])
        pos += 4 + size
    return frames, None


def test_buffered_and_chunked_framing_give_the_frames_and_reasons_of_the_stream():
    rng = Random(13)
    for _ in range(1500):
        max_bytes = rng.choice([1_000_000, 6000])
        stream = _stream(rng, max_bytes)
        expected, expected_reason = _reference_frames(stream, max_bytes)
        chunked, buffered = _FrameBuffer(max_bytes), _FrameBuffer(max_bytes)
        got_chunked, got_buffered = [], []
        reason_chunked = reason_buffered = None
        pos = 0
        while pos < len(stream) and reason_chunked is None:
            k = min(rng.choice([1, 3, 4, 100, 4096, 65536, 300_000]), len(stream) - pos)
            frames, reason_chunked = chunked.feed(stream[pos:pos + k])
            got_chunked += frames
            pos += k
        pos = 0
        while pos < len(stream) and reason_buffered is None:
            buf = buffered.get_buffer()
            k = min(len(buf), rng.choice([1, 3, 4, 100, 4096, 65536, 300_000]), len(stream) - pos)
            buf[:k] = stream[pos:pos + k]
            del buf
            frames, reason_buffered = buffered.buffer_updated(k)
            got_buffered += [bytes(f) for f in frames]
            pos += k
        assert got_chunked == expected and reason_chunked == expected_reason
        assert all(type(f) is bytes for f in got_chunked)
        assert got_buffered == expected and reason_buffered == expected_reason


def _produce_frame(size: int, corr: int = 7) -> tuple[bytes, RecordBatch]:
    batch = RecordBatch.from_bytes(RecordBatch(-1, -1, (Record(1_700_000_000_000, None, os.urandom(size)),)).data)
    request = m.ProduceRequest(-1, 30_000, (m.ProducePartition("t", 0, (batch,)),))
    return wire.frame(wire.encode_request(request, corr, "rdkafka", version=9)), batch


@pytest.mark.parametrize("size", [100, STAGING_BYTES + 1000, 1 << 20])
def test_a_request_read_into_given_buffers_decodes_like_one_fed_as_bytes(size):
    frame, batch = _produce_frame(size)
    supported = wire.supported_api_versions()
    fed = ServerConnection(supported).receive_data(frame)
    conn = ServerConnection(supported)
    events, pos = [], 0
    while pos < len(frame):
        buf = conn.get_buffer()
        k = min(len(buf), 100_000, len(frame) - pos)
        buf[:k] = frame[pos:pos + k]
        del buf
        events += conn.buffer_updated(k)
        pos += k
    assert len(events) == len(fed) == 1
    assert bytes(events[0].payload) == fed[0].payload
    _, _, corr, _, msg = wire.decode_request_frame(events[0].payload)
    assert corr == 7 and msg.partitions[0].records == (batch,)


def test_a_response_read_into_given_buffers_comes_out_whole():
    response = m.ProduceResponse((m.ProducePartitionResponse("t", 0, 0, 5, -1, 0),))
    frames = [wire.frame(wire.encode_response(response, corr, 9)) for corr in (1, 2)]
    decoder = ResponseDecoder()
    data = b"".join(frames)
    buf = decoder.get_buffer()
    buf[:len(data)] = data
    del buf
    got = decoder.buffer_updated(len(data))
    assert [c for c, _ in got] == [1, 2]
    assert wire.decode_response(got[1][1], m.ProduceRequest, 9)[1] == response


def _fetch_response(rng: Random, version: int) -> m.FetchResponse:
    parts = []
    for i in range(rng.randint(0, 3)):
        batches, offset = [], 0
        for _ in range(rng.randint(0, 3)):
            size = rng.choice([0, 10, 1000, 20_000, 70_000])
            b = RecordBatch(offset, 2, tuple(Record(1_700_000_000_000 + k, None, os.urandom(size))
                                             for k in range(rng.randint(1, 3))))
            offset += b.record_count
            batches.append(RecordBatch.from_bytes(b.data))
        parts.append(m.FetchPartitionResponse(uuid.uuid4() if version >= 13 else uuid.UUID(int=0), i, 0, 10, 10, 0,
                                              records=tuple(batches), topic="" if version >= 13 else "t"))
    return m.FetchResponse(0, tuple(parts))


@pytest.mark.parametrize("version", wire.mapped_versions(m.FetchRequest))
def test_frame_response_joins_to_the_framed_encoding(version):
    rng = Random(version)
    for _ in range(8):
        response = _fetch_response(rng, version)
        pieces = wire.frame_response(response, 77, version)
        assert b"".join(pieces) == wire.frame(wire.encode_response(response, 77, version))
        sent = {id(b.data) for p in response.partitions if len(p.records) == 1 for b in p.records
                if b.size_bytes >= wire.GATHER_MIN_BYTES}
        assert sent <= {id(p) for p in pieces}  # a partition's one large batch goes out uncopied


def test_with_offsets_stamps_base_offset_and_epoch_and_keeps_the_rest():
    batch = RecordBatch.from_bytes(RecordBatch(-1, -1, (Record(5, b"k", b"v"), Record(6, None, b"w"))).data)
    stamped = batch.with_offsets(1000, 7)
    assert (stamped.base_offset, stamped.partition_leader_epoch) == (1000, 7)
    assert stamped.data[:8] == struct.pack(">q", 1000) and stamped.data[12:16] == struct.pack(">i", 7)
    assert stamped.data[16:] == batch.data[16:] and stamped.data[8:12] == batch.data[8:12]
    assert stamped == RecordBatch.from_bytes(stamped.data)  # the CRC still holds
    assert stamped.records == batch.records and type(stamped.data) is bytes


def test_decode_batches_wraps_a_single_batch_buffer_without_copying():
    data = RecordBatch(0, 0, (Record(5, None, b"v"),)).data
    (batch,) = decode_batches(data)
    assert batch.data is data
    two = decode_batches(data + data)
    assert [b.data for b in two] == [data, data]


def test_tail_cache_reads_equal_what_the_file_holds(tmp_path):
    path = "data/t-0/00000000000000000000.log"
    batches = [RecordBatch.from_bytes(RecordBatch(i, 1, (Record(i, None, os.urandom(300 * (i + 1))),)).data)
               for i in range(6)]
    with FileDisk(tmp_path / "a") as disk:
        for b in batches:
            disk.append(path, b, 0)
        cached = disk.read_range(path, 3, 6)
        assert cached == batches[3:6]
        assert cached[0].data is batches[3].data  # served from the tail cache, not re-read
    with FileDisk(tmp_path / "a") as reopened:  # a new FileDisk reads the file
        assert reopened.read_range(path, 0, 6) == batches


def test_tail_cache_is_dropped_by_a_truncation_and_kept_within_its_bounds(tmp_path, monkeypatch):
    path = "data/t-0/00000000000000000000.log"
    monkeypatch.setattr(file_disk, "TAIL_CACHE_FILE_BYTES", 2500)
    batches = [RecordBatch.from_bytes(RecordBatch(i, 1, (Record(i, None, bytes([i]) * 1000),)).data)
               for i in range(5)]
    with FileDisk(tmp_path / "b") as disk:
        for b in batches:
            disk.append(path, b, 0)
        f = disk._logs[path]
        assert 0 < f.tail_bytes <= 2500 and len(f.tail) == 2
        assert disk.read_range(path, 0, 5) == batches  # partly cached: read from the file
        disk.truncate(path, 3, 0)
        assert f.tail == [] and f.tail_bytes == 0
        assert disk.read_range(path, 0, 5) == batches[:3]
        disk.append(path, batches[3], 0)
        assert disk.read_range(path, 3, 4) == [batches[3]]
