"""Lockstep's player SDK: make a media player a Lockstep player.

A :class:`PlaybackCoordinator` (SharePlay's AVDelegatingPlaybackCoordinator and GroupSession)
talks to the local agent (``lockstepd``) over its player socket and drives the player through a
:class:`PlayerDelegate`. Standard library only; asyncio. See docs/sdk.md in the repository."""

from ._connection import AgentConnection, default_socket_path
from ._coordinator import PlaybackCoordinator, Suspension
from ._delegate import PlayerDelegate
from ._errors import ConnectionLost, LockstepError
from ._types import (
    BufferingCommand, Capabilities, GroupItem, Origin, Participant, PauseCommand, PlayCommand, PositionSample,
    SeekCommand, Share, SuspensionReason, TimedCommand, WaitingFor, host_time_ns,
)

__all__ = [
    "AgentConnection", "BufferingCommand", "Capabilities", "ConnectionLost", "GroupItem", "LockstepError", "Origin",
    "Participant", "PauseCommand", "PlayCommand", "PlaybackCoordinator", "PlayerDelegate", "PositionSample",
    "SeekCommand", "Share", "Suspension", "SuspensionReason", "TimedCommand", "WaitingFor", "default_socket_path",
    "host_time_ns",
]
