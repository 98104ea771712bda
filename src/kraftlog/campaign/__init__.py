"""The fault campaign's Spark-free parts (issue #5; issue 12; issue 26 item 5): its tasks and the
executor side (:mod:`.results`: one task in, one results row out, the ``results.parquet`` schema), its
figures and comparisons (:mod:`.summary`), what it writes into ``--out`` and reads back on ``--resume``
(:mod:`.outputs`), its progress lines (:mod:`.progress`) and the failing run its report draws
(:mod:`.replay`, imported on its own: it loads the report and matplotlib). All of it runs and is tested
without a JVM; :mod:`kraftlog.spark.campaign` runs the tasks on Spark executors and stops the JVM it
started. Importing this package loads neither Spark, the simulator nor matplotlib (the executor side
imports the simulator when it runs).
"""

from .outputs import MANIFEST, RESULTS, CampaignError, read_manifest, read_results
from .results import (
    DEFAULT_SEEDS,
    GATE_LEVEL,
    RUN_TIME_LIMIT_S,
    build_tasks,
    error_columns,
    failure_filename,
    in_gate,
    run_id,
    run_one,
    schema,
    task_key,
    unclean_election_allowed,
    unsafe_within_budget,
    verdict_columns,
)
from .summary import (
    COMPARISONS,
    EXECUTION_FIELDS,
    compare_levels,
    comparison_key,
    comparisons,
    level_comparisons,
    summarize,
)

__all__ = [
    "COMPARISONS",
    "DEFAULT_SEEDS",
    "EXECUTION_FIELDS",
    "GATE_LEVEL",
    "MANIFEST",
    "RESULTS",
    "RUN_TIME_LIMIT_S",
    "CampaignError",
    "build_tasks",
    "compare_levels",
    "comparison_key",
    "comparisons",
    "error_columns",
    "failure_filename",
    "in_gate",
    "level_comparisons",
    "read_manifest",
    "read_results",
    "run_id",
    "run_one",
    "schema",
    "summarize",
    "task_key",
    "unclean_election_allowed",
    "unsafe_within_budget",
    "verdict_columns",
]
