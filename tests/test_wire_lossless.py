"""The wire switch is lossless: every message the simulator sends survives Kafka's bytes unchanged.

Rule proved: for every scenario file in ``scenarios/`` at levels ``classic``, ``elr`` and ``urm`` (whose
controller asks brokers GetReplicaLogInfo and whose admin sends ElectLeaders v3), the run with
``--wire`` (every message through ``kraftlog.protocol.wire.roundtrip``) has the SAME ``history_digest``
as the run without it. A digest differs as soon as one delivered message differs in any field the core
reads, so equality proves the table-driven mapper loses nothing the simulator sends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlog.level import Level
from kraftlog.scenario import load_scenario
from kraftlog.sim.runner import run_scenario

SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.yaml"))
LEVELS = ("classic", "elr", "urm")


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_wire_switch_keeps_the_history_digest(path: Path, level: str) -> None:
    scn = load_scenario(str(path))
    plain = run_scenario(scn, level=Level.parse(level), wire=False).verdict["history_digest"]
    wired = run_scenario(scn, level=Level.parse(level), wire=True).verdict["history_digest"]
    assert wired == plain, f"{path.name} at {level}: the wire switch changed the history"
