"""Choosing a real cluster's ports (issue 28 item 6): ``cluster up --controller-port/--internal-port``
beside ``--port``, ``chaos --port-base``, and a port in use: exit 2 with one line naming the node and the
port (before: a traceback from the node's bind and exit 1)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from conftest import assert_all_gone, node_pids
from kraftlog.net import cluster as cl
from kraftlog.net.chaos import chaos_ports


def test_port_options_must_fit_and_not_overlap():
    """Each range within 1..65535 and disjoint from the others (client ports port..port+N-1, internal
    ports internal..internal+N-1, the controller's one port); 0 or None leaves the choice to free_ports."""
    cl.check_ports(3, 9092, 9192, 9292)
    cl.check_ports(3, 0, None, None)
    cases = [((3, 9092, 9093, None), "--controller-port 9093 overlaps --port 9092..9094"),
             ((3, 9092, None, 9094), "--internal-port 9094..9096 overlaps --port 9092..9094"),
             ((3, 0, 9500, 9499), "--controller-port 9500 overlaps --internal-port 9499..9501"),
             ((3, 65534, None, None), "--port must be within 1..65533"),
             ((1, 0, 70000, None), "--controller-port must be within 1..65535"),
             ((3, 9092, None, None, 1, 9094), "--metrics-port 9094..9097 overlaps --port 9092..9094"),
             ((3, 0, None, None, 3, 65531), "--metrics-port must be within 1..65530")]
    for args, message in cases:
        with pytest.raises(cl.ClusterError) as raised:
            cl.check_ports(*args)
        assert message in str(raised.value)
        assert raised.value.code == 2


def test_chaos_port_base_lays_out_consecutive_ports():
    """``chaos --port-base N`` with 3 brokers: the controller N, client ports N+1..N+3, internal N+4..N+6."""
    assert chaos_ports(20000, 3) == {"controller_port": 20000, "port": 20001, "internal_port": 20004}
    assert chaos_ports(None, 3) == {"port": 0}
    cl.check_ports(3, 20001, 20000, 20004)
    with pytest.raises(ValueError, match="--port-base must be within 1..65529"):
        chaos_ports(65530, 3)


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kraftlog.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_overlapping_port_options_exit_2_with_one_line(tmp_path):
    """A bad choice is refused before anything starts: exit 2, one line, no traceback, no cluster.json."""
    res = _cli("cluster", "up", "--brokers", "2", "--dir", str(tmp_path / "c"), "--port", "9092",
               "--internal-port", "9093", "--detach")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["error: --internal-port 9093..9094 overlaps --port 9092..9093"]
    assert not (tmp_path / "c" / "cluster.json").exists()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((cl.HOST, port)) == 0


@pytest.mark.slow
def test_chosen_ports_are_bound_and_a_port_in_use_exits_2_naming_node_and_port(tmp_path):
    """``--port``, ``--controller-port``, ``--internal-port`` and ``--metrics-port`` are what the nodes bind and
    cluster.json records; a second cluster asking for a client port the first one holds stops with exit 2 and one
    line naming broker-0 and the port, leaving none of its nodes running."""
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    client, controller, internal = (p for p in _three_free_bases())
    used = {client, client + 1, controller, controller + 1, internal, internal + 1}
    ports = sorted(set(cl.free_ports(60)) - used)
    metrics = next(p for p in ports if p + 1 in ports and p + 2 in ports)
    try:
        res = _cli("cluster", "up", "--brokers", "2", "--dir", first, "--port", str(client),
                   "--controller-port", str(controller), "--internal-port", str(internal), "--metrics-port",
                   str(metrics), "--detach")
        assert res.returncode == 0, res.stderr
        nodes = {e["id"]: e for e in cl.load(first)["nodes"]}
        assert nodes["controller"]["port"] == controller
        assert [nodes[n]["metrics_port"] for n in ("controller", 0, 1)] == [metrics, metrics + 1, metrics + 2]
        assert all(_listening(p) for p in (metrics, metrics + 1, metrics + 2))
        assert [(nodes[b]["port"], nodes[b]["internal_port"]) for b in (0, 1)] == [
            (client, internal), (client + 1, internal + 1)]
        assert all(_listening(p) for p in (controller, client, client + 1, internal, internal + 1))

        res = _cli("cluster", "up", "--brokers", "1", "--dir", second, "--port", str(client + 1), "--detach")
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip().splitlines() == [
            f"error: broker-0: port {client + 1} (CLIENT listener) on 127.0.0.1 is in use"]
        assert "Traceback" not in res.stderr
        assert_all_gone(node_pids(second))
    finally:
        for d in (first, second):
            if not os.path.exists(os.path.join(d, "cluster.json")):
                continue
            pids = node_pids(d)
            try:
                cl.down(d)
            except cl.ClusterError:
                pass
            finally:
                cl.kill(d)
            assert_all_gone(pids)


def _three_free_bases() -> tuple[int, int, int]:
    """Three bases of two consecutive free ports each (client, controller, internal)."""
    ports = sorted(cl.free_ports(60))
    pairs = [p for p in ports if p + 1 in ports]
    bases: list[int] = []
    for p in pairs:
        if all(abs(p - b) > 1 for b in bases):
            bases.append(p)
        if len(bases) == 3:
            return bases[0], bases[1], bases[2]
    pytest.skip("no three pairs of consecutive free ports")
