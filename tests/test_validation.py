"""Issue 24: what a broker and the controller refuse from clients, rule by rule, in the core (no I/O).

* Record batches of a Produce request (``kraftlog.protocol.validation.validate_produce_records``): Kafka's
  ``ProduceRequest.validateRecords``, ``UnifiedLog.analyzeAndValidateRecords`` and ``LogValidator``.
* Topic names (Kafka's ``Topic.validate``) and CreateTopics (``ControllerApis.createTopics``,
  ``ReplicationControlManager.createTopics``), against the controller node.
* Config values by Kafka type and range (``kraftlog.metadata.config.invalid_value``).
* A metadata record a node cannot apply is skipped and counted (``MetadataImage.replay``), and the HWM
  checkpoint leaves out a name it cannot hold.
"""

from __future__ import annotations

import gzip
import random
import struct
import uuid

import pytest
from crc32c import crc32c

from kraftlog.controller.controller import CONTROLLER, QuorumController
from kraftlog.level import Level
from kraftlog.metadata import config as cfg
from kraftlog.metadata.image import MetadataImage
from kraftlog.metadata.records import ConfigRecord, PartitionChangeRecord, PartitionRecord, TopicRecord
from kraftlog.protocol import messages as m
from kraftlog.protocol import wire
from kraftlog.protocol.errors import Errors
from kraftlog.protocol.records import MalformedRecords, Record, RecordBatch, decode_produce_records
from kraftlog.protocol.validation import LONG_MAX, RecordLimits, validate_produce_records, validate_topic_name
from kraftlog.storage.checkpoints import read_hwm_checkpoint, write_hwm_checkpoint
from kraftlog.storage.disk import SimDisk

NOW = 1_800_000_000_000


def batch_bytes(values, ts=NOW, producer_id=-1, base_sequence=-1, attributes=0) -> bytearray:
    return bytearray(RecordBatch(0, -1, tuple(Record(ts, None, v) for v in values), producer_id, 0,
                                 base_sequence, attributes).data)


def fixed(data: bytearray) -> RecordBatch:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return RecordBatch.from_bytes(bytes(data))


def refusal(records, limits: RecordLimits | None = None, topic: str = "t"):
    out = validate_produce_records(topic, 0, tuple(records), NOW, limits or RecordLimits())
    return None if out is None else Errors(out[0]).name


# ==================================================================================== record batches
def test_a_well_formed_batch_passes_in_both_forms():
    """A producer's encoded batch and the simulator's records batch are accepted."""
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a", b"b"])))]) is None
    assert refusal([RecordBatch(-1, -1, (Record(NOW, b"k", b"v"),))]) is None


def test_produce_request_validate_records():
    """ProduceRequest.validateRecords: at least one batch, exactly one, magic 2 (INVALID_RECORD)."""
    one = RecordBatch.from_bytes(bytes(batch_bytes([b"a"])))
    assert refusal([]) == "INVALID_RECORD"
    assert refusal([one, one]) == "INVALID_RECORD"
    magic1 = batch_bytes([b"a"])
    magic1[16] = 1
    assert refusal(decode_produce_records(bytes(magic1))) == "INVALID_RECORD"
    two = bytes(batch_bytes([b"a"])) * 2
    assert refusal(decode_produce_records(two)) == "INVALID_RECORD"
    assert refusal(decode_produce_records(bytes(batch_bytes([b"a"]))[:40])) == "INVALID_RECORD"  # incomplete


def test_framing_errors_are_corrupt_message():
    """Kafka's batch iterator: a batch length below 14 or a magic outside 0..2 is CORRUPT_MESSAGE, and so is
    a CRC-32C that does not match (analyzeAndValidateRecords), per partition: the bytes travel as
    MalformedRecords through the wire instead of failing the request."""
    bad_crc = batch_bytes([b"payload"])
    bad_crc[-1] ^= 1
    short = batch_bytes([b"a"])
    struct.pack_into(">i", short, 8, 3)
    magic = batch_bytes([b"a"])
    magic[16] = 7
    for data in (bad_crc, short, magic):
        records = decode_produce_records(bytes(data))
        assert isinstance(records[0], MalformedRecords)
        assert refusal(records) == "CORRUPT_MESSAGE"
    req = m.ProduceRequest(-1, 1000, (m.ProducePartition("t", 0, decode_produce_records(bytes(bad_crc))),))
    _, back = wire.decode_request(wire.encode_request(req, 1, client_id="c", version=9))
    assert back.partitions[0].records == req.partitions[0].records


