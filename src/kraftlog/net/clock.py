"""The TCP driver's time (:mod:`kraftlog.net.driver`): :class:`Clock`, wall-clock milliseconds that never go
backwards, and :class:`Wake`, what the driver's loop sleeps on between a node's deadlines."""

from __future__ import annotations

import asyncio
import time

__all__ = ["Clock", "Wake"]


class Clock:
    """Wall-clock milliseconds that never go backwards: the wall clock at construction plus the
    monotonic clock since."""

    def __init__(self) -> None:
        self._wall0 = int(time.time() * 1000)
        self._mono0 = time.monotonic()

    def now_ms(self) -> int:
        return self._wall0 + int((time.monotonic() - self._mono0) * 1000)


def _wake_waiter(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


class Wake:
    """What ``run_until`` sleeps on: an :class:`asyncio.Event` waited for with a timeout, without the
    task and cancellation ``asyncio.wait_for(event.wait(), timeout)`` costs on every wake (the driver
    wakes its loop after every event). ``set`` wakes the sleeper (or makes the next ``wait`` return at
    once), ``clear`` forgets a wake not yet slept on."""

    __slots__ = ("_set", "_waiter")

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future | None = None

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    def is_set(self) -> bool:
        return self._set

    async def wait(self, timeout_s: float) -> None:
        """Until :meth:`set` (at once if it was set since the last :meth:`clear`) or ``timeout_s``."""
        if self._set:
            return
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout_s, _wake_waiter, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
