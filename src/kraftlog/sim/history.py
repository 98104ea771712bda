"""The event history of a simulation run and its digest.

Every delivered message (time, source, destination, correlation id, type) and every recorded event
(faults, acknowledgements, consumed records, metadata changes) feeds a running SHA-256, so the same
scenario, level and seed give the same ``history_digest`` byte for byte.
"""

from __future__ import annotations

import hashlib

#: Lines buffered before they are hashed. SHA-256 of a concatenation equals the digest of feeding its
#: parts in order, so buffering changes the cost, never the digest.
FLUSH_LINES = 4096


class History:
    """``recorded``: how many events were recorded (an event's sequence number is the count before it);
    ``digest()``: ``sha256:<hex>``.

    The digest is SHA-256 over one line per entry, in the order the entries happened:
    ``{ms}|{src}>{dst}|{correlation id}|{message type}`` for a delivered message and
    ``{ms}|{kind}|{fields!r}`` for a recorded event, each ending in ``\n``. The simulator's event loop
    appends message lines to ``lines`` itself (its hot path) and calls :meth:`flush` once
    ``FLUSH_LINES`` are pending."""

    __slots__ = ("recorded", "_hash", "lines")

    def __init__(self) -> None:
        self.recorded = 0
        self._hash = hashlib.sha256()
        self.lines: list[str] = []

    def record(self, now_ms: int, kind: str, **fields) -> None:
        """Record an event: it feeds the digest (events are not kept; the timeline and the verdict are
        the run's readable record). ``fields`` must be deterministic (no sets, no object ids). Keyword
        order is fixed by each call site, so the dict's repr is deterministic as it is."""
        self.recorded += 1
        lines = self.lines
        lines.append(f"{now_ms}|{kind}|{fields!r}\n")
        if len(lines) >= FLUSH_LINES:
            self.flush()

    def flush(self) -> None:
        """Hash the pending ``lines``."""
        # Strings are not tracked by the GC (a buffer of tuples would be, and costs more than it saves).
        self._hash.update("".join(self.lines).encode())
        self.lines.clear()

    def digest(self) -> str:
        """``sha256:<hex>`` of everything fed so far (recording may continue afterwards)."""
        self.flush()
        return "sha256:" + self._hash.hexdigest()
