"""The event history of a simulation run and its digest.

Every delivered message (time, source, destination, correlation id, type) and every recorded event
(faults, acknowledgements, consumed records, metadata changes) feeds a running SHA-256, so the same
scenario, level and seed give the same ``history_digest`` byte for byte.
"""

from __future__ import annotations

import hashlib


class History:
    """``events``: (time ms, kind, fields dict) tuples in order; ``digest()``: ``sha256:<hex>``."""

    def __init__(self) -> None:
        self.events: list[tuple[int, str, dict]] = []
        self._hash = hashlib.sha256()

    def record(self, now_ms: int, kind: str, **fields) -> None:
        """Append an event; ``fields`` must be deterministic (no sets, no object ids). Keyword order
        is fixed by each call site, so the dict's repr is deterministic as it is."""
        self.events.append((now_ms, kind, fields))
        self._hash.update(f"{now_ms}|{kind}|{fields!r}\n".encode())

    def message(self, now_ms: int, src, dst, correlation_id: int, message) -> None:
        """Feed one delivered message to the digest (not kept as an event: there are millions)."""
        self._hash.update(f"{now_ms}|{src}>{dst}|{correlation_id}|{type(message).__name__}\n".encode())

    def of_kind(self, *kinds: str):
        return [e for e in self.events if e[1] in kinds]

    def digest(self) -> str:
        return "sha256:" + self._hash.hexdigest()
