"""Option parsing shared by the command-line modules (``kraftlog.cli``, ``kraftlog.net.cli``)."""

from __future__ import annotations

import signal

import click

from .level import Level


def level_option(ctx, param, value) -> Level | None:
    """click callback for ``--level``: a Level, None when not given; a clear usage error (exit 2) for a
    name that is not an implemented level."""
    if value is None:
        return None
    try:
        return Level.parse(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


class sigterm_interrupts:
    """``with sigterm_interrupts() as term:`` SIGTERM raises KeyboardInterrupt inside the block, so a
    command's Ctrl-C cleanup also runs for a ``kill`` or a CI job's timeout; ``term.signum`` is then
    ``signal.SIGTERM`` (None otherwise). The previous handler is put back on exit. Main thread only
    (``signal.signal``'s rule)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous = None

    def _on_sigterm(self, signum, frame):
        self.signum = signum
        raise KeyboardInterrupt

    def __enter__(self) -> sigterm_interrupts:
        self._previous = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, *exc_info) -> None:
        signal.signal(signal.SIGTERM, self._previous)
