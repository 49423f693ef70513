"""The GStreamer player (examples/gst_player.py) through the SDK, against a real agent and a
real GStreamer: it starts at the anchored host instant and follows a seek and a pause, read
from its own position (its pipeline's position query, through its mpv-like IPC)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Tuple

import pytest

from lockstep import PauseCommand, PlayCommand, host_time_ns

sys.path.insert(0, str(Path(__file__).parent))
from test_coordinator import ITEM, MS, VirtualPlayer, ready_player, run  # noqa: E402

PLAYER = Path(__file__).resolve().parents[1] / "examples" / "gst_player.py"
# Debian's interpreter has PyGObject and GStreamer's bindings (python3-gst-1.0); a venv does not.
GST_PYTHON = os.environ.get("LOCKSTEP_GST_PYTHON", "/usr/bin/python3")


def has_gstreamer() -> bool:
    probe = "import gi; gi.require_version('Gst', '1.0'); from gi.repository import Gst"
    return os.path.exists(GST_PYTHON) and subprocess.run([GST_PYTHON, "-c", probe], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(
    not has_gstreamer() or shutil.which("ffmpeg") is None,
    reason="needs python3-gst-1.0 and ffmpeg (tools/test installs them)",
)


@pytest.fixture
def gst_player(agent: Any, tmp_path: Path) -> Iterator[str]:
    """The GStreamer player on a 60 s tone, as ITEM; yields its IPC socket."""
    media = tmp_path / "tone.opus"
    subprocess.run([
        "ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=60",
        "-c:a", "libopus", "-frame_duration", "10", str(media),
    ], check=True)
    ipc = str(tmp_path / "gst.sock")
    log = open(tmp_path / "gst.log", "wb")
    process = subprocess.Popen(
        [GST_PYTHON, str(PLAYER), "--socket", agent.socket, "--ipc-socket", ipc, "--id", ITEM, "--name", "gst", "--verbose", str(media)],
        stdout=log, stderr=log,
    )
    try:
        yield ipc
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def position(ipc: str, readings: int = 10) -> Tuple[float, int, int]:
    """The player's position (s), the host time it was read at (the middle of the round trip)
    and the round trip, of the reading with the shortest round trip among ``readings``."""
    reader, writer = await asyncio.open_unix_connection(ipc)
    best: Tuple[float, int, int] = (0.0, 0, 1 << 62)
    try:
        for _ in range(readings):
            sent = host_time_ns()
            writer.write(b'{"command":["get_property","audio-pts"],"request_id":1}\n')
            reply = json.loads(await reader.readline())
            received = host_time_ns()
            assert reply["error"] == "success", reply
            if received - sent < best[2]:
                best = (float(reply["data"]), (sent + received) // 2, received - sent)
            await asyncio.sleep(0.01)
        return best
    finally:
        writer.close()


def off_by(seconds: float, at: int, rtt: int, expected_ns: int) -> float:
    """How far the reading is from `expected_ns` beyond what its round trip leaves open (ns)."""
    return abs(seconds * 1e9 - expected_ns) - rtt / 2


async def wait_for_socket(path: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert time.monotonic() < deadline, "the GStreamer player did not open its IPC socket"
        await asyncio.sleep(0.05)


def test_the_gstreamer_player_starts_at_the_anchored_instant_and_follows_seek_and_pause(agent: Any, gst_player: str) -> None:
    async def body() -> None:
        await wait_for_socket(gst_player)
        us = VirtualPlayer()
        c = await ready_player(agent.socket, "py-virtual", us)

        async def gst_ready() -> None:
            while not any(p.name == "gst" and p.readiness == "ready" for p in c.other_participants):
                await asyncio.sleep(0.05)
        await asyncio.wait_for(gst_ready(), 20)

        await c.coordinate_rate_change(1.0)
        play = await us.next(lambda x: isinstance(x, PlayCommand))
        await asyncio.sleep(max(0.0, (play.host_time_ns - host_time_ns()) / 1e9) + 0.5)
        seconds, at, rtt = await position(gst_player)
        # Its own position against the group's timeline, beyond the reading's own uncertainty.
        assert off_by(seconds, at, rtt, play.item_time_at(at)) < 1 * MS

        await c.coordinate_seek(20_000 * MS)
        seek = await us.next(lambda x: isinstance(x, PlayCommand) and x.originator.action == "seek")
        await asyncio.sleep(max(0.0, (seek.host_time_ns - host_time_ns()) / 1e9) + 0.5)
        seconds, at, rtt = await position(gst_player)
        assert off_by(seconds, at, rtt, seek.item_time_at(at)) < 1 * MS

        await c.coordinate_rate_change(0)
        pause = await us.next(lambda x: isinstance(x, PauseCommand) and x.originator.action == "pause")
        await asyncio.sleep(max(0.0, (pause.host_time_ns - host_time_ns()) / 1e9) + 0.3)
        first, _, _ = await position(gst_player)
        await asyncio.sleep(0.2)
        second, _, _ = await position(gst_player)
        assert first == second  # stopped…
        assert abs(first * 1e9 - pause.item_time_ns) < 1 * MS  # …where the group paused
        await c.stop()
    run(body())
