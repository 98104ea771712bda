"""Issue 29 item 4: a node's logs go through the standard logging module, a logger per source, with levels
and a text or JSON format chosen by cluster.json's log.* configs."""

from __future__ import annotations

import io
import json
import logging

import pytest

from kraftlog.net import node_logging as nl


@pytest.fixture(autouse=True)
def _restore_kraftlog_loggers():
    root = logging.getLogger("kraftlog")
    saved = (root.level, list(root.handlers), root.propagate)
    levels = {name: logging.getLogger(name).level for name in (nl.DRIVER, nl.UNCLEAN_RECOVERY)}
    yield
    root.setLevel(saved[0])
    root.handlers[:] = saved[1]
    root.propagate = saved[2]
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def test_text_lines_keep_the_node_log_format_and_name_warnings():
    out = io.StringIO()
    log = nl.configure("broker-1", {}, out)
    log.info("started")
    logging.getLogger(nl.METADATA).error("record 7 cannot be applied")
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("[broker-1] started")
    assert lines[1].endswith("[broker-1] ERROR record 7 cannot be applied")


def test_json_lines_carry_node_logger_and_level():
    out = io.StringIO()
    nl.configure("controller", {"log.format": "json"}, out)
    logging.getLogger(nl.UNCLEAN_RECOVERY).info("unclean recovery of t-0: elected: broker 2")
    (record,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (record["node"], record["logger"], record["level"]) == (
        "controller", "kraftlog.controller.unclean_recovery", "INFO")
    assert record["message"] == "unclean recovery of t-0: elected: broker 2" and record["ts"] > 0


def test_levels_per_logger_filter_what_is_written():
    out = io.StringIO()
    nl.configure("broker-0", {"log.level": "WARNING", "log.levels": "kraftlog.controller.unclean_recovery=DEBUG"},
                 out)
    logging.getLogger(nl.DRIVER).info("closing conn-1: idle")
    logging.getLogger(nl.UNCLEAN_RECOVERY).debug("asked broker 1")
    logging.getLogger(nl.STORAGE).warning("No space left on device")
    text = out.getvalue()
    assert "closing conn-1" not in text
    assert "asked broker 1" in text and "WARNING No space left on device" in text


@pytest.mark.parametrize("config, message", [
    ({"log.level": "LOUD"}, "log.level: 'LOUD' is not a level"),
    ({"log.format": "xml"}, "log.format: 'xml' is not text or json"),
    ({"log.levels": "driver"}, "log.levels: 'driver' is not kraftlog.<logger>=LEVEL"),
])
def test_a_bad_log_config_is_refused_naming_it(config, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.").replace("<", ".").replace(">", ".")):
        nl.configure("broker-0", config, io.StringIO())
