"""A sans-I/O admin client: CreateTopics, IncrementalAlterConfigs and ElectLeaders sent to the controller
(KIP-919 style ``bootstrap.controllers``); responses are kept by call id for the driver.

Like Kafka's ``KafkaAdminClient``, a call has a deadline (``timeout_ms`` from its submission, Kafka's
``default.api.timeout.ms`` / the per-call ``timeoutMs``): each attempt gets ``request.timeout.ms`` (at
most what is left), and an attempt that ends without an answer because the connection failed
(refused, connection setup timeout, reset) is retried after ``retry.backoff.ms`` once the node is out
of reconnect backoff, until the deadline. Connections follow :mod:`kraftlog.client.network`.
"""

from __future__ import annotations

from dataclasses import dataclass
from random import Random

from ..protocol.errors import Errors
from ..protocol.messages import Envelope
from ..protocol.node import Address, Message, earliest
from .network import NetworkClient

CONTROLLER = "controller"
#: What an admin request waits under in NodeBase's in-flight table: ("req", call id).
AdminContext = tuple[str, int]


@dataclass(slots=True)
class AdminCall:
    """One submitted call: ``request`` for ``dst``, answered by ``deadline_ms`` or timed out; the next
    attempt waits for ``next_attempt_ms`` (ms)."""

    request: Message
    dst: Address
    deadline_ms: int
    next_attempt_ms: int
    inflight: bool = False


class Admin(NetworkClient[AdminContext]):
    """Sends admin requests on the driver's behalf; ``results`` maps a call id to its response, or to
    ``Errors.REQUEST_TIMED_OUT`` when none came by the call's deadline.

    ``rng`` (seeded) draws reconnect-backoff jitter; without one, a generator seeded with the client id
    is used, so runs stay deterministic. Kafka's configs and defaults (ms): ``request.timeout.ms`` 30000,
    ``retry.backoff.ms`` 100, and NetworkClient's ``connection_configs``."""

    def __init__(self, client_id: str = "admin", rng: Random | None = None, *, request_timeout_ms: int = 30000,
                 retry_backoff_ms: int = 100, **connection_configs: int) -> None:
        super().__init__(client_id, rng if rng is not None else Random(f"admin:{client_id}"),
                         request_timeout_ms=request_timeout_ms, **connection_configs)
        self.retry_backoff_ms = retry_backoff_ms
        self.results: dict[int, object] = {}
        self.calls: dict[int, AdminCall] = {}
        self._next_call = 0
        self._worked_ms = -1

    def submit(self, request: Message, now_ms: int, timeout_ms: int = 30000, dst: Address = CONTROLLER) -> int:
        """Send ``request`` to ``dst``, answered within ``timeout_ms``; returns the id under which
        ``results`` will hold the answer."""
        self._next_call += 1
        rid = self._next_call
        self.calls[rid] = AdminCall(request, dst, now_ms + timeout_ms, now_ms)
        self._work(now_ms)
        return rid

    def tick(self, now_ms: int) -> None:
        self._expire_requests(now_ms)
        self._work(now_ms)

    def next_deadline(self) -> int | None:
        """The earliest network deadline, call deadline or retry backoff end (ms)."""
        d = self._network_deadline()
        for call in self.calls.values():
            d = earliest(d, call.deadline_ms)
            if not call.inflight and call.next_attempt_ms > self._worked_ms:
                d = earliest(d, call.next_attempt_ms)
        return d

    def on_request(self, now_ms: int, envelope: Envelope) -> None:
        pass

    def on_response(self, now_ms: int, context: AdminContext, message: Message) -> None:
        rid = context[1]
        if self.calls.pop(rid, None) is not None:
            self.results[rid] = message

    def on_timeout(self, now_ms: int, context: AdminContext) -> None:
        call = self.calls.get(context[1])
        if call is not None:
            call.inflight = False
            call.next_attempt_ms = now_ms + self.retry_backoff_ms
        self._work(now_ms)

    def _work(self, now_ms: int) -> None:
        """Time out calls past their deadline; send every call that is due to a node not in backoff."""
        self._worked_ms = now_ms
        self._wake_ms = None
        for rid in sorted(self.calls):
            call = self.calls[rid]
            if call.inflight:
                continue
            if now_ms >= call.deadline_ms:
                del self.calls[rid]
                self.results[rid] = Errors.REQUEST_TIMED_OUT
            elif now_ms >= call.next_attempt_ms and not self.is_unavailable(call.dst, now_ms):
                call.inflight = True
                self.send_request(call.dst, call.request, now_ms,
                                  min(self.request_timeout_ms, call.deadline_ms - now_ms), ("req", rid))
