"""``benchmarks/cluster_throughput.py --quick --security sasl_ssl`` (issues 13 and 36): the side-by-side produce
benchmark runs end to end, kraftlog on a PLAINTEXT and on a ``--secure`` cluster, and cleans up after itself.

One subprocess run of the benchmark (a few seconds per system and record size): the JSON has the shape
the issue asks for, kraftlog acknowledged records with p50 <= p99, librdkafka's mock cluster ran, NATS
JetStream either ran or was skipped with a message saying how to install it, and no process the
benchmark started (it lists each PID with its start time) is still running, nor its temporary directory
left. No figure is compared with another: throughput depends on the machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "cluster_throughput.py"
SIZES = ("1KiB", "64KiB")
TOP_FIELDS = ("records_per_s", "mb_per_s", "p50_ms", "p99_ms", "cpu_s")
SIZE_FIELDS = TOP_FIELDS + ("records", "failed", "unacked", "errors", "server_cpu_s", "client_cpu_s")
#: The benchmark's own bound, generous: the quick run takes well under a minute.
TIMEOUT_S = 240


def _survives(proc: dict) -> bool:
    """The process of a ``processes`` entry still runs: same PID, same start time, not a zombie."""
    try:
        with open(f"/proc/{proc['pid']}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    if fields[0] == "Z":
        return False
    return proc["starttime"] is None or int(fields[19]) == proc["starttime"]


def _run_quick(out: Path) -> tuple[int, str]:
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--quick", "--security", "sasl_ssl", "--json", str(out)],
                            cwd=ROOT,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, COLUMNS="160"))
    try:
        stdout, _ = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # the benchmark's finally blocks stop what it started
        try:
            stdout, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, _ = proc.communicate()
        pytest.fail(f"the benchmark did not finish within {TIMEOUT_S} s:\n{stdout[-5000:]}")
    return proc.returncode, stdout


@pytest.mark.slow
def test_quick_run_reports_every_system_and_leaves_nothing_running(tmp_path):
    out = tmp_path / "out.json"
    code, stdout = _run_quick(out)
    assert out.exists(), f"no JSON written (exit {code}):\n{stdout[-5000:]}"
    data = json.loads(out.read_text())

    # nothing the benchmark started survives it, whatever else happened
    assert data["processes"], stdout[-3000:]
    for p in data["processes"]:
        assert {"system", "role", "pid", "starttime"} <= set(p)
    assert not [p for p in data["processes"] if _survives(p)]
    assert data["survivors"] == []
    assert all(not os.path.exists(d) for d in data["temp_dirs"])
    assert code == 0, stdout[-5000:]

    assert {"machine", "kraftlog", "nats_jetstream", "librdkafka_mock", "ratios"} <= set(data)
    m = data["machine"]
    assert m["cores"] >= 1 and m["python"] and "cpu_model" in m

    def check_ran(name: str) -> dict:
        e = data[name]
        assert e["skipped"] is None and e["error"] is None, (name, e.get("skipped"), e.get("error"))
        assert set(e["by_size"]) == set(SIZES), name
        for label in SIZES:
            f = e["by_size"][label]
            assert set(SIZE_FIELDS) <= set(f), (name, label, f)
            assert f["records"] > 0, (name, label, f)
            assert f["records_per_s"] > 0 and f["mb_per_s"] > 0, (name, label, f)
            assert f["p50_ms"] is not None and f["p99_ms"] is not None, (name, label, f)
            assert 0 <= f["p50_ms"] <= f["p99_ms"], (name, label, f)
            assert f["cpu_s"] >= 0 and f["client_cpu_s"] >= 0, (name, label, f)
        for k in TOP_FIELDS:  # the top-level figures are the 1 KiB ones
            assert e[k] == e["by_size"]["1KiB"][k], (name, k)
        assert e["flush_policy"], name
        return e

    k = check_ran("kraftlog")
    assert len(k["pids"]) == 4  # a controller and 3 brokers, each among the processes checked above
    assert set(k["pids"]) <= {p["pid"] for p in data["processes"]}
    for label in SIZES:
        assert k["by_size"][label]["server_cpu_s"] is not None
        assert k["by_size"][label]["topic_after_run"]["replicas"] and len(
            k["by_size"][label]["topic_after_run"]["replicas"]) == 3

    secured = check_ran("kraftlog_sasl_ssl")  # `--security sasl_ssl`: the same run on a `cluster up --secure` one
    assert "SASL_SSL" in secured["setup"] and len(secured["pids"]) == 4
    assert set(secured["pids"]) <= {p["pid"] for p in data["processes"]}
    sasl_ratio = data["ratios"]["kraftlog_sasl_ssl/kraftlog"]
    assert sasl_ratio is not None and set(sasl_ratio["by_size"]) == set(SIZES) and sasl_ratio["records_per_s"] > 0

    check_ran("librdkafka_mock")
    assert data["librdkafka_mock"]["by_size"]["1KiB"]["server_cpu_s"] is None  # the mock runs in the client

    nats = data["nats_jetstream"]
    if nats["skipped"] is not None:
        assert "nats-server" in nats["skipped"] and "install" in nats["skipped"], nats["skipped"]
        assert data["ratios"]["kraftlog/nats_jetstream"] is None
    else:
        check_ran("nats_jetstream")
        assert nats["publisher"] and ("nats.go" in nats["publisher"] or "nats-py" in nats["publisher"])
        assert len(nats["pids"]) == 3
        assert data["ratios"]["kraftlog/nats_jetstream"] is not None

    mock_ratio = data["ratios"]["kraftlog/librdkafka_mock"]
    assert mock_ratio is not None and set(mock_ratio["by_size"]) == set(SIZES)
    assert mock_ratio["records_per_s"] > 0
