"""The scenario language, driver-neutral: the model (:mod:`.model`: specs, conditions, the scenario), the steps
(:mod:`.steps`: one class per verb), the YAML loader with line tracking (:mod:`.yaml_lines`), the parser
(:mod:`.parser`), ``dump`` (:mod:`.dump`), and the campaign's story generator (:mod:`kraftlog.scenario.generator`,
drawing from the episodes of :mod:`.episodes`). docs/SCENARIOS.md is the format; the simulator (``kraftlog.sim``)
and the real-process driver (``kraftlog.net``) run what this parses, through one step interpreter
(:mod:`.interpreter`), and each hands back a :class:`~kraftlog.scenario.result.RunResult`."""

from .dump import *  # noqa: F403
from .dump import __all__ as _dump_all
from .model import *  # noqa: F403
from .model import __all__ as _model_all
from .parser import *  # noqa: F403
from .parser import __all__ as _parser_all
from .steps import *  # noqa: F403
from .steps import __all__ as _steps_all

__all__ = [*_model_all, *_steps_all, *_parser_all, *_dump_all]
