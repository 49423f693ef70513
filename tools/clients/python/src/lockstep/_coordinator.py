"""The playback coordinator: SharePlay's AVDelegatingPlaybackCoordinator and GroupSession for a
player on Lockstep's player socket.

It speaks the protocol so the player does not: it says hello with the player's capabilities
and latencies, loads its item, turns the agent's events into typed commands for the player's
:class:`PlayerDelegate` (one at a time, in order), reads the player's clock and reports its
position while the group plays, applies the agent's drift corrections (a rate nudge, undone
when it ends, or a seek), and reconnects when the agent restarts, restoring the item, the
readiness and the open suspensions."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union

from ._connection import AgentConnection
from ._delegate import PlayerDelegate
from ._errors import ConnectionLost
from ._types import (
    BufferingCommand, Capabilities, GroupItem, Origin, Participant, PauseCommand, PlayCommand,
    SeekCommand, Share, _Loaded, host_time_ns, waiting_list,
)

log = logging.getLogger("lockstep")

_Step = Callable[[], Awaitable[None]]


class Suspension:
    """A suspension this player began (``begin_suspension``): it neither affects the group nor
    is affected by it until every suspension it holds has ended."""

    def __init__(self, coordinator: "PlaybackCoordinator", reason: str, suspension_id: int) -> None:
        self.reason = reason
        self.suspension_id = suspension_id
        self._coordinator = coordinator
        self.ended = False

    async def end(self, proposing_new_time_ns: Optional[int] = None) -> None:
        """Ends it; with ``proposing_new_time_ns`` the whole group moves there (the user let go
        of a scrubber). When the last suspension ends the player gets the group's timeline."""
        if self.ended:
            return
        fields: Dict[str, Any] = {"suspension_id": self.suspension_id}
        if proposing_new_time_ns is not None:
            fields["propose_position_ns"] = int(proposing_new_time_ns)
        await self._coordinator._request("end_suspension", **fields)
        self.ended = True
        self._coordinator._suspensions.pop(self.suspension_id, None)


