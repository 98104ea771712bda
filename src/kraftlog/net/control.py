"""Chaos mode's control channel of a node process (:class:`ControlChannel`): JSON lines on loopback that
change the link rules of the node's :class:`~kraftlog.net.link_filter.LinkFilter`, release held messages,
ask for the controller's committed state, or run a command the process serves itself (a broker's
``disk_full``). ``kraftlog cluster`` and the fault injectors (:mod:`kraftlog.net.cluster`) are its clients.
"""

from __future__ import annotations

import asyncio
import json
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .driver import NodeDriver

__all__ = ["ControlChannel", "CONTROL_LINE_BYTES"]

#: The longest control command line (bytes) the control channel reads.
CONTROL_LINE_BYTES = 64 * 1024


class ControlChannel:
    """The control channel of the node ``driver`` drives. ``handlers``: the process's own commands, cmd ->
    handler(command) -> answer fields (ValueError for a malformed command), answered before the link
    filter's. :meth:`control` answers one command; :meth:`start` serves them on a port."""

    def __init__(self, driver: NodeDriver,
                 handlers: dict[str, Callable[[dict[str, object]], dict[str, object]]] | None = None) -> None:
        self.driver = driver
        self.handlers = dict(handlers or {})

    def control(self, command: object) -> dict[str, object]:
        """Apply one control command to the link filter and answer it (what the control channel sends
        back): ``{"ok": true, "node", "cmd", "rules", "held", "held_by"}`` (plus ``"released"``, the
        number of held messages a release freed), or ``{"ok": false, "node", "error"}`` for a malformed
        command (nothing changed).

        Commands are cluster-wide: every node gets the same one and applies it to its own edge.
        ``{"cmd": "isolate", "nodes": [0, "controller"]}``, ``{"cmd": "partition", "groups": [[0, 1],
        [2, "controller"]]}``, ``{"cmd": "cut", "from": 0, "to": 1}``, ``{"cmd": "heal"}`` or
        ``{"cmd": "heal", "nodes": [0]}``, ``{"cmd": "hold", "api": "AlterPartition", "from": 0, "to":
        "controller"}`` (api/from/to optional, null = any), ``{"cmd": "release", ...}`` (the same
        fields), ``{"cmd": "status"}``. ``src``/``dst`` may stand for ``from``/``to``. Nodes are broker
        ids and ``"controller"``; clients are never named (they are in no group).

        ``{"cmd": "state"}`` changes nothing and answers ``{"ok": true, "node", "cmd", "state"}`` with the
        node's committed metadata (:meth:`kraftlog.metadata.image.MetadataImage.snapshot`): asked of the
        controller, the state the simulator's scenario conditions read (``scenario run --real``).

        Commands in ``handlers`` (the process's own: a broker's ``{"cmd": "disk_full", "for_ms":
        N}``, see :mod:`kraftlog.net.node`) are answered by their handler."""
        driver = self.driver
        me = driver.node.node_id
        link_filter = driver.link_filter
        if link_filter is None:
            return {"ok": False, "node": me, "error": "this node runs without a link filter (not in chaos mode)"}
        fields: dict[str, object] = command if isinstance(command, dict) else {}
        cmd = fields.get("cmd")
        handler = self.handlers.get(cmd) if isinstance(cmd, str) else None
        if handler is not None:
            try:
                handled = handler(fields)
            except ValueError as exc:
                return {"ok": False, "node": me, "error": str(exc)}
            driver.log(f"control: {json.dumps(command, sort_keys=True)}")
            driver.kick()  # the command may have made the node's next deadline due
            return {"ok": True, "node": me, "cmd": cmd, **handled}
        if cmd == "state" and len(fields) == 1:
            image = getattr(driver.node, "image", None)
            if image is None:
                return {"ok": False, "node": me, "error": "this node keeps no metadata image"}
            return {"ok": True, "node": me, "cmd": cmd, "state": image.snapshot()}
        try:
            released = link_filter.apply(command)
        except ValueError as exc:
            return {"ok": False, "node": me, "error": str(exc)}
        if cmd != "status":
            shown = {k: v for k, v in fields.items() if k != "cmd"}
            driver.log(f"link filter: {cmd} {json.dumps(shown, sort_keys=True)}"
                       + (f" ({len(released)} held messages released)" if cmd == "release" else ""))
        if released:
            driver.deliver_released(released)
        answer: dict[str, object] = {"ok": True, "node": me, "cmd": cmd, **link_filter.status()}
        if cmd == "release":
            answer["released"] = len(released)
        return answer

    async def start(self, host: str, port: int = 0) -> asyncio.Server:
        """Serve the control channel on ``host`` (loopback), on ``port`` (0: a free one): JSON lines, one
        command per line (:meth:`control`), one JSON answer per line; a line that is not JSON is answered
        with ``ok: false``; a line longer than :data:`CONTROL_LINE_BYTES` closes the connection. Returns the
        server (the driver closes it with its listeners)."""
        return await asyncio.start_server(self._serve, host, port, limit=CONTROL_LINE_BYTES)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):  # a line past the limit
                    writer.write(b'{"ok": false, "error": "command line too long"}\n')
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                answer: dict[str, object]
                try:
                    command = json.loads(line)
                except ValueError as exc:
                    answer = {"ok": False, "node": self.driver.node.node_id, "error": f"not JSON: {exc}"}
                else:
                    try:
                        answer = self.control(command)
                    except Exception:  # a bug (in the node, handed a released message): log it, answer
                        self.driver.log(f"control command {line!r} failed:\n{traceback.format_exc()}")
                        answer = {"ok": False, "node": self.driver.node.node_id,
                                  "error": "internal error (see the node log)"}
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the harness went away (a timeout): the command was applied all the same
        finally:
            writer.close()
