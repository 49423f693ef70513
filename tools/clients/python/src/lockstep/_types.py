"""The values the coordinator hands a player and an app: commands, their originator,
participants, the group's item. Field names follow Protocol/player-protocol.md; times are
integer nanoseconds, host times on CLOCK_MONOTONIC (:func:`host_time_ns`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple


def host_time_ns() -> int:
    """Now on the host clock the agent uses: ``CLOCK_MONOTONIC``, the same for every process."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Share:
    """With whom a player plays its item (``share`` of ``load``)."""

    GROUP = "group"  #: with the group: adopt its timeline or propose the item to it
    SOLO = "solo"  #: for this player's user alone ("play for me only"), not coordinated


class SuspensionReason:
    """SharePlay's suspension reasons; any other string of 1-32 bytes works too. Agents started
    with ``--waiting-reasons`` make the group wait for the reasons they list."""

    STALL_RECOVERY = "stall-recovery"
    INTERRUPTION = "interruption"
    USER_CHANGING_TIME = "user-changing-time"
    INTERSTITIAL = "interstitial"
    USER_ACTION_REQUIRED = "user-action-required"


@dataclass(frozen=True)
class Capabilities:
    """What the player can do; the agent's sync policy corrects it accordingly: a rate nudge
    (``rate``) or a seek (``exact_seek``)."""

    rate: bool = False  #: can change its playback rate smoothly
    exact_seek: bool = False  #: can seek to an exact position
    start_at_host_time: bool = False  #: can start at a given host time


@dataclass(frozen=True)
class Origin:
    """Who caused a change and how (the participant that issued it, like AVPlayer's rate
    change reasons). ``name`` is the peer's; ``player`` the name of the player whose user
    caused it, when a player did (None for the CLI, tools and the agents' own starts).
    ``reason``: None, ``ready``, ``timeout``, ``play-immediately``, ``suspension-ended`` or
    ``waiting: REASON``. ``lamport`` is the command's number at its origin; ``stamp_time_ns``,
    with ``peer_id``, its place in the group's order."""

    action: str
    peer_id: str = ""
    name: str = ""
    reason: Optional[str] = None
    local: bool = False
    lamport: int = 0
    player: Optional[str] = None
    stamp_time_ns: Optional[int] = None

    @staticmethod
    def parse(raw: Any) -> "Origin":
        o = raw if isinstance(raw, dict) else {}
        player = o.get("player")
        stamp = o.get("stamp_time_ns")
        return Origin(
            action=str(o.get("action", "")), peer_id=str(o.get("peer_id", "")), name=str(o.get("name", "")),
            reason=o.get("reason"), local=bool(o.get("local", False)), lamport=int(o.get("lamport", 0)),
            player=str(player) if player is not None else None, stamp_time_ns=int(stamp) if stamp is not None else None,
        )


@dataclass(frozen=True)
class TimedCommand:
    """Be at ``item_time_ns`` at ``host_time_ns`` (output latency already folded in), moving
    at ``rate`` media nanoseconds per host nanosecond from there (0 for a pause). ``rate``
    includes the agent's clock-skew factor (e.g. 1.0000000556): apply it as given."""

    item: str
    item_time_ns: int
    host_time_ns: int
    rate: float
    originator: Origin

    def item_time_at(self, host_ns: int) -> int:
        """Where the media should be at ``host_ns``: a command that arrives late is joined where
        the group is, not where it was."""
        return self.item_time_ns + round((host_ns - self.host_time_ns) * self.rate)


@dataclass(frozen=True)
class PlayCommand(TimedCommand):
    """Start (or keep) playing: present ``item_time_ns`` at ``host_time_ns`` at ``rate``.
    A seek while playing is a play command at the new time."""


@dataclass(frozen=True)
class PauseCommand(TimedCommand):
    """Stop at ``item_time_ns`` from ``host_time_ns`` (rate 0). ``stopped``: the group stopped
    the item altogether."""

    stopped: bool = False


@dataclass(frozen=True)
class BufferingCommand(TimedCommand):
    """The group waits for someone (``waiting_for``) before playing from ``item_time_ns``: hold
    there and show a spinner. Comes again when the list changes."""

    waiting_for: Tuple["WaitingFor", ...] = ()


@dataclass(frozen=True)
class SeekCommand(TimedCommand):
    """A drift correction: be exactly at ``item_time_ns`` at ``host_time_ns``, keep ``rate``.
    ``error_ns`` is the error corrected (player minus group)."""

    error_ns: int = 0


@dataclass(frozen=True)
class WaitingFor:
    """A participant the group waits for, and why (``loading``, ``buffering`` or a reason)."""

    peer_name: str
    player: str
    why: str


@dataclass(frozen=True)
class Participant:
    """A player on the same item, on any device. ``local``: on this machine; ``is_me``: this
    coordinator's own player."""

    peer_id: str
    peer_name: str
    player_id: int
    name: str
    readiness: str
    suspension_reasons: Tuple[str, ...]
    local: bool
    is_me: bool

    @staticmethod
    def parse(raw: Dict[str, Any], my_player_id: Optional[int]) -> "Participant":
        local = bool(raw.get("local", False))
        player_id = int(raw.get("player_id", 0))
        return Participant(
            peer_id=str(raw.get("peer_id", "")), peer_name=str(raw.get("peer_name", "")), player_id=player_id,
            name=str(raw.get("name", "")), readiness=str(raw.get("readiness", "")),
            suspension_reasons=tuple(str(r) for r in raw.get("suspension_reasons", []) or []),
            local=local, is_me=local and player_id == my_player_id,
        )


@dataclass(frozen=True)
class GroupItem:
    """The group's item, as proposed by a participant (``item_proposed``); ``item`` None: the
    group stopped."""

    item: Optional[str]
    title: Optional[str] = None
    artwork_url: Optional[str] = None
    duration_ns: Optional[int] = None
    originator: Optional[Origin] = None


@dataclass(frozen=True)
class PositionSample:
    """At host time ``host_time_ns`` the player was at ``item_time_ns``: what a player's clock
    says, read by the coordinator several times a second while playing."""

    item_time_ns: int
    host_time_ns: int


@dataclass
class _Loaded:
    """What to restore after the agent restarted."""

    item: str
    share: str
    metadata: Dict[str, Any] = field(default_factory=dict)
    ready: bool = False


def waiting_list(raw: Any) -> List[WaitingFor]:
    return [
        WaitingFor(peer_name=str(w.get("peer_name", "")), player=str(w.get("player", "")), why=str(w.get("why", "")))
        for w in (raw or []) if isinstance(w, dict)
    ]
