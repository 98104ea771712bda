"""Issue 12, what a newcomer meets on ``kraftlog campaign``, without a JVM: Spark's failures become one
line and exit 2 before Spark starts (an unreachable master within the connect timeout, no Java, an
unwritable --out); ``-h`` lists the exit codes; ``--fail-on-loss`` exits 1 exactly when a run within the
fault budget at level elr or above (unclean election not enabled) is not safe; the printed summary uses
the scenario commands' words (safe/UNSAFE, expectations held) in tables that keep their headers whole
outside a terminal."""

from __future__ import annotations

import socket
import time

import pytest
from click.testing import CliRunner

import kraftlog.spark.campaign as campaign_module
from kraftlog.campaign import (
    CampaignError,
    in_gate,
    run_id,
    schema,
    summarize,
    unclean_election_allowed,
    unsafe_within_budget,
)
from kraftlog.campaign.summary import build_summary
from kraftlog.cli import main
from kraftlog.scenario import generator as faults
from kraftlog.scenario import parse_scenario
from kraftlog.spark.campaign import CampaignResult, _master_endpoints, check_master
from kraftlog.spark.cli import campaign


def _no_spark(monkeypatch):
    """Fail the test if Spark would be started."""
    def start(*args, **kwargs):
        raise AssertionError("Spark was started")
    monkeypatch.setattr(campaign_module, "_start_spark", start)


# ------------------------------------------------------------------------ errors in one line
def test_unreachable_master_is_one_line_and_quick(tmp_path, monkeypatch):
    """`--master spark://127.0.0.1:1` (nothing listens there): exit 2 at once, one line naming the
    master, before any JVM starts (Spark itself retries for a minute, then prints a Java stack trace)."""
    _no_spark(monkeypatch)
    start = time.monotonic()
    result = CliRunner().invoke(campaign, ["--master", "spark://127.0.0.1:1", "--seeds", "1", "--no-library",
                                           "--out", str(tmp_path / "out")])
    assert time.monotonic() - start < 10
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == ("error: cannot reach the Spark master spark://127.0.0.1:1 (127.0.0.1:1: connection "
                             "refused): is it running, and are the host and port right?\n")


