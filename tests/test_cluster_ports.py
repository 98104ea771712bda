"""cluster.json under parallel ``cluster start`` (issue 28 item 6): every read-modify-write of cluster.json
holds an exclusive ``fcntl.flock`` on ``cluster.json.lock`` and writes atomically (temp file + os.replace),
so eight parallel ``kraftlog cluster start --broker N`` runs leave every broker's PID recorded and
``cluster down`` leaves no orphan process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kraftlog.net import cluster as cl

pytestmark = pytest.mark.slow

BROKERS = 8


def _kraftlog_popen(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kraftlog.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _node_processes(directory: str) -> list[int]:
    """PIDs of every live process running ``kraftlog.net.node`` on ``directory`` (found in /proc)."""
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if b"kraftlog.net.node" in argv and directory.encode() in argv and cl.pid_alive(int(name)):
            pids.append(int(name))
    return sorted(pids)


def test_eight_parallel_cluster_starts_leave_a_correct_cluster_json_and_no_orphan(tmp_path):
    directory = str(tmp_path / "cluster")
    try:
        up = subprocess.run([sys.executable, "-m", "kraftlog.cli", "cluster", "up", "--brokers", str(BROKERS),
                             "--dir", directory, "--port", "0", "--detach"], capture_output=True, text=True,
                            timeout=180)
        assert up.returncode == 0, up.stderr
        for b in range(BROKERS):
            assert cl.stop_broker(directory, b, kill=True)
        runs = [_kraftlog_popen("cluster", "start", "--dir", directory, "--broker", str(b))
                for b in range(BROKERS)]
        outcomes = [(p.wait(timeout=180), p.stderr.read() if p.stderr else "") for p in runs]
        assert [rc for rc, _ in outcomes] == [0] * BROKERS, outcomes
        info = cl.load(directory)
        brokers = [e for e in info["nodes"] if e["role"] == "broker"]
        recorded = sorted(e["pid"] for e in info["nodes"])
        assert all(e["incarnation"] == 2 for e in brokers), brokers
        assert all(cl.pid_alive(e["pid"]) for e in brokers), brokers
        assert _node_processes(directory) == recorded  # every running node is the one cluster.json names
        cl.down(directory)
        assert _node_processes(directory) == []
    finally:
        try:
            cl.down(directory)
        finally:
            cl.kill(directory)
            for pid in _node_processes(directory):  # a failed run must not leak a node cluster.json lost
                os.kill(pid, signal.SIGKILL)
