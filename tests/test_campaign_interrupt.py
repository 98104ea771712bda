"""Issue 12, campaigns that survive interruption, without a JVM: Spark is replaced by a driver-side
stand-in that runs the real :func:`run_one` and hands the rows over as Spark jobs would, so the
bookkeeping is tested in seconds — rows written as parts while the campaign runs, a SIGINT stopping
it with the finished runs kept and ``"interrupted": true``, ``--resume`` running only the missing runs
and ending with the summary of an uninterrupted campaign, ``--resume`` refused (exit 2, one line) when
the options do not contain the interrupted campaign's, a failed Spark job keeping the finished runs,
and the progress lines printed outside a terminal. The same with a real Spark is in test_campaign.py."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import kraftlog.spark.campaign as campaign_module
from kraftlog.campaign import EXECUTION_FIELDS, CampaignError, read_manifest, read_results, run_one, schema, task_key
from kraftlog.campaign.outputs import Parts
from kraftlog.campaign.progress import ProgressLines
from kraftlog.spark.campaign import _job_plan, run_campaign
from kraftlog.spark.cli import campaign

ROOT = Path(__file__).resolve().parents[1]

LEVELS = ["classic", "elr"]
SEEDS = 3   # seeds 0..2: seed 0 loses records at classic and elr (a failure file each)


class _FakeContext:
    defaultParallelism = 2


class _FakeSpark:
    sparkContext = _FakeContext()

    def stop(self) -> None:
        pass


class FakeSpark:
    """Replaces ``_start_spark`` and ``_run_jobs``: each task runs here, one "job" per task.

    ``signal_after``: send this process ``sig`` (as many times as ``signals``) after that many rows;
    ``fail_after``: return a job failure after that many rows."""

    def __init__(self, monkeypatch, signal_after: int | None = None, signals: int = 1,
                 fail_after: int | None = None, sig: int = signal.SIGINT) -> None:
        self.todo: list[tuple] = []
        self.started = 0
        self.signal_after, self.signals, self.fail_after, self.sig = signal_after, signals, fail_after, sig
        monkeypatch.setattr(campaign_module, "_start_spark", self.start)
        monkeypatch.setattr(campaign_module, "_run_jobs", self.run_jobs)

    def start(self, master, out, tmp):
        self.started += 1
        return _FakeSpark(), None

    def run_jobs(self, sc, todo, num_slices, jobs, in_flight, stop, on_rows, on_tick):
        self.todo = [task_key(t) for t in todo]
        for i, task in enumerate(todo):
            if i == self.signal_after:
                for _ in range(self.signals):
                    os.kill(os.getpid(), self.sig)
                    stop.wait(2)
            if i == self.fail_after:
                return RuntimeError("org.apache.spark.SparkException: Job aborted\nValueError: executor lost")
            if stop.is_set():
                return None
            on_rows([run_one(task)])
            on_tick()
        return None


def _run(out: Path, **kwargs):
    kwargs.setdefault("seeds", SEEDS)
    return run_campaign(kwargs.pop("levels", LEVELS), out=out, master="local[2]", scenario_dir=None,
                        progress="none", **kwargs)


def _comparable(rows):
    return sorted(({k: v for k, v in r.items() if k != "wall_ms"} for r in rows),
                  key=lambda r: (r["level"], r["kind"], r["seed"], r["scenario"]))


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The uninterrupted campaign (fake Spark): its out directory."""
    out = tmp_path_factory.mktemp("reference") / "out"
    mp = pytest.MonkeyPatch()
    try:
        FakeSpark(mp)
        result = _run(out)
    finally:
        mp.undo()
    assert not result.interrupted and result.signal is None
    return out


def test_an_uninterrupted_campaign_says_so(reference):
    summary = json.loads((reference / "summary.json").read_text())
    assert summary["interrupted"] is False
    assert summary["runs"] == summary["runs_expected"] == len(LEVELS) * SEEDS
    assert (reference / "report.html").is_file()
    assert read_manifest(reference) == {
        "version": 1, "levels": LEVELS, "seeds": SEEDS, "seed_offset": 0, "scenario_dir": None, "library": [],
        "runs": len(LEVELS) * SEEDS, "master": "local[2]"}


