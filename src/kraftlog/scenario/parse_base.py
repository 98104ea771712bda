"""The parts of the scenario parser (:mod:`kraftlog.scenario.parser`) that read one YAML value: durations,
partition names, and the typed readers every section uses, each raising :class:`ScenarioError` with the line,
the step and the problem."""

from __future__ import annotations

from collections.abc import Collection
from typing import NoReturn

from . import model
from .model import MAX_SIMULATED_MS, ScenarioError, _is_int, _show
from .yaml_lines import LDict, LList

__all__ = ["parse_duration", "parse_partition_name"]


# --------------------------------------------------------------------------- small public parsers
def parse_duration(text: object) -> int:
    """Parse a duration ``<int>ms``, ``<int>s`` or ``<int>m`` into int ms.

    Raises ValueError for anything else (a bare number, a negative or fractional value, other units).
    """
    if isinstance(text, str):
        match = model._DURATION_RE.fullmatch(text.strip())
        if match:
            return int(match.group(1)) * model._DURATION_UNITS[match.group(2)]
    raise ValueError(
        f"bad duration {_show(text)} (expected <int>ms, <int>s or <int>m, e.g. 500ms, 5s, 2m)"
    )


def parse_partition_name(name: object) -> tuple[str, int]:
    """Split a partition name ``<topic>-<index>`` (``"t-0"``) into ``(topic, index)``.

    Topic names may contain ``-``: the split is on the last one. Raises ValueError when there is no
    ``-<index>`` suffix or the index is not a non-negative int without leading zeros.
    """
    if isinstance(name, str):
        match = model._PARTITION_RE.fullmatch(name.strip())
        if match:
            return match.group(1), int(match.group(2))
    raise ValueError(f"bad partition name {_show(name)} (expected <topic>-<index>, e.g. t-0)")




class _Reader:
    """The typed readers of :class:`~kraftlog.scenario.parser._Parser` (its base): ``source`` names the file,
    ``step`` and ``verb`` the step being read."""

    source: str
    step: int | None
    verb: str | None

    # ------------------------------------------------------------------------------- helpers
    def fail(self, line: int | None, problem: str) -> NoReturn:
        raise ScenarioError(problem, source=self.source, line=line, step=self.step, verb=self.verb)

    def step_verb(self) -> str:
        """The verb of the step being parsed (set by :meth:`step_` before a ``verb_*`` method runs)."""
        assert self.verb is not None
        return self.verb

    def mapping(self, value: object, line: int, what: str, *, optional: bool = False) -> LDict:
        if value is None and optional:
            empty = LDict()
            empty.line, empty.key_lines, empty.lines = line, {}, {}
            return empty
        if not isinstance(value, LDict):
            self.fail(line, f"{what} must be a mapping, got {_show(value)}")
        return value

    def sequence(self, value: object, line: int, what: str) -> LList:
        if not isinstance(value, LList):
            self.fail(line, f"{what} must be a list, got {_show(value)}")
        return value

    def keys(self, mapping: LDict, allowed: Collection[str], what: str) -> None:
        for key in mapping:
            if key not in allowed:
                self.fail(
                    mapping.key_line(key),
                    f"unknown key {_show(key)} in {what} (expected one of: {', '.join(allowed)})",
                )

    def require(self, mapping: LDict, key: str, what: str) -> object:
        if key not in mapping:
            self.fail(mapping.line, f"{what} needs {key!r}")
        return mapping[key]

    def int_(self, value: object, line: int, what: str, minimum: int | None = None, maximum: int | None = None) -> int:
        if not (_is_int(value) and (minimum is None or value >= minimum) and (maximum is None or value <= maximum)):
            if minimum is not None and maximum is not None:
                expected = f"an integer in {minimum}..{maximum}"
            elif minimum is not None:
                expected = f"an integer >= {minimum}"
            else:
                expected = "an integer"
            self.fail(line, f"{what} must be {expected}, got {_show(value)}")
        return value

    def bool_(self, value: object, line: int, what: str) -> bool:
        if not isinstance(value, bool):
            self.fail(line, f"{what} must be true or false, got {_show(value)}")
        return value

    def str_(self, value: object, line: int, what: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(line, f"{what} must be a non-empty string, got {_show(value)}")
        return value

    def choice(self, value: object, line: int, what: str, choices: Collection[str]) -> str:
        if not isinstance(value, str) or value not in choices:
            self.fail(line, f"{what} must be one of {', '.join(choices)}, got {_show(value)}")
        return value

    def duration(self, value: object, line: int, what: str) -> int:
        try:
            ms = parse_duration(value)
        except ValueError as exc:
            self.fail(line, f"{what}: {exc}")
        if ms > MAX_SIMULATED_MS:
            self.fail(line, f"{what}: {_show(value)} is longer than the limit of {MAX_SIMULATED_MS // 3_600_000}h "
                            "of simulated time")
        return ms