class PlaybackCoordinator:
    """Coordinates one player with the group through the local agent.

    ::

        coordinator = PlaybackCoordinator(MyDelegate(), name="living room", capabilities=Capabilities(exact_seek=True))
        async with coordinator:
            await coordinator.transition_to_item("file:///films/night.mkv", duration_ns=...)
            await coordinator.set_ready()
            await coordinator.coordinate_rate_change(1.0)   # play, for everyone

    Observers (plain callables, called on the event loop): ``on_participants_changed(list)``,
    ``on_item_proposed(GroupItem)``, ``on_group_playback_changed(active, reason)``,
    ``on_suspension_changed(change, suspension_id, reason, by)``, ``on_connection_changed(bool)``,
    ``on_concurrent_commands(list of Origin)`` (commands from different places crossed; all were
    applied, in this order).
    """

    def __init__(
        self, delegate: PlayerDelegate, *, name: str = "python player", socket_path: Optional[str] = None,
        capabilities: Capabilities = Capabilities(), output_latency_ns: Optional[int] = None,
        start_latency_ns: Optional[int] = None, sync_tolerance_ns: Optional[int] = None,
        report_interval: float = 0.1, reconnect_interval: float = 0.2,
    ) -> None:
        self.delegate = delegate
        self.name = name
        self.socket_path = socket_path
        self.capabilities = capabilities
        self.output_latency_ns = output_latency_ns
        self.start_latency_ns = start_latency_ns
        self.sync_tolerance_ns = sync_tolerance_ns
        self.report_interval = report_interval
        self.reconnect_interval = reconnect_interval

        self.on_participants_changed: Optional[Callable[[List[Participant]], None]] = None
        self.on_item_proposed: Optional[Callable[[GroupItem], None]] = None
        self.on_group_playback_changed: Optional[Callable[[bool, str], None]] = None
        self.on_suspension_changed: Optional[Callable[[str, int, str, str], None]] = None
        self.on_connection_changed: Optional[Callable[[bool], None]] = None
        self.on_concurrent_commands: Optional[Callable[[List[Origin]], None]] = None

        #: This player's id on its agent (None until connected).
        self.player_id: Optional[int] = None
        #: Every player on this player's item, this one included (``is_me``).
        self.participants: List[Participant] = []
        #: The group's item as last proposed.
        self.group_item: Optional[GroupItem] = None
        #: Whether this player follows the group's timeline now.
        self.in_group_playback = False
        #: The last timed command issued to the delegate.
        self.last_command: Optional[Union[PlayCommand, PauseCommand, BufferingCommand]] = None

        self._connection: Optional[AgentConnection] = None
        # Made in start(): Python 3.9 binds them to the loop current when they are made.
        self._connected: Optional[asyncio.Event] = None
        self._loaded: Optional[_Loaded] = None
        self._suspensions: Dict[int, Suspension] = {}
        self._steps: "Optional[asyncio.Queue[_Step]]" = None
        self._timed_pending = 0  # timed commands queued but not issued (a newer one supersedes them)
        self._restore: Optional[asyncio.TimerHandle] = None
        self._tasks: List[asyncio.Task[None]] = []
        self._stopping = False

    # MARK: Life cycle

    async def start(self) -> None:
        """Connects (and keeps reconnecting) in the background; see :meth:`wait_connected`."""
        loop = asyncio.get_running_loop()
        self._stopping = False
        self._connected, self._steps = asyncio.Event(), asyncio.Queue()
        self._tasks = [loop.create_task(self._supervise()), loop.create_task(self._issue()), loop.create_task(self._report())]

    async def stop(self) -> None:
        """Leaves: closes the connection (the agent unloads the player) and stops every task."""
        self._stopping = True
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except asyncio.CancelledError:
                pass
        if self._connection is not None:
            await self._connection.close()

    async def __aenter__(self) -> "PlaybackCoordinator":
        await self.start()
        await self.wait_connected()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @property
    def connected(self) -> bool:
        return self._connected is not None and self._connected.is_set()

    async def wait_connected(self, timeout: Optional[float] = None) -> None:
        """Waits until the coordinator is connected and has said hello (and restored its item)."""
        if self._connected is None:
            raise RuntimeError("start the coordinator first")
        await asyncio.wait_for(self._connected.wait(), timeout)

    # MARK: What the app reads

    @property
    def other_participants(self) -> List[Participant]:
        """The participants on this item other than this player."""
        return [p for p in self.participants if not p.is_me]

    @property
    def current_item(self) -> Optional[str]:
        return self._loaded.item if self._loaded else None

    @property
    def suspension_reasons(self) -> List[str]:
        """The reasons of this player's open suspensions."""
        return [s.reason for s in self._suspensions.values()]

    async def playback_status(self) -> Dict[str, Any]:
        """The agent's view of this player: item, readiness, group playback, timeline, participants."""
        return await self._request("playback_status")

    # MARK: What the app asks

    async def transition_to_item(
        self, identifier: str, *, share: str = Share.GROUP, title: Optional[str] = None,
        artwork_url: Optional[str] = None, duration_ns: Optional[int] = None,
    ) -> str:
        """Loads an item: with the group (adopt its timeline for the item, or propose the item
        to the group) or ``Share.SOLO`` (play for me only). Returns ``adopted``, ``proposed`` or
        ``solo``. The player is ``loading`` until :meth:`set_ready`."""
        metadata = {k: v for k, v in (("title", title), ("artwork_url", artwork_url), ("duration_ns", duration_ns)) if v is not None}
        result = await self._request("load", item=identifier, share=share, **metadata)
        self._loaded = _Loaded(item=identifier, share=share, metadata=metadata)
        return str(result.get("outcome", ""))

    async def join_group(self) -> str:
        """Loads the group's current item (what ``on_item_proposed`` announced); returns it."""
        result = await self._request("join_group")
        item = str(result.get("item", ""))
        self._loaded = _Loaded(item=item, share=Share.GROUP)
        return item

    async def leave_item(self) -> None:
        """Unloads the item (and leaves group playback)."""
        await self._request("unload")
        self._loaded = None

    async def set_ready(self, ready: bool = True) -> None:
        """The player can play its item at once (``True``) or is refilling its buffer. The group
        waits for every participant to be ready before it starts."""
        await self._request("ready" if ready else "buffering")
        if self._loaded:
            self._loaded.ready = ready

    async def coordinate_rate_change(self, rate: float) -> None:
        """The user pressed play (``rate`` > 0) or pause (0) in this player: for every player on
        the item. Act on the command that follows, not on the press."""
        if rate == 0:
            await self._request("intent", action="pause")
        else:
            await self._request("intent", action="play", rate=float(rate))

    async def coordinate_play(self) -> None:
        await self._request("intent", action="play")

    async def coordinate_pause(self) -> None:
        await self._request("intent", action="pause")

    async def coordinate_speed_change(self, rate: float) -> None:
        """The user changed the playback speed (not play or pause: a paused group stays paused):
        the group's rate becomes ``rate``."""
        await self._request("intent", action="rate", rate=float(rate))

    async def coordinate_seek(self, item_time_ns: int) -> None:
        """The user sought to ``item_time_ns``: the whole group moves there."""
        await self._request("intent", action="seek", position_ns=int(item_time_ns))

    async def play_immediately(self, rate: Optional[float] = None) -> None:
        """Start now without waiting for participants that are not ready (they may miss the start)."""
        await self._request("play_immediately", **({"rate": float(rate)} if rate is not None else {}))

    async def begin_suspension(self, reason: str) -> Suspension:
        """Leaves group playback for a while (a stall, an interruption, the user scrubbing…);
        end it with :meth:`Suspension.end`. Reasons the agents list in ``--waiting-reasons``
        make the group wait instead."""
        result = await self._request("begin_suspension", reason=reason)
        suspension = Suspension(self, reason, int(result["suspension_id"]))
        self._suspensions[suspension.suspension_id] = suspension
        return suspension

    async def save_output_latency(self, output_latency_ns: Optional[int]) -> Dict[str, int]:
        """Has the agent keep ``output_latency_ns`` (0 to 10 s) for this player's name, or forget
        it (None): from the next connection on, a hello without an output latency gets it (this
        coordinator's own ``output_latency_ns``, if given, wins). Returns every kept latency by name."""
        fields: Dict[str, Any] = {"name": self.name}
        if output_latency_ns is not None:
            fields["output_latency_ns"] = int(output_latency_ns)
        result = await self._request("latency_set", **fields)
        return {str(e["name"]): int(e["output_latency_ns"]) for e in result.get("latencies", []) if isinstance(e, dict)}

    # MARK: Inside

    async def _request(self, type: str, **fields: Any) -> Dict[str, Any]:
        connection = self._connection
        if connection is None or not self.connected:
            raise ConnectionLost("not connected to the agent (it may be restarting); try again")
        return await connection.request(type, **fields)

    async def _supervise(self) -> None:
        """Connects, says hello, restores what the player had, and starts over when the agent goes."""
        while not self._stopping:
            try:
                connection = await AgentConnection.connect(self.socket_path, self._on_event)
            except ConnectionLost:
                await asyncio.sleep(self.reconnect_interval)
                continue
            self._connection = connection
            try:
                await self._hello(connection)
                self._set_connected(True)
                if self.on_connection_changed:
                    self.on_connection_changed(True)
                await connection.closed
            except ConnectionLost:
                pass
            finally:
                was = self.connected
                self._set_connected(False)
                self._connection = None
                self.in_group_playback = False
                self.participants = []
                self._cancel_restore()
                if was and self.on_connection_changed:
                    self.on_connection_changed(False)
            if not self._stopping:
                log.info("lost the agent; reconnecting")
                await asyncio.sleep(self.reconnect_interval)

    def _set_connected(self, connected: bool) -> None:
        assert self._connected is not None
        if connected:
            self._connected.set()
        else:
            self._connected.clear()

    def _step(self, step: _Step) -> None:
        assert self._steps is not None
        self._steps.put_nowait(step)

    async def _hello(self, connection: AgentConnection) -> None:
        caps = self.capabilities
        latencies = {
            k: int(v) for k, v in (
                ("output_latency_ns", self.output_latency_ns), ("start_latency_ns", self.start_latency_ns),
                ("sync_tolerance_ns", self.sync_tolerance_ns),
            ) if v is not None
        }
        result = await connection.request(
            "hello", protocol=1, role="player", name=self.name,
            capabilities={"rate": caps.rate, "exact_seek": caps.exact_seek, "start_at_host_time": caps.start_at_host_time},
            **latencies,
        )
        self.player_id = result.get("player_id")
        loaded = self._loaded
        if loaded is None:
            return
        await connection.request("load", item=loaded.item, share=loaded.share, **loaded.metadata)
        if loaded.ready:
            await connection.request("ready")
        old, self._suspensions = self._suspensions, {}
        for s in old.values():
            r = await connection.request("begin_suspension", reason=s.reason)
            s.suspension_id = int(r["suspension_id"])
            self._suspensions[s.suspension_id] = s

    def _on_event(self, e: Dict[str, Any]) -> None:
        kind = e.get("event")
        if kind == "timeline":
            self._timeline(e)
        elif kind == "wait":
            command = BufferingCommand(
                str(e.get("item", "")), int(e.get("position_ns", 0)), int(e.get("host_time_ns", 0)), 0.0,
                Origin.parse(e.get("origin")), tuple(waiting_list(e.get("waiting_for"))),
            )
            self._issue_timed(command, lambda: self.delegate.buffer(command))
        elif kind == "correction":
            self._correction(e)
        elif kind == "participants":
            self.participants = [Participant.parse(p, self.player_id) for p in e.get("participants", []) if isinstance(p, dict)]
            if self.on_participants_changed:
                self.on_participants_changed(list(self.participants))
        elif kind == "item_proposed":
            item = e.get("item")
            self.group_item = GroupItem(
                item=item if isinstance(item, str) else None, title=e.get("title"), artwork_url=e.get("artwork_url"),
                duration_ns=e.get("duration_ns"), originator=Origin.parse(e.get("origin")),
            )
            if self.on_item_proposed:
                self.on_item_proposed(self.group_item)
        elif kind == "group_playback":
            self.in_group_playback = bool(e.get("active"))
            if self.on_group_playback_changed:
                self.on_group_playback_changed(self.in_group_playback, str(e.get("reason", "")))
        elif kind == "concurrent_commands":
            # Commands from different places crossed; all were applied, in this order.
            commands = [Origin.parse(c.get("origin")) for c in e.get("commands", []) if isinstance(c, dict)]
            if self.on_concurrent_commands:
                self.on_concurrent_commands(commands)
        elif kind == "suspension":
            sid, change = int(e.get("suspension_id", 0)), str(e.get("change", ""))
            if change == "ended":
                s = self._suspensions.pop(sid, None)
                if s:
                    s.ended = True
            if self.on_suspension_changed:
                self.on_suspension_changed(change, sid, str(e.get("reason", "")), str(e.get("by", "")))

    def _timeline(self, e: Dict[str, Any]) -> None:
        state = e.get("state")
        item, position, host = str(e.get("item", "")), int(e.get("position_ns", 0)), int(e.get("host_time_ns", 0))
        origin = Origin.parse(e.get("origin"))
        if state == "playing":
            play = PlayCommand(item, position, host, float(e.get("rate", 1.0)), origin)
            self._issue_timed(play, lambda: self.delegate.play(play))
        else:
            pause = PauseCommand(item, position, host, 0.0, origin, stopped=state == "stopped")
            self._issue_timed(pause, lambda: self.delegate.pause(pause))

    def _issue_timed(self, command: Union[PlayCommand, PauseCommand, BufferingCommand], step: _Step) -> None:
        self._cancel_restore()
        self.last_command = command
        self._timed_pending += 1

        async def issue() -> None:
            self._timed_pending -= 1
            if self._timed_pending > 0:
                return  # a newer timeline is queued: this one is already history
            await step()

        self._step(issue)

    def _correction(self, e: Dict[str, Any]) -> None:
        last = self.last_command
        if not isinstance(last, PlayCommand):
            return
        if e.get("kind") == "rate" and self.capabilities.rate:
            rate, until = float(e.get("rate", last.rate)), int(e.get("until_host_time_ns", 0))
            self._cancel_restore()  # a newer nudge supersedes the one running
            self._step(lambda: self.delegate.set_rate(rate))
            loop = asyncio.get_running_loop()
            # The event loop's clock is time.monotonic(), CLOCK_MONOTONIC like host time.
            delay = max(0.0, (until - host_time_ns()) / 1e9)
            self._restore = loop.call_at(loop.time() + delay, self._restore_rate)
        elif e.get("kind") == "seek":
            seek = SeekCommand(
                last.item, int(e.get("position_ns", 0)), int(e.get("host_time_ns", 0)), last.rate,
                Origin(action="correction", local=True), error_ns=int(e.get("error_ns", 0)),
            )
            self._cancel_restore()
            self._step(lambda: self.delegate.seek(seek))

    def _restore_rate(self) -> None:
        self._restore = None
        last = self.last_command
        if isinstance(last, PlayCommand):
            self._step(lambda: self.delegate.set_rate(last.rate))

    def _cancel_restore(self) -> None:
        if self._restore is not None:
            self._restore.cancel()
            self._restore = None

    async def _issue(self) -> None:
        """Issues the delegate's commands one at a time: each completes before the next."""
        assert self._steps is not None
        while True:
            step = await self._steps.get()
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the player's delegate failed a command")

    async def _report(self) -> None:
        """Reports the player's position while the group plays and the command has begun."""
        while True:
            await asyncio.sleep(self.report_interval)
            command, connection = self.last_command, self._connection
            if not isinstance(command, PlayCommand) or connection is None or not self.in_group_playback:
                continue
            if host_time_ns() < command.host_time_ns or self._suspensions:
                continue
            sample = self.delegate.current_position()
            if sample is None:
                continue
            try:
                await connection.notify("position", position_ns=max(0, int(sample.item_time_ns)), host_time_ns=int(sample.host_time_ns))
            except ConnectionLost:
                pass
