"""The docs in the repository stay true (issue 12, "Docs in the repo" and "Honest speed figures").

``docs/SCENARIOS.md`` is the user's guide to the scenario format: these tests fail when the parser
(``kraftlog.scenario``) accepts a verb, key, condition, config or limit the page does not document,
when a default or limit the page states differs from the parser's, when a YAML example on the page
no longer parses (blocks preceded by ``<!-- fragment -->`` are only parsed as YAML; a block preceded by
``<!-- runs: passed, safe -->`` is run and must pass and be safe), or when the verdict gains a key the
page does not explain. README.md and docs/*.md may link only to files a clone has, and the README's
benchmark commands are written as they run. ``benchmarks/sim_speed.py`` reports the simulator's cost
per message beside a bare event loop's, and fails with one line under a Python without kraftlog.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kraftlog.metadata import config as cfg
from kraftlog.scenario import VERBS, ScenarioError, parse_scenario
from kraftlog.scenario import model as scn
from kraftlog.sim.runner import run_scenario

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "SCENARIOS.md"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FRAGMENT = "<!-- fragment -->"
RUNS = re.compile(r"<!-- runs: (passed|failed), (safe|unsafe) -->")


def _text() -> str:
    return GUIDE.read_text(encoding="utf-8")


def _code(name: str) -> str:
    return f"`{name}`"


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _row(text: str, first_cell: str) -> str:
    """The table row whose first cell starts with ``first_cell`` (e.g. "`produce`")."""
    for line in _table_rows(text):
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0].startswith(first_cell):
            return line
    raise AssertionError(f"docs/SCENARIOS.md has no table row for {first_cell}")


def _blocks(text: str, lang: str) -> list[tuple[int, str, str]]:
    """(line, marker, body) of each fenced block of language ``lang``; ``marker`` is the last non-blank
    line before the fence (an HTML comment marking the block, or any text)."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == f"```{lang}":
            start = i
            j = i + 1
            while lines[j].strip() != "```":
                j += 1
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            marker = lines[k].strip() if k >= 0 else ""
            out.append((start + 1, marker, "\n".join(lines[start + 1 : j]) + "\n"))
            i = j + 1
        else:
            i += 1
    return out


def _section(text: str, heading: str) -> str:
    """The text from ``heading`` to the next heading of the same or a higher level."""
    level = heading.split(" ")[0]
    start = text.index(heading + "\n")
    end = re.search(rf"^#{{1,{len(level)}}} ", text[start + len(heading):], re.M)
    return text[start : start + len(heading) + end.start()] if end else text[start:]


def _flat(text: str) -> str:
    return " ".join(text.split())


def _duration(ms: int) -> str:
    """A default in ms written as the docs write it: 120000 -> 120s, 100 -> 100ms."""
    if ms % 60_000 == 0 and ms >= 600_000:
        return f"{ms // 60_000}m"
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


# ----------------------------------------------------------------------------- the format's names
def test_every_verb_is_documented_in_the_verb_table():
    text = _text()
    for verb in VERBS:
        _row(text, _code(verb))


def test_every_top_level_key_is_documented():
    text = _text()
    for key in scn._TOP_KEYS:
        _row(text, _code(key))


def test_every_condition_key_is_documented():
    text = _text()
    for key in scn._PARTITION_CHECKS:
        _row(text, _code(key))
    for key in (*scn._BROKER_CHECKS, "partition", "broker", "timeout"):
        assert _code(key) in text, f"condition key {key} is not documented"


def test_every_cluster_sim_topic_and_client_key_is_documented():
    text = _text()
    for key in (*scn._CLUSTER_KEYS, *scn._SIM_KEYS, *scn._TOPIC_KEYS):
        assert _code(key) in text, f"{key} is not documented"
    clients = _section(text, "### `clients`")
    for key in sorted(set(scn._PRODUCER_KEYS) | set(scn._CONSUMER_KEYS)):
        assert _code(key) in clients, f"client key {key} is not documented under clients"


def test_every_choice_the_parser_takes_is_documented():
    text = _text()
    for value in (*scn.LOSE_MODES, *scn.RESETS, *scn.ACKS, *cfg.UNCLEAN_RECOVERY_STRATEGIES):
        assert _code(value) in text, f"{value} is not documented"
    for kind in scn.ELECTION_TYPES:
        _row(text, _code(kind))