def test_record_count_must_match_the_header_and_the_body():
    """LogValidator.validateBatch (lastOffsetDelta + 1 == recordsCount > 0) and the batch iterator (exactly
    recordsCount records): each mismatch of finding 2 is INVALID_RECORD."""
    def claiming(values, count, last_delta=None):
        data = batch_bytes(values)
        struct.pack_into(">i", data, 23, count - 1 if last_delta is None else last_delta)
        struct.pack_into(">i", data, 57, count)
        return fixed(data)

    assert refusal([claiming([b"a"], 5)]) == "INVALID_RECORD"  # 5 claimed, 1 in the body
    assert refusal([claiming([b"a"] * 5, 1)]) == "INVALID_RECORD"  # 1 claimed, 5 in the body
    assert refusal([claiming([b"a"], 2**31 - 1)]) == "INVALID_RECORD"
    assert refusal([claiming([b"a"], 1, last_delta=4)]) == "INVALID_RECORD"  # header disagrees with itself
    assert refusal([claiming([b"a"], 0, last_delta=-1)]) == "INVALID_RECORD"


def test_offset_deltas_must_be_0_to_n_minus_1():
    """Stricter than Kafka (which rewrites such a batch): kraftlog keeps the producer's bytes, so a record
    whose offset delta is not its index is INVALID_RECORD."""
    data = batch_bytes([b"a", b"b"])
    # the second record: length varint, attributes, timestamp delta (0), offset delta (1 -> zig-zag 2)
    first_len = data[61] >> 1
    pos = 61 + 1 + first_len + 1 + 1 + 1
    assert data[pos] == 2
    data[pos] = 4  # offset delta 2
    assert refusal([fixed(data)]) == "INVALID_RECORD"


def test_control_sequence_and_transactional_batches():
    """No control batch from a client; a producer id needs baseSequence >= 0 (LogValidator.validateBatch)."""
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], attributes=0x20)))]) == "INVALID_RECORD"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], producer_id=7)))]) == "INVALID_RECORD"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], producer_id=7, base_sequence=0)))]) is None


def test_timestamps_within_the_topic_bounds():
    """LogValidator.validateTimestamp: message.timestamp.after.max.ms (Kafka 4.x default 1 h) and
    before.max.ms (unbounded by default); -1 (no timestamp) is never checked; LogAppendTime from a
    producer is refused. INVALID_TIMESTAMP."""
    hour = 3_600_000
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], ts=NOW + hour)))]) is None
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], ts=NOW + hour + 1)))]) == "INVALID_TIMESTAMP"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], ts=0)))]) is None
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], ts=-1)))]) is None
    strict = RecordLimits(timestamp_before_max_ms=1000)
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], ts=NOW - 1001)))], strict) == "INVALID_TIMESTAMP"
    assert refusal([RecordBatch(-1, -1, (Record(NOW - 1001, None, b"x"),))], strict) == "INVALID_TIMESTAMP"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"a"], attributes=0x08)))]) == "INVALID_TIMESTAMP"


def _compressed(codec: int, payload: bytes, count: int) -> RecordBatch:
    plain = batch_bytes([b"v"] * count)
    head = plain[:61]
    struct.pack_into(">h", head, 21, codec)
    data = head + payload
    struct.pack_into(">i", data, 8, len(data) - 12)
    return fixed(data)


def test_compressed_batches_are_validated_without_re_encoding():
    """A gzip batch is inflated to count and check its records; its bytes are what would be stored. An
    unknown codec is UNSUPPORTED_COMPRESSION_TYPE; a stream that does not inflate CORRUPT_MESSAGE."""
    body = bytes(batch_bytes([b"v"] * 3)[61:])
    good = _compressed(1, gzip.compress(body), 3)
    assert refusal([good]) is None
    assert refusal([_compressed(1, gzip.compress(body), 4)]) == "INVALID_RECORD"
    assert refusal([_compressed(5, gzip.compress(body), 3)]) == "UNSUPPORTED_COMPRESSION_TYPE"
    assert refusal([_compressed(1, b"not gzip", 3)]) == "CORRUPT_MESSAGE"


