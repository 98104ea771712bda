"""A Spark standalone cluster (one master, N workers) on loopback, started from the pyspark install, for
``tests/test_spark_standalone.py`` (issue 12: a campaign on a real Spark cluster).

Each daemon is ``$SPARK_HOME/bin/spark-class org.apache.spark.deploy.{master.Master,worker.Worker}``
(``spark-class`` execs the JVM, so the PID we start is the JVM's) in its own session, with its own conf,
work, scratch and log directories under ``base``. Ports are picked free at start; Spark moves to the next
port when one was taken meanwhile, so the master's actual URL and web UI port are read back from its log.

Stopping is by PID only: SIGTERM, a bounded wait, SIGKILL; then whatever is still alive in the daemon's
session (the executor JVMs and Python workers a worker launched) is killed by its PID too.
:func:`alive` tells which of the processes ever seen are still running (PID plus start time, so a
recycled PID is not mistaken for ours).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

#: pyspark's package directory is a Spark distribution (bin/spark-class, jars/).
SPARK_HOME = Path(pyspark.__file__).resolve().parent

#: (pid, start time in clock ticks since boot): one process, even if its PID is recycled later.
Proc = tuple[int, int]


class ClusterError(RuntimeError):
    """The master or a worker did not come up; the message carries the daemons' log tails."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"({path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


# ------------------------------------------------------------------------------- worker Python
def _requirements(dist: importlib.metadata.Distribution) -> list[str]:
    """Names of the distributions ``dist`` requires (extras left out)."""
    names = []
    for req in dist.requires or []:
        if "extra ==" in req or "extra==" in req:
            continue
        m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        if m:
            names.append(m.group(1))
    return names


def worker_python(base: Path, distributions: tuple[str, ...] = ("PyYAML", "kio")) -> Path:
    """A Python for the executors that has ``distributions`` (and what they require) and nothing else
    of this environment: no kraftlog, no pyspark, no pyarrow. A venv without pip (same interpreter as
    this one), whose site-packages point, through a ``.pth`` file, at a directory of symlinks to those
    distributions' files in this environment (no download). Returns its ``bin/python``."""
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True, timeout=60).stdout.strip()
    deps = base / "site"
    deps.mkdir(parents=True, exist_ok=True)
    todo, done = list(distributions), set()
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        key = dist.metadata["Name"].lower().replace("_", "-")
        if key in done:
            continue
        done.add(key)
        todo.extend(_requirements(dist))
        for f in dist.files or []:
            top = f.parts[0]
            source, target = Path(dist.locate_file(top)), deps / top
            if top in ("..", "__pycache__") or not (source.is_dir() or source.suffix in (".py", ".so")):
                continue  # scripts in bin/, stray README.md files
            if not target.exists():
                target.symlink_to(source)
    (Path(purelib) / "kraftlog-test-deps.pth").write_text(f"{deps}\n")
    return python


# ------------------------------------------------------------------------------------ processes
def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat from the state on (index 0 = state), or None when gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2:].split()


def proc_id(pid: int) -> Proc | None:
    fields = _stat(pid)
    return None if fields is None else (pid, int(fields[19]))  # field 22: starttime


def is_alive(proc: Proc) -> bool:
    """True when ``proc`` runs (a zombie, dead and waiting to be reaped, does not count)."""
    fields = _stat(proc[0])
    return fields is not None and int(fields[19]) == proc[1] and fields[0] not in ("Z", "X")


