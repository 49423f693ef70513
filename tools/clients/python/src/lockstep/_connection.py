"""One connection to the local agent's player socket: requests with ids, replies matched to
them, events handed to a callback (Protocol/player-protocol.md §1-2)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, Callable, Dict, Optional

from ._errors import ConnectionLost, LockstepError

# The agent refuses longer lines; a little more than that for what it sends us.
_LINE_LIMIT = 1 << 20

log = logging.getLogger("lockstep")

EventHandler = Callable[[Dict[str, Any]], None]


def default_socket_path() -> str:
    """The agent's socket when none is given, as the agent computes it (§1)."""
    explicit = os.environ.get("LOCKSTEP_SOCKET")
    if explicit:
        return explicit
    if os.getuid() == 0:
        return "/run/lockstep/agent.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return runtime + "/lockstep/agent.sock"
    return f"/tmp/lockstep-{os.getuid()}/agent.sock"


class AgentConnection:
    """A client of the player socket. ``request`` sends a request with an id and returns its
    ``result`` (or raises :class:`LockstepError`); ``notify`` sends one without an id (no
    reply, e.g. position reports). Every event line goes to ``on_event``, in order, from the
    reader task; ``closed`` completes when the agent goes away."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, on_event: EventHandler) -> None:
        self._reader = reader
        self._writer = writer
        self._on_event = on_event
        self._next_id = 1
        self._pending: Dict[int, asyncio.Future[Dict[str, Any]]] = {}
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.get_running_loop().create_task(self._read())

    @classmethod
    async def connect(cls, socket_path: Optional[str] = None, on_event: EventHandler = lambda _: None) -> "AgentConnection":
        path = socket_path or default_socket_path()
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=_LINE_LIMIT)
        except OSError as e:
            raise ConnectionLost(f"cannot connect to the agent at {path}: {e.strerror or e}") from e
        return cls(reader, writer, on_event)

    async def request(self, type: str, **fields: Any) -> Dict[str, Any]:
        """Sends a request and waits for its reply; returns its ``result`` (``{}`` if none)."""
        if self.closed.done():
            raise ConnectionLost("the connection to the agent is closed")
        rid = self._next_id
        self._next_id += 1
        future: asyncio.Future[Dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        try:
            await self._send(dict(fields, type=type, request_id=rid))
            reply = await future
        finally:
            self._pending.pop(rid, None)
        if not reply.get("ok"):
            error = reply.get("error") or {}
            raise LockstepError(str(error.get("code", "unknown")), str(error.get("message", "")))
        result = reply.get("result")
        return result if isinstance(result, dict) else {}

    async def notify(self, type: str, **fields: Any) -> None:
        """Sends a request without ``request_id``: the agent answers nothing, not even an error."""
        await self._send(dict(fields, type=type))

    async def _send(self, message: Dict[str, Any]) -> None:
        if self.closed.done():
            raise ConnectionLost("the connection to the agent is closed")
        self._writer.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        try:
            await self._writer.drain()
        except OSError as e:
            self._close(e)
            raise ConnectionLost(f"the agent went away: {e}") from e

    async def close(self) -> None:
        self._task.cancel()
        self._close(None)
        try:
            await self._task
        except asyncio.CancelledError:
            pass

    async def _read(self) -> None:
        error: Optional[BaseException] = None
        try:
            while True:
                line = await self._reader.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not ours to fix; the agent only sends JSON
                if not isinstance(message, dict):
                    continue
                if "event" in message:
                    try:
                        self._on_event(message)
                    except Exception:  # a bug in a handler must not end the connection
                        log.exception("an event handler failed")
                    continue
                rid = message.get("request_id")
                future = self._pending.get(rid) if isinstance(rid, int) else None
                if future is not None and not future.done():
                    future.set_result(message)
        except (OSError, ValueError, asyncio.IncompleteReadError) as e:
            error = e
        finally:
            self._close(error)

    def _close(self, error: Optional[BaseException]) -> None:
        if self.closed.done():
            return
        self._writer.close()
        lost = ConnectionLost(f"the agent went away{': ' + str(error) if error else ''}")
        for future in self._pending.values():
            if not future.done():
                future.set_exception(lost)
        self.closed.set_result(None)