def test_max_message_bytes_and_internal_topics():
    """analyzeAndValidateRecords: a batch above max.message.bytes is MESSAGE_TOO_LARGE (Kafka's default
    1,048,588); ReplicaManager: producing to an internal topic is INVALID_TOPIC_EXCEPTION."""
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"x" * 1_100_000])))]) == "MESSAGE_TOO_LARGE"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"x" * 100])))], RecordLimits(100)) == "MESSAGE_TOO_LARGE"
    assert refusal([RecordBatch.from_bytes(bytes(batch_bytes([b"x"])))], topic="__consumer_offsets") == \
        "INVALID_TOPIC_EXCEPTION"
    assert RecordLimits().timestamp_before_max_ms == LONG_MAX


# ==================================================================================== topic names
@pytest.mark.parametrize("name, ok", [
    ("t", True), ("a.b_c-D9", True), ("x" * 249, True), ("", False), (".", False), ("..", False),
    ("x" * 250, False), ("bad topic", False), ("a/b", False), ("../../escape", False), ("tópico", False),
    ("a\nb", False)])
def test_topic_validate(name, ok):
    """Kafka's Topic.validate: 1-249 characters of [a-zA-Z0-9._-], not . or .."""
    assert (validate_topic_name(name) is None) is ok


# ==================================================================================== CreateTopics
class Controller:
    """A controller with brokers 0..2 registered and unfenced."""

    def __init__(self, config=None):
        self.ctl = QuorumController(config or {}, Level.URM, SimDisk(None), random.Random(0), 0)
        self.corr = 0
        for b in range(3):
            self.call(m.BrokerRegistrationRequest(b, "kraftlog", uuid.UUID(int=100 + b)), b)
        for b in range(3):
            reg = self.ctl.image.brokers[b]
            self.call(m.BrokerHeartbeatRequest(b, reg.broker_epoch, self.ctl.end_offset - 1, False, False), b)

    def call(self, msg, src="admin"):
        self.corr += 1
        self.ctl.deliver(0, m.Envelope(src, CONTROLLER, self.corr, msg))
        (out,) = [e for e in self.ctl.poll() if e.correlation_id == self.corr]
        return out.message

    def create(self, *topics):
        return {r.name: (Errors(r.error_code).name, r) for r in self.call(m.CreateTopicsRequest(tuple(topics))).topics}


def test_create_topics_names_counts_and_defaults():
    """ReplicationControlManager.createTopic: -1 means num.partitions / default.replication.factor
    (KIP-464) and the result says what was created; 0 and values below -1 are INVALID_PARTITIONS /
    INVALID_REPLICATION_FACTOR; bad names INVALID_TOPIC_EXCEPTION; a name given twice and
    __cluster_metadata INVALID_REQUEST; a '.'/'_' collision INVALID_TOPIC_EXCEPTION."""
    c = Controller({"num.partitions": "2", "default.replication.factor": "3"})
    got = c.create(m.CreatableTopic("dflt"), m.CreatableTopic("p0", 0, 1), m.CreatableTopic("rf0", 1, 0),
                   m.CreatableTopic("pneg", -2, 1), m.CreatableTopic("rfneg", 1, -5), m.CreatableTopic("rf9", 1, 9),
                   m.CreatableTopic("bad topic", 1, 1), m.CreatableTopic("", 1, 1), m.CreatableTopic("dup", 1, 1),
                   m.CreatableTopic("dup", 1, 1), m.CreatableTopic("__cluster_metadata", 1, 1),
                   m.CreatableTopic("x.y", 1, 1))
    assert got["dflt"][0] == "NONE" and (got["dflt"][1].num_partitions, got["dflt"][1].replication_factor) == (2, 3)
    assert {k: v[0] for k, v in got.items() if k != "dflt"} == {
        "p0": "INVALID_PARTITIONS", "rf0": "INVALID_REPLICATION_FACTOR", "pneg": "INVALID_PARTITIONS",
        "rfneg": "INVALID_REPLICATION_FACTOR", "rf9": "INVALID_REPLICATION_FACTOR",
        "bad topic": "INVALID_TOPIC_EXCEPTION", "": "INVALID_TOPIC_EXCEPTION", "dup": "INVALID_REQUEST",
        "__cluster_metadata": "INVALID_REQUEST", "x.y": "NONE"}
    assert c.create(m.CreatableTopic("x_y", 1, 1))["x_y"][0] == "INVALID_TOPIC_EXCEPTION"
    assert c.create(m.CreatableTopic("x.y", 1, 1))["x.y"][0] == "TOPIC_ALREADY_EXISTS"
    assert set(c.ctl.image.topics) == {"dflt", "x.y"}
    assert c.create(*(m.CreatableTopic(f"many{i}", 5001, 1) for i in range(2)))["many0"][0] == "POLICY_VIOLATION"


