"""Errors of the SDK: the agent's error replies, and a lost connection."""

from __future__ import annotations


class LockstepError(Exception):
    """The agent refused a request: ``code`` is the protocol's error code (``invalid_field``,
    ``invalid_state``, …, Protocol/player-protocol.md §2) and ``message`` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class ConnectionLost(LockstepError):
    """No agent to talk to (not started yet, restarting, or gone). The coordinator reconnects
    by itself; a call made meanwhile raises this."""

    def __init__(self, message: str) -> None:
        super().__init__("not_connected", message)
