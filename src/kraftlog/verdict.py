"""The verdict of a run (docs/SCENARIOS.md, "The verdict"): its typed shape and the one definition of
what it says — :func:`passed`, :func:`is_safe`, :func:`is_failure`, :func:`within_budget` (and the
"loss within the budget" built on it) and :func:`outcome_words`.

Every driver and reader uses these: the simulator (:mod:`kraftlog.sim.runner`), ``scenario run --real``
(:mod:`kraftlog.net.real_scenario`), ``kraftlog chaos`` (:mod:`kraftlog.net.chaos`), the campaign
(:mod:`kraftlog.campaign`), its report (:mod:`kraftlog.report`) and ``kraftlog audit``.

The functions take a verdict (:class:`Verdict`, a JSON object) or a campaign results row (a plain dict
with the campaign's columns: ``invariant_violations`` and ``failed_expectations`` as counts, ``error``
set when the run raised and so has no verdict). Two questions are kept apart (SCENARIOS.md):

* **passed**: the run completed (the cluster came up) and every ``wait_until`` and ``expect`` held;
* **safe**: no record acknowledged to an acks=all producer was lost, no invariant was violated, no
  log truncation went unnoticed by a consumer, and no consumer group was told an older committed offset than
  it was acknowledged or skipped records (issue 32).

A **failure** (what the campaign exports and the report lists) is wider: unsafe, or a leader's own HWM
moved backwards (always a bug), or an expectation failed, or the run raised. A consumer seeing a lagging
HWM (``hwm_regressions``) is none: a Kafka consumer can see that after a leader change.

The fault budget of a story (effective min ISR − 1 per partition, and whether its data-losing
shutdowns stayed within it) is counted from the scenario by :mod:`kraftlog.scenario.generator`
(``fault_budget``, ``within_budget``) or, for ``kraftlog chaos``, from the faults it injected; the
verdict or row carries the outcome as ``within_budget``, and KIP-966's promise is that a run within it
loses nothing acknowledged (:func:`loss_within_budget`).

This module is pure (no I/O, no driver import); the JSON a driver writes is a plain dict of this shape,
so its keys and their order are the drivers' (tests/golden/ holds it).
"""


from collections.abc import Mapping, Sized
from numbers import Integral
from typing import NotRequired, TypeAlias, TypedDict

__all__ = [
    "Verdict",
    "VerdictOrRow",
    "completed_and_held",
    "is_failure",
    "is_safe",
    "loss_within_budget",
    "outcome_words",
    "passed",
    "within_budget",
]


class Verdict(TypedDict):
    """SCENARIOS.md's verdict JSON object (``kraftlog scenario run --json``; ``kraftlog chaos``'s
    ``chaos.json``). A public interface: keys are only ever added. Times in simulated (or, for a real
    run, wall) ms from the moment the cluster was ready."""

    scenario: str
    level: str
    seed: int
    sim_time_ms: int
    #: records acknowledged, by acks: {"all": n, "1": n, "0": n} (``--real`` and chaos leave out empty ones)
    acked: dict[str, int]
    #: acks=all records acknowledged but missing at the end below their partition leader's HWM
    lost_acked: int
    #: each lost record: {"partition", "value", "client"}
    lost_acked_records: list[dict[str, object]]
    #: partitions without a leader at the end (their records are not counted as lost)
    leaderless_partitions: list[str]
    hwm_regressions: int
    leader_hwm_regressions: int
    detected_truncations: int
    undetected_truncations: int
    #: consumer groups (simulator): OffsetFetch answers below an acknowledged commit, records a group skipped,
    #: and the findings behind both (``kraftlog.check.groups``)
    committed_offset_regressions: int
    skipped_by_group: int
    group_anomalies: dict[str, object]
    #: Jepsen's consumer anomalies: lost-write, duplicate, inconsistent-offsets, nonmonotonic-poll, poll-skip
    anomalies: dict[str, int]
    #: every invariant broken, as text with its time and step
    invariant_violations: list[str]
    #: the message of each failed wait_until / expect
    failed_expectations: list[str]
    metrics: dict[str, object]
    #: {"partitions": {name: {...}}, "brokers": {id: {...}}}
    final: dict[str, object]
    passed: bool
    safe: bool
    #: "sha256:..." of the event history; None for a real run (real time does not replay)
    history_digest: str | None
    #: ``scenario run --real``: True
    real: NotRequired[bool]
    #: ``kraftlog chaos``: min ISR - 1
    fault_budget: NotRequired[int]
    #: ``kraftlog chaos``: no partition had more replicas down after an unclean shutdown than the budget
    within_budget: NotRequired[bool]
    #: ``kraftlog chaos``: the faults injected, and its event lines
    faults: NotRequired[list[dict[str, object]]]
    events: NotRequired[list[str]]
    #: ``kraftlog chaos``: per producer, its sends as the client saw them: acks, sent, acknowledged,
    #: failed, timed_out, errors (by name), replaced, abandoned, unacknowledged_at_end
    client_sends: NotRequired[dict[str, dict[str, object]]]


#: What the functions below read: a :class:`Verdict`, or a campaign results row (a plain dict with the
#: campaign's columns; ``kraftlog.campaign.results.schema``).
VerdictOrRow: TypeAlias = Verdict | Mapping[str, object]


