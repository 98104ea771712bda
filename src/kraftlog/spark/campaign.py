"""The fault campaign (issue #5): seeds × levels of generated failure stories, plus the scenario
library at every level, fanned out over Spark executors; written as the runs finish, so that an
interrupted campaign keeps what it ran and ``--resume`` runs only the rest (issue 12). This module is
the Spark side (the session, the jobs, the executors, the JVM and the processes it started, found with
psutil); what the campaign runs, counts and writes is Spark-free, in :mod:`kraftlog.campaign`.

Driver side (:func:`run_campaign`): checks ``--out`` is writable, Java is there and a ``spark://`` (or
``k8s://``) master answers a TCP connect within :data:`CONNECT_TIMEOUT_S` (:class:`CampaignError`, one
line, otherwise); builds the task list (:func:`kraftlog.campaign.results.build_tasks`) (minus the runs
already in ``results.parquet`` with ``resume``);
starts a SparkSession on ``master``; parallelizes the tasks into Spark tasks of about 4 runs and runs
each Spark task as its own Spark job, about two jobs per executor core in flight (:func:`_job_plan`),
so that each Spark task's rows reach the driver as soon as it finishes (measured: the same wall time
as one job over every Spark task). The driver appends the finished rows to ``results.parquet`` as a
new part at most every few seconds (:class:`kraftlog.campaign.outputs.Parts`: ``FLUSH_MIN_S``, or
``FLUSH_FRACTION`` of the elapsed time in long campaigns) and on an interruption. SIGINT (Ctrl-C) or SIGTERM
cancels the Spark jobs,
writes the finished runs, stops the SparkContext and the JVM it launched (by PID, with the Python
workers the JVM started) and returns an interrupted :class:`CampaignResult`; only the runs in flight
are lost. Everything it writes into ``out``:

* ``results.parquet/`` — a directory of parquet parts (``part-NNNNN.parquet``, each written to a dot
  file and renamed, so a reader never sees half a part), one row per (level, seed) and per (level,
  library scenario), columns in :func:`kraftlog.campaign.results.schema`, rows in the order they finished. pyarrow
  (``pq.read_table(dir)``), Spark (``spark.read.parquet(dir)``) and DuckDB
  (``read_parquet('dir/*.parquet')``) read it the same; ``part-00000`` is empty and carries the schema;
* ``campaign.json`` — what the campaign is (``levels``, ``seeds``, ``seed_offset``, ``scenario_dir``,
  ``library`` names, ``runs``, ``master``), written before the first run, read by ``resume``;
* ``summary.json`` — ``{"levels": {LEVEL: {"seeds", "seeds_with_loss", "seeds_with_loss_within_budget",
  "lost_acked_total", "p_loss", "mean_unavailable_ms", "seeds_with_invariant_violations",
  "leader_hwm_regressions_total", "seeds_unsafe", "seeds_unsafe_within_budget"}}, "interrupted": bool,
  "runs", "runs_expected", "unsafe_within_budget": [run...], "sim_speedup": x, ...}`` (the per-level
  figures count generated seeds only; the library runs are summarised under ``"scenario_library"``);
  when both ``elr`` and ``urm`` ran, ``summary.json`` also holds ``"urm_vs_elr"``: the two levels compared
  on the same seeds (:mod:`kraftlog.campaign.summary`: ``compare_levels``, ``COMPARISONS``);
  ``EXECUTION_FIELDS`` there are the keys that differ between two runs of the same campaign (timings, where
  and how it ran);
* ``failures/<level>-seed-<seed>.yaml`` / ``failures/<level>-<scenario>.yaml`` — every failing run
  (acknowledged records lost, an invariant violated, a leader's HWM moving backwards, an undetected
  truncation, a failed expectation, or a run that raised) as a scenario file with ``level`` set, which
  ``kraftlog scenario run`` replays with the same history digest; written before its row's part;
* ``report.html`` — plots and tables (:mod:`kraftlog.report.html`), when the campaign completed; the
  failing run it draws is replayed first, on the driver (:mod:`kraftlog.campaign.replay`);
* ``spark.log`` — what the Spark JVM printed (its log at WARN), kept off the terminal, and the PIDs of
  the processes the campaign started and stopped.

Executor side (:func:`kraftlog.campaign.results.run_one`): one task dict in, one plain row dict out; everything it
needs is
imported inside, so it runs wherever ``kraftlog`` is importable (locally, or shipped as a zip with
``addPyFile`` to a cluster).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ..campaign.outputs import (
    MANIFEST,
    CampaignError,
    Parts,
    check_out,
    check_resume,
    level_order,
    prepare_out,
    read_manifest,
    read_results,
    write_json,
)
from ..campaign.progress import Progress
from ..campaign.results import DEFAULT_SEEDS, build_tasks, run_one, task_key
from ..campaign.summary import build_summary

__all__ = [
    "DEFAULT_MASTER",
    "CONNECT_TIMEOUT_S",
    "CampaignResult",
    "check_master",
    "run_campaign",
    "unreachable",
]

DEFAULT_MASTER = "local[*]"

#: TCP connect timeout (s) of the check that a ``spark://`` or ``k8s://`` master is reachable.
CONNECT_TIMEOUT_S = 3.0
#: On a cluster master, how long (s) the campaign waits for a first executor, and how long it lets the
#: running jobs go with no executor at all, before giving up with a one-line error (``--executor-wait``):
#: a cluster whose workers cannot host an executor (too little memory or cores) otherwise waits for ever.
EXECUTOR_WAIT_S = 120.0
#: Once a first executor registered (no dynamic allocation), at most this long (s) for the others: the
#: campaign sizes its Spark jobs by the executors' cores (``defaultParallelism``), counted when their
#: number has been steady for EXECUTORS_STEADY_S.
EXECUTORS_SETTLE_S = 15.0
EXECUTORS_STEADY_S = 2.0


# ------------------------------------------------------------------------------------------ spark
_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.py4j.name = py4j
logger.py4j.level = error
"""