def test_every_known_config_is_documented_with_its_default():
    text = _text()
    for name in sorted(cfg.KNOWN_CONFIGS):
        row = _row(text, _code(name))
        default = cfg.DEFAULTS.get(name)
        if default:  # an empty default means unset; the row says so in words
            assert _code(default) in row, f"{name}: the docs do not give Kafka's default {default}"


def test_the_defaults_stated_are_the_parsers():
    text = _text()
    assert f"`timeout` (`{_duration(scn._DEFAULT_PRODUCE_TIMEOUT_MS)}`)" in _row(text, "`produce`")
    assert f"`timeout` (`{_duration(scn._DEFAULT_WAIT_TIMEOUT_MS)}`)" in _row(text, "`wait_until`")
    assert f"`{_duration(scn._DEFAULT_INTERVAL_MS)}`" in _row(text, "`interval`")
    assert f"Default `{_duration(scn._DEFAULT_WRITEBACK_MS)}`" in _flat(text)
    low, high = scn._DEFAULT_DELAY_MS
    assert f"(`{low}ms-{high}ms`, the default)" in _flat(text)
    parsed = parse_scenario("name: d\ncluster: {brokers: 1}\n")
    assert (parsed.seed, parsed.level, parsed.writeback_ms) == (0, None, scn._DEFAULT_WRITEBACK_MS)
    assert "| `seed` | no | `0` |" in text and "| `level` | no | `urm` |" in text


def test_the_limits_are_documented_with_the_parsers_values():
    text = _text()
    for name, shown in (
        ("MAX_BROKERS", f"{scn.MAX_BROKERS:,}"),
        ("MAX_PARTITIONS", f"{scn.MAX_PARTITIONS:,}"),
        ("MAX_RECORDS_PER_PRODUCE", f"{scn.MAX_RECORDS_PER_PRODUCE:,}"),
        ("MAX_SIMULATED_MS", f"{scn.MAX_SIMULATED_MS // 3_600_000} h ({scn.MAX_SIMULATED_MS:,} ms)"),
    ):
        row = _row(text, _code(name))
        assert row.rstrip().rstrip("|").rstrip().endswith(shown), f"{name}: docs row {row!r}, parser {shown}"


def test_the_documented_error_messages_are_the_parsers():
    """The page's example messages, produced by the parser from files that have those mistakes."""
    text = _text()
    cases = {
        "name: b\ncluster: {brokers: 3}\nsteps:\n  - {crash: {broker: 7}}\n":
            "bad.yaml:4: step 1 (crash): broker 7 is not in the cluster (brokers 0..2)",
        "name: b\ncluster:\n  config: {min.insync.replica: 2}\n  brokers: 3\n":
            "bad.yaml:3: unknown config 'min.insync.replica' in cluster config (did you mean min.insync.replicas?)",
        "name: b\ncluster:\n  config: {unclean.recovery.strategy: Fast}\n  brokers: 3\n":
            "bad.yaml:3: Invalid value Fast for configuration unclean.recovery.strategy: must be one of None, "
            "Balanced, Aggressive (in cluster config)",
    }
    for source, message in cases.items():
        with pytest.raises(ScenarioError) as err:
            parse_scenario(source, "bad.yaml")
        assert str(err.value) == message
        assert f"error: {message}" in text


# --------------------------------------------------------------------------------- the examples
def test_every_yaml_example_parses_or_is_marked_a_fragment():
    blocks = _blocks(_text(), "yaml")
    assert len([b for b in blocks if b[1] != FRAGMENT]) >= 3
    for line, marker, body in blocks:
        if marker == FRAGMENT:
            assert isinstance(yaml.safe_load(body), list), f"docs/SCENARIOS.md:{line}: a fragment is a list of steps"
        else:
            parse_scenario(body, f"docs/SCENARIOS.md (the block at line {line})")


