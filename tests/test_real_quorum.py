"""A KRaft controller quorum on real processes (the Deployment issue, its first part): ``kraftlog cluster up
--controllers 3`` starts three voters (ids 3000..3002, static ``controller.quorum.voters``) whose metadata log is the
Raft log on files, and brokers that observe it. SIGKILL of the active controller under a confluent-kafka acks=all
producer: another voter becomes active, metadata keeps changing, nothing acknowledged is lost; the killed voter
restarts from its log and follows the new leader; ``kraftlog metadata-quorum describe --status`` names the leader,
the voters and the observers; ``cluster down`` stops every process cleanly."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from test_real_cluster import FAST, RealCluster, _consume, _produce, _stop_everything, cl, kraftlog

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, TopicPartition  # noqa: E402

pytestmark = pytest.mark.slow

VOTERS = (3000, 3001, 3002)


def _quorum(directory: str, node: int) -> dict:
    """The Raft state a running voter's run file reports (leader, epoch, active, state, high watermark)."""
    with open(os.path.join(directory, "run", f"controller-{node}.json")) as f:
        return json.load(f).get("quorum") or {}


def _active(c: RealCluster) -> int | None:
    """The running voter that reports itself active (a killed one's stale run file does not count)."""
    alive = {n["id"] for n in c.info["nodes"] if n["id"] in VOTERS and cl.pid_alive(n.get("pid"))}
    found = [v for v in sorted(alive) if _quorum(c.dir, v).get("active")]
    return found[0] if len(found) == 1 else None


def test_killing_the_active_controller_of_a_real_quorum_loses_nothing_and_another_takes_over(tmp_path):
    directory = str(tmp_path / "cluster")
    args = ["cluster", "up", "--controllers", "3", "--brokers", "3", "--dir", directory, "--port", "0", "--detach"]
    for config in FAST:
        args += ["--config", config]
    try:
        out = kraftlog(*args).stdout
        assert "a quorum of 3 controllers" in out
        c = RealCluster(directory)
        assert sorted(n["id"] for n in c.info["nodes"] if n["role"] == "controller") == list(VOTERS)
        first = c.wait_for("an active controller", lambda: _active(c), 30)
        status = kraftlog("metadata-quorum", "--dir", directory, "describe", "--status").stdout
        assert f"LeaderId:               {first}" in status
        assert "CurrentVoters:          [3000, 3001, 3002]" in status and "CurrentObservers:       [0, 1, 2]" in status
        c.create_topic("t", 3, 3)
        acked = _produce(c.bootstrap, "t", [f"a{i}".encode() for i in range(300)], acks="all")
        assert len(acked) == 300
        pid = next(n["pid"] for n in c.info["nodes"] if n["id"] == first)
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
        acked += _produce(c.bootstrap, "t", [f"b{i}".encode() for i in range(300)], acks="all")
        second = c.wait_for("another active controller", lambda: (a := _active(c)) not in (None, first) and a, 30)
        assert time.monotonic() - killed_at < 30 and second != first
        c.create_topic("t2", 1, 3)  # metadata changes through the new active controller
        assert len(acked) == 600
        consumer = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "check", "enable.auto.commit": False})
        consumer.assign([TopicPartition("t", p, 0) for p in range(3)])
        got = {m.value() for m in _consume(consumer, 600)}
        consumer.close()
        assert {v for _p, _o, v in acked} <= got, "an acknowledged record was lost"
        out = kraftlog("cluster", "start", "--dir", directory, "--controller", str(first)).stdout
        assert f"controller-{first} started" in out
        c.wait_for("the restarted voter follows the new leader",
                   lambda: (q := _quorum(directory, first)).get("state") == "Follower"
                   and q.get("leader_id") == second, 30)
        with open(os.path.join(directory, f"controller-{second}.log")) as f:
            assert "became the active controller" in f.read()
        assert all(cleanly for _name, cleanly in cl.down(directory))
    finally:
        _stop_everything(directory)


def test_cluster_up_refuses_a_bad_number_of_controllers(tmp_path):
    bad = kraftlog("cluster", "up", "--controllers", "0", "--dir", str(tmp_path / "c"), "--detach", check=False)
    assert bad.returncode == 2 and "--controllers must be within 1..9" in bad.stderr
    single = kraftlog("cluster", "up", "--kraft-version", "1", "--dir", str(tmp_path / "d"), "--detach", check=False)
    assert single.returncode == 2 and "--kraft-version 1 needs a controller quorum" in single.stderr
    assert not os.path.exists(tmp_path / "d" / "cluster.json")


def test_chaos_on_a_quorum_kills_pauses_and_isolates_the_active_controller_and_loses_nothing(tmp_path):
    """`kraftlog chaos --controllers 3`: a fault on "the controller" hits the active voter (its detail names it);
    acks=all records survive every one of them."""
    proc = kraftlog("chaos", "--controllers", "3", "--brokers", "3", "--duration", "40s", "--faults",
                    "controller_kill,controller_pause,controller_isolate", "--seed", "5", "--dir",
                    str(tmp_path / "c"), "--json", "--fail-on-loss", timeout=600)
    verdict = json.loads(proc.stdout)
    assert verdict["safe"] and verdict["lost_acked"] == 0 and verdict["passed"]
    faults = verdict["faults"]
    assert len(faults) >= 2 and all("the active controller was controller-30" in f["detail"] for f in faults)
    assert verdict["acked"]["all"] > 0


def test_chaos_on_a_dynamic_quorum_loses_the_active_controllers_directory_and_every_voter_comes_back(tmp_path):
    """`kraftlog chaos --controllers 3 --kraft-version 1` (KIP-853): controller_disk_loss SIGKILLs the active voter,
    deletes its directory and formats it again (a new directory id, no bootstrap checkpoint); it rejoins the voters
    by auto-join before the run goes on, and no acknowledged record is lost."""
    directory = tmp_path / "c"
    proc = kraftlog("chaos", "--controllers", "3", "--kraft-version", "1", "--brokers", "2", "--duration", "35s",
                    "--faults", "controller_disk_loss", "--seed", "5", "--dir", str(directory), "--json",
                    "--fail-on-loss", timeout=600)
    verdict = json.loads(proc.stdout)
    assert verdict["safe"] and verdict["lost_acked"] == 0 and verdict["passed"]
    faults = verdict["faults"]
    assert len(faults) >= 2 and all(f["kind"] == "controller_disk_loss" and "crashed (lose all)" in f["detail"]
                                    for f in faults)
    assert all(f.get("recovered_ms") is not None for f in faults), "a lost voter did not rejoin in time"
    info = json.loads((directory / "cluster.json").read_text())
    assert info["kraft_version"] == 1
    runs = [json.loads((directory / "run" / f"controller-{v}.json").read_text())["quorum"] for v in VOTERS]
    assert all(q["voter"] and q["voters"] == list(VOTERS) and q["kraft_version"] == 1 for q in runs)
