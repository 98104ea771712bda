"""Metadata snapshots on real processes (issue 34): a controller and a broker on 127.0.0.1 with small snapshot,
segment and retention configs; the controller's directory holds snapshots and its log start advances; a broker
restarted on its own snapshot, and one whose metadata directory was lost (it fetches the controller's snapshot
with FetchSnapshot), both catch up, and a topic deleted while the broker was down is kept as -stray."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import wait_for
from kraftlog.net import cluster as cl
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors

pytestmark = pytest.mark.slow

SMALL = {"metadata.log.max.record.bytes.between.snapshots": "20000", "metadata.log.segment.bytes": "20000",
         "metadata.max.retention.bytes": "60000", "kraftlog.metadata.log.cleanup.interval.ms": "200"}


def _run(directory: str, node: str) -> dict:
    try:
        with open(os.path.join(directory, "run", f"{node}.json")) as fh:
            return json.load(fh)
    except (OSError, ValueError):
        return {}


def _alter(conn: KafkaConnection, topics: list[str], value: int) -> None:
    resp = conn.request(m.IncrementalAlterConfigsRequest(tuple(m.AlterConfigsResource(m.RESOURCE_TOPIC, t, (
        m.AlterableConfig("retention.ms", m.OP_SET, str(value)),)) for t in topics)))
    assert all(r.error_code == Errors.NONE for r in resp.responses)


def _end(conn: KafkaConnection) -> int:
    return int(conn.request(m.MetadataFetchRequest(-1, -1, 1 << 62, 0)).high_watermark)


def _checkpoints(directory: str, node: str) -> list[str]:
    path = os.path.join(directory, node, "metadata", "__cluster_metadata-0")
    return sorted(n for n in os.listdir(path) if n.endswith(".checkpoint")) if os.path.isdir(path) else []


def test_a_real_broker_restarts_from_its_snapshot_and_from_the_controllers(tmp_path):
    directory = str(tmp_path / "cluster")
    try:
        cl.up(directory, 1, port=0, config=SMALL)
        ctl = next(e for e in cl.load(directory)["nodes"] if e["role"] == "controller")
        conn = KafkaConnection(f"{ctl['host']}:{ctl['port']}", timeout_s=60.0, client_id="snapshot-test")
        topics = [f"t{i:03d}" for i in range(50)]
        resp = conn.request(m.CreateTopicsRequest(tuple(m.CreatableTopic(t, 1, 1) for t in topics)))
        assert all(t.error_code == Errors.NONE for t in resp.topics)
        for i in range(30):  # ~1,500 ConfigRecords, ~300 KB of metadata log
            _alter(conn, topics, 600_000 + i)
        start_file = os.path.join(directory, "controller", "metadata", "__cluster_metadata-0", "log-start-offset")
        wait_for("the controller's log cleaned past offset 0", lambda: os.path.exists(start_file)
                 and int(open(start_file).read()) > 0, timeout_s=10)
        assert _checkpoints(directory, "controller")
        wait_for("broker 0 caught up", lambda: _run(directory, "broker-0").get("metadata_offset", -1) >= _end(conn) - 1,
                 timeout_s=30)
        assert _checkpoints(directory, "broker-0")  # the broker's own snapshots of its copy

        # 1. A clean restart with a topic deleted while down: the broker loads its own snapshot, fetches the rest.
        assert cl.stop_broker(directory, 0)
        assert conn.request(m.DeleteTopicsRequest(("t000",))).responses[0].error_code == Errors.NONE
        for i in range(30, 60):
            _alter(conn, topics[1:], 600_000 + i)
        pid = cl.start_broker(directory, 0, wait=False)["pid"]
        wait_for("broker 0 restarted and caught up", lambda: _run(directory, "broker-0").get("pid") == pid and
                 _run(directory, "broker-0").get("metadata_offset", -1) >= _end(conn) - 1, timeout_s=60)
        log = open(os.path.join(directory, "broker-0.log")).read()
        assert "loaded metadata snapshot" in log  # its own copy was below the controller's log start
        assert [s for s in cl.strays(directory, 0) if s.startswith("t000-0.")]  # kept, never deleted

        # 2. The broker's metadata directory lost: it fetches the controller's snapshot (FetchSnapshot).
        assert cl.stop_broker(directory, 0)
        shutil.rmtree(os.path.join(directory, "broker-0", "metadata"))
        pid = cl.start_broker(directory, 0, wait=False)["pid"]
        wait_for("broker 0 restarted and published", lambda: _run(directory, "broker-0").get("pid") == pid and
                 _run(directory, "broker-0").get("metadata_published_after_s") is not None, timeout_s=60)
        assert _run(directory, "broker-0")["metadata_offset"] >= _end(conn) - 5
        assert _checkpoints(directory, "broker-0")  # the controller's snapshot, installed
        conn.close()
    finally:
        cl.teardown(directory)
