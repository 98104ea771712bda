"""The machine a benchmark ran on, as its output states it (figures from machines that differ by 2x in speed are
compared by the ratios measured in one run; the machine says which one)."""

from __future__ import annotations

import os
import platform


def describe() -> str:
    """``<CPU model>, <n> cores, Python <version>, <system> <release>``."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{platform.system()} {platform.release()}")
