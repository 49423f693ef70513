"""The coordinator against real agents: commands reach the player's delegate anchored ahead,
the app's calls move the group, suspensions, participants, drift corrections from the
player's own clock, and reconnection when the agent restarts."""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Coroutine, List, Optional, TypeVar

import pytest

from lockstep import (
    AgentConnection, Capabilities, LockstepError, PauseCommand, PlaybackCoordinator, PlayCommand, PlayerDelegate, PositionSample,
    SeekCommand, TimedCommand, host_time_ns,
)

T = TypeVar("T")
ITEM = "lockstep://sdk-tests/10-minutes"
MS = 1_000_000


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine, 60))


class VirtualPlayer(PlayerDelegate):
    """A player whose media clock is the host clock, exactly (plus ``offset_ns``): it does what
    each command says at the instant the command says, and records them."""

    def __init__(self, offset_ns: int = 0) -> None:
        self.commands: List[TimedCommand] = []
        self.rates: List[float] = []
        self.offset_ns = offset_ns
        self.anchor = (0, 0)  # (item time, host time)
        self.rate = 0.0
        self.arrived = asyncio.Event()

    def _follow(self, c: TimedCommand, rate: float) -> None:
        self.anchor, self.rate = (c.item_time_ns, c.host_time_ns), rate
        self.commands.append(c)
        self.arrived.set()

    async def play(self, command: PlayCommand) -> None:
        self._follow(command, command.rate)

    async def pause(self, command: PauseCommand) -> None:
        self._follow(command, 0.0)

    async def seek(self, command: SeekCommand) -> None:
        self.offset_ns = 0  # an exact seek lands where it was told
        self._follow(command, command.rate)

    async def set_rate(self, rate: float) -> None:
        now = host_time_ns()
        self.anchor, self.rate = (self.position(now) - self.offset_ns, now), rate
        self.rates.append(rate)

    def position(self, host: int) -> int:
        item, at = self.anchor
        return item + round((host - at) * self.rate) + self.offset_ns

    def current_position(self) -> Optional[PositionSample]:
        now = host_time_ns()
        return PositionSample(self.position(now), now)

    async def next(self, where: Callable[[TimedCommand], bool], timeout: float = 5) -> TimedCommand:
        """The first command (recorded or to come) that ``where`` accepts."""
        async def wait() -> TimedCommand:
            seen = 0
            while True:
                for c in self.commands[seen:]:
                    if where(c):
                        return c
                seen = len(self.commands)
                self.arrived.clear()
                await self.arrived.wait()
        return await asyncio.wait_for(wait(), timeout)


async def eventually(check: Callable[[], bool], timeout: float = 5) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def ready_player(socket: str, name: str, delegate: PlayerDelegate, **options: Any) -> PlaybackCoordinator:
    c = PlaybackCoordinator(delegate, name=name, socket_path=socket, **options)
    await c.start()
    await c.wait_connected(10)
    await c.transition_to_item(ITEM, duration_ns=600_000 * MS)
    await c.set_ready()
    return c


def test_a_play_reaches_the_delegate_anchored_ahead_with_its_originator(agent: Any) -> None:
    async def body() -> None:
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-one", player, start_latency_ns=50 * MS)
        first = await player.next(lambda x: isinstance(x, PauseCommand))
        assert first.item == ITEM and first.item_time_ns == 0
        asked = host_time_ns()
        await c.coordinate_rate_change(1.0)
        play = await player.next(lambda x: isinstance(x, PlayCommand))
        assert isinstance(play, PlayCommand)
        assert abs(play.rate - 1.0) < 1e-3
        assert play.originator.action == "play" and play.originator.local
        # Anchored in the future, at least most of the start latency the player asked for.
        assert play.host_time_ns - asked >= 40 * MS
        await c.stop()
    run(body())


def test_pause_and_seek_from_the_app_come_back_as_commands_at_the_right_item_time(agent: Any) -> None:
    async def body() -> None:
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-one", player)
        await c.coordinate_rate_change(1.0)
        await player.next(lambda x: isinstance(x, PlayCommand))
        await c.coordinate_seek(120_000 * MS)
        seek = await player.next(lambda x: isinstance(x, PlayCommand) and x.originator.action == "seek")
        assert seek.item_time_ns == 120_000 * MS
        await c.coordinate_rate_change(0)
        pause = await player.next(lambda x: isinstance(x, PauseCommand) and x.originator.action == "pause")
        # Paused where the timeline was at the pause's instant.
        assert abs(pause.item_time_ns - seek.item_time_at(pause.host_time_ns)) < 2 * MS
        await c.stop()
    run(body())


