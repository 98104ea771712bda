"""Issue 12, "a campaign on a real Spark cluster": ``kraftlog campaign --master spark://...`` on a Spark
standalone cluster (a master and two one-core workers started from the pyspark install, on loopback)
runs every (level, seed) to the same history digest and the same number of acknowledged records lost
as the simulator in this process (``tests/golden/campaign-digests.<level>.json``, which
``tests/test_golden.py`` holds the simulator to): the same runs, byte for byte, whatever the executor;
a campaign whose executors cannot fit on the workers gives up after ``--executor-wait`` with one line and
exit 2 instead of waiting for ever. (It used to run the same campaign on ``local[2]`` too and compare
the two: a second Spark JVM and campaign, about a minute of CI, for what the golden digests already pin.)

The executors run on a Python that has only what the README asks of a cluster's workers (PyYAML and kio,
set with ``PYSPARK_PYTHON``): no kraftlog, which the driver ships to them as a zip, and no pyspark.
The campaign is run as a user types it (the venv's ``kraftlog`` script, in a subprocess). The cluster's helpers are in
``tests/spark_standalone.py``. Every process started here is stopped by its PID in a ``finally`` (bounded
waits), and the test checks that none of them, nor any executor JVM or Python worker they started, is
left running.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from spark_standalone import Launched, StandaloneCluster, launch, tail, worker_python

pytestmark = pytest.mark.slow

SEEDS = 8
GOLDEN = Path(__file__).resolve().parent / "golden"
#: one campaign's wall-time limit (it takes 35-60 s on this project's 2-core machine).
CAMPAIGN_TIMEOUT_S = 240


def _kraftlog() -> str:
    exe = Path(sys.executable).parent / "kraftlog"
    found = str(exe) if exe.exists() else shutil.which("kraftlog")
    assert found, "the kraftlog script is not installed next to this Python nor on PATH"
    return found


def _driver_env(home: Path) -> dict:
    """The user's environment without Spark settings of its own, on loopback, scratch under ``home``."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "local").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update({"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": str(home / "conf"),
                "SPARK_LOCAL_DIRS": str(home / "local")})
    return env


def _campaign(name: str, master: str, base: Path, launched: list[Launched],
              cluster: StandaloneCluster | None = None, env: dict | None = None) -> Path:
    """``kraftlog campaign --seeds 8 --no-library --master MASTER --out DIR`` (with ``env`` added to the
    environment); returns DIR once it exited 0."""
    home = base / name
    out = home / "out"
    argv = [_kraftlog(), "campaign", "--seeds", str(SEEDS), "--no-library", "--master", master, "--out", str(out)]
    driver = launch(f"kraftlog campaign on {master}", argv, {**_driver_env(home), **(env or {})},
                    home / "campaign.log", home)
    launched.append(driver)
    deadline = time.monotonic() + CAMPAIGN_TIMEOUT_S
    while driver.popen.poll() is None and time.monotonic() < deadline:
        driver.observe()  # its Spark JVM and Python workers, to check later that none outlived it
        time.sleep(0.5)
    cluster_logs = f"\n{cluster.logs()}" if cluster else ""
    if driver.popen.poll() is None:
        pytest.fail(f"`{' '.join(argv)}` did not finish within {CAMPAIGN_TIMEOUT_S} s; its output:\n"
                    f"{tail(driver.log)}\nspark.log:\n{tail(out / 'spark.log')}{cluster_logs}")
    assert driver.popen.returncode == 0, (
        f"`{' '.join(argv)}` exited {driver.popen.returncode}; its output:\n{tail(driver.log)}\n"
        f"spark.log:\n{tail(out / 'spark.log')}{cluster_logs}")
    return out


def _rows(out: Path) -> list[dict]:
    """results.parquet (a file or a directory of parts) as rows in (level, kind, seed, scenario) order."""
    rows = pq.read_table(out / "results.parquet").to_pylist()
    return sorted(rows, key=lambda r: (r["level"], r["kind"], r["seed"], r["scenario"]))


