"""Issue 26 item 3: ``kraftlog/verdict.py`` is the one definition of what a verdict says — ``passed``,
``safe`` (:func:`is_safe`), ``is_failure``, ``within_budget`` (and a loss within it) and
``outcome_words`` — over SCENARIOS.md's verdict JSON (:class:`Verdict`) and the campaign's results rows,
and nothing else in kraftlog defines them again."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from kraftlog.verdict import (
    Verdict,
    completed_and_held,
    is_failure,
    is_safe,
    loss_within_budget,
    outcome_words,
    passed,
    within_budget,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "kraftlog"
GOLDEN = ROOT / "tests" / "golden"


def _verdict(**changes) -> dict:
    v = {"scenario": "s", "level": "elr", "seed": 1, "sim_time_ms": 10, "acked": {"all": 3, "1": 0, "0": 0},
         "lost_acked": 0, "lost_acked_records": [], "leaderless_partitions": [], "hwm_regressions": 0,
         "leader_hwm_regressions": 0, "detected_truncations": 0, "undetected_truncations": 0,
         "anomalies": {}, "invariant_violations": [], "failed_expectations": [], "metrics": {}, "final": {},
         "passed": True, "safe": True, "history_digest": "sha256:x"}
    v.update(changes)
    return v


def _row(**changes) -> dict:
    """A campaign results row: counts instead of lists, ``error`` set when the run raised."""
    row = {"lost_acked": 0, "invariant_violations": 0, "undetected_truncations": 0, "leader_hwm_regressions": 0,
           "hwm_regressions": 0, "failed_expectations": 0, "error": None, "passed": True, "within_budget": True}
    row.update(changes)
    return row


def test_the_verdict_type_names_every_key_of_a_scenario_run_verdict():
    """``Verdict``'s required keys are exactly the keys ``scenario run --json`` prints (a golden
    verdict), and each is in SCENARIOS.md's table of the verdict's keys."""
    text = (GOLDEN / "last-replica-standing.classic.txt").read_text()
    body = text[text.index("\n{\n") + 1:text.rindex("\n}\n") + 2]
    keys = set(json.loads(body))
    assert set(Verdict.__required_keys__) == keys
    assert set(Verdict.__optional_keys__) == {"real", "fault_budget", "within_budget", "faults", "events",
                                              "client_sends"}
    doc = (ROOT / "docs" / "SCENARIOS.md").read_text()
    table = doc[doc.index("## The verdict"):doc.index("## Exit codes")]
    for key in keys:
        assert f"`{key}`" in table, key


@pytest.mark.parametrize("changes,safe", [
    ({}, True),
    ({"lost_acked": 1}, False),
    ({"invariant_violations": ["t=1ms fenced-in-isr ..."]}, False),
    ({"undetected_truncations": 1}, False),
    ({"hwm_regressions": 2, "detected_truncations": 1, "failed_expectations": ["x"]}, True),
])
def test_safe_is_nothing_acked_lost_no_invariant_violated_no_truncation_undetected(changes, safe):
    """SCENARIOS.md's ``safe`` on a verdict (lists) and on a results row (counts) alike: a failed
    expectation or a consumer's HWM regression does not make a run unsafe."""
    assert is_safe(_verdict(**changes)) is safe
    row_changes = {k: len(v) if isinstance(v, list) else v for k, v in changes.items()}
    assert is_safe(_row(**row_changes)) is safe


def test_a_row_that_raised_is_not_safe_and_did_not_pass():
    """A run that raised has no verdict: nothing says it is safe, and it did not pass."""
    row = _row(error="Traceback ...", passed=None)
    assert not is_safe(row) and not passed(row) and is_failure(row)


def test_passed_is_completed_with_every_expectation_held():
    """``passed``: the run completed and no wait_until/expect failed; a row's column when set, else from
    its failed expectations."""
    assert completed_and_held(True, []) and completed_and_held(True, 0)
    assert not completed_and_held(False, []) and not completed_and_held(True, ["expect leader 2"])
    assert not completed_and_held(True, 1)
    assert passed(_verdict(passed=False)) is False and passed(_row(passed=True)) is True
    assert passed(_row(passed=None)) is True and passed(_row(passed=None, failed_expectations=2)) is False


@pytest.mark.parametrize("changes,failing", [
    ({}, False),
    ({"hwm_regressions": 3}, False),
    ({"lost_acked": 1}, True),
    ({"invariant_violations": 1}, True),
    ({"leader_hwm_regressions": 1}, True),
    ({"undetected_truncations": 1}, True),
    ({"failed_expectations": 1}, True),
    ({"error": "boom"}, True),
])
def test_a_failure_is_unsafe_a_leader_hwm_regression_a_failed_expectation_or_an_error(changes, failing):
    """``is_failure``: what the campaign exports; a consumer's HWM regression alone is none."""
    assert is_failure(_row(**changes)) is failing
    listed = {k: ["x"] * v if k in ("invariant_violations", "failed_expectations") else v
              for k, v in changes.items() if k != "error"}
    if "error" not in changes:
        assert is_failure(_verdict(**listed)) is failing


def test_a_loss_within_the_budget_needs_both_a_loss_and_the_budget():
    """KIP-966's promise: a run within the fault budget loses nothing acknowledged; a verdict without
    ``within_budget`` (``scenario run`` counts no budget) is not held to it."""
    assert within_budget(_row()) and not within_budget(_row(within_budget=False))
    assert not within_budget(_verdict())
    assert loss_within_budget(_row(lost_acked=2))
    assert not loss_within_budget(_row(lost_acked=2, within_budget=False))
    assert not loss_within_budget(_row(lost_acked=0))


def test_outcome_words_say_passed_and_every_safety_finding_for_a_verdict_and_a_row_alike():
    """The same words for a verdict and for its results row (counts): never a bare "passed" beside a loss."""
    v = _verdict(lost_acked=20, invariant_violations=["a"], safe=False)
    words = "expectations held — 20 acknowledged records LOST, 1 invariant violation"
    assert outcome_words(v) == words
    assert outcome_words(_row(lost_acked=20, invariant_violations=1)) == words
    assert outcome_words(_verdict()) == "expectations held — safe: nothing acknowledged lost"
    assert outcome_words(_verdict(passed=False, failed_expectations=["x", "y"], undetected_truncations=1)) == (
        "FAILED: 2 expectation(s) did not hold — 1 truncation(s) UNDETECTED by a consumer")
    assert outcome_words(_verdict(passed=False)).startswith("FAILED: the run did not complete")


def test_no_other_module_defines_the_verdict_rules_again():
    """One definition: no function named like a verdict rule outside verdict.py (the simulator, the real
    drivers, the campaign and the report import them)."""
    names = {"is_safe", "is_safe_row", "outcome_words", "is_failure", "loss_within_budget", "_passed",
             "completed_and_held"}
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "verdict.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
                found.append(f"{path.relative_to(SRC)}:{node.lineno} {node.name}")
    assert found == []
    # and the verdict's safe/passed keys are filled by verdict.is_safe in every driver
    for driver in ("sim/runner.py", "net/real_scenario.py", "net/chaos.py"):
        text = (SRC / driver).read_text()
        assert re.search(r"^from \.\.verdict import .*\bis_safe\b", text, re.MULTILINE), driver