def test_sigint_keeps_the_finished_runs(tmp_path, monkeypatch, reference):
    """A SIGINT after two runs: the campaign stops, the two rows are in readable parts with their failure
    files, summary.json says interrupted with the runs counted, no report; the run in flight is lost."""
    fake = FakeSpark(monkeypatch, signal_after=2)
    out = tmp_path / "out"
    handler = signal.getsignal(signal.SIGINT)
    result = _run(out)
    assert result.interrupted and result.signal == signal.SIGINT
    rows = read_results(out)
    assert [task_key(r) for r in rows] == fake.todo[:2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert (summary["runs"], summary["runs_expected"]) == (2, len(LEVELS) * SEEDS)
    assert summary["timeline_replay"] is None and not (out / "report.html").exists()
    assert sorted(p.name for p in (out / "failures").glob("*.yaml")) == \
        sorted(Path(r["failure_file"]).name for r in rows if r["failure"])
    # Every part is a parquet file; the directory reads as one table with the campaign's schema.
    parts = sorted(p.name for p in (out / "results.parquet").iterdir())
    assert parts == [f"part-{i:05d}.parquet" for i in range(len(parts))]
    table = pq.read_table(out / "results.parquet")
    assert table.schema.equals(schema()) and table.num_rows == 2
    # The rows are the uninterrupted campaign's.
    done = {task_key(r) for r in rows}
    assert _comparable(rows) == _comparable([r for r in read_results(reference) if task_key(r) in done])
    # SIGINT's handler is given back.
    assert signal.getsignal(signal.SIGINT) is handler


def test_resume_runs_only_the_missing_runs_and_ends_like_an_uninterrupted_campaign(tmp_path, monkeypatch,
                                                                                     reference):
    out = tmp_path / "out"
    first = FakeSpark(monkeypatch, signal_after=3)
    assert _run(out).interrupted
    kept = {task_key(r) for r in read_results(out)}
    assert len(kept) == 3
    second = FakeSpark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--resume", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert second.todo == [key for key in first.todo if key not in kept]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_runs"] == 3
    expected = json.loads((reference / "summary.json").read_text())
    drop = set(EXECUTION_FIELDS)
    assert {k: v for k, v in summary.items() if k not in drop} == {k: v for k, v in expected.items() if k not in drop}
    assert _comparable(read_results(out)) == _comparable(read_results(reference))
    assert sorted(p.name for p in (out / "failures").glob("*.yaml")) == \
        sorted(p.name for p in (reference / "failures").glob("*.yaml"))
    # Resuming a complete campaign runs nothing (no Spark started) and writes the same outputs.
    third = FakeSpark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--resume", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert third.started == 0 and third.todo == []
    again = json.loads((out / "summary.json").read_text())
    assert {k: v for k, v in again.items() if k not in drop} == {k: v for k, v in expected.items() if k not in drop}


def test_resume_with_more_seeds_and_levels_runs_the_new_ones(tmp_path, monkeypatch):
    out = tmp_path / "out"
    FakeSpark(monkeypatch, signal_after=1)
    assert _run(out, seeds=2, levels=["elr"]).interrupted
    fake = FakeSpark(monkeypatch)
    result = _run(out, seeds=3, levels=["classic", "elr"], resume=True)
    assert not result.interrupted
    assert sorted(fake.todo) == sorted({(lv, "seed", s) for lv in ("classic", "elr") for s in range(3)}
                                       - {("elr", "seed", 0)})
    assert read_manifest(out)["levels"] == ["classic", "elr"] and read_manifest(out)["seeds"] == 3


@pytest.mark.parametrize("args, words", [
    (["--seeds", "2"], "ran seeds 0..2; --seeds 2 --seed-offset 0 give seeds 0..1, which do not contain them"),
    (["--seed-offset", "1"], "give seeds 1..3, which do not contain them"),
    (["--levels", "elr,urm"], "ran levels classic,elr; --levels elr,urm leaves out classic"),
])
def test_resume_refuses_options_that_do_not_contain_the_campaign(tmp_path, monkeypatch, args, words):
    """--resume with explicit --seeds/--seed-offset/--levels that leave out some of the interrupted
    campaign's runs: exit 2, one line, nothing run (the options left out are the campaign's)."""
    out = tmp_path / "out"
    FakeSpark(monkeypatch, signal_after=1)
    assert _run(out).interrupted
    fake = FakeSpark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--resume", "--out", str(out), *args])
    assert result.exit_code == 2
    assert result.output.startswith("error: --resume: the campaign in ") and result.output.count("\n") == 1
    assert words in result.output
    assert fake.started == 0 and fake.todo == []
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True


