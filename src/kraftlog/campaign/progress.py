"""The campaign's progress on stderr: rich's live bar in a terminal, else a line every few seconds."""

from __future__ import annotations

import time


def _clock(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class ProgressLines:
    """Progress outside a terminal: a line ``campaign: D/T runs (P%), elapsed H:MM:SS, eta H:MM:SS``
    through ``write`` every :meth:`interval` seconds (5 s, up to 60 s in long campaigns: elapsed / 20).
    The ETA extrapolates from the runs done since this process started (``done`` at start excluded)."""

    def __init__(self, write, total: int, done: int = 0, clock=time.monotonic) -> None:
        self.write, self.total, self.first, self.done, self.clock = write, total, done, done, clock
        self.start = clock()
        self.last: float | None = None

    @staticmethod
    def interval(elapsed: float) -> float:
        return max(5.0, min(60.0, elapsed / 20))

    def line(self, elapsed: float) -> str:
        ran, left = self.done - self.first, self.total - self.done
        eta = _clock(elapsed / ran * left) if ran > 0 else ("0:00:00" if left <= 0 else "?")
        pct = 100 * self.done // self.total if self.total else 100
        return f"campaign: {self.done}/{self.total} runs ({pct}%), elapsed {_clock(elapsed)}, eta {eta}"

    def update(self, done: int | None = None, force: bool = False) -> None:
        if done is not None:
            self.done = done
        now = self.clock()
        if not force and self.last is not None and now - self.last < self.interval(now - self.start):
            return
        self.last = now
        self.write(self.line(now - self.start))


class Progress:
    """The campaign's progress on ``console`` (stderr): rich's live bar (``mode="bar"``), lines every few
    seconds (``"lines"``), or nothing (``"none"``)."""

    def __init__(self, mode: str, console, total: int, done: int, label: str) -> None:
        self.mode, self.console, self.total, self.done = mode, console, total, done
        self._bar = self._lines = None
        if mode == "bar":
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("[bold]campaign[/bold] {task.description}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("runs"), TimeElapsedColumn(), TextColumn("eta"),
                                 TimeRemainingColumn(), console=console, transient=False)
            self._task = self._bar.add_task(label, total=total, completed=done)
            self._bar.start()
        elif mode == "lines":
            self._write(f"campaign: {label}")
            self._lines = ProgressLines(self._write, total, done)
            self._lines.update(force=True)

    def _write(self, line: str) -> None:
        try:
            self.console.file.write(line + "\n")
            self.console.file.flush()
        except (OSError, ValueError):
            pass

    def update(self, done: int | None = None) -> None:
        if done is not None:
            self.done = done
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done)
        elif self._lines is not None:
            self._lines.update(self.done)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self._lines is not None:
            self._lines.update(self.done, force=True)
            self._lines = None
