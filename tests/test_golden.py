"""Golden timelines: every library story at every level, and 40 campaign seeds at every level, compared
with what was checked in under ``tests/golden/``.

A story's file (``tests/golden/<story>.<level>.txt``) holds its timeline, its verdict (sorted JSON) and its
history digest, so a change of behaviour shows in review as *how* the story changed, line by line, not
only that a digest did. ``tests/golden/campaign-digests.<level>.json`` holds, per seed, the history
digest and the acknowledged records lost of ``generate(seed)`` (the campaign's story of that seed).

When behaviour changes on purpose, rewrite them and review the diff::

    pytest tests/test_golden.py --update-golden

Determinism rule (DESIGN.md): same scenario, level and seed → same history digest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import LIBRARY
from kraftlog.level import IMPLEMENTED, Level
from kraftlog.sim.runner import run_scenario

GOLDEN = Path(__file__).resolve().parent / "golden"
LEVELS = [level.label for level in IMPLEMENTED]
CAMPAIGN_SEEDS = range(40)


def golden_text(result) -> str:
    """A run as its golden file: the timeline, the verdict as sorted JSON, the history digest."""
    verdict = json.dumps(result.verdict, indent=1, sort_keys=True)
    return "\n".join([*result.timeline, "", verdict, "", f"history digest {result.verdict['history_digest']}", ""])


def _compare(path: Path, actual: str, update: bool) -> None:
    if update:
        path.write_text(actual)
        return
    assert path.exists(), f"{path.name} is missing: run pytest tests/test_golden.py --update-golden"
    expected = path.read_text()
    if actual != expected:
        import difflib
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"golden/{path.name}", "this run", n=2))
        pytest.fail(f"{path.name} changed (rewrite with --update-golden if on purpose):\n{diff[:6000]}")


@pytest.mark.parametrize("name", LIBRARY)
def test_library_story_matches_its_golden_timeline_at_every_level(library, name, request):
    """Every shipped story, at classic, kip903, elr and urm: the same timeline, verdict and history digest
    as checked in."""
    update = request.config.getoption("--update-golden")
    for label in LEVELS:
        _compare(GOLDEN / f"{name}.{label}.txt", golden_text(library.run(name, Level.parse(label))), update)


@pytest.mark.no_cover  # 40 simulations that only compare digests: under coverage they took 50 s each level in CI
@pytest.mark.parametrize("level", LEVELS)
def test_campaign_seeds_keep_their_history_digests(level, request):
    """Campaign seeds 0..39 (``generate(seed)``) at ``level``: the same history digest and the same number of
    acknowledged records lost as checked in."""
    from kraftlog.scenario.generator import generate
    path = GOLDEN / f"campaign-digests.{level}.json"
    actual = {}
    for seed in CAMPAIGN_SEEDS:
        v = run_scenario(generate(seed), level=Level.parse(level)).verdict
        actual[str(seed)] = [v["history_digest"], v["lost_acked"]]
    if request.config.getoption("--update-golden"):
        path.write_text(json.dumps(actual, indent=1, sort_keys=True) + "\n")
        return
    recorded = json.loads(path.read_text())
    changed = {seed: (recorded.get(seed), now) for seed, now in actual.items() if recorded.get(seed) != now}
    assert not changed, f"campaign seeds at {level} changed (recorded, now): {changed}"