@pytest.fixture
def library(tmp_path) -> Path:
    """A one-file scenario library."""
    lib = tmp_path / "library"
    lib.mkdir()
    (lib / "steady.yaml").write_text((ROOT / "scenarios" / "steady-replication.yaml").read_text())
    return lib


def test_resume_may_add_a_library_but_not_drop_it(tmp_path, monkeypatch, library):
    out = tmp_path / "out"
    FakeSpark(monkeypatch, signal_after=1)
    assert _run(out, seeds=2, levels=["elr"]).interrupted
    fake = FakeSpark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--resume", "--out", str(out), "--scenarios", str(library)])
    assert result.exit_code == 0, result.output
    assert fake.todo == [("elr", "seed", 1), ("elr", "scenario", "steady-replication")]
    assert read_manifest(out)["library"] == ["steady-replication"]
    # That campaign ran the library: resuming it without one, or with another, is refused.
    for args in (["--no-library"], ["--scenarios", str(tmp_path)]):
        result = CliRunner().invoke(campaign, ["--resume", "--out", str(out), *args])
        assert result.exit_code == 2
        assert "ran the library scenario(s) steady-replication, which the library given now does not have" \
            in result.output and result.output.count("\n") == 1


def test_resume_without_a_campaign_is_refused(tmp_path):
    result = CliRunner().invoke(campaign, ["--resume", "--out", str(tmp_path / "nothing")])
    assert result.exit_code == 2
    assert result.output == f"error: --resume: there is no campaign to resume in {tmp_path / 'nothing'} " \
                            f"(no campaign.json); run without --resume to start one\n"


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_cli_exits_130_on_sigint_and_says_how_to_resume(tmp_path, monkeypatch, sig, code):
    """Ctrl-C (SIGINT) exits 130, SIGTERM (a CI job's timeout) 143, each after keeping the finished runs."""
    out = tmp_path / "out"
    FakeSpark(monkeypatch, signal_after=1, sig=sig)
    handler = signal.getsignal(signal.SIGTERM)
    result = CliRunner().invoke(campaign, ["--seeds", "2", "--levels", "elr", "--no-library", "--out", str(out)])
    assert result.exit_code == code, result.output
    assert signal.getsignal(signal.SIGTERM) is handler
    assert f"interrupted: 1 of 2 runs finished, kept in {out}" in result.output
    assert f"kraftlog campaign --resume --out {out}" in result.output
    assert "Traceback" not in result.output and "Aborted" not in result.output


def test_a_second_sigint_gives_up_at_once(tmp_path, monkeypatch):
    """Ctrl-C twice: the second raises KeyboardInterrupt through the campaign (the JVM is killed by the
    handler); the CLI still exits 130 with the resume hint, the finished runs on disk."""
    out = tmp_path / "out"
    FakeSpark(monkeypatch, signal_after=1, signals=2)
    result = CliRunner().invoke(campaign, ["--seeds", "2", "--levels", "elr", "--no-library", "--out", str(out)])
    assert result.exit_code == 130, result.output
    assert "--resume" in result.output and "Traceback" not in result.output
    assert len(read_results(out)) == 1


def test_a_failed_spark_job_keeps_the_finished_runs(tmp_path, monkeypatch):
    """A job failure that is no interruption: exit 2 with the executor's error in one line; the runs
    finished before it are kept (summary.json: interrupted) and --resume runs the rest."""
    out = tmp_path / "out"
    FakeSpark(monkeypatch, fail_after=1)
    result = CliRunner().invoke(campaign, ["--seeds", "2", "--levels", "elr", "--no-library", "--out", str(out)])
    assert result.exit_code == 2
    line = result.stderr.strip().splitlines()[-1]  # after the progress lines
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert line.startswith("error: the Spark job failed on local[*]: ")
    assert "ValueError: executor lost" in line and "the 1 finished runs are kept: --resume runs the rest" in line
    assert json.loads((out / "summary.json").read_text())["interrupted"] is True
    with pytest.raises(CampaignError):
        FakeSpark(monkeypatch, fail_after=0)
        _run(out, seeds=2, levels=["elr"], resume=True)


