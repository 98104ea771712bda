"""Shared fixtures.

``library``: the scenario library (``scenarios/*.yaml``) run once per test session. Several test files
assert different things about the same runs (every file exits 0; the leader-failover story loses
nothing; the consumer stories have no anomaly; ...); each (file, level, seed) is simulated once, on first
use, and every later request gets the same :class:`~kraftlog.scenario.result.RunResult` (treat it as
read-only).

``chaos_runs``: ``kraftlog chaos --json`` runs, each (argument list) run once per session on real
processes. ``tests/test_chaos.py`` judges a run's verdict and files, ``tests/test_audit.py`` starts the
same cluster again and audits it: one chaos run of a minute serves both.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kraftlog.level import DEFAULT, Level
from kraftlog.scenario import load_scenario
from kraftlog.scenario.result import RunResult
from kraftlog.sim.runner import run_scenario

ROOT = Path(__file__).resolve().parents[1]
SCENARIO_DIR = ROOT / "scenarios"
#: every shipped scenario, by file stem
LIBRARY = sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


class Library:
    """``library[name]`` or ``library.run(name, level=...)``: the RunResult of ``scenarios/<name>.yaml``
    (at the file's level and seed unless overridden), simulated once per session."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, Level | None], RunResult] = {}

    def run(self, name: str, level: Level | None = None) -> RunResult:
        scenario = load_scenario(SCENARIO_DIR / f"{name}.yaml")
        if level is None:  # the file's level, else the default: one run whichever way it is asked for
            level = Level.parse(scenario.level) if scenario.level else DEFAULT
        key = (name, level)
        if key not in self._runs:
            self._runs[key] = run_scenario(scenario, level=level)
        return self._runs[key]

    def __getitem__(self, name: str) -> RunResult:
        return self.run(name)


@pytest.fixture(scope="session")
def library() -> Library:
    return Library()


def wait_for(what: str, predicate, timeout_s: float = 60.0, interval_s: float = 0.2):
    """Poll ``predicate()`` every ``interval_s`` until it returns something true, and return that;
    AssertionError naming ``what`` after ``timeout_s`` (a real cluster's state, read over its API)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


@contextlib.contextmanager
def running_cluster(directory: str, brokers: int, **kwargs):
    """``cluster.up`` in ``directory`` (free ports), yielding the directory; afterwards every node is stopped,
    cleanly (``cluster.down``) and then by PID (``cluster.kill``), whatever happened."""
    from kraftlog.net import cluster as cl
    try:
        cl.up(directory, brokers, port=0, **kwargs)
        yield directory
    finally:
        cl.teardown(directory)


def apply_errors(node) -> int | None:
    """A node's metadata-apply-error-count as ``cluster status --json`` reports it (None: not running)."""
    return None if node.counters is None else node.counters.get("metadata-apply-error-count")


def node_pids(directory: str) -> list[int]:
    """The PIDs ``cluster.json`` in ``directory`` names (none when there is no cluster there)."""
    from kraftlog.net import cluster as cl
    try:
        return [e["pid"] for e in cl.load(directory)["nodes"] if e.get("pid")]
    except cl.ClusterError:
        return []


def assert_all_gone(pids: list[int], timeout_s: float = 10.0) -> None:
    """Every process of ``pids`` has exited within ``timeout_s``."""
    from kraftlog.net import cluster as cl
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(cl.pid_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if cl.pid_alive(p)], f"node processes left running: {pids}"


def run_chaos(directory: str, *args: str, timeout_s: float = 300) -> dict:
    """``kraftlog chaos --dir directory --json *args`` in a subprocess: its verdict. It must exit 0 and
    leave no node running; a node a failure left behind is SIGKILLed by PID."""
    from kraftlog.net import cluster as cl
    try:
        r = subprocess.run([sys.executable, "-m", "kraftlog.cli", "chaos", "--dir", directory, "--json", *args],
                           capture_output=True, text=True, timeout=timeout_s)
    finally:
        pids = node_pids(directory)
        for p in pids:
            if cl.pid_alive(p):
                os.kill(p, signal.SIGKILL)
    assert r.returncode == 0, r.stderr[-3000:]
    assert_all_gone(pids)
    return json.loads(r.stdout)


class ChaosRuns:
    """``chaos_runs.run(*args)``: ``(directory, verdict)`` of ``kraftlog chaos --json *args``, run once per
    session (a later test gets the same directory and verdict: treat both as read-only, but the cluster
    may be started again in it, as the audit does)."""

    def __init__(self, tmp_path_factory) -> None:
        self._factory = tmp_path_factory
        self._runs: dict[tuple[str, ...], tuple[str, dict]] = {}

    def run(self, *args: str) -> tuple[str, dict]:
        if args not in self._runs:
            directory = str(self._factory.mktemp("chaos") / "cluster")
            self._runs[args] = (directory, run_chaos(directory, *args))
        return self._runs[args]


@pytest.fixture(scope="session")
def chaos_runs(tmp_path_factory) -> ChaosRuns:
    return ChaosRuns(tmp_path_factory)


def pytest_addoption(parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ from this run (tests/test_golden.py) instead of comparing")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks (its own hook of this name)
def pytest_collection_modifyitems(config, items) -> None:
    """Tests that use a module-scoped fixture run on one pytest-xdist worker (``--dist loadgroup``), so that
    the fixture (a campaign on Spark, a real cluster) is made once, not once per worker. Tests that share
    one of the session's chaos runs (``chaos_runs``) run on one pytest-xdist worker
    (``--dist loadgroup``), each run's tests on a worker of their own: every such test names its run's
    group, ``@pytest.mark.xdist_group(CLASSIC_STORY_GROUP)`` or ``(DEFAULT_LEVEL_GROUP)`` (a test that asks
    for ``chaos_runs`` without one is a collection error: it would start its run again on another worker).
    The ``slow`` tests (real processes, Spark: most of the run's time) are handed out first, the fast ones
    fill the workers' gaps after them, so that no worker is left with a long test at the end (longest
    first, in short); the order within each kind is the collection's."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        shared = [name for name, defs in (info.name2fixturedefs.items() if info else ())
                  if defs and defs[-1].scope == "module"]
        if shared and item.get_closest_marker("xdist_group") is None:
            # a module-scoped fixture (a Spark campaign, a real cluster) is made once per worker that runs one
            # of its tests: keep them on one worker, or it is made two or three times over
            item.add_marker(pytest.mark.xdist_group(f"module-fixture:{item.module.__name__}"))
        if "chaos_runs" in getattr(item, "fixturenames", ()):
            groups = [m.args[0] for m in item.iter_markers("xdist_group") if m.args]
            if not set(groups) & {CLASSIC_STORY_GROUP, DEFAULT_LEVEL_GROUP}:
                raise pytest.UsageError(f"{item.nodeid} uses chaos_runs: mark it with the xdist_group of its run "
                                        f"({CLASSIC_STORY_GROUP!r} or {DEFAULT_LEVEL_GROUP!r})")
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


#: the chaos runs the chaos and audit tests share: 30 s at the default level (seed 7: a corrupted log, then
#: a full disk: issue 23's storage faults), and KIP-966's last-replica-standing story at classic
DEFAULT_LEVEL_RUN = ("--duration", "30s", "--seed", "7")
CLASSIC_STORY_RUN = ("--duration", "30s", "--seed", "7", "--level", "classic", "--story", "last-replica-standing")
#: the pytest-xdist group of each run's tests (one worker per run: the two runs go side by side)
DEFAULT_LEVEL_GROUP = "chaos-default-level"
CLASSIC_STORY_GROUP = "chaos-classic-story"