def test_campaign_on_a_standalone_cluster_runs_every_seed_as_the_simulator_does(tmp_path):
    launched: list[Launched] = []
    cluster = StandaloneCluster(tmp_path / "cluster", workers=2, cores=1, memory="1g")
    try:
        # The cluster's JVMs start while the workers' Python is made.
        cluster.start_in_background()
        # The executors' Python, as the README asks of a cluster's workers: PyYAML and kio, no kraftlog
        # (the driver ships it as a zip), no pyspark (Spark puts its own on the Python workers' path).
        python = worker_python(tmp_path / "worker-python")
        check = subprocess.run([str(python), "-c", "import yaml, kio\ntry:\n import kraftlog\nexcept ImportError:\n"
                                " pass\nelse:\n raise SystemExit('kraftlog is importable')"],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, f"the workers' Python is not as intended: {check.stderr}"
        t0 = time.monotonic()
        cluster.wait_started()  # raises with the master's and workers' log tails when one did not come up
        t1 = time.monotonic()
        cluster_out = _campaign("standalone", cluster.master_url, tmp_path, launched, cluster,
                                env={"PYSPARK_PYTHON": str(python)})
        t2 = time.monotonic()
        print(f"waited {t1 - t0:.1f} s for the cluster, campaign on {cluster.master_url} {t2 - t1:.1f} s")

        # It ran on the cluster: one finished application, an executor on each worker.
        deadline = time.monotonic() + 15  # the master files the application once the driver said goodbye
        while True:
            status = cluster.status() or {}
            apps = [(a.get("name"), a.get("state")) for a in status.get("completedapps", [])]
            if apps or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        assert apps == [("kraftlog-campaign", "FINISHED")], apps
        for worker in cluster.workers:
            executors = list(cluster.work_dir(worker).glob("app-*/*/stderr"))
            assert executors, f"no executor ran on {worker.name}\n{cluster.logs()}"

        # Every run as the simulator runs it here: the golden digest and loss of its (level, seed).
        summary = json.loads((cluster_out / "summary.json").read_text())
        assert summary["master"] == cluster.master_url and summary["seed_range"] == [0, SEEDS - 1]
        assert summary["runs"] == SEEDS * len(summary["levels"]) and len(summary["levels"]) == 4
        rows = _rows(cluster_out)
        assert len(rows) == summary["runs"]
        for row in rows:
            golden = json.loads((GOLDEN / f"campaign-digests.{row['level']}.json").read_text())
            key = (row["level"], row["kind"], row["seed"], row["scenario"])
            assert [row["history_digest"], row["lost_acked"]] == golden[str(row["seed"])], key
        for level in summary["levels"]:
            golden = json.loads((GOLDEN / f"campaign-digests.{level}.json").read_text())
            lost = [golden[str(seed)][1] for seed in range(SEEDS)]
            assert (summary["levels"][level]["lost_acked_total"], summary["levels"][level]["seeds_with_loss"]) == \
                (sum(lost), sum(1 for n in lost if n)), level
        # every failing run's story is in failures/, under the name its row gives
        written = {f"failures/{p.name}" for p in (cluster_out / "failures").iterdir()}
        assert written == {r["failure_file"] for r in rows if r["failure_file"]} and \
            len(written) == summary["failures"], (written, summary["failures"])

        # A campaign whose executors ask for more memory than a worker has: no executor can start. It
        # used to wait at 0 runs for ever; it gives up after --executor-wait with one line, exit 2.
        home = tmp_path / "too-big"
        env = {**_driver_env(home), "PYSPARK_PYTHON": str(python)}
        (home / "conf" / "spark-defaults.conf").write_text("spark.executor.memory 4g\n")
        argv = [_kraftlog(), "campaign", "--seeds", "2", "--no-library", "--master", cluster.master_url,
                "--out", str(home / "out"), "--executor-wait", "10"]
        driver = launch("kraftlog campaign, executors too big", argv, env, home / "campaign.log", home)
        launched.append(driver)
        deadline = time.monotonic() + 90
        while driver.popen.poll() is None and time.monotonic() < deadline:
            driver.observe()
            time.sleep(0.5)
        output = (home / "campaign.log").read_text()
        assert driver.popen.returncode == 2, f"exit {driver.popen.poll()}:\n{output}\n{cluster.logs()}"
        errors = [line for line in output.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "no Spark executor on " + cluster.master_url in errors[0] \
            and "spark.executor.memory" in errors[0], output
        assert "Traceback" not in output
        summary = json.loads((home / "out" / "summary.json").read_text())
        assert summary["runs"] == 0 and summary["interrupted"] is True
    finally:
        for driver in launched:
            driver.stop()
        cluster.stop()
        left = [(d.name, p) for d in launched for p in d.alive()] + cluster.alive()
    assert not left, f"processes (name, (pid, start time)) still running after the test: {left}"