def test_progress_lines_outside_a_terminal(tmp_path, monkeypatch):
    """Outside a terminal (CliRunner's stdout is no TTY) the progress is plain lines on stderr, no bar."""
    FakeSpark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--seeds", "2", "--levels", "elr", "--no-library", "--out",
                                           str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "campaign: 2 runs (2 seed runs + 0 library runs) on local[*], 2 cores" in result.stderr
    assert "campaign: 0/2 runs (0%), elapsed 0:00:00, eta ?" in result.stderr
    assert "campaign: 2/2 runs (100%), elapsed" in result.stderr and "eta 0:00:00" in result.stderr
    assert "\r" not in result.stderr and "\x1b[" not in result.stderr


def test_progress_line_throttle_and_eta():
    """A line at once, then none before 5 s, then every max(5 s, elapsed / 20) up to a minute; the ETA
    extrapolates from the runs done by this process (runs done before a --resume are not counted)."""
    now = [100.0]
    lines: list[str] = []
    p = ProgressLines(lines.append, total=1000, done=400, clock=lambda: now[0])
    p.update()
    assert lines == ["campaign: 400/1000 runs (40%), elapsed 0:00:00, eta ?"]
    now[0] += 4.9
    p.update(410)
    assert len(lines) == 1
    now[0] += 0.1
    p.update(450)
    assert lines[-1] == "campaign: 450/1000 runs (45%), elapsed 0:00:05, eta 0:00:55"
    now[0] = 100.0 + 3600
    p.update(700)
    assert lines[-1] == "campaign: 700/1000 runs (70%), elapsed 1:00:00, eta 1:00:00"
    now[0] += 59
    p.update(701)
    assert len(lines) == 3  # an hour in: one line a minute
    assert ProgressLines.interval(0) == 5 and ProgressLines.interval(600) == 30 and ProgressLines.interval(1e5) == 60


def test_parts_are_appended_when_due_and_written_atomically(tmp_path):
    """Rows are buffered: the first batch is written at once, the next ones when FLUSH_MIN_S (or
    FLUSH_FRACTION of the elapsed time) has passed; flush() writes what is left. Each part is renamed
    into place from a dot file, which readers skip."""
    now = [0.0]
    order = lambda r: (r["level"], r["seed"])  # noqa: E731
    parts = Parts(tmp_path, order, clock=lambda: now[0])
    # seed 1's story fails at classic (it loses records); the rows below number their seeds from 0
    row = dict(run_one({"level": "classic", "kind": "seed", "seed": 1}), seed=0)
    assert row["failure"] and "_yaml" in row
    parts.add([dict(row)])
    assert parts.parts_written == 1 and (tmp_path / row["failure_file"]).is_file()
    row = {k: v for k, v in row.items() if k != "_yaml"}
    now[0] = 4.0
    parts.add([dict(row, seed=1, failure=False, failure_file=None)])
    assert parts.parts_written == 1
    now[0] = 5.0
    parts.add([dict(row, seed=2, failure=False, failure_file=None)])
    assert parts.parts_written == 2
    now[0] = 200.0  # 5% of 200 s = 10 s since the last flush at 5 s: due
    parts.add([dict(row, seed=3, failure=False, failure_file=None)])
    assert parts.parts_written == 3
    now[0] = 205.0  # 5 s < 5% of 205 s: not due
    parts.add([dict(row, seed=4, failure=False, failure_file=None)])
    assert parts.parts_written == 3
    parts.flush()
    assert sorted(p.name for p in (tmp_path / "results.parquet").iterdir()) == \
        [f"part-{i:05d}.parquet" for i in range(5)]
    assert [r["seed"] for r in read_results(tmp_path)] == [0, 1, 2, 3, 4]
    # A new writer on the same directory (a resumed campaign) numbers on, with no second empty part.
    again = Parts(tmp_path, order)
    assert again.next == 5


def test_job_plan_keeps_two_jobs_per_core_in_flight():
    jobs, in_flight = _job_plan(18, 2)
    assert jobs == [[i] for i in range(18)] and in_flight == 4
    jobs, in_flight = _job_plan(3, 2)
    assert in_flight == 3
    jobs, in_flight = _job_plan(1000, 100)   # a big cluster: 64 jobs in flight, 4 Spark tasks each
    assert in_flight == 64 and all(len(j) == 4 for j in jobs) and sum(map(len, jobs)) == 1000
    assert _job_plan(0, 2) == ([], 0)
