"""Issue 23, finding 3 on real processes (``kraftlog cluster`` on loopback, confluent-kafka as the client):
``kill -9`` the controller, remove its directory, start it again. Before issue 23 it came back with an
empty metadata log, the brokers re-registered, and the next broker restart deleted the partition
directories of every topic the empty controller did not know. Now the controller refuses to start, the
brokers keep serving, and brokers restarted into a cluster that does not know their topics keep them as
``-stray`` directories or refuse to start. The in-process rules are tests/test_cluster_identity.py.

This module imports only what existed before issue 23, so it can be run against that code
(``PYTHONPATH=<old checkout>/src``) to see it fail.
"""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest
from confluent_kafka import Consumer, TopicPartition  # noqa: E402  (test_real_cluster skips without it)

from kraftlog.broker.broker import LOG_DIR
from kraftlog.controller.controller import CONTROLLER
from kraftlog.net.client import KafkaConnection
from kraftlog.protocol import messages as m
from kraftlog.protocol.errors import Errors
from kraftlog.storage.log import SEGMENT_FILE
from test_real_cluster import _consume, _produce, _start, _stop_everything, cl, kraftlog

pytestmark = pytest.mark.slow

STRAY = re.compile(r"^(?P<name>.+-\d+)\.[0-9a-f]{32}-stray$")


def _segments(directory: str, broker: int) -> dict[str, bytes]:
    """Partition directory name -> its segment's bytes, for every partition directory of the broker."""
    data = os.path.join(directory, f"broker-{broker}", LOG_DIR)
    out = {}
    for name in sorted(os.listdir(data)):
        seg = os.path.join(data, name, SEGMENT_FILE)
        if os.path.isfile(seg):
            with open(seg, "rb") as f:
                out[name] = f.read()
    return out


def test_a_lost_controller_directory_is_refused_and_the_brokers_keep_serving(tmp_path):
    """Finding 3 on real processes: SIGKILL the controller, remove its directory, start it again. Before
    issue 23 it came back with an empty metadata log (`cluster start` exit 0). Now it refuses: exit 1, one
    line naming the reason, its directory not recreated, `cluster status` REFUSED; the brokers keep
    serving the topic (acks=all produce and a consume from offset 0 read everything) and no partition
    directory is deleted."""
    directory = str(tmp_path / "cluster")
    try:
        c = _start(directory)
        c.create_topic("t", 3, 3)
        first = _produce(c.bootstrap, "t", [f"a{i}".encode() for i in range(300)], acks="all")
        assert len(first) == 300
        before = {b: set(_segments(directory, b)) for b in range(3)}
        assert all(names == {"t-0", "t-1", "t-2"} for names in before.values())
        root = os.path.join(directory, "controller")
        cl.kill_node(directory, CONTROLLER)
        shutil.rmtree(root)
        proc = kraftlog("cluster", "start", "--dir", directory, "--controller", check=False)
        assert proc.returncode == 1, f"the controller started on a lost directory:\n{proc.stdout}{proc.stderr}"
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "controller refused to start" in lines[0] and "not formatted" in lines[0]
        assert not os.path.exists(root)
        status = json.loads(kraftlog("cluster", "status", "--dir", directory, "--json").stdout)
        ctl = [n for n in status if n["id"] == CONTROLLER][0]
        assert ctl["state"] == "REFUSED" and "not formatted" in ctl["refused"] and not ctl["alive"]
        second = _produce(c.bootstrap, "t", [f"b{i}".encode() for i in range(100)], acks="all")
        assert len(second) == 100
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "reader", "enable.auto.commit": False})
        try:
            consumer.assign([TopicPartition("t", p, 0) for p in range(3)])
            got = _consume(consumer, 400, 60)
        finally:
            consumer.close()
        assert sorted(msg.value() for msg in got) == sorted(v for _p, _o, v in first + second)
        for b in range(3):
            assert set(_segments(directory, b)) == before[b]
    finally:
        _stop_everything(directory)