def test_a_speed_change_changes_the_groups_rate_and_keeps_a_paused_group_paused(agent: Any) -> None:
    async def body() -> None:
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-speed", player)
        await player.next(lambda x: isinstance(x, PauseCommand))
        await c.coordinate_speed_change(1.5)

        async def rate() -> float:
            return float((await c.playback_status()).get("timeline", {}).get("rate", 0))
        for _ in range(100):
            if abs(await rate() - 1.5) < 1e-3:
                break
            await asyncio.sleep(0.05)
        status = await c.playback_status()
        assert abs(status["timeline"]["rate"] - 1.5) < 1e-3
        assert status["timeline"]["state"] == "paused"
        assert not [x for x in player.commands if isinstance(x, PlayCommand)]
        await c.stop()
    run(body())


def test_out_of_range_requests_are_refused_with_invalid_field(agent: Any) -> None:
    async def body() -> None:
        c = await ready_player(agent.socket, "py-one", VirtualPlayer())
        with pytest.raises(LockstepError) as seek:
            await c.coordinate_seek(-1)
        assert seek.value.code == "invalid_field" and "position_ns" in seek.value.message
        with pytest.raises(LockstepError) as rate:
            await c.coordinate_rate_change(100.0)
        assert rate.value.code == "invalid_field" and "rate" in rate.value.message
        await c.stop()
    run(body())


def test_a_suspension_leaves_group_playback_and_its_end_moves_the_group_to_the_proposed_time(agents: Any) -> None:
    async def body() -> None:
        a, b = VirtualPlayer(), VirtualPlayer()
        ca = await ready_player(agents[0].socket, "py-a", a)
        cb = await ready_player(agents[1].socket, "py-b", b)
        await ca.coordinate_rate_change(1.0)
        await b.next(lambda x: isinstance(x, PlayCommand))
        suspension = await ca.begin_suspension("interruption")
        await eventually(lambda: not ca.in_group_playback)
        assert ca.suspension_reasons == ["interruption"]
        await eventually(lambda: any(p.suspension_reasons == ("interruption",) for p in cb.other_participants))
        await suspension.end(proposing_new_time_ns=30_000 * MS)
        moved = await b.next(lambda x: x.originator.reason == "suspension-ended")
        assert moved.item_time_ns == 30_000 * MS
        mine = await a.next(lambda x: x.originator.reason == "suspension-ended")
        # The same instant on both agents, up to their clock estimate (one machine, one clock).
        assert abs(mine.host_time_ns - moved.host_time_ns) < 100_000
        await ca.stop()
        await cb.stop()
    run(body())


def test_participants_list_every_player_on_the_item_and_mark_this_one(agents: Any) -> None:
    async def body() -> None:
        ca = await ready_player(agents[0].socket, "py-a", VirtualPlayer())
        cb = await ready_player(agents[1].socket, "py-b", VirtualPlayer())
        await eventually(lambda: [p.name for p in ca.other_participants] == ["py-b"])
        me = [p for p in ca.participants if p.is_me]
        assert [p.name for p in me] == ["py-a"] and me[0].local
        assert not ca.other_participants[0].local and ca.other_participants[0].peer_name == "sdk-a2"
        await ca.stop()
        await cb.stop()
    run(body())


def test_players_on_two_agents_get_a_play_anchored_at_the_same_host_instant(agents: Any) -> None:
    async def body() -> None:
        a, b = VirtualPlayer(), VirtualPlayer()
        ca = await ready_player(agents[0].socket, "py-a", a)
        cb = await ready_player(agents[1].socket, "py-b", b)
        await eventually(lambda: len(ca.other_participants) == 1 and ca.other_participants[0].readiness == "ready")
        await cb.coordinate_rate_change(1.0)
        pa = await a.next(lambda x: isinstance(x, PlayCommand))
        pb = await b.next(lambda x: isinstance(x, PlayCommand))
        # One machine, one CLOCK_MONOTONIC: the agents' clock estimate is the only error.
        assert abs(pa.item_time_at(pb.host_time_ns) - pb.item_time_ns) < 100_000
        assert pa.originator.name == "sdk-a2" and not pa.originator.local and pb.originator.local
        await ca.stop()
        await cb.stop()
    run(body())


def test_a_player_that_drifts_is_nudged_by_rate_and_its_rate_restored(agent: Any) -> None:
    async def body() -> None:
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-rate", player, capabilities=Capabilities(rate=True, exact_seek=True, start_at_host_time=True))
        await c.coordinate_rate_change(1.0)
        play = await player.next(lambda x: isinstance(x, PlayCommand))
        player.offset_ns = 3 * MS  # its output runs 3 ms ahead of the group
        await eventually(lambda: len(player.rates) >= 1, timeout=10)
        assert player.rates[0] < play.rate  # slowed down to fall back in
        # …and back at the timeline's rate once the error is gone. How much of the 3 ms one
        # nudge removes depends on when this loop applies and undoes it (a busy machine runs
        # timers late), and the agent nudges again for what is left: the check is that the
        # player ends at the timeline's rate within the agent's threshold (200 us).
        def back_in_sync() -> bool:
            now = host_time_ns()
            error = player.position(now) - play.item_time_at(now)
            return len(player.rates) >= 2 and player.rates[-1] == play.rate and abs(error) < 200_000
        await eventually(back_in_sync, timeout=15)
        await c.stop()
    run(body())


