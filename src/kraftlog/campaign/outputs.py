"""What the campaign writes into ``--out``, Spark-free: ``campaign.json`` (the campaign's description,
read by ``--resume``, :func:`read_manifest`, :func:`check_resume`), ``results.parquet/`` (parts appended
as runs finish, :class:`Parts`; :func:`read_results`), ``summary.json`` (:func:`write_json`) and
``failures/*.yaml``; :func:`prepare_out` clears what an earlier campaign left."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from .results import schema

#: Finished rows are appended to results.parquet at most every FLUSH_MIN_S seconds, or every
#: FLUSH_FRACTION of the elapsed time when that is longer (a 3-hour campaign writes ~100 parts), and
#: always at the end or on an interruption.
FLUSH_MIN_S = 5.0
FLUSH_FRACTION = 0.05

#: Files in ``--out``: the results directory (parquet parts) and the campaign's description.
RESULTS = "results.parquet"
MANIFEST = "campaign.json"


class CampaignError(RuntimeError):
    """The campaign could not run or resume; the message is one line naming the problem (the CLI prints
    it and exits 2): an unwritable ``--out``, no Java, an unreachable master, Spark failing to start, a
    failed Spark job, or ``--resume`` options that do not contain the interrupted campaign's."""


def level_order(levels: list[str]):
    rank = {lv: i for i, lv in enumerate(levels)}
    return lambda r: (0 if r["kind"] == "seed" else 1, rank.get(r["level"], 99), r["seed"], r["scenario"])


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a dot file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_manifest(out: str | os.PathLike) -> dict:
    """The ``campaign.json`` of the campaign in ``out``: ``{"version": 1, "levels": [...], "seeds": n,
    "seed_offset": k, "scenario_dir": path | None, "library": [scenario name...], "runs": n, "master": url}``.

    Raises CampaignError when there is none or it cannot be read."""
    path = Path(out) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CampaignError(f"--resume: there is no campaign to resume in {out} (no {MANIFEST}); "
                            f"run without --resume to start one") from None
    except (OSError, ValueError) as exc:
        raise CampaignError(f"--resume: cannot read {path}: {exc}") from None
    keys = {"levels", "seeds", "seed_offset", "scenario_dir", "library"}
    if not isinstance(data, dict) or not keys <= set(data):
        raise CampaignError(f"--resume: {path} is not a kraftlog campaign description (it lacks "
                            f"{', '.join(sorted(keys - set(data if isinstance(data, dict) else ())))})")
    return data


def read_results(out: str | os.PathLike) -> list[dict]:
    """The rows in ``out/results.parquet`` (every part; [] when there is none), as plain dicts with
    :func:`schema`'s columns."""
    import pyarrow.parquet as pq

    path = Path(out) / RESULTS
    if not path.is_dir():
        return []
    return pq.read_table(path, schema=schema()).to_pylist()


def _seed_text(offset: int, count: int) -> str:
    return f"seeds {offset}..{offset + count - 1}" if count else "no seeds"


def check_resume(manifest: dict, out: Path, levels: list[str], seeds: int, seed_offset: int,
                 library: list[str]) -> None:
    """Raise CampaignError unless the options contain the interrupted campaign's runs: its levels, its
    seed range and its library scenarios (by name)."""
    missing = [lv for lv in manifest["levels"] if lv not in levels]
    if missing:
        raise CampaignError(f"--resume: the campaign in {out} ran levels {','.join(manifest['levels'])}; "
                            f"--levels {','.join(levels)} leaves out {','.join(missing)} "
                            f"(leave --levels out to use the campaign's)")
    lo, n = int(manifest["seed_offset"]), int(manifest["seeds"])
    if n and not (seed_offset <= lo and lo + n <= seed_offset + seeds):
        raise CampaignError(f"--resume: the campaign in {out} ran {_seed_text(lo, n)}; --seeds {seeds} "
                            f"--seed-offset {seed_offset} give {_seed_text(seed_offset, seeds)}, which do not "
                            f"contain them (leave --seeds and --seed-offset out to use the campaign's)")
    gone = sorted(set(manifest["library"]) - set(library))
    if gone:
        names = ", ".join(gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
        raise CampaignError(f"--resume: the campaign in {out} ran the library scenario(s) {names}, which the "
                            f"library given now does not have (leave --scenarios and --no-library out to use "
                            f"the campaign's)")


def check_out(out: Path) -> None:
    """Raise CampaignError unless ``out`` is (or can be made) a directory this process can write into."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".kraftlog-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise CampaignError(f"cannot write to --out {out}: {exc.strerror or exc}") from None


class Parts:
    """The parts of ``out/results.parquet``: finished rows are buffered and appended as a new part
    (:meth:`add` flushes when due, see :data:`FLUSH_MIN_S`), each part written to a dot file and renamed
    (readers skip dot files), after the failure files of its failing rows. ``part-00000`` is empty and
    carries the schema, so that even a campaign interrupted before its first run leaves a readable
    dataset."""

    def __init__(self, out: Path, order, clock=time.monotonic) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.out, self.dir, self.order, self.clock = out, out / RESULTS, order, clock
        self.dir.mkdir(exist_ok=True)
        (out / "failures").mkdir(exist_ok=True)
        numbers = [int(p.name[5:10]) for p in self.dir.glob("part-*.parquet") if p.name[5:10].isdigit()]
        self.next = max(numbers) + 1 if numbers else 0
        self.schema = schema()
        if not numbers:
            self._write(pa.Table.from_pylist([], schema=self.schema), pq)
        self.buffer: list[dict] = []
        self.start = clock()
        self.last: float | None = None
        self.parts_written = 0

    def _write(self, table, pq) -> None:
        name = f"part-{self.next:05d}.parquet"
        tmp = self.dir / f".{name}.tmp"
        pq.write_table(table, tmp)
        os.replace(tmp, self.dir / name)
        self.next += 1

    def add(self, rows: list[dict]) -> None:
        self.buffer.extend(rows)
        now = self.clock()
        if self.last is None or now - self.last >= max(FLUSH_MIN_S, FLUSH_FRACTION * (now - self.start)):
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.buffer:
            return
        rows = sorted(self.buffer, key=self.order)
        for row in rows:
            text = row.pop("_yaml", None)
            if text is not None:
                (self.out / row["failure_file"]).write_text(text, encoding="utf-8")
        table = pa.Table.from_pylist([{c: r.get(c) for c in self.schema.names} for r in rows], schema=self.schema)
        self._write(table, pq)
        self.buffer = []
        self.last = self.clock()
        self.parts_written += 1


def prepare_out(out: Path, fresh: bool) -> None:
    """A fresh campaign replaces what an earlier one left in ``out``: results, summary, report, failure
    files, description and Spark log. A resumed one keeps them but the report, written again at the end."""
    if not fresh:
        (out / "report.html").unlink(missing_ok=True)
        return
    for name in (RESULTS, "failures"):
        path = out / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    for name in ("summary.json", "report.html", MANIFEST, "spark.log"):
        (out / name).unlink(missing_ok=True)
