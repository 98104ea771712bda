"""The scenario language, driver-neutral: the model, the YAML loader and parser, ``dump``, the conditions
and the campaign's story generator (:mod:`kraftlog.scenario.generator`). docs/SCENARIOS.md is the format;
the simulator (``kraftlog.sim``) and the real-process driver (``kraftlog.net``) run what this parses."""

from .model import *  # noqa: F403 — the package's public names are the model's __all__
from .model import __all__  # noqa: F401
