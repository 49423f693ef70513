#!/usr/bin/env python3
"""A GStreamer player kept in step with the group through the Lockstep Python SDK.

    gst_player.py [--socket AGENT_SOCK] [--id ITEM] [--ipc-socket PATH] MEDIA

A ``playbin`` whose sinks synchronise on the pipeline clock (headless: ``fakesink sync=true``,
which renders on time exactly as an audio sink would, without a sound card). GStreamer's
system clock is ``CLOCK_MONOTONIC``, the agent's host clock, so a command "be at item time P at
host time H at rate r" is carried out without sleeping: the pipeline is prerolled paused at P
(flushing accurate seek at rate r, which restarts running time at 0), its base time is set to
H (``start_time`` NONE: the application manages base time), and it is set to PLAYING. Its first
sample is then rendered at clock time H, and its position at host time t is P + r·(t − H).

The player's clock for the SDK is its own position query (the sink's, from the clock), read
beside the clock's time. It declares ``exact_seek`` and ``start_at_host_time``: the agent's
drift corrections arrive as seeks, carried out the same way as a play.

``--ipc-socket PATH`` answers a subset of mpv's JSON IPC (``get_property`` of ``audio-pts``,
``time-pos``, ``playback-time``, ``pause``, ``pid``; ``set_property pause``; ``seek … absolute``;
``quit``), so the lab's position probe and its users (tools/bench mpv) drive it as they drive
mpv: a press of play, pause or seek becomes the SDK's ``coordinate_…`` call.

Needs Debian's python3-gst-1.0, gir1.2-gstreamer-1.0, gstreamer1.0-plugins-base and -good.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import gi

gi.require_version("Gst", "1.0")
from gi.repository import Gst  # noqa: E402

try:
    import lockstep
except ImportError:  # run from the repository without installing the package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import lockstep

from lockstep import (  # noqa: E402
    Capabilities, PauseCommand, PlayCommand, PlaybackCoordinator, PlayerDelegate, PositionSample, SeekCommand,
    TimedCommand, host_time_ns,
)

log = logging.getLogger("gst-player")
MS = 1_000_000
# playbin's flags: audio only (a headless player needs no video decoder), with soft volume.
PLAYBIN_AUDIO = 0x02 | 0x10


class GstPlayer(PlayerDelegate):
    """A playbin driven by the coordinator's commands."""

    def __init__(self, uri: str, video: bool, preroll_margin_ns: int, timeline_log: Optional[str] = None) -> None:
        # Every command as told (the group's timeline on this host's clock), one JSON line each.
        self.timeline_log = open(timeline_log, "a", buffering=1) if timeline_log else None
        self.pipeline = Gst.ElementFactory.make("playbin", "player")
        if self.pipeline is None:
            raise SystemExit("no playbin: install gstreamer1.0-plugins-base")
        self.pipeline.set_property("uri", uri)
        self.pipeline.set_property("audio-sink", Gst.ElementFactory.make("fakesink", "audio-out"))
        self.pipeline.get_property("audio-sink").set_property("sync", True)
        if video:
            sink = Gst.ElementFactory.make("fakesink", "video-out")
            sink.set_property("sync", True)
            self.pipeline.set_property("video-sink", sink)
        else:
            self.pipeline.set_property("flags", PLAYBIN_AUDIO)
        self.clock = Gst.SystemClock.obtain()  # CLOCK_MONOTONIC: the agent's host clock
        self.pipeline.use_clock(self.clock)
        self.pipeline.set_start_time(Gst.CLOCK_TIME_NONE)  # we set the base time ourselves
        self.preroll_margin_ns = preroll_margin_ns
        self.playing = False
        self.rate = 0.0
        self.duration_ns: Optional[int] = None

    def _wait_state(self) -> bool:
        result, _, _ = self.pipeline.get_state(5 * Gst.SECOND)
        return result != Gst.StateChangeReturn.FAILURE

    async def load(self) -> None:
        """Prerolls paused at 0."""
        self.pipeline.set_state(Gst.State.PAUSED)
        ok = await asyncio.get_running_loop().run_in_executor(None, self._wait_state)
        if not ok:
            raise SystemExit("GStreamer cannot play this media")
        found, duration = self.pipeline.query_duration(Gst.Format.TIME)
        self.duration_ns = int(duration) if found and duration > 0 else None

    def _seek_paused(self, position_ns: int, rate: float) -> None:
        """Paused and prerolled at `position_ns`, at `rate` (running time restarts at 0)."""
        self.pipeline.set_state(Gst.State.PAUSED)
        flags = Gst.SeekFlags.FLUSH | Gst.SeekFlags.ACCURATE
        self.pipeline.seek(rate if rate > 0 else 1.0, Gst.Format.TIME, flags, Gst.SeekType.SET, max(0, position_ns), Gst.SeekType.NONE, -1)
        self._wait_state()

    def _told(self, command: TimedCommand, rate: float) -> None:
        if self.timeline_log:
            self.timeline_log.write(json.dumps({"host_time_ns": command.host_time_ns, "position_ns": command.item_time_ns, "rate": rate}) + "\n")

    async def play(self, command: PlayCommand) -> None:
        self._told(command, command.rate)
        loop = asyncio.get_running_loop()
        # Preroll takes a few ms; a command due sooner is joined a little later where the group is then.
        start = max(command.host_time_ns, host_time_ns() + self.preroll_margin_ns)
        position = command.item_time_at(start)
        await loop.run_in_executor(None, self._seek_paused, position, command.rate)
        self.pipeline.set_base_time(start)
        self.pipeline.set_state(Gst.State.PLAYING)
        self.playing, self.rate = True, command.rate
        log.info("play at %.6f s from host %d (asked %d, %+.3f ms), rate %.9f, by %s/%s",
                 position / 1e9, start, command.host_time_ns, (start - command.host_time_ns) / 1e6, command.rate,
                 command.originator.name, command.originator.action)

    async def seek(self, command: SeekCommand) -> None:
        log.info("drift correction: error %+.3f ms", command.error_ns / 1e6)
        await self.play(PlayCommand(command.item, command.item_time_ns, command.host_time_ns, command.rate, command.originator))

    async def pause(self, command: PauseCommand) -> None:
        self._told(command, 0.0)
        # Keep playing until the pause's instant, then stop exactly at its position.
        delay = (command.host_time_ns - host_time_ns()) / 1e9
        if self.playing and delay > 0:
            await asyncio.sleep(delay)
        await asyncio.get_running_loop().run_in_executor(None, self._seek_paused, command.item_time_ns, 1.0)
        self.playing, self.rate = False, 0.0
        log.info("paused at %.6f s, by %s/%s", command.item_time_ns / 1e9, command.originator.name, command.originator.action)

    def current_position(self) -> Optional[PositionSample]:
        before = self.clock.get_time()
        found, position = self.pipeline.query_position(Gst.Format.TIME)
        after = self.clock.get_time()
        if not found or position < 0:
            return None
        return PositionSample(int(position), (before + after) // 2)


class MpvLikeIPC:
    """A subset of mpv's JSON IPC over a Unix socket, for the lab's probe and its users."""

    def __init__(self, player: GstPlayer, coordinator: PlaybackCoordinator, quit: asyncio.Event) -> None:
        self.player, self.coordinator, self.quit = player, coordinator, quit

    async def serve(self, path: str) -> asyncio.AbstractServer:
        if os.path.exists(path):
            os.unlink(path)
        return await asyncio.start_unix_server(self._client, path)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    request = json.loads(line)
                    command = request.get("command", [])
                    rid = request.get("request_id", 0)
                except (ValueError, AttributeError):
                    continue
                try:
                    reply: Dict[str, Any] = {"request_id": rid, "error": "success", "data": await self._run(command)}
                except LookupError as e:
                    reply = {"request_id": rid, "error": str(e.args[0]) if e.args else "error"}
                except lockstep.LockstepError as e:
                    reply = {"request_id": rid, "error": e.message}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _run(self, command: list) -> Any:
        name = command[0] if command else None
        if name == "get_property" and len(command) == 2:
            prop = command[1]
            if prop in ("audio-pts", "time-pos", "playback-time"):
                sample = self.player.current_position()
                if sample is None:
                    raise LookupError("property unavailable")
                return sample.item_time_ns / 1e9
            if prop == "pause":
                return not self.player.playing
            if prop == "pid":
                return os.getpid()
            if prop == "duration":
                return (self.player.duration_ns or 0) / 1e9
            raise LookupError("property not found")
        if name == "set_property" and len(command) == 3 and command[1] == "pause":
            await self.coordinator.coordinate_rate_change(0.0 if command[2] else 1.0)
            return None
        if name == "seek" and len(command) >= 2:
            target = float(command[1])
            if len(command) < 3 or not str(command[2]).startswith("absolute"):
                sample = self.player.current_position()
                target += (sample.item_time_ns / 1e9) if sample else 0
            await self.coordinator.coordinate_seek(int(max(0.0, target) * 1e9))
            return None
        if name == "quit":
            self.quit.set()
            return None
        raise LookupError("invalid parameter")


async def main() -> None:
    parser = argparse.ArgumentParser(description="A GStreamer player in step with the Lockstep group.")
    parser.add_argument("media", help="a file or a URI")
    parser.add_argument("--socket", help="the agent's socket (default as lockstepd's)")
    parser.add_argument("--id", help="the item's identity for the group (default: the media's URI)")
    parser.add_argument("--name", default="gstreamer", help="the player's name shown to the others")
    parser.add_argument("--ipc-socket", help="answer a subset of mpv's JSON IPC here (for the lab's probe)")
    parser.add_argument("--start-latency-ms", type=float, default=100.0, help="lead the player asks the agent for")
    parser.add_argument("--preroll-ms", type=float, default=30.0, help="least time a (re)start needs for its preroll")
    parser.add_argument("--video", action="store_true", help="decode video too (to a fakesink)")
    parser.add_argument("--timeline-log", help="append every command as told (host time, position, rate) here, as JSON lines")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(asctime)s %(name)s: %(message)s")

    Gst.init(None)
    uri = args.media if "://" in args.media else Gst.filename_to_uri(os.path.abspath(args.media))
    player = GstPlayer(uri, args.video, int(args.preroll_ms * MS), args.timeline_log)
    await player.load()
    coordinator = PlaybackCoordinator(
        player, name=args.name, socket_path=args.socket, start_latency_ns=int(args.start_latency_ms * MS),
        capabilities=Capabilities(exact_seek=True, start_at_host_time=True),
    )
    quit = asyncio.Event()
    loop = asyncio.get_running_loop()
    for s in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(s, quit.set)
    server = await MpvLikeIPC(player, coordinator, quit).serve(args.ipc_socket) if args.ipc_socket else None
    async with coordinator:
        await coordinator.transition_to_item(args.id or uri, duration_ns=player.duration_ns)
        await coordinator.set_ready()
        await quit.wait()
    if server:
        server.close()
    player.pipeline.set_state(Gst.State.NULL)


if __name__ == "__main__":
    asyncio.run(main())