def session_members(sid: int) -> list[Proc]:
    """Every live process whose session is ``sid`` (the daemon and everything it started)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat(int(entry))
        if fields is not None and int(fields[3]) == sid and fields[0] not in ("Z", "X"):  # field 6: session
            found.append((int(entry), int(fields[19])))
    return found


def _kill(proc: Proc, sig: int) -> None:
    if is_alive(proc):
        try:
            os.kill(proc[0], sig)
        except ProcessLookupError:
            pass


def _wait_gone(procs: list[Proc], timeout: float) -> list[Proc]:
    deadline = time.monotonic() + timeout
    while True:
        left = [p for p in procs if is_alive(p)]
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.1)


@dataclass
class Launched:
    """A process started in its own session, with its output in ``log``."""

    name: str
    popen: subprocess.Popen
    log: Path
    seen: set[Proc] = field(default_factory=set)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def observe(self) -> None:
        """Remember every process now in the session (so that :meth:`alive` can check them later)."""
        self.seen.update(session_members(self.pid))

    def stop(self, term_wait: float = 20.0, kill_wait: float = 10.0) -> None:
        """SIGTERM the process, wait up to ``term_wait`` s, SIGKILL; then SIGKILL what is left of its
        session (by PID) and wait up to ``kill_wait`` s. Reaps the process."""
        self.observe()
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(term_wait)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                try:
                    self.popen.wait(kill_wait)
                except subprocess.TimeoutExpired:
                    pass
        self.observe()
        # What the daemon started (executors, Python workers): give them a moment to follow, then kill.
        left = _wait_gone(sorted(self.seen), 5.0)
        for proc in left:
            _kill(proc, signal.SIGKILL)
        _wait_gone(left, kill_wait)

    def alive(self) -> list[Proc]:
        """Processes of this launch (seen at any time, or in its session now) still running."""
        self.observe()
        return [p for p in sorted(self.seen) if is_alive(p)]


def launch(name: str, argv: list[str], env: dict, log: Path, cwd: Path) -> Launched:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                 env=env, cwd=cwd, start_new_session=True)
    launched = Launched(name, popen, log)
    launched.observe()
    return launched


# -------------------------------------------------------------------------------------- cluster
class StandaloneCluster:
    """``with StandaloneCluster(base) as cluster: ... cluster.master_url ...``: a master and
    ``workers`` workers of ``cores`` cores and ``memory`` each, all on 127.0.0.1."""

    def __init__(self, base: Path, workers: int = 2, cores: int = 1, memory: str = "1g",
                 start_timeout: float = 90.0) -> None:
        self.base = Path(base)
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.master: Launched | None = None
        self.workers: list[Launched] = []
        self.master_url = ""
        self.web_url = ""
        self._starter: threading.Thread | None = None
        self._start_error: BaseException | None = None

    # -- environment
    def env(self, name: str) -> dict:
        """The environment of one daemon: loopback only, its own (empty) conf dir and scratch dirs."""
        home = self.base / name
        conf, local, logs = home / "conf", home / "local", home / "logs"
        for d in (conf, local, logs):
            d.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env.update({
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(local),
            "SPARK_LOG_DIR": str(logs),
            "SPARK_PID_DIR": str(home),
            # The master's REST submission server would take the fixed port 6066: not needed here.
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        })
        return env

    def _spark_class(self, cls: str, *args: str) -> list[str]:
        return [str(SPARK_HOME / "bin" / "spark-class"), cls, *args]

    def logs(self) -> str:
        parts = []
        for d in ([self.master] if self.master else []) + self.workers:
            state = "running" if d.popen.poll() is None else f"exited with {d.popen.returncode}"
            parts.append(f"--- {d.name} (pid {d.pid}, {state}), last lines of {d.log}:\n{tail(d.log)}")
        return "\n".join(parts)

    def _fail(self, what: str) -> None:
        raise ClusterError(f"{what}\n{self.logs()}")

    # -- start
    def status(self) -> dict | None:
        """The master's ``/json`` (workers, apps), or None when it does not answer."""
        try:
            with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as resp:
                return json.load(resp)
        except (OSError, ValueError, urllib.error.URLError):
            return None

    def start(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        port, web_port = free_port(), free_port()
        self.master = launch("master", self._spark_class(
            "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
            "--webui-port", str(web_port)), self.env("master"), self.base / "master" / "master.log",
            self.base / "master")
        # The ports actually bound (Spark tries the next one when a port was taken in between).
        while not (self.master_url and self.web_url and self.status()):
            if self.master.popen.poll() is not None:
                self._fail("the Spark master exited")
            if time.monotonic() > deadline:
                self._fail(f"the Spark master did not come up within {self.start_timeout:.0f} s")
            text = self.master.log.read_text(errors="replace")
            m = re.search(r"Starting Spark master at (spark://\S+)", text)
            ui = re.search(r"Successfully started service 'MasterUI' on port (\d+)", text)
            if m and ui:
                self.master_url, self.web_url = m.group(1), f"http://127.0.0.1:{ui.group(1)}"
            time.sleep(0.25)
        for i in range(self.n_workers):
            name = f"worker{i + 1}"
            work = self.base / name / "work"
            work.mkdir(parents=True, exist_ok=True)
            self.workers.append(launch(name, self._spark_class(
                "org.apache.spark.deploy.worker.Worker", "--cores", str(self.cores), "--memory", self.memory,
                "--host", "127.0.0.1", "--webui-port", str(free_port()), "--work-dir", str(work),
                self.master_url), self.env(name), self.base / name / f"{name}.log", self.base / name))
        while True:
            for w in self.workers:
                if w.popen.poll() is not None:
                    self._fail(f"Spark {w.name} exited")
            status = self.status() or {}
            if status.get("aliveworkers", 0) >= self.n_workers:
                return
            if time.monotonic() > deadline:
                self._fail(f"{status.get('aliveworkers', 0)} of {self.n_workers} Spark workers registered with "
                           f"{self.master_url} within {self.start_timeout:.0f} s; master status: {status}")
            time.sleep(0.25)

    def start_in_background(self) -> None:
        """:meth:`start` in a thread (the JVMs start while the caller does something else);
        :meth:`wait_started` waits for it and raises what it raised."""

        def run() -> None:
            try:
                self.start()
            except BaseException as exc:  # re-raised by wait_started
                self._start_error = exc

        self._starter = threading.Thread(target=run, name="spark-standalone-start", daemon=True)
        self._starter.start()

    def wait_started(self) -> None:
        if self._starter is not None:
            self._starter.join(self.start_timeout + 30)
            if self._starter.is_alive():
                self._fail("starting the cluster hung")
        if self._start_error is not None:
            raise self._start_error

    def work_dir(self, worker: Launched) -> Path:
        return self.base / worker.name / "work"

    # -- stop
    def daemons(self) -> list[Launched]:
        return self.workers[::-1] + ([self.master] if self.master else [])

    def stop(self) -> None:
        """Workers first (each takes its executors down), then the master; every one by PID. A start
        in the background is waited for first (bounded: :meth:`start` has its own deadline)."""
        if self._starter is not None:
            self._starter.join(self.start_timeout + 30)
        for d in self.daemons():
            d.stop()

    def alive(self) -> list[tuple[str, Proc]]:
        return [(d.name, p) for d in self.daemons() for p in d.alive()]

    def __enter__(self) -> StandaloneCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
