"""The player's side of the coordinator (AVDelegatingPlaybackCoordinatorPlaybackControlDelegate):
what a player implements to be coordinated."""

from __future__ import annotations

from typing import Optional

from ._types import BufferingCommand, PauseCommand, PlayCommand, PositionSample, SeekCommand


class PlayerDelegate:
    """Subclass it and implement :meth:`play`, :meth:`pause` and :meth:`current_position`;
    :meth:`seek` and :meth:`set_rate` are the drift corrections (per the capabilities the
    player declared), :meth:`buffer` defaults to a pause.

    Commands are issued one at a time, in order: returning from the coroutine is the
    completion handler. A command's ``host_time_ns`` is normally ahead of now by at least the
    player's ``start_latency_ns``; if it is already past, join where the group is
    (``command.item_time_at(now)``). The player must not act on its own UI's play/pause/seek:
    it asks the coordinator (``coordinate_rate_change``, ``coordinate_seek``) and waits for the
    command, which comes to every player at the same instant, this one included."""

    async def play(self, command: PlayCommand) -> None:
        """Present ``command.item_time_ns`` at ``command.host_time_ns`` and play at ``command.rate``."""
        raise NotImplementedError

    async def pause(self, command: PauseCommand) -> None:
        """Be paused at ``command.item_time_ns`` from ``command.host_time_ns``."""
        raise NotImplementedError

    async def buffer(self, command: BufferingCommand) -> None:
        """The group waits for someone: hold at ``command.item_time_ns`` (default: a pause)."""
        await self.pause(PauseCommand(command.item, command.item_time_ns, command.host_time_ns, 0.0, command.originator))

    async def seek(self, command: SeekCommand) -> None:
        """Drift correction for a player with ``exact_seek``: be at ``item_time_ns`` at
        ``host_time_ns``, keep playing at ``rate`` (default: a play command)."""
        await self.play(PlayCommand(command.item, command.item_time_ns, command.host_time_ns, command.rate, command.originator))

    async def set_rate(self, rate: float) -> None:
        """Drift correction for a player with the ``rate`` capability: play at ``rate`` from
        now; the coordinator calls it again with the timeline's rate when the nudge ends."""

    def current_position(self) -> Optional[PositionSample]:
        """The player's own clock: where its output is (item time) at which host time, read
        as close together as the player can; None when it cannot tell (e.g. not prerolled).
        Called several times a second while the group plays; keep it quick."""
        return None
