"""A sans-I/O admin client: CreateTopics, IncrementalAlterConfigs and ElectLeaders sent to the controller
(KIP-919 style ``bootstrap.controllers``); responses are kept by correlation id for the driver."""

from __future__ import annotations

from ..protocol.errors import Errors
from ..protocol.node import NodeBase

CONTROLLER = "controller"


class Admin(NodeBase):
    """Sends one admin request at a time on the driver's behalf; ``results`` maps a request id to its
    response, or to ``Errors.REQUEST_TIMED_OUT`` when none came within ``timeout_ms``."""

    def __init__(self, client_id: str = "admin") -> None:
        super().__init__(client_id)
        self.results: dict[int, object] = {}

    def submit(self, request, now_ms: int, timeout_ms: int = 30000, dst=CONTROLLER) -> int:
        """Send ``request`` to ``dst``; returns the id under which ``results`` will hold the answer."""
        corr = self._next_correlation + 1
        self.send_request(dst, request, now_ms, timeout_ms, ("req", corr))
        return corr

    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)

    def next_deadline(self) -> int | None:
        return self._request_deadline()

    def on_request(self, now_ms, envelope) -> None:
        pass

    def on_response(self, now_ms: int, context, message) -> None:
        self.results[context[1]] = message

    def on_timeout(self, now_ms: int, context) -> None:
        self.results[context[1]] = Errors.REQUEST_TIMED_OUT