def _count(value: object) -> int:
    """A verdict's list (failed expectations, invariant violations) or a results row's count of it."""
    if isinstance(value, int):
        return value
    assert isinstance(value, Sized), value
    return len(value)


def _int(v: VerdictOrRow, key: str) -> int:
    """A count of a verdict or a row (``lost_acked``, ``undetected_truncations``...)."""
    value = v[key]  # type: ignore[literal-required]  # a row is no TypedDict: any column name
    assert isinstance(value, int), (key, value)
    return value


def completed_and_held(completed: bool, failed_expectations: object) -> bool:
    """SCENARIOS.md's ``passed`` as a driver decides it at the end of a run: the run ``completed`` (the
    cluster came up and every step ran) and no ``wait_until``/``expect`` failed (``failed_expectations``:
    their messages, or their count)."""
    return bool(completed) and _count(failed_expectations) == 0


def passed(v: VerdictOrRow) -> bool:
    """SCENARIOS.md's ``passed`` of a verdict or a results row: its ``passed`` key; a row without it
    (unset column) passed when it did not raise and no expectation failed."""
    value = v.get("passed")
    if isinstance(value, bool):
        return value
    return not v.get("error") and completed_and_held(True, v["failed_expectations"])


def _groups(v: VerdictOrRow) -> int:
    """A verdict's or row's consumer-group findings: commit regressions plus skipped records (0 when it has
    none: a real run, or a row written before issue 32)."""
    return _optional(v, "committed_offset_regressions") + _optional(v, "skipped_by_group")


def _optional(v: VerdictOrRow, key: str) -> int:
    """A count a verdict or row may lack (0 then)."""
    value = v.get(key)
    return int(value) if isinstance(value, Integral) else 0


def is_safe(v: VerdictOrRow) -> bool:
    """SCENARIOS.md's ``safe``: no acknowledged (acks=all) record lost, no invariant violated, no log
    truncation left undetected by a consumer, no consumer group told a lower committed offset than it was
    acknowledged or skipping records. A results row of a run that raised (``error`` set) has no verdict, so
    nothing says it is safe: False."""
    return bool(not v.get("error") and _int(v, "lost_acked") == 0 and _count(v["invariant_violations"]) == 0
                and _int(v, "undetected_truncations") == 0 and _groups(v) == 0)


def is_failure(v: VerdictOrRow) -> bool:
    """A failing run (the campaign exports it as a scenario file): lost acknowledged records, invariant
    violations, a leader's HWM moving backwards (``leader_hwm_regressions``, which must always be 0:
    SCENARIOS.md), undetected truncations, failed expectations, or an exception (a row's ``error``).
    ``hwm_regressions`` (what consumers saw) is no failure: a Kafka consumer can see a lagging HWM after a
    leader change."""
    return bool(_int(v, "lost_acked") or _count(v["invariant_violations"]) or _int(v, "leader_hwm_regressions")
                or _int(v, "undetected_truncations") or _groups(v) or _count(v["failed_expectations"])
                or v.get("error"))


def within_budget(v: VerdictOrRow) -> bool:
    """Whether the run's faults stayed within the fault budget (KIP-966's promise holds for it): the
    row's or verdict's ``within_budget``, counted by the driver that injected the faults (the campaign:
    :func:`kraftlog.scenario.generator.within_budget` of the story; chaos: its fault history). A verdict
    without the key (``scenario run`` counts no budget) is not held to it: False."""
    return bool(v.get("within_budget"))


def loss_within_budget(v: VerdictOrRow) -> bool:
    """Acknowledged records lost although the faults stayed within the budget: what KIP-966 promises
    never happens (at level elr and above, without unclean election)."""
    return _int(v, "lost_acked") > 0 and within_budget(v)


def outcome_words(v: VerdictOrRow) -> str:
    """The verdict in words, the same everywhere (scenario run, scenario library, chaos, the campaign
    report): whether the run passed (its expectations held) and, beside it, every safety finding — never
    a bare "passed" next to a loss. E.g. ``expectations held — 20 acknowledged records LOST, 1 invariant
    violation``. ``v``: a verdict, or a campaign results row (``failed_expectations`` and
    ``invariant_violations`` as counts)."""
    head = "expectations held" if v["passed"] else (
        f"FAILED: {_count(v['failed_expectations'])} expectation(s) did not hold"
        if v["failed_expectations"] else "FAILED: the run did not complete")
    findings = []
    lost = _int(v, "lost_acked")
    if lost:
        findings.append(f"{lost} acknowledged record{'s' if lost != 1 else ''} LOST")
    n = _count(v["invariant_violations"])
    if n:
        findings.append(f"{n} invariant violation{'s' if n != 1 else ''}")
    undetected = _int(v, "undetected_truncations")
    if undetected:
        findings.append(f"{undetected} truncation(s) UNDETECTED by a consumer")
    regressions, skipped = _optional(v, "committed_offset_regressions"), _optional(v, "skipped_by_group")
    if regressions:
        findings.append(f"{regressions} committed offset(s) ROLLED BACK for a consumer group")
    if skipped:
        findings.append(f"{skipped} record(s) SKIPPED by a consumer group")
    return head + (" — " + ", ".join(findings) if findings else " — safe: nothing acknowledged lost")
