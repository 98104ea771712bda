"""The shape of Kafka's ``KafkaApis`` dispatch table: a request type → the handler that answers it.

A handler takes the time (ms) and the request's envelope; it answers through the broker's channel, now
or later (a parked Fetch, an acks=all Produce, a group join), or not at all (acks=0).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias, TypeVar, cast

from ...protocol.node import Envelope, Message, Request

#: A request handler: ``(now_ms, envelope)``.
Handler: TypeAlias = Callable[[int, Envelope], None]
#: A dispatch table (a family's, or KafkaApis' whole one).
HandlerTable: TypeAlias = dict[type[Message], Handler]

R = TypeVar("R", bound=Request)


def entry(kind: type[R], handler: Callable[[int, Envelope[R]], None]) -> tuple[type[Message], Handler]:
    """One row of a dispatch table: requests of type ``kind`` go to ``handler``. The table is looked up by
    the request's exact type, so ``handler`` only ever sees an ``Envelope[R]``."""
    return kind, cast(Handler, handler)