@contextlib.contextmanager
def _stderr_to(path: Path):
    """Point file descriptor 2 at ``path`` (so the JVM that pyspark launches inherits it), then restore."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    with open(path, "ab") as fh:
        os.dup2(fh.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


def _is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def _package_zip(tmp: Path) -> Path:
    """Zip the installed ``kraftlog`` package, every file but compiled bytecode (for ``addPyFile`` on a
    cluster: its executors need not have kraftlog installed)."""
    import kraftlog

    root = Path(kraftlog.__file__).resolve().parent
    target = tmp / "kraftlog.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
                zf.write(path, Path("kraftlog") / path.relative_to(root))
    return target


def _log(path: Path, text: str) -> None:
    """Append one ``kraftlog: ...`` line to ``spark.log`` (which processes the campaign started and stopped)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(f"kraftlog: {text}\n")


def _start_spark(master: str, out: Path, tmp: Path, app_name: str = "kraftlog-campaign"):
    """A SparkSession named ``app_name`` on ``master`` with the UI off, Spark's console output in
    ``out/spark.log`` and executors on this Python (``PYSPARK_PYTHON``; kept when already set for a
    non-local master).

    Returns ``(spark, jvm)``: ``jvm`` is the ``subprocess.Popen`` of the Java gateway pyspark launched for
    it, or None when this Python process already had one (it is then not ours to stop)."""
    if _is_local(master) or not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if _is_local(master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = tmp / "log4j2.properties"
    log4j.write_text(_LOG4J)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    launching = SparkContext._gateway is None
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.python.worker.reuse", "true")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}"))
    try:
        with _stderr_to(out / "spark.log"):
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel("WARN")
    except BaseException as exc:
        if launching and SparkContext._gateway is not None:  # the JVM started, the context did not
            # A Py4JJavaError's text comes from the JVM: read it before stopping the JVM.
            exc.kraftlog_text = _exception_text(exc)
            _stop_jvm(SparkContext._gateway.proc, out / "spark.log")
        raise
    jvm = getattr(SparkContext._gateway, "proc", None) if launching else None
    if jvm is not None:
        _log(out / "spark.log", f"started the Spark JVM (Java gateway), pid {jvm.pid}")
    if not _is_local(master):
        spark.sparkContext.addPyFile(str(_package_zip(tmp)))
    return spark, jvm


