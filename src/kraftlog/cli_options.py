"""Option parsing shared by the command-line modules (``kraftlog.cli``, ``kraftlog.net.cli``)."""

from __future__ import annotations

import signal
import threading
import time

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


#: Set by :class:`sigterm_interrupts`' handler: a SIGINT or SIGTERM arrived (see :func:`interruptible_sleep`).
INTERRUPTED = threading.Event()


def interruptible_sleep(seconds: float, step_s: float = 0.2) -> None:
    """``time.sleep`` in steps that raise KeyboardInterrupt once :data:`INTERRUPTED` is set (in the main thread;
    another thread's sleep just ends): a command's waits end on Ctrl-C even when the KeyboardInterrupt the
    signal raised was swallowed by code it interrupted (a C extension's callback, a library's broad
    ``except``)."""
    deadline = time.monotonic() + max(0.0, seconds)
    while True:
        if INTERRUPTED.is_set():
            if threading.current_thread() is threading.main_thread():
                raise KeyboardInterrupt
            return
        left = deadline - time.monotonic()
        if left <= 0:
            return
        time.sleep(min(step_s, left))


class sigterm_interrupts:
    """``with sigterm_interrupts() as term:`` SIGINT and SIGTERM raise KeyboardInterrupt inside the block, so a
    command's Ctrl-C cleanup also runs for a ``kill`` or a CI job's timeout, and for a Ctrl-C even when the
    process was started with SIGINT ignored (a background job of a shell without job control inherits that);
    both are unblocked. ``term.signum`` is the signal (None otherwise), and :data:`INTERRUPTED` is set. The
    previous handlers are put back on exit. Main thread only (``signal.signal``'s rule)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, object] = {}

    def _on_signal(self, signum, frame):
        self.signum = signum
        INTERRUPTED.set()
        raise KeyboardInterrupt

    def __enter__(self) -> sigterm_interrupts:
        INTERRUPTED.clear()
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        return self

    def __exit__(self, *exc_info) -> None:
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)  # type: ignore[arg-type]