def test_a_player_without_rate_control_is_corrected_by_a_seek(agent: Any) -> None:
    async def body() -> None:
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-seek", player, capabilities=Capabilities(exact_seek=True, start_at_host_time=True))
        await c.coordinate_rate_change(1.0)
        await player.next(lambda x: isinstance(x, PlayCommand))
        player.offset_ns = -80 * MS  # behind by more than a seek-only player's threshold (40 ms)
        seek = await player.next(lambda x: isinstance(x, SeekCommand), timeout=10)
        assert isinstance(seek, SeekCommand) and seek.error_ns < 0
        assert player.rates == []
        await c.stop()
    run(body())


def test_the_coordinator_reconnects_after_the_agent_restarts_and_restores_its_item(agent: Any) -> None:
    async def body() -> None:
        changes: List[bool] = []
        player = VirtualPlayer()
        c = await ready_player(agent.socket, "py-back", player)
        c.on_connection_changed = changes.append
        await asyncio.get_running_loop().run_in_executor(None, agent.stop)
        await eventually(lambda: not c.connected)
        await asyncio.get_running_loop().run_in_executor(None, agent.start)
        await c.wait_connected(10)
        status = await c.playback_status()
        assert status["item"] == ITEM and status["readiness"] == "ready"
        assert changes == [False, True]
        await c.coordinate_rate_change(1.0)
        await player.next(lambda x: isinstance(x, PlayCommand))
        await c.stop()
    run(body())


def test_a_saved_output_latency_survives_an_agent_restart_and_applies_to_that_name(agent: Any) -> None:
    async def output_latency_of(name: str) -> Optional[int]:
        connection = await AgentConnection.connect(agent.socket)
        players = (await connection.request("players"))["players"]
        await connection.close()
        return next((p["output_latency_ns"] for p in players if p["participant"]["name"] == name), None)

    async def body() -> None:
        c = await ready_player(agent.socket, "py-tv", VirtualPlayer())
        assert await c.save_output_latency(80 * MS) == {"py-tv": 80 * MS}
        await c.stop()
        await asyncio.get_running_loop().run_in_executor(None, agent.stop)
        await asyncio.get_running_loop().run_in_executor(None, agent.start)
        tv = await ready_player(agent.socket, "py-tv", VirtualPlayer())
        other = await ready_player(agent.socket, "py-other", VirtualPlayer())
        explicit = await ready_player(agent.socket, "py-tv", VirtualPlayer(), output_latency_ns=5 * MS)
        assert await output_latency_of("py-other") == 0
        connection = await AgentConnection.connect(agent.socket)
        latencies = [p["output_latency_ns"] for p in (await connection.request("players"))["players"] if p["participant"]["name"] == "py-tv"]
        await connection.close()
        assert sorted(latencies) == [5 * MS, 80 * MS]  # the kept one, and the one given explicitly
        assert await tv.save_output_latency(None) == {}
        for c in (tv, other, explicit):
            await c.stop()
    run(body())


def test_calls_while_the_agent_is_away_raise_not_connected(agent: Any) -> None:
    async def body() -> None:
        c = await ready_player(agent.socket, "py-away", VirtualPlayer())
        await asyncio.get_running_loop().run_in_executor(None, agent.stop)
        await eventually(lambda: not c.connected)
        with pytest.raises(LockstepError) as e:
            await c.coordinate_rate_change(1.0)
        assert e.value.code == "not_connected"
        await c.stop()
    run(body())



def test_crossing_commands_reach_the_observer_in_the_order_applied() -> None:
    """The agent's `concurrent_commands` event (two presses crossed) is handed to the app with
    each command's originator: the peer, the player that caused it, its place in the order."""
    coordinator = PlaybackCoordinator(VirtualPlayer(), name="sdk test")
    seen: List[Any] = []
    coordinator.on_concurrent_commands = seen.append
    coordinator._on_event({
        "event": "concurrent_commands", "host_time_ns": 1,
        "commands": [
            {"item": ITEM, "origin": {"action": "seek", "peer_id": "a", "name": "den", "local": True, "lamport": 4, "player": "mpv", "stamp_time_ns": 10}},
            {"item": ITEM, "origin": {"action": "pause", "peer_id": "b", "name": "kitchen", "local": False, "lamport": 9, "stamp_time_ns": 11}},
        ],
    })
    assert len(seen) == 1
    first, second = seen[0]
    assert (first.action, first.name, first.player, first.stamp_time_ns) == ("seek", "den", "mpv", 10)
    assert (second.action, second.name, second.player, second.stamp_time_ns) == ("pause", "kitchen", None, 11)
