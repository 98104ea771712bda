"""kraftlog: a Kafka-wire-compatible replicated log with a deterministic simulator.

Implements the replication safety protocol of KIP-497, KIP-903, KIP-966 and KIP-320.
See docs/DESIGN.md for the architecture: a sans-I/O core driven by drivers.
"""

import os as _os
import sys as _sys

__version__ = "0.1.0"


def _keep_hypothesis_out_of_the_working_directory() -> None:
    """kio's types register Hypothesis strategies when Hypothesis is installed (the test extra), and
    Hypothesis then caches Unicode tables in ``./.hypothesis``: every kraftlog process (a CLI command,
    a cluster's node processes, Spark's Python workers) would leave that folder in its working
    directory. Outside pytest, point Hypothesis at ``$XDG_CACHE_HOME/kraftlog/hypothesis``."""
    if "pytest" in _sys.modules or "hypothesis" in _sys.modules:
        return  # a test session, or a program that set Hypothesis up itself
    try:
        from hypothesis.configuration import set_hypothesis_home_dir
    except ImportError:  # the main install has no Hypothesis: nothing is written
        return
    cache = _os.environ.get("XDG_CACHE_HOME") or _os.path.join(_os.path.expanduser("~"), ".cache")
    set_hypothesis_home_dir(_os.path.join(cache, "kraftlog", "hypothesis"))


_keep_hypothesis_out_of_the_working_directory()