def test_create_topics_manual_assignments_and_configs():
    """Manual assignments as ReplicationControlManager checks them (INVALID_REPLICA_ASSIGNMENT; counts set
    beside one: INVALID_REQUEST); configs by type and range (INVALID_CONFIG naming the config)."""
    c = Controller()
    cases = {
        "empty": m.CreatableTopic("empty", assignment=((),)),
        "unregistered": m.CreatableTopic("unregistered", assignment=((0, 7),)),
        "twice": m.CreatableTopic("twice", assignment=((0, 0),)),
        "uneven": m.CreatableTopic("uneven", assignment=((0, 1), (2,))),
        "dup-index": m.CreatableTopic("dup-index", assignment=((0,), (1,)), assignment_partitions=(0, 0)),
        "gap": m.CreatableTopic("gap", assignment=((0,), (1,)), assignment_partitions=(0, 2)),
        "with-rf": m.CreatableTopic("with-rf", replication_factor=1, assignment=((0,),)),
        "bad-config": m.CreatableTopic("bad-config", 1, 1, configs=(("min.insync.replicas", "abc"),)),
        "null-config": m.CreatableTopic("null-config", 1, 1, configs=(("flush.ms", None),)),
        "unknown-config": m.CreatableTopic("unknown-config", 1, 1, configs=(("retention.mss", "1"),)),
        "ok": m.CreatableTopic("ok", assignment=((2, 0), (0, 1)), configs=(("max.message.bytes", "100"),)),
    }
    got = c.create(*cases.values())
    assert {k: v[0] for k, v in got.items()} == {
        "empty": "INVALID_REPLICA_ASSIGNMENT", "unregistered": "INVALID_REPLICA_ASSIGNMENT",
        "twice": "INVALID_REPLICA_ASSIGNMENT", "uneven": "INVALID_REPLICA_ASSIGNMENT",
        "dup-index": "INVALID_REPLICA_ASSIGNMENT", "gap": "INVALID_REPLICA_ASSIGNMENT", "with-rf": "INVALID_REQUEST",
        "bad-config": "INVALID_CONFIG", "null-config": "INVALID_CONFIG", "unknown-config": "INVALID_CONFIG",
        "ok": "NONE"}
    assert "min.insync.replicas" in got["bad-config"][1].error_message
    assert c.ctl.metadata_apply_errors.count == 0


def test_every_known_config_has_a_kafka_type_and_its_default_passes():
    """Each config kraftlog knows is checked by type and range; Kafka's wording names it."""
    for name, value in cfg.DEFAULTS.items():
        assert cfg.invalid_value(name, value) is None, name
    for name in cfg.KNOWN_CONFIGS:
        assert cfg.invalid_value(name, "not-a-value") is not None or name == "advertised.listeners", name
    assert cfg.invalid_value("min.insync.replicas", "0") == \
        "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"
    assert cfg.invalid_value("max.message.bytes", "2147483648") == \
        "Invalid value 2147483648 for configuration max.message.bytes: Not a number of type INT"


# ==================================================================================== metadata faults
def test_replay_skips_and_names_what_it_cannot_apply():
    """MetadataImage.replay applies every record it can and names the others in delta.errors: a bad
    topic name (a log written before names were validated), its partitions (unknown topic id), an
    unknown partition, a config value of the wrong type; the valid topic after them is applied."""
    bad, good = uuid.UUID(int=1), uuid.UUID(int=2)
    records = [TopicRecord("bad topic", bad), PartitionRecord(0, bad, (0,), (0,), 0),
               PartitionChangeRecord(3, good, isr=(0,)), ConfigRecord(2, "g", "min.insync.replicas", "x"),
               TopicRecord("g", good), PartitionRecord(0, good, (0,), (0,), 0)]
    image, delta = MetadataImage().replay(records, 0)
    assert [offset for offset, _, _ in delta.errors] == [0, 1, 2, 3]
    assert set(image.topics) == {"g"} and ("g", 0) in image.partitions and image.offset == 5


def test_hwm_checkpoint_leaves_out_names_it_cannot_hold():
    """The crash of finding 1 (ValueError from the checkpoint): a name with whitespace, or empty, is
    left out; the others are written and read back."""
    disk = SimDisk(None)
    write_hwm_checkpoint(disk, "data", {("bad topic", 0): 5, ("", 0): 1, ("ok", 1): 7}, 0)
    assert read_hwm_checkpoint(disk, "data") == {("ok", 1): 7}