def test_master_check_times_out_and_accepts_a_listening_master(monkeypatch):
    """A master that accepts the TCP connection passes; one that never answers fails after the timeout
    (simulated: create_connection raising socket.timeout); of several standalone masters one is enough;
    local and yarn masters are not checked."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        check_master(f"spark://127.0.0.1:{port}")
        check_master(f"spark://127.0.0.1:1,127.0.0.1:{port}")
        check_master(f"k8s://http://127.0.0.1:{port}")
    for master in ("local[2]", "local[*]", "local", "yarn"):
        check_master(master)

    def never(address, timeout):
        assert timeout == 0.5
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", never)
    with pytest.raises(CampaignError, match=r"^cannot reach the Spark master spark://10\.1\.2\.3:7077 "
                                            r"\(10\.1\.2\.3:7077 did not answer within 0\.5 s\)"):
        check_master("spark://10.1.2.3:7077", timeout_s=0.5)


def test_master_endpoints():
    assert _master_endpoints("spark://h:7077") == [("h", 7077)]
    assert _master_endpoints("spark://h") == [("h", 7077)]
    assert _master_endpoints("spark://a:1,b:2") == [("a", 1), ("b", 2)]
    assert _master_endpoints("spark://[::1]:7078") == [("::1", 7078)]
    assert _master_endpoints("k8s://https://api.example:6443") == [("api.example", 6443)]
    assert _master_endpoints("k8s://api.example") == [("api.example", 443)]
    assert _master_endpoints("local[4]") == [] and _master_endpoints("yarn") == []
    with pytest.raises(CampaignError, match="is not host:port"):
        _master_endpoints("spark://h:x")


def test_no_java_is_one_line(tmp_path, monkeypatch):
    _no_spark(monkeypatch)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java there
    result = CliRunner().invoke(campaign, ["--seeds", "1", "--no-library", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr == "error: Spark needs Java 17 or later: no `java` on PATH and JAVA_HOME is not set\n"
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    result = CliRunner().invoke(campaign, ["--seeds", "1", "--no-library", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: Spark needs Java 17 or later: JAVA_HOME is {tmp_path / 'jdk'}, "
                                    f"which has no bin/java") and result.stderr.count("\n") == 1


def test_unwritable_out_is_one_line(monkeypatch):
    """`--out /proc/x` (the issue's example): exit 2, one line, no traceback, nothing started."""
    _no_spark(monkeypatch)
    result = CliRunner().invoke(campaign, ["--seeds", "1", "--no-library", "--out", "/proc/x"])
    assert result.exit_code == 2
    assert result.stderr == "error: cannot write to --out /proc/x: No such file or directory\n"


def test_scenarios_and_no_library_contradict():
    result = CliRunner().invoke(campaign, ["--no-library", "--scenarios", "."])
    assert result.exit_code == 2 and "contradict" in result.output


# ------------------------------------------------------------------------------ --help
def test_help_lists_the_exit_codes():
    for args in (["campaign", "-h"], ["campaign", "--help"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0
        text = result.output
        assert "Exit codes:" in text
        for line in ("0    the campaign completed",
                     "1    with --fail-on-loss: a run within the fault budget at level elr",
                     "2    bad input, or the campaign could not run", "130  interrupted (Ctrl-C"):
            assert line in text, line
        assert "--resume" in text and "--fail-on-loss" in text
        assert max(len(line) for line in text.splitlines()) <= 80


# ---------------------------------------------------------------------------- --fail-on-loss
def _row(level="elr", seed=0, kind="seed", within=True, lost=0, violations=0, undetected=0, error=None,
         unclean=False, passed=True) -> dict:
    row = {c: 0 for c in schema().names}
    row.update({"level": level, "kind": kind, "seed": seed,
                "scenario": faults.scenario_name(seed) if kind == "seed" else f"story-{seed}",
                "within_budget": within, "lost_acked": lost, "invariant_violations": violations,
                "undetected_truncations": undetected, "error": error, "unclean_election_allowed": unclean,
                "passed": passed, "safe": error is None and not (lost or violations or undetected),
                "unavailable_ms": 100, "history_digest": "sha256:x", "failure_file": None})
    row["failure"] = bool(lost or violations or undetected or error)
    return row


def test_gate_rows_are_elr_and_above_within_budget_without_unclean_election():
    assert in_gate(_row("elr")) and in_gate(_row("urm"))
    assert not in_gate(_row("classic")) and not in_gate(_row("kip903"))
    assert not in_gate(_row("elr", within=False))
    assert not in_gate(_row("urm", unclean=True))
    rows = [
        _row("classic", 1, lost=5),                    # below elr: no promise
        _row("elr", 2, lost=5, within=False),          # beyond the budget
        _row("urm", 3, kind="scenario", lost=10, unclean=True),  # strategy Aggressive: the operator's choice
        _row("elr", 4, violations=1),                  # an invariant violated
        _row("urm", 5, undetected=1),                  # a truncation undetected
        _row("elr", 6, error="Traceback: boom"),       # raised: nothing says it is safe
        _row("urm", 7, kind="scenario", lost=2),       # a library run within the budget
        _row("elr", 8, passed=False),                  # an expectation failed, but safe: not the gate's
        _row("urm", 9),                                # safe
    ]
    assert unsafe_within_budget(rows) == ["elr-seed-4", "elr-seed-6", "urm-seed-5", "urm-story-7"]
    assert run_id(_row("elr", 4)) == "elr-seed-4"


def test_summary_counts_unsafe_seeds():
    rows = [_row("elr", 1, lost=3), _row("elr", 2, violations=1, within=False), _row("elr", 3),
            _row("elr", 4, kind="scenario", lost=1)]
    figures = summarize(rows, ["elr", "urm"])
    assert figures["elr"]["seeds"] == 3
    assert (figures["elr"]["seeds_unsafe"], figures["elr"]["seeds_unsafe_within_budget"]) == (2, 1)
    assert figures["urm"]["seeds_unsafe"] == 0 and figures["urm"]["seeds"] == 0


def test_unclean_election_allowed():
    """unclean.leader.election.enable=true (cluster, topic or alter_config), strategy Aggressive at urm
    only, or an unclean/aggressive/designated ElectLeaders step; never in the generated stories."""
    base = """
name: u
cluster: {brokers: 3, config: {min.insync.replicas: 2%s}}
topics:
  - {name: t, assignment: [[0, 1, 2]]%s}
steps:
%s
"""

    def scn(cluster="", topic="", steps="  - {run_for: 1s}"):
        return parse_scenario(base % (cluster, topic, steps))

    assert not unclean_election_allowed(scn(), "urm")
    assert unclean_election_allowed(scn(cluster=", unclean.leader.election.enable: true"), "elr")
    assert unclean_election_allowed(scn(topic=", config: {unclean.leader.election.enable: true}"), "classic")
    assert not unclean_election_allowed(scn(topic=", config: {unclean.leader.election.enable: false}"), "elr")
    aggressive = scn(topic=", config: {unclean.recovery.strategy: Aggressive}")
    assert unclean_election_allowed(aggressive, "urm") and not unclean_election_allowed(aggressive, "elr")
    assert not unclean_election_allowed(scn(topic=", config: {unclean.recovery.strategy: Balanced}"), "urm")
    assert unclean_election_allowed(
        scn(steps="  - {alter_config: {topic: t, config: {unclean.leader.election.enable: true}}}"), "elr")
    for kind, allowed in (("unclean", True), ("longest_log_aggressive", True), ("longest_log_balanced", False),
                          ("preferred", False)):
        assert unclean_election_allowed(scn(steps=f"  - {{elect: {{partition: t-0, type: {kind}}}}}"), "urm") \
            is allowed, kind
    assert not any(unclean_election_allowed(faults.generate(seed), "urm") for seed in range(50))


def _fake_campaign(monkeypatch, tmp_path, rows):
    """run_campaign replaced by made-up rows, summarised as the campaign does."""
    def fake(levels, **kwargs):
        run = {"executor_cores": 2, "spark_tasks": 1, "spark_jobs": 1, "resumed_runs": 0, "job_wall_ms": 1.0}
        summary = build_summary(rows, rows, levels, len(rows), 3, 0, "local[2]", False, run)
        summary.update(timeline_replay=None, wall_s=1.0)
        return CampaignResult(tmp_path, rows, summary)

    monkeypatch.setattr(campaign_module, "run_campaign", fake)


@pytest.mark.parametrize("rows, flag, code", [
    ([_row("elr", 1), _row("urm", 1)], True, 0),
    ([_row("classic", 1, lost=9), _row("elr", 1, lost=4, within=False)], True, 0),
    ([_row("elr", 1), _row("urm", 1, lost=3)], True, 1),
    ([_row("elr", 1), _row("urm", 1, lost=3)], False, 0),
])
def test_fail_on_loss_exit_code(monkeypatch, tmp_path, rows, flag, code):
    _fake_campaign(monkeypatch, tmp_path, rows)
    levels = sorted({r["level"] for r in rows}, key=["classic", "kip903", "elr", "urm"].index)
    args = ["--levels", ",".join(levels), "--no-library", "--out", str(tmp_path)] + (["--fail-on-loss"] if flag else [])
    result = CliRunner().invoke(campaign, args)
    assert result.exit_code == code, result.output
    if any(in_gate(r) and not r["safe"] for r in rows):
        assert "UNSAFE within the fault budget at elr and above (unclean election not enabled): 1 run(s): " \
               "urm-seed-1 (--fail-on-loss exits 1)" in result.stdout
    else:
        assert "safe: every run within the fault budget at elr and above" in result.stdout


def test_printed_table_uses_the_verdict_words_and_fits_80_columns(monkeypatch, tmp_path):
    """The tables fit an 80-column terminal (headers broken over lines, no cell cut or wrapped) and, outside
    a terminal (160 columns), likewise; their words are the scenario commands' (UNSAFE, expectations held,
    safe); the prose lines are never folded."""
    import io

    from rich.console import Console

    import kraftlog.spark.cli as cli

    rows = [_row("elr", 1, lost=3), _row("urm", 1), _row("elr", 2, kind="scenario", passed=False, lost=1),
            _row("urm", 2, kind="scenario"), _row("elr", 3, lost=123456, within=False)]
    _fake_campaign(monkeypatch, tmp_path, rows)
    result = CliRunner().invoke(campaign, ["--levels", "elr,urm", "--no-library", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    buf = io.StringIO()
    monkeypatch.setattr(cli, "_stdout_console", lambda: Console(file=buf, width=80, highlight=False))
    cli.print_summary(campaign_module.run_campaign(["elr", "urm"]), ["elr", "urm"], None)
    for out in (result.stdout, buf.getvalue()):
        lines = out.splitlines()
        assert "…" not in out
        table = lines[:lines.index(next(line for line in lines if line.startswith("UNSAFE within")))]
        assert all(len(line) <= 80 for line in table), "\n".join(table)
        header = " ".join(line for line in table if "level" in line or "library" in line or "within" in line)
        for word in ("UNSAFE", "within", "budget", "expectations", "held", "safe", "lost", "acked", "unavailable"):
            assert word in header, word
        elr = next(line for line in lines if line.startswith("elr "))
        assert elr.split()[1:6] == ["2", "2", "1", "2", "123459"]  # seeds, UNSAFE, within budget, loss, lost
        # Prose lines are not folded (soft wrap): each says all it has on one line.
        assert any("failing run(s) exported to" in line and line.endswith("report.html") for line in lines)
        assert any(line.startswith("UNSAFE within the fault budget") and line.endswith("(--fail-on-loss exits 1)")
                   for line in lines)
        assert "PASS" not in out


def test_why_spark_did_not_start_is_read_from_its_log(tmp_path):
    """When spark-submit exits before the JVM answers, pyspark only says JAVA_GATEWAY_EXITED; the reason
    is the last exception the JVM wrote to spark.log after the campaign's own offset."""
    from kraftlog.spark.campaign import _jvm_error

    log = tmp_path / "spark.log"
    old = 'Exception in thread "main" java.lang.IllegalStateException: from an earlier campaign\n'
    log.write_text(old + 'WARNING: Using incubator modules: jdk.incubator.vector\n'
                   'Exception in thread "main" org.apache.spark.SparkException: Master must either be yarn or start '
                   'with spark, k8s, or local\n'
                   '\tat org.apache.spark.deploy.SparkSubmit.error(SparkSubmit.scala:1068)\n')
    assert _jvm_error(log, len(old)) == ("org.apache.spark.SparkException: Master must either be yarn or start with "
                                         "spark, k8s, or local")
    log.write_text("Error: A JNI error has occurred\njava.lang.UnsupportedClassVersionError: "
                   "org/apache/spark/launcher/Main has been compiled by a more recent version of the Java Runtime\n")
    assert _jvm_error(log, 0).startswith("java.lang.UnsupportedClassVersionError: org/apache/spark/launcher/Main")
    assert _jvm_error(tmp_path / "missing.log", 0) is None


# ------------------------------------------------------------------------ no executor, JVM gone
class _FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _fake_sc(executors: list[int], dynamic: bool = False):
    """A SparkContext stand-in whose registered executors are ``executors[i]`` at the i-th look (the last
    value repeats)."""
    from types import SimpleNamespace

    looks = iter(executors)
    last = [executors[0]]

    def status():
        last[0] = next(looks, last[0])
        return SimpleNamespace(size=lambda: last[0] + 1)  # + the driver's own block manager

    conf = {"spark.dynamicAllocation.enabled": "true" if dynamic else "false"}
    return SimpleNamespace(_jsc=SimpleNamespace(sc=lambda: SimpleNamespace(getExecutorMemoryStatus=status)),
                           getConf=lambda: SimpleNamespace(get=lambda key, default: conf.get(key, default)))


def test_no_executor_on_a_cluster_is_an_error_after_the_wait_not_a_hang():
    """A standalone cluster whose workers cannot host an executor (too little memory) left the campaign at
    0 runs for ever: the wait for a first executor is bounded and ends in one line naming the cause."""
    import threading

    clock = _FakeClock()
    with pytest.raises(CampaignError, match=r"no Spark executor on spark://127.0.0.1:7077 while the campaign "
                                            r"waited 30 s.*spark.executor.memory.*--executor-wait"):
        campaign_module._wait_for_executors(_fake_sc([0]), "spark://127.0.0.1:7077", threading.Event(), 30,
                                            lambda: None, clock=clock, sleep=clock.sleep)
    assert 30 <= clock.now < 31
    # An executor registering in time ends the wait; the others are waited for until their number is steady.
    clock = _FakeClock()
    campaign_module._wait_for_executors(_fake_sc([0, 0, 1, 1, 2]), "spark://h:7077", threading.Event(), 30,
                                        lambda: None, clock=clock, sleep=clock.sleep)
    assert clock.now < 30
    # Local masters and dynamic allocation (executors come with the jobs) do not wait.
    for sc, master in ((_fake_sc([0]), "local[2]"), (_fake_sc([0], dynamic=True), "yarn")):
        clock = _FakeClock()
        campaign_module._wait_for_executors(sc, master, threading.Event(), 30, lambda: None, clock=clock,
                                            sleep=clock.sleep)
        assert clock.now == 0


def test_jobs_with_no_executor_for_the_wait_stop_with_an_error():
    """While the jobs run, executors lost for good (or never granted by dynamic allocation) end the
    campaign after the wait instead of a silent hang; an executor coming back resets the clock."""
    clock = _FakeClock()
    watch = campaign_module._ExecutorWatch(_fake_sc([1, 0, 0, 1, 0]), "yarn", 10, clock=clock)
    for _ in range(5):  # seen at 1 s and 4 s
        clock.sleep(1)
        watch.check()
    clock.sleep(8.5)
    watch.check()  # none since 4 s, 13.5 s now: 9.5 s < 10
    clock.sleep(1)
    with pytest.raises(CampaignError, match="while the campaign's jobs ran 10 s"):
        watch.check()
    local = campaign_module._ExecutorWatch(_fake_sc([0]), "local[*]", 10, clock=clock)
    clock.sleep(100)
    local.check()  # the driver is the executor


def test_an_error_whose_text_needs_the_gone_jvm_is_still_one_line():
    """A Py4JJavaError asks the JVM for its text: after the JVM was stopped, str() raised and the campaign
    printed a 74-line traceback. The text read before stopping it is used, else the type and arguments."""
    class JavaError(Exception):
        def __str__(self):
            raise ConnectionRefusedError("the Java gateway is gone")

    exc = JavaError("An error occurred while calling None.org.apache.spark.api.java.JavaSparkContext.")
    assert campaign_module._short_error(exc) == ("JavaError: An error occurred while calling "
                                                 "None.org.apache.spark.api.java.JavaSparkContext.")
    exc.kraftlog_text = "py4j.protocol.Py4JJavaError: ...\njava.lang.IllegalArgumentException: bad memory size"
    assert campaign_module._short_error(exc) == "java.lang.IllegalArgumentException: bad memory size"


def test_package_zip_ships_the_whole_package_but_bytecode(tmp_path):
    """Executors without kraftlog installed get it from the driver's zip: every file of the package."""
    import zipfile
    from pathlib import Path

    import kraftlog

    names = set(zipfile.ZipFile(campaign_module._package_zip(tmp_path)).namelist())
    root = Path(kraftlog.__file__).resolve().parent
    expected = {str(Path("kraftlog") / p.relative_to(root)) for p in root.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert names == expected and "kraftlog/spark/campaign.py" in names
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_processes_a_jvm_started_are_found_and_a_zombie_is_not_alive():
    """_descendants finds a process's children (psutil, not /proc), and _alive says a process that was
    killed but not reaped yet (a zombie) no longer runs: what _stop_jvm waits for."""
    import os
    import signal as signals
    import subprocess
    import sys

    import psutil

    from kraftlog.spark.campaign import _alive, _descendants

    code = ("import subprocess, sys, time; "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)")
    parent = subprocess.Popen([sys.executable, "-c", code])
    found: list[int] = []
    try:
        deadline = time.monotonic() + 20
        while not found and time.monotonic() < deadline:
            found = _descendants(parent.pid)
            time.sleep(0.05)
        assert len(found) == 1 and _alive(found[0]) and _alive(parent.pid)
        os.kill(parent.pid, signals.SIGKILL)  # not waited for: a zombie
        deadline = time.monotonic() + 10
        while psutil.Process(parent.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.05)
        assert psutil.Process(parent.pid).status() == psutil.STATUS_ZOMBIE
        assert not _alive(parent.pid)
    finally:
        for pid in found:
            try:
                os.kill(pid, signals.SIGKILL)
            except OSError:
                pass
        parent.kill()
        parent.wait(5)
    assert _descendants(parent.pid) == [] and not _alive(parent.pid)
