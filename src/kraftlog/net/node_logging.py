"""A node process's logs through the standard :mod:`logging` module (Kafka's log4j, by other means).

Each kind of line has its logger, named after where it comes from, so an operator can raise or lower one
part's level:

* ``kraftlog.node`` -- the process: started, refused, signals, stopped;
* ``kraftlog.net.driver`` -- connections and listeners (closes, refusals, link-filter rules);
* ``kraftlog.storage`` -- the file-backed disk (I/O errors, injected faults, dropped bytes at load);
* ``kraftlog.broker`` -- the broker core's own lines (log directory failures, strays, registration);
* ``kraftlog.metadata`` -- metadata records a node could not apply (ERROR, Kafka's metadata fault handler);
* ``kraftlog.controller.unclean_recovery`` -- KIP-966's unclean recoveries, step by step.

Configured from ``cluster.json``'s configs (Kafka-style names, every node alike):

* ``log.level`` -- the ``kraftlog`` loggers' level (``INFO`` by default; DEBUG, INFO, WARNING, ERROR);
* ``log.levels`` -- per-logger levels, ``name=LEVEL`` separated by commas
  (``kraftlog.net.driver=WARNING,kraftlog.controller.unclean_recovery=DEBUG``);
* ``log.format`` -- ``text`` (``2026-11-28 16:20:01 [broker-0] started ...``, one line per event, as before)
  or ``json`` (one JSON object per line: ``ts``, ``node``, ``logger``, ``level``, ``message``).

Lines go to the process's stderr, which the launcher appends to ``DIR/<node>.log``. A bad value is a
ValueError naming the config (the node exits 2).
"""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["configure", "NODE", "DRIVER", "STORAGE", "BROKER", "METADATA", "UNCLEAN_RECOVERY", "LOG_CONFIGS"]

NODE = "kraftlog.node"
DRIVER = "kraftlog.net.driver"
STORAGE = "kraftlog.storage"
BROKER = "kraftlog.broker"
METADATA = "kraftlog.metadata"
UNCLEAN_RECOVERY = "kraftlog.controller.unclean_recovery"
#: The configs this module reads (defaults).
LOG_CONFIGS = {"log.level": "INFO", "log.levels": "", "log.format": "text"}
_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class _TextFormatter(logging.Formatter):
    """``YYYY-MM-DD HH:MM:SS [node] message`` (local time), a WARNING or worse with its level first."""

    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        level = f"{record.levelname} " if record.levelno >= logging.WARNING else ""
        return f"{stamp} [{self.node}] {level}{record.getMessage()}"


class _JsonFormatter(logging.Formatter):
    def __init__(self, node: str) -> None:
        super().__init__()
        self.node = node

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps({"ts": round(record.created, 3), "node": self.node, "logger": record.name,
                           "level": record.levelname, "message": record.getMessage()})


def _level(value: str, config: str) -> int:
    name = value.strip().upper()
    if name not in _LEVELS:
        raise ValueError(f"{config}: {value!r} is not a level (expected one of {', '.join(_LEVELS)})")
    return int(getattr(logging, name))


def configure(node: str, config: dict[str, str], stream=None) -> logging.Logger:  # type: ignore[no-untyped-def]
    """Send the ``kraftlog`` loggers to ``stream`` (stderr) for node ``node`` as ``config`` says (the
    module doc); returns the ``kraftlog.node`` logger. ValueError for a bad ``log.*`` value."""
    fmt = config.get("log.format", LOG_CONFIGS["log.format"]).strip().lower()
    if fmt not in ("text", "json"):
        raise ValueError(f"log.format: {fmt!r} is not text or json")
    root = logging.getLogger("kraftlog")
    root.setLevel(_level(config.get("log.level", LOG_CONFIGS["log.level"]), "log.level"))
    for item in filter(None, (s.strip() for s in config.get("log.levels", "").split(","))):
        name, sep, value = item.partition("=")
        if not sep or not name.strip().startswith("kraftlog"):
            raise ValueError(f"log.levels: {item!r} is not kraftlog.<logger>=LEVEL")
        logging.getLogger(name.strip()).setLevel(_level(value, "log.levels"))
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(_JsonFormatter(node) if fmt == "json" else _TextFormatter(node))
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.propagate = False
    return logging.getLogger(NODE)