def _descendants(pid: int) -> list[int]:
    """The PIDs of ``pid``'s children, their children, ... (psutil; [] when ``pid`` is gone)."""
    import psutil  # driver side only: the executors importing this module need not have it

    try:
        return sorted(child.pid for child in psutil.Process(pid).children(recursive=True))
    except psutil.Error:
        return []


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie does not)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # AccessDenied: it exists
        return True


def _with_timeout(fn, seconds: float) -> bool:
    """Call ``fn()`` in a daemon thread and wait at most ``seconds``; True when it returned (its
    exceptions are swallowed: this is for shutting things down)."""
    done = threading.Event()

    def call() -> None:
        try:
            fn()
        except BaseException:  # noqa: BLE001 - best effort shutdown
            pass
        finally:
            done.set()

    threading.Thread(target=call, daemon=True, name="kraftlog-stop").start()
    return done.wait(seconds)


def _kill(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _stop_jvm(jvm, log: Path, children: list[int] | None = None) -> None:
    """Stop the Java gateway process ``jvm`` (a Popen) pyspark launched: SIGTERM, SIGKILL after 5 s; then
    the processes it had started (``children``, e.g. pyspark's Python daemon and workers; they exit when
    the JVM does) by PID, SIGKILL after 3 s. Forgets the gateway, so a later campaign in this process
    launches a new one."""
    from pyspark import SparkContext

    children = _descendants(jvm.pid) if children is None else children
    gateway = SparkContext._gateway
    if gateway is not None and getattr(gateway, "proc", None) is jvm:
        _with_timeout(gateway.shutdown, 5.0)
        SparkContext._gateway = None
        SparkContext._jvm = None
    if jvm.poll() is None:
        jvm.terminate()
    try:
        jvm.wait(5)
    except Exception:  # noqa: BLE001 - subprocess.TimeoutExpired
        jvm.kill()
        try:
            jvm.wait(5)
        except Exception:  # noqa: BLE001
            pass
    deadline = time.monotonic() + 3
    while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [pid for pid in children if _alive(pid)]
    _kill(left, signal.SIGKILL)
    _log(log, f"stopped the Spark JVM pid {jvm.pid} (exit {jvm.returncode}) and the processes it started: "
              f"{', '.join(map(str, children)) or 'none'}{f' (killed {left})' if left else ''}")


def _stop_spark(spark, jvm, log: Path) -> None:
    """Stop the SparkContext (waiting at most 10 s), then the JVM pyspark launched for it (``jvm``, see
    :func:`_stop_jvm`), even when stopping the context failed or was interrupted."""
    children = _descendants(jvm.pid) if jvm is not None else []
    try:
        with _stderr_to(log):
            _with_timeout(spark.stop, 10.0)
    finally:
        if jvm is not None:
            _stop_jvm(jvm, log, children)


def _slices(n_tasks: int, parallelism: int) -> int:
    """Spark tasks for ``n_tasks`` runs: about 4 runs per Spark task (a PySpark task costs tens of ms
    of overhead here), at least 4 Spark tasks per core for balance, never more than the runs."""
    if n_tasks == 0:
        return 1
    return max(1, min(n_tasks, max(parallelism * 4, math.ceil(n_tasks / 4))))


#: At most this many Spark jobs in flight (driver threads); beyond 32 cores a job takes several Spark tasks.
MAX_JOBS_IN_FLIGHT = 64


def _job_plan(num_slices: int, parallelism: int) -> tuple[list[list[int]], int]:
    """Cut the ``num_slices`` Spark tasks (RDD partitions) into Spark jobs: returns ``(jobs, in_flight)``
    where ``jobs`` lists each job's partitions and ``in_flight`` is how many jobs the driver keeps
    submitted. Two jobs per core keep every core busy while the driver collects a finished job's rows
    and submits the next (with one job per core, measured 13% slower on 2 cores); one partition per job
    (up to 32 cores) gives the driver each Spark task's rows as soon as that task finishes."""
    in_flight = max(1, min(MAX_JOBS_IN_FLIGHT, 2 * parallelism))
    per_job = max(1, math.ceil(2 * parallelism / in_flight))
    jobs = [list(range(i, min(i + per_job, num_slices))) for i in range(0, num_slices, per_job)]
    return jobs, min(in_flight, len(jobs)) if jobs else 0


def _run_partition(tasks):
    """A Spark task: :func:`run_one` over one partition's tasks."""
    return [run_one(task) for task in tasks]


def _run_jobs(sc, todo: list[dict], num_slices: int, jobs: list[list[int]], in_flight: int,
              stop: threading.Event, on_rows, on_tick) -> BaseException | None:
    """Run ``todo`` on the executors as ``jobs`` (see :func:`_job_plan`), ``in_flight`` at a time from
    driver threads, in one job group; call ``on_rows(rows)`` on the driver's main thread with each job's
    rows as it finishes, ``on_tick()`` every 0.2 s. Returns when every job finished, when ``stop`` is set
    (the job group is then cancelled; rows of jobs finished meanwhile are still handed over) or when a
    job failed: then its exception is returned."""
    rdd = sc.parallelize(todo, num_slices)
    group = f"kraftlog-campaign-{os.getpid()}-{time.time_ns()}"
    pending: queue.Queue = queue.Queue()
    for job in jobs:
        pending.put(job)
    results: queue.Queue = queue.Queue()
    halt = threading.Event()

    def worker() -> None:
        try:
            sc.setJobGroup(group, "kraftlog campaign", interruptOnCancel=True)
            while not halt.is_set():
                try:
                    job = pending.get_nowait()
                except queue.Empty:
                    return
                results.put(("rows", sc.runJob(rdd, _run_partition, job)))
        except BaseException as exc:  # handed to the main thread
            results.put(("error", exc))

    threads = [threading.Thread(target=worker, daemon=True, name=f"kraftlog-job-{i}") for i in range(in_flight)]
    for thread in threads:
        thread.start()
    finished, error = 0, None
    try:
        while finished < len(jobs) and not stop.is_set():
            try:
                kind, payload = results.get(timeout=0.2)
            except queue.Empty:
                on_tick()
                continue
            if kind == "rows":
                finished += 1
                on_rows(payload)
                continue
            # A Ctrl-C in a terminal also reaches the executors' Python workers, whose tasks then fail:
            # give the driver's signal handler a moment before calling it a failure.
            if not stop.wait(0.5):
                error = payload
            break
    finally:
        halt.set()
        if finished < len(jobs):
            _with_timeout(lambda: sc.cancelJobGroup(group), 5.0)
        while True:
            try:
                kind, payload = results.get_nowait()
            except queue.Empty:
                break
            if kind == "rows":
                on_rows(payload)
    return error


def _executor_count(sc) -> int:
    """Executors registered with the driver ``sc`` (its own block manager not counted); on a local
    master the driver is the executor and this is 0."""
    try:
        return max(0, sc._jsc.sc().getExecutorMemoryStatus().size() - 1)
    except Exception:  # noqa: BLE001 - the JVM is going away: nothing is registered any more
        return 0


def _dynamic_allocation(sc) -> bool:
    return sc.getConf().get("spark.dynamicAllocation.enabled", "false").strip().lower() == "true"


def _no_executor_error(master: str, waited_s: float, during: bool) -> CampaignError:
    what = "the campaign's jobs ran" if during else "the campaign waited"
    return CampaignError(
        f"no Spark executor on {master} while {what} {waited_s:g} s: the workers cannot host one (free cores "
        f"and memory, spark.executor.memory and spark.executor.cores in spark-defaults.conf) or cannot reach "
        f"this driver; see the master's web UI and {{log}} (--executor-wait sets the wait)")


def _wait_for_executors(sc, master: str, stop: threading.Event, timeout_s: float, tick,
                        clock=time.monotonic, sleep=time.sleep) -> None:
    """On a cluster master without dynamic allocation, wait until an executor registered (at most
    ``timeout_s`` s: then raise CampaignError), then until their number has been steady for
    :data:`EXECUTORS_STEADY_S` (at most :data:`EXECUTORS_SETTLE_S` more), so that ``defaultParallelism``
    counts their cores. Returns at once on a local master, with dynamic allocation (executors come when
    jobs ask for them; :func:`_run_jobs`' caller watches them instead) or when ``stop`` is set. Calls
    ``tick()`` every 0.2 s. The error's text has a ``{log}`` placeholder for the Spark log's path."""
    if _is_local(master) or _dynamic_allocation(sc):
        return
    start = clock()
    while _executor_count(sc) == 0:
        if stop.is_set():
            return
        if clock() - start >= timeout_s:
            raise _no_executor_error(master, timeout_s, during=False)
        tick()
        sleep(0.2)
    settle_end = clock() + EXECUTORS_SETTLE_S
    count, since = _executor_count(sc), clock()
    while not stop.is_set() and clock() < settle_end and clock() - since < EXECUTORS_STEADY_S:
        sleep(0.2)
        tick()
        now = _executor_count(sc)
        if now != count:
            count, since = now, clock()


class _ExecutorWatch:
    """While the jobs run on a cluster master: :meth:`check` (called every 0.2 s) raises CampaignError
    once no executor has been registered for ``timeout_s`` s (all of them lost, or, with dynamic
    allocation, none ever granted); it looks at most once a second. Inactive on a local master."""

    def __init__(self, sc, master: str, timeout_s: float, clock=time.monotonic) -> None:
        self.sc, self.master, self.timeout_s, self.clock = sc, master, timeout_s, clock
        self.active = not _is_local(master)
        self.last_seen = self.last_look = clock()

    def check(self) -> None:
        now = self.clock()
        if not self.active or now - self.last_look < 1.0:
            return
        self.last_look = now
        if _executor_count(self.sc) > 0:
            self.last_seen = now
        elif now - self.last_seen >= self.timeout_s:
            raise _no_executor_error(self.master, self.timeout_s, during=True)


def _jvm_error(log: Path, offset: int) -> str | None:
    """The last ``SomeException: message`` line the JVM wrote to ``log`` after ``offset`` (why
    spark-submit exited, e.g. "Master must either be yarn or start with spark, k8s, or local", or an
    UnsupportedClassVersionError from a Java older than 17), or None."""
    import re

    try:
        with open(log, "rb") as fh:
            fh.seek(offset)
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = re.findall(r'^(?:Exception in thread "[^"]*" )?([\w.$]+(?:Exception|Error): .+)$', text, flags=re.MULTILINE)
    return found[-1].strip()[:300] if found else None


def _exception_text(exc: BaseException) -> str:
    """``str(exc)``, or the exception's type and arguments when that fails (a Py4JJavaError asks the JVM
    for its text, which fails once the JVM is gone); ``exc.kraftlog_text`` when set (read earlier)."""
    saved = getattr(exc, "kraftlog_text", None)
    if saved is not None:
        return saved
    try:
        return str(exc)
    except Exception:  # noqa: BLE001 - any failure of the JVM round trip
        args = [a for a in getattr(exc, "args", ()) if isinstance(a, str)]
        return f"{type(exc).__name__}: {args[0] if args else 'no message (the Spark JVM has exited)'}"


def _short_error(exc: BaseException) -> str:
    """The last ``SomethingError: message`` line of a Spark job failure (the Python executor's error)."""
    import re

    text = _exception_text(exc)
    found = re.findall(r"^(?:[\w.]+(?:Error|Exception)): .*$", text, flags=re.MULTILINE)
    return found[-1] if found else (text.strip().splitlines() or [type(exc).__name__])[0][:300]


@dataclass
class CampaignResult:
    """What :func:`run_campaign` wrote and measured. ``interrupted``: the campaign stopped before every
    run had a row (``summary["interrupted"]``), on ``signal`` (SIGINT, SIGTERM) when that stopped it;
    ``signal`` is also set when a signal came after the last run (the report was then not written)."""

    out: Path
    rows: list[dict]
    summary: dict
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    signal: int | None = None


def _check_java() -> None:
    """Raise CampaignError when Spark would find no Java: JAVA_HOME without bin/java, or neither
    JAVA_HOME nor ``java`` on PATH (spark-class uses JAVA_HOME first)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        if not os.access(Path(java_home) / "bin" / "java", os.X_OK):
            raise CampaignError(f"Spark needs Java 17 or later: JAVA_HOME is {java_home}, which has no bin/java "
                                f"(point JAVA_HOME at a JDK, or unset it to use `java` from PATH)")
    elif not shutil.which("java"):
        raise CampaignError("Spark needs Java 17 or later: no `java` on PATH and JAVA_HOME is not set")


def _master_endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://host:port[,host2:port2]`` (standalone, port 7077 by
    default) or ``k8s://[https://]host[:port]`` master; [] for other masters (local, yarn...)."""
    from urllib.parse import urlsplit

    if master.startswith("spark://"):
        found = []
        for item in master[len("spark://"):].split(","):
            item = item.strip().rstrip("/")
            host, sep, port = item.rpartition(":")
            if not sep or host.endswith(":") or (host.startswith("[") and not host.endswith("]")):
                host, port = item, "7077"
            try:
                found.append((host.strip("[]"), int(port)))
            except ValueError:
                raise CampaignError(f"--master {master}: {item!r} is not host:port") from None
            if not found[-1][0]:
                raise CampaignError(f"--master {master}: {item!r} has no host")
        return found
    if master.startswith("k8s://"):
        url = master[len("k8s://"):]
        parts = urlsplit(url if "://" in url else "https://" + url)
        try:
            port = parts.port or (80 if parts.scheme == "http" else 443)
        except ValueError:
            raise CampaignError(f"--master {master}: the port is not a number") from None
        if not parts.hostname:
            raise CampaignError(f"--master {master}: no host")
        return [(parts.hostname, port)]
    return []


def unreachable(endpoints, timeout_s: float) -> list[str]:
    """Why none of ``endpoints`` (``(host, port)`` pairs, tried in order) accepts a TCP connection within
    ``timeout_s`` seconds: one message per endpoint (``host:port did not answer within 3 s``,
    ``host:port: connection refused``). [] as soon as one accepts, and for no endpoint at all."""
    errors = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return []
        except TimeoutError:
            errors.append(f"{host}:{port} did not answer within {timeout_s:g} s")
        except OSError as exc:
            errors.append(f"{host}:{port}: {(exc.strerror or str(exc)).lower()}")
    return errors


def check_master(master: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise CampaignError (one line) when a ``spark://`` or ``k8s://`` master accepts no TCP connection
    within ``timeout_s`` seconds (for a standalone master with several hosts: none does). Spark itself
    would retry for over a minute and then print a Java stack trace. Other masters are not checked."""
    errors = unreachable(_master_endpoints(master), timeout_s)
    if errors:
        raise CampaignError(f"cannot reach the Spark master {master} ({'; '.join(errors)}): is it running, "
                            f"and are the host and port right?")


class _Signals:
    """SIGINT and SIGTERM, while the campaign runs: the first one sets ``event`` (the campaign then
    stops the Spark jobs and keeps what finished); a second one calls ``on_force`` (kill the JVM) and
    raises KeyboardInterrupt. Only in the main thread (elsewhere signals keep their handlers)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.signum: int | None = None
        self.on_force = None
        self._previous: dict = {}

    def __enter__(self):
        self.install()
        return self

    def install(self) -> None:
        """(Re)install the handlers: pyspark's SparkContext installs its own SIGINT handler (cancel
        every job, raise KeyboardInterrupt) when it starts."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous = signal.signal(sig, self._handle)
            except (ValueError, OSError):
                continue
            self._previous.setdefault(sig, previous)

    def _handle(self, signum, frame) -> None:
        if self.event.is_set():
            if self.on_force is not None:
                self.on_force()
            raise KeyboardInterrupt
        self.signum = signum
        self.event.set()

    def __exit__(self, *exc) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous = {}


def run_campaign(levels: list[str], seeds: int = DEFAULT_SEEDS, master: str = DEFAULT_MASTER,
                 out: str | os.PathLike = "campaign-out", seed_offset: int = 0,
                 scenario_dir: str | os.PathLike | None = None, console=None,
                 show_progress: bool = True, resume: bool = False, progress: str = "auto",
                 executor_wait_s: float = EXECUTOR_WAIT_S) -> CampaignResult:
    """Run the campaign and write its outputs into ``out`` (module docstring). ``levels`` are level labels,
    validated by the caller. Without ``resume``, what an earlier campaign left in ``out`` is replaced;
    with it, the runs already in ``out/results.parquet`` are kept and only the missing ones run, after
    checking that ``levels``, the seed range and the library contain the earlier campaign's.

    ``progress``: ``"bar"`` (rich's live bar on ``console``), ``"lines"`` (a line every few seconds),
    ``"none"``, or ``"auto"``: the bar when stdout and ``console`` are terminals, else lines;
    ``show_progress=False`` is ``"none"``. ``executor_wait_s``: on a cluster master, how long to wait for
    a first executor, and how long the jobs may go with none, before giving up (CampaignError).

    SIGINT/SIGTERM (main thread only) stop it early: the finished runs are kept, summary.json says
    ``"interrupted": true``, no report is written, and the result has ``interrupted`` and ``signal`` set.
    Raises CampaignError (one line) when it cannot run: ``out`` not writable, no Java, master unreachable,
    Spark not starting, no executor within ``executor_wait_s``, a Spark job failing (the runs finished before are
    kept, as on an interruption),
    or ``resume`` refused."""
    from rich.console import Console

    started = time.perf_counter()
    console = console or Console(stderr=True)
    out = Path(out)
    check_out(out)
    tasks, warnings = build_tasks(levels, seeds, seed_offset, scenario_dir)
    library = sorted({t["name"] for t in tasks if t["kind"] == "scenario"})
    previous: list[dict] = []
    if resume:
        check_resume(read_manifest(out), out, levels, seeds, seed_offset, library)
        previous = read_results(out)
    done_keys = {task_key(r) for r in previous}
    todo = [t for t in tasks if task_key(t) not in done_keys]
    if todo:
        _check_java()
        check_master(master)
    if not show_progress:
        progress = "none"
    elif progress == "auto":
        progress = "bar" if sys.stdout.isatty() and console.is_terminal else "lines"
    order = level_order(levels)

    run = {"executor_cores": 0, "spark_tasks": 0, "spark_jobs": 0, "resumed_runs": len(previous),
           "job_wall_ms": 0.0}
    new_rows: list[dict] = []
    failed: BaseException | None = None
    starved: CampaignError | None = None
    with _Signals() as signals:
        prepare_out(out, fresh=not resume)
        write_json(out / MANIFEST, {
            "version": 1, "levels": levels, "seeds": seeds, "seed_offset": seed_offset,
            "scenario_dir": str(Path(scenario_dir).resolve()) if scenario_dir is not None else None,
            "library": library, "runs": len(tasks), "master": master})
        parts = Parts(out, order)
        spark = jvm = tmp = None
        n_seeds = sum(1 for t in tasks if t["kind"] == "seed")
        label = (f"{len(tasks)} runs ({n_seeds} seed runs + {len(tasks) - n_seeds} library runs) on {master}"
                 + (f", {len(previous)} done before" if previous else ""))
        bar = None
        try:
            if todo and not signals.event.is_set():
                tmp = Path(tempfile.mkdtemp(prefix="kraftlog-campaign-"))
                log_start = (out / "spark.log").stat().st_size if (out / "spark.log").exists() else 0
                try:
                    spark, jvm = _start_spark(master, out, tmp)
                except CampaignError:
                    raise
                except Exception as exc:
                    why = _jvm_error(out / "spark.log", log_start) or _short_error(exc)
                    raise CampaignError(f"could not start Spark on {master}: {why} "
                                        f"(see {out / 'spark.log'})") from None
                signals.install()
                if jvm is not None:
                    signals.on_force = lambda: _kill([jvm.pid, *_descendants(jvm.pid)], signal.SIGKILL)
                sc = spark.sparkContext
                try:
                    if not _is_local(master) and progress != "none":
                        console.print(f"campaign: waiting for executors on {master}", markup=False)
                    _wait_for_executors(sc, master, signals.event, executor_wait_s, lambda: None)
                    parallelism = sc.defaultParallelism
                    num_slices = _slices(len(todo), parallelism)
                    jobs, in_flight = _job_plan(num_slices, parallelism)
                    run.update(executor_cores=parallelism, spark_tasks=num_slices, spark_jobs=len(jobs))
                    bar = Progress(progress, console, len(tasks), len(previous), f"{label}, {parallelism} cores")
                    watch = _ExecutorWatch(sc, master, executor_wait_s)

                    def on_rows(rows: list[dict]) -> None:
                        new_rows.extend(rows)
                        parts.add(rows)
                        bar.update(len(previous) + len(new_rows))

                    def on_tick() -> None:
                        bar.update()
                        watch.check()

                    job_start = time.perf_counter()
                    if not signals.event.is_set():
                        failed = _run_jobs(sc, todo, num_slices, jobs, in_flight, signals.event, on_rows, on_tick)
                    run["job_wall_ms"] = (time.perf_counter() - job_start) * 1000
                except CampaignError as exc:  # no executor: keep what finished, as for a failed job
                    starved = exc
        finally:
            parts.flush()
            if bar is not None:
                bar.close()
            if spark is not None:
                _stop_spark(spark, jvm, out / "spark.log")
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)

        rows = sorted(previous + new_rows, key=order)
        complete = {task_key(t) for t in tasks} <= {task_key(r) for r in rows}
        summary = build_summary(rows, new_rows, levels, len(tasks), seeds, seed_offset, master,
                                 not complete, run)
        summary["timeline_replay"] = None
        summary["wall_s"] = round(time.perf_counter() - started, 2)
        write_json(out / "summary.json", summary)
        if starved is not None:
            raise CampaignError(f"{str(starved).replace('{log}', str(out / 'spark.log'))}; the {len(rows)} "
                                f"finished runs are kept: --resume runs the rest")
        if failed is not None:
            with open(out / "spark.log", "a", encoding="utf-8") as log:
                log.write(f"\nthe campaign job failed:\n{_exception_text(failed)}\n")
            raise CampaignError(f"the Spark job failed on {master}: {_short_error(failed)} (details in "
                                f"{out / 'spark.log'}; the {len(rows)} finished runs are kept: "
                                f"--resume runs the rest)")
        signum = signals.signum
    result = CampaignResult(out, rows, summary, warnings, interrupted=not complete, signal=signum)
    if not complete or signum is not None:
        return result

    # report.html (a failing seed's timeline is replayed here, on the driver, from its exported file;
    # imported here: the report loads matplotlib, which the Spark workers importing this module do not need)
    from ..campaign.replay import write_campaign_report

    summary["timeline_replay"] = write_campaign_report(out, rows, summary, levels)
    summary["wall_s"] = round(time.perf_counter() - started, 2)
    write_json(out / "summary.json", summary)
    return result
