"""The files of a real cluster's directory and the processes and ports they name, under :mod:`kraftlog.net.cluster`:
``cluster.json`` read and written under its lock (:func:`load`, :func:`update_entry`), a node's entry, a PID's
liveness, free loopback ports. :class:`ClusterError` is every cluster command's error (``code``: the exit code)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
from random import SystemRandom

from .node import HOST, write_json

__all__ = ["ClusterError", "load", "save", "locked", "update_entry", "entry", "free_ports", "node_alive",
           "pid_alive", "cluster_path"]


class ClusterError(Exception):
    """A cluster command cannot proceed; ``code`` is the exit code (2: bad request, 1: failure)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def cluster_path(directory: str) -> str:
    return os.path.join(directory, "cluster.json")


def load(directory: str) -> dict:
    """The cluster.json of ``directory``; ClusterError (exit 2) when there is none."""
    try:
        with open(cluster_path(directory)) as f:
            return json.load(f)
    except FileNotFoundError:
        raise ClusterError(f"{directory} holds no cluster (no cluster.json); start one with `kraftlog "
                           f"cluster up --dir {directory}`", 2) from None
    except (OSError, ValueError) as exc:
        raise ClusterError(f"cannot read {cluster_path(directory)}: {exc}", 2) from None


def save(directory: str, cluster: dict) -> None:
    """Write cluster.json (mode 0600: a ``--secure`` cluster's holds the admin's client configuration)."""
    with locked(directory):
        write_json(cluster_path(directory), cluster, mode=0o600)


@contextlib.contextmanager
def locked(directory: str):
    """Hold the exclusive lock of ``directory``'s cluster.json (``fcntl.flock`` on ``cluster.json.lock``)
    for a read-modify-write: parallel ``cluster start --broker N`` runs each see the others' updates
    (issue 28 item 6). Not re-entrant: hold it once per process."""
    with open(os.path.join(directory, "cluster.json.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def update_entry(directory: str, node, **changes) -> dict:
    """Re-read cluster.json under its lock, apply ``changes`` to ``node``'s entry (and ``bootstrap`` when
    broker 0's client port changes), write it back atomically; return the updated cluster dict."""
    with locked(directory):
        cluster = load(directory)
        found = entry(cluster, node)
        found.update(changes)
        if node == 0 and "port" in changes:
            cluster["bootstrap"] = f"{HOST}:{changes['port']}"
        write_json(cluster_path(directory), cluster, mode=0o600)
        return cluster


def entry(cluster: dict, node) -> dict:
    for e in cluster["nodes"]:
        if e["id"] == node:
            return e
    raise ClusterError(f"no node {node!r} in this cluster (brokers 0..{cluster['brokers'] - 1})", 2)


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_ports(count: int, low: int = 10000, exclude: frozenset[int] = frozenset()) -> list[int]:
    """``count`` distinct ports on 127.0.0.1, none of ``exclude``, that nothing listens on now, chosen
    below the kernel's ephemeral range (``ip_local_port_range``). A port the kernel picked (``bind`` to 0) lies in that
    range, where it may be handed to an outgoing connection's local end while the node is down: its
    restart then fails with EADDRINUSE. Ports outside it are not reused that way. ClusterError when
    fewer than ``count`` can be found."""
    if count <= 0:
        return []
    start, _ = _ephemeral_range()
    candidates = list(range(low, start)) or list(range(1024, 65536))
    offset = SystemRandom().randrange(len(candidates))
    out: list[int] = []
    for i in range(len(candidates)):
        port = candidates[(offset + i) % len(candidates)]
        if port in exclude:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
        out.append(port)
        if len(out) == count:
            return out
    raise ClusterError(f"cannot find {count} free ports on {HOST} below {start}")


def node_alive(cluster: dict, node) -> bool:
    """Whether ``node``'s process (by the PID cluster.json records) runs; ``cluster``: :func:`load`'s dict.
    ClusterError (exit 2) for a node the cluster does not have."""
    return pid_alive(entry(cluster, node).get("pid"))


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (our own child that exited) is not alive
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][:1] != "Z"
    except OSError:
        return True