def test_the_worked_example_runs_as_the_page_says():
    marked = [(line, RUNS.fullmatch(marker), body) for line, marker, body in _blocks(_text(), "yaml")
              if RUNS.fullmatch(marker)]
    assert marked, "docs/SCENARIOS.md has no example marked <!-- runs: ... -->"
    for line, match, body in marked:
        verdict = run_scenario(parse_scenario(body, f"docs/SCENARIOS.md (the block at line {line})")).verdict
        assert verdict["passed"] is (match.group(1) == "passed"), verdict["failed_expectations"]
        assert verdict["safe"] is (match.group(2) == "safe")


def test_every_verdict_key_is_documented(library):
    text = _text()
    verdict = library["last-replica-standing"].verdict
    for key in verdict:
        assert _code(key) in text, f"verdict key {key} is not documented"
    for group in ("metrics", "anomalies"):
        for key in verdict[group]:
            assert _code(key) in text, f"verdict key {group}.{key} is not documented"
    for partition in verdict["final"]["partitions"].values():
        for key in partition:
            assert _code(key) in text, f"verdict key final.partitions.*.{key} is not documented"
    for broker in verdict["final"]["brokers"].values():
        for key in broker:
            assert _code(key) in text, f"verdict key final.brokers.*.{key} is not documented"
    # The JSON example holds only keys a real verdict has.
    (_, _, example), = _blocks(text, "json")
    shown = json.loads(example)
    assert set(shown) <= set(verdict) and {"passed", "safe", "metrics"} <= set(shown)


def test_exit_codes_are_documented():
    text = _text()
    for code in ("| 0 |", "| 1 |", "| 2 |"):
        assert code in text
    assert "`--fail-on-loss`" in text


# ------------------------------------------------------------------------------------- links
def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = _slug(line.lstrip("#"))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _without_code_blocks(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files_in_the_repository(doc: Path):
    text = _without_code_blocks(doc.read_text(encoding="utf-8"))
    for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc
        assert dest.is_relative_to(ROOT), f"{doc.name}: link {target} leaves the repository (a clone lacks it)"
        assert dest.exists(), f"{doc.name}: link {target} points to a missing file"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{doc.name}: link {target}: no such heading in {dest.name}"


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_repository_paths_named_in_the_docs_exist(doc: Path):
    text = doc.read_text(encoding="utf-8")
    pattern = r"(?<![\w/.-])((?:docs|scenarios|benchmarks|tests|src)/[\w./*-]*\.(?:md|yaml|py|toml|json))"
    for name in sorted(set(re.findall(pattern, text))):
        assert list(ROOT.glob(name)), f"{doc.name} names {name}, which the repository does not have"


def test_readme_benchmark_commands_run_from_a_fresh_clone():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"(\S*python\S*)\s+(benchmarks/\w+\.py)", text)
    assert {script for _, script in commands} >= {"benchmarks/sim_speed.py", "benchmarks/batch_path.py"}
    for python, script in commands:
        assert python.strip("`") == ".venv/bin/python", f"README runs {script} with {python}, not .venv/bin/python"


# ------------------------------------------------------------------------------ the benchmarks
@pytest.mark.parametrize("script", ["benchmarks/sim_speed.py", "benchmarks/batch_path.py"])
def test_a_benchmark_without_kraftlog_says_so_in_one_line(script: str):
    # -S: no site-packages, as under a python3 that lacks the install
    proc = subprocess.run([sys.executable, "-S", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and ".venv/bin/python" in lines[0], proc.stderr


def test_sim_speed_reports_the_ratio_to_a_bare_event_loop():
    proc = subprocess.run([sys.executable, "benchmarks/sim_speed.py", "--sim-seconds", "2", "--repeat", "1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert re.search(r"^machine: .+, \d+ cores, Python \d+\.\d+", out, re.M), out
    assert re.search(r"bare heapq event loop [\d.]+ µs", out), out
    assert re.search(r"^simulator / bare event loop: \d+x", out, re.M), out


def test_the_bare_event_loop_handles_the_number_of_messages_asked():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import sim_speed
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    calls = []
    original = sim_speed._handler
    sim_speed._handler = lambda now, payload: calls.append(now)
    try:
        assert sim_speed.bare_event_loop(1000) > 0
    finally:
        sim_speed._handler = original
    assert len(calls) == 1000 and calls == sorted(calls)  # events come out in time order
