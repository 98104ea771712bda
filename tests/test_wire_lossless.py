"""The wire switch is lossless: every message the simulator sends survives Kafka's bytes unchanged.

Rule proved: for every scenario file in ``scenarios/`` at levels ``classic``, ``elr`` and ``urm`` (whose
controller asks brokers GetReplicaLogInfo and whose admin sends ElectLeaders v3), the run with
``--wire`` (every message through ``kraftlog.protocol.wire.roundtrip``) has the SAME ``history_digest``
as the run without it. A digest differs as soon as one delivered message differs in any field the core
reads, so equality proves the table-driven mapper loses nothing the simulator sends.

The run without the wire is the golden one: ``tests/test_golden.py`` checks that a fresh run has the digest its
golden file records (``tests/golden/<story>.<level>.txt``), so this file compares the wired run with that digest
and simulates each story once instead of twice. Without coverage (``no_cover``): the wire is not in the measured
core, and the plain runs measure the same broker and controller lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftlog.level import Level
from kraftlog.scenario import load_scenario
from kraftlog.sim.runner import run_scenario

SCENARIOS = sorted((Path(__file__).resolve().parent.parent / "scenarios").glob("*.yaml"))
LEVELS = ("classic", "elr", "urm")


GOLDEN = Path(__file__).resolve().parent / "golden"


def _golden_digest(story: str, level: str) -> str:
    """The history digest a run without the wire has (the last line of the story's golden file at ``level``)."""
    last = (GOLDEN / f"{story}.{level}.txt").read_text().rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("history digest "), f"golden/{story}.{level}.txt does not end with its digest"
    return last[len("history digest "):]


@pytest.mark.no_cover
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_wire_switch_keeps_the_history_digest(path: Path, level: str) -> None:
    scn = load_scenario(str(path))
    wired = run_scenario(scn, level=Level.parse(level), wire=True).verdict["history_digest"]
    assert wired == _golden_digest(path.stem, level), f"{path.name} at {level}: the wire switch changed the history"
