"""Real agents for the SDK's tests: ``lockstepd`` processes on private sockets, state
directories and loopback ports, started and stopped by PID. The binaries come from
``$LOCKSTEP_BIN`` (tools/test sets it) or the repository's debug build."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

REPO = Path(__file__).resolve().parents[4]


def bin_dir() -> Path:
    explicit = os.environ.get("LOCKSTEP_BIN")
    return Path(explicit) if explicit else REPO / ".build" / "debug"


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Agent:
    """One ``lockstepd``: its socket, its state directory, its UDP port; restartable."""

    def __init__(self, directory: Path, name: str, port: int, peers: List[int], join_code: str) -> None:
        self.directory, self.name, self.port, self.peers, self.join_code = directory, name, port, peers, join_code
        self.socket = str(directory / "agent.sock")
        self.process: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        args = [
            str(bin_dir() / "lockstepd"), "--socket", self.socket, "--state-dir", str(self.directory / "state"),
            "--name", self.name, "--port", str(self.port), "--no-mdns", "--log-level", "info",
        ]
        for p in self.peers:
            args += ["--peer", f"127.0.0.1:{p}"]
        env = dict(os.environ, LOCKSTEP_JOIN_CODE=self.join_code, AVAHI_COMPAT_NOWARN="1")
        log = open(self.directory / "agent.log", "ab")
        self.process = subprocess.Popen(args, env=env, stdout=log, stderr=log)
        deadline = time.monotonic() + 20
        while not os.path.exists(self.socket):
            if self.process.poll() is not None:
                raise RuntimeError(f"lockstepd exited: see {self.directory / 'agent.log'}")
            if time.monotonic() > deadline:
                raise RuntimeError("lockstepd did not open its socket within 20 s")
            time.sleep(0.02)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None


def new_join_code() -> str:
    out = subprocess.run([str(bin_dir() / "lockstep"), "group", "new-code"], capture_output=True, text=True, check=True)
    return out.stdout.strip().split()[-1]


@pytest.fixture
def agents(tmp_path: Path) -> Iterator[List[Agent]]:
    """Two agents in one group of their own, on loopback, that name each other as peers."""
    if not (bin_dir() / "lockstepd").exists():
        pytest.fail(f"no lockstepd in {bin_dir()}: build it (swift build) or set LOCKSTEP_BIN")
    code = new_join_code()
    ports = [free_udp_port(), free_udp_port()]
    made = []
    for i, port in enumerate(ports):
        d = tmp_path / f"a{i + 1}"
        (d / "state").mkdir(parents=True)
        made.append(Agent(d, f"sdk-a{i + 1}", port, [p for p in ports if p != port], code))
    try:
        for a in made:
            a.start()
        yield made
    finally:
        for a in made:
            a.stop()


@pytest.fixture
def agent(agents: List[Agent]) -> Agent:
    return agents[0]
