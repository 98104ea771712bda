"""Shared fixtures.

``library``: the scenario library (``scenarios/*.yaml``) run once per test session. Several test files
assert different things about the same runs (every file exits 0; the leader-failover story loses
nothing; the consumer stories have no anomaly; ...); each (file, level, seed) is simulated once, on first
use, and every later request gets the same :class:`~kraftlog.sim.runner.RunResult` (treat it as
read-only).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlog.protocol.level import DEFAULT, Level
from kraftlog.sim.runner import RunResult, run_scenario
from kraftlog.sim.scenario import load_scenario

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