def test_brokers_restarted_into_a_cluster_that_does_not_know_their_topics_delete_nothing(tmp_path):
    """The rest of finding 3. (1) The controller's directory formatted again with the same cluster id (an
    empty metadata log): each broker restarted into it keeps every partition directory as
    <topic>-<partition>.<hex>-stray, byte for byte, logs it, `cluster status --json` lists it, and serves
    nothing of the old topic. Before issue 23 every partition directory was deleted. (2) The cluster
    re-formatted under another cluster id: a broker refuses to start (its meta.properties is another
    cluster's) and its directory is left exactly as it was. A broker whose directory is gone is formatted
    by `cluster start` and rejoins."""
    from kraftlog.net.meta_properties import write_meta_properties
    directory = str(tmp_path / "cluster")
    try:
        c = _start(directory)
        c.create_topic("t", 3, 3)
        assert len(_produce(c.bootstrap, "t", [f"a{i}".encode() for i in range(300)], acks="all")) == 300
        cluster_id = c.info["cluster_id"]
        root = os.path.join(directory, "controller")
        cl.kill_node(directory, CONTROLLER)
        shutil.rmtree(root)
        write_meta_properties(root, {"cluster.id": cluster_id, "node.id": CONTROLLER})  # an operator's format
        kraftlog("cluster", "start", "--dir", directory, "--controller")
        for b in range(3):
            kraftlog("cluster", "stop", "--dir", directory, "--broker", str(b), "--kill")
            # A running broker may have noticed already (issue 34: the controller's new log ends below its local
            # metadata copy, so it refetches from 0 and keeps its partitions -stray without a restart).
            before = {(STRAY.match(n)["name"] if STRAY.match(n) else n): data
                      for n, data in _segments(directory, b).items()}
            assert set(before) == {"t-0", "t-1", "t-2"}
            kraftlog("cluster", "start", "--dir", directory, "--broker", str(b))
            after = _segments(directory, b)
            kept = {STRAY.match(name)["name"]: data for name, data in after.items() if STRAY.match(name)}
            assert kept == before, f"broker-{b}: {sorted(after)}"
            assert not set(after) - {name for name in after if STRAY.match(name)}
            with open(os.path.join(directory, f"broker-{b}.log")) as f:
                assert f.read().count("stray partition directory t-") == 3
        status = json.loads(kraftlog("cluster", "status", "--dir", directory, "--json").stdout)
        assert {n["id"]: len(n["strays"]) for n in status if n["role"] == "broker"} == {0: 3, 1: 3, 2: 3}
        # stray-dir-count: renamed by the running process (3), or by its incarnation before the restart (0 now)
        assert all(n["state"] == "RUNNING" and n["counters"]["stray-dir-count"] in (0, 3)
                   for n in status if n["role"] == "broker")
        with KafkaConnection(c.bootstrap.split(",")[0]) as conn:
            assert conn.request(m.MetadataRequest(("t",))).topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        # A broker's lost directory (a replaced disk) is formatted by `cluster start`, as an operator would.
        kraftlog("cluster", "stop", "--dir", directory, "--broker", "2", "--kill")
        shutil.rmtree(os.path.join(directory, "broker-2"))
        out = kraftlog("cluster", "start", "--dir", directory, "--broker", "2").stdout
        assert "formatted as a new one" in out
        with open(os.path.join(directory, "broker-2", "meta.properties")) as f:
            props = f.read()
        assert f"cluster.id={cluster_id}" in props and "node.id=2" in props and "directory.id=" in props
        # (2) another cluster id: the brokers' directories are not this cluster's any more.
        cl.down(directory)
        info = cl.load(directory)
        info["cluster_id"] = "AnotherClusterIdXXXXXw"
        cl._save(directory, info)
        shutil.rmtree(root)
        kraftlog("cluster", "format", "--dir", directory, "--controller")
        kraftlog("cluster", "start", "--dir", directory, "--controller")
        listing = sorted(os.walk(os.path.join(directory, "broker-0", LOG_DIR)))
        segments = _segments(directory, 0)
        proc = kraftlog("cluster", "start", "--dir", directory, "--broker", "0", check=False)
        assert proc.returncode == 1 and "broker-0 refused to start" in proc.stderr
        assert f"belongs to cluster {cluster_id}" in proc.stderr
        assert sorted(os.walk(os.path.join(directory, "broker-0", LOG_DIR))) == listing
        assert _segments(directory, 0) == segments
    finally:
        _stop_everything(directory)
