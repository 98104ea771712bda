"""The README's "Real cluster" section is true: its shell block and its confluent-kafka snippet run as
written against a real cluster (with the port and directory swapped for free ones, so two runs can share
a machine), and every node is stopped afterwards."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kraftlog.net import cluster as cl
from test_real_cluster import _stop_everything

pytestmark = pytest.mark.slow

README = Path(__file__).resolve().parent.parent / "README.md"


def _section() -> str:
    text = README.read_text()
    start = text.index("## Real cluster")
    return text[start:text.index("\n## ", start + 1)]


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", _section(), re.S)


def _free_base_port(count: int = 3) -> int:
    """A port P with P..P+count-1 free on 127.0.0.1 (probed by binding)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + count > 65535:
            continue
        try:
            socks = []
            for p in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free port range")


def test_readme_has_the_commands_a_kafka_user_types():
    (sh,) = _blocks("sh")
    assert "kraftlog cluster up --brokers 3" in sh and "kcat -b 127.0.0.1:9092 -L" in sh
    (py,) = _blocks("python")
    assert "from confluent_kafka import" in py


def test_readme_real_cluster_blocks_run_as_written(tmp_path):
    if subprocess.run(["sh", "-c", "command -v kcat"], capture_output=True).returncode != 0:
        pytest.skip("Debian's kcat is not installed (apt-get install kcat): the README's kcat lines cannot run")
    (sh,) = _blocks("sh")
    (py,) = _blocks("python")
    port = _free_base_port()
    directory = str(tmp_path / "demo")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    swap = lambda text: text.replace("/tmp/kraftlog-demo", directory).replace("9092", str(port))  # noqa: E731
    lines = [line for line in swap(sh).splitlines() if line.strip()]
    down = lines.pop()  # `cluster down` runs after the Python snippet
    assert "cluster down" in down
    outputs = []
    try:
        for line in lines:
            proc = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True, env=env,
                                  timeout=120)
            assert proc.returncode == 0, f"{line!r} exited {proc.returncode}: {proc.stderr}"
            outputs.append(proc.stdout)
        by_command = dict(zip(lines, outputs, strict=True))
        count = next(out for cmd, out in by_command.items() if "-C -t demo" in cmd)
        assert count.strip() == "100"
        listing = next(out for cmd, out in by_command.items() if cmd.endswith("-L"))
        assert listing.count(" at 127.0.0.1:") == 3
        describe = next(out for cmd, out in by_command.items() if "topics describe" in cmd)
        assert "PartitionCount: 3" in describe and "Isr: " in describe
        snippet = subprocess.run([sys.executable, "-c", swap(py)], capture_output=True, text=True, timeout=180)
        assert snippet.returncode == 0, snippet.stderr[-2000:]
        proc = subprocess.run(["bash", "-c", down], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0 and "stopped cleanly" in proc.stdout
        assert all(not n.alive for n in cl.status(directory))
    finally:
        _stop_everything(directory)
