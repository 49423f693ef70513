import LockstepCore
import LockstepPlayerProtocol

/// What `lockstep mpv` does between one mpv and the local agent, with no I/O: it takes what mpv
/// and the agent said (and the host time), and returns what to tell each of them. The shell
/// (``MPVBridge``) only moves these over the two sockets and keeps time.
///
/// ## The user's actions and the bridge's own
/// mpv's IPC is shared by the user's keys and the bridge, and mpv does not say who changed a
/// property. The policy keeps what the *group* wants mpv to be (paused or not, speed) and a
/// window in which a seek is its own; a change that contradicts the group's wish is the user's:
///
/// - the user **unpauses** → intent `play`, and mpv is paused again at once: the player must not
///   act on its own intent; it starts with everyone at the anchor the agent sends back;
/// - the user **pauses** → intent `pause`; mpv stays paused (what the user expects), and seeks
///   exactly to the group's pause position when that arrives;
/// - the user **seeks** → intent `seek` with where mpv landed (read after `playback-restart`);
/// - the user changes **speed** → intent `rate`, and the speed is put back until the group's
///   timeline sets it at the anchor.
///
/// ## The agent's instructions
/// - `timeline` playing from P at host time H: pause, seek to P exactly, unpause at H. If mpv is
///   already playing at that rate and would be within ``Configuration/keepPlayingWithinNs`` of
///   P at H, it keeps playing (the agent's rate corrections close the rest) and nobody sees a
///   hiccup. An instruction due sooner than ``Configuration/seekLeadNs`` is moved that far
///   later, to the matching position (the player joins where the group is then).
/// - `timeline` paused (or stopped) at P from H, and `wait`: keep playing until H, then pause and
///   seek to P exactly.
/// - `correction` `rate`: `speed` for a while, then back; `seek`: as a timeline start.
/// - Position reports (`audio-pts`, read with host timestamps) go to the agent while mpv plays
///   on the group's timeline, not while an instruction of the bridge is being carried out.
///
/// ## Readiness
/// `file-loaded` → `load` (the item: the `--id` given for that file, else its URL or absolute
/// path) and `ready`; `paused-for-cache` → `buffering` until it clears (the agent then holds this
/// player in stall recovery and rejoins it to the group when it is ready); `end-file` → `unload`.
public struct MPVBridgePolicy: Sendable {
    public struct Configuration: Sendable, Equatable {
        /// How long mpv needs to pause and seek exactly before it can resume on time. Declared to
        /// the agent as the player's start latency, so group anchors leave it this much room.
        public var seekLeadNs: Int64 = 120 * Nanos.millisecond
        /// A playing mpv that would be within this of a new playing timeline keeps playing.
        public var keepPlayingWithinNs: Int64 = 15 * Nanos.millisecond
        /// A playing mpv paused at the group's pause instant is not sought if it was on the
        /// timeline to within this: a seek makes a paused mpv misreport its position (and show a
        /// wrong time) for a while, the next start seeks exactly anyway, and a reading taken
        /// during a rate correction is off by a few ms (mpv's audio buffer times the change).
        public var pauseWithoutSeekWithinNs: Int64 = 10 * Nanos.millisecond
        /// A playing mpv behind the group's pause position by up to this long is paused when it
        /// gets there rather than at the group's instant, and needs no seek.
        public var pauseLateByAtMostNs: Int64 = 100 * Nanos.millisecond
        /// How long after a speed change `audio-pts` is unreliable (mpv's audio buffer, 0.2 s).
        public var speedSettleNs: Int64 = 300 * Nanos.millisecond
        /// A seek event within this long of the bridge's own seek is the bridge's.
        public var ownSeekWindowNs: Int64 = 2 * Nanos.second
        /// Custom item identifiers by file (mpv's `path` as loaded, absolute).
        public var itemIDs: [String: String] = [:]
        /// Show who changed what on mpv's OSD.
        public var osd = true
        /// How long an OSD message stays, ms.
        public var osdDurationMs = 2000

        public init() {}
    }

    /// What mpv or the agent said.
    public enum Input: Sendable, Equatable {
        /// mpv's `pause` property (observed: first its value, then every change).
        case pause(Bool)
        /// mpv's `speed` property.
        case speed(Double)
        /// mpv's `paused-for-cache` property.
        case pausedForCache(Bool)
        /// A file is loaded (`file-loaded`): its absolute path or URL, its duration if known.
        case fileLoaded(path: String, durationNs: Int64?, title: String?)
        /// mpv closed the file (`end-file`).
        case fileEnded
        /// mpv began a seek (`seek` event).
        case seekStarted
        /// Playback resumed after a seek (`playback-restart`), and where, if it could be read.
        case playbackRestarted(positionNs: Int64?)
        /// A position reading: at host time `at` mpv presented `positionNs` (`audio-pts`).
        case position(Int64, at: Int64)
        /// Agent events.
        case timeline(TimelineEvent)
        case wait(WaitEvent)
        case correction(CorrectionEvent)
        case itemProposed(ItemProposedEvent)
        /// Time passed (the shell calls this at ``nextDeadline`` and now and then).
        case tick
    }

    /// What to do, in order.
    public enum Action: Sendable, Equatable {
        /// mpv: `set_property pause`.
        case setPause(Bool)
        /// mpv: `set_property speed`.
        case setSpeed(Double)
        /// mpv: `seek <s> absolute+exact`.
        case seek(positionNs: Int64)
        /// mpv: `show-text`.
        case showText(String)
        /// Agent requests.
        case load(LoadRequest)
        case unload
        case ready
        case buffering
        case intent(IntentRequest)
        case report(PositionReport)
    }

    /// What the group wants mpv to do.
    enum Wish: Equatable {
        /// No group timeline for this file yet (or a solo file): every change is the user's own.
        case none
        case paused
        case playing(rate: Double)
    }

    public let configuration: Configuration
    /// The item loaded on the agent, if any.
    public private(set) var item: String?
    private var wish: Wish = .none
    /// mpv's properties as last observed (nil until the first observation).
    private var paused: Bool?
    private var speed: Double?
    private var cacheStalled = false
    /// The speed mpv should have now (the group's rate, or a correction's).
    private var commandedSpeed = 1.0
    /// Unpause at this host time (mpv paused and sought meanwhile).
    private var pendingStart: Int64?
    /// The group's pause: its instant `at` and `position`. mpv pauses at `due` (and is sought
    /// exactly there unless it is there already): the group's instant, or, `refined`, when mpv's
    /// position reaches the group's; until then `due` is also when to look again.
    private var pendingHold: (at: Int64, position: Int64, refined: Bool, due: Int64)?
    /// When mpv last paused or resumed: readings from before say nothing about now.
    private var lastPauseChange: Int64 = .min
    /// Back to the group's rate at this host time.
    private var speedRestore: Int64?
    /// The bridge's own seeks whose `seek` event has not come yet, and until when one may still
    /// come (mpv may merge seeks issued together into one).
    private var unstartedOwnSeeks = 0
    private var ownSeekUntil: Int64 = .min
    /// An own seek is under way: positions read now say nothing (until `playback-restart`).
    private var ownSeekRunning = false
    private var userSeeking = false
    /// The last position reading.
    private var lastReading: (position: Int64, at: Int64)?
    /// Reports start again from here (after a start or seek lands, or a speed change has gone
    /// through mpv's audio buffer).
    private var reportFrom: Int64 = .min

    /// Speeds closer than this are the same: mpv reports `speed` with 6 decimals, and no user
    /// changes speed by less (the group's rates differ from 1 by the clocks' skew, a few ppm).
    static let speedTolerance = 1e-5

    public init(configuration: Configuration = .init()) {
        self.configuration = configuration
    }

    /// True while position readings are useful: mpv plays on the group's timeline.
    public var wantsPositions: Bool {
        item != nil && paused == false
    }

    /// When ``handle(_:now:)`` must next be called with ``Input/tick`` (a host time), if ever.
    public var nextDeadline: Int64? {
        [pendingStart, pendingHold?.due, speedRestore].compactMap { $0 }.min()
    }

    /// The item identifier for a loaded file.
    public func itemID(for path: String) -> String {
        configuration.itemIDs[path] ?? path
    }

    public mutating func handle(_ input: Input, now: Int64) -> [Action] {
        var out: [Action] = []
        switch input {
        case .pause(let p):
            let previous = paused
            paused = p
            if previous != p { lastPauseChange = now }
            guard item != nil, let previous, previous != p else { break }
            // Paused is what the group wants while it is paused (once its pause instant has come),
            // and while a start is pending.
            let wanted: Bool?
            switch wish {
            case .none: wanted = nil
            case .paused: wanted = pendingHold == nil
            case .playing: wanted = pendingStart != nil
            }
            if p == wanted { break }  // the bridge's own change, or one the group wants anyway
            if p {
                // The user paused: the group pauses at the anchor the agent sends back, this
                // mpv with the others (a pause now would leave it behind the group's position).
                out.append(.intent(IntentRequest(action: .pause)))
                if wish != .none { out.append(.setPause(false)) }
            } else if pendingStart != nil {
                out.append(.setPause(true))  // the group starts at its anchor anyway
            } else {
                // The user pressed play: back to paused until the group starts together.
                out.append(.intent(IntentRequest(action: .play)))
                if wish != .none { out.append(.setPause(true)) }
            }
        case .speed(let s):
            let previous = speed
            speed = s
            // mpv prints speed with 6 decimals; the group's rates carry clock skew (ppm).
            guard item != nil, previous != nil, (s - commandedSpeed).magnitude > Self.speedTolerance else { break }
            out.append(.intent(IntentRequest(action: .rate, rate: s)))
            if wish != .none { out.append(.setSpeed(commandedSpeed)) }
        case .pausedForCache(let stalled):
            guard stalled != cacheStalled else { break }
            cacheStalled = stalled
            if item != nil { out.append(stalled ? .buffering : .ready) }
        case .fileLoaded(let path, let duration, let title):
            resetTimeline()
            let id = itemID(for: path)
            item = id
            out.append(.load(LoadRequest(item: id, share: .group, title: title, durationNs: duration)))
            out.append(cacheStalled ? .buffering : .ready)
        case .fileEnded:
            guard item != nil else { break }
            item = nil
            resetTimeline()
            out.append(.unload)
        case .seekStarted:
            if now > ownSeekUntil { unstartedOwnSeeks = 0 }
            if unstartedOwnSeeks > 0 {
                unstartedOwnSeeks -= 1
            } else if item != nil {
                userSeeking = true
            }
        case .playbackRestarted(let position):
            ownSeekRunning = false
            if userSeeking {
                userSeeking = false
                if let position { out.append(.intent(IntentRequest(action: .seek, positionNs: max(0, position)))) }
            }
        case .position(let position, let at):
            lastReading = (position, at)
            if case .playing = wish, paused == false, pendingStart == nil, pendingHold == nil,
               !ownSeekRunning || now > ownSeekUntil, speedRestore == nil, at >= reportFrom {
                out.append(.report(PositionReport(positionNs: position, hostTimeNs: at)))
            }
        case .timeline(let t):
            guard t.item == item else { break }
            speedRestore = nil
            if t.state == .playing, t.rate > 0 {
                out += start(position: t.positionNs, at: t.hostTimeNs, rate: t.rate, mayKeepPlaying: true, now: now)
            } else {
                out += hold(position: t.positionNs, at: t.hostTimeNs, now: now)
            }
            out += osd(t.origin)
        case .wait(let w):
            guard w.item == item else { break }
            speedRestore = nil
            out += hold(position: w.positionNs, at: w.hostTimeNs, now: now)
            if configuration.osd {
                let who = w.waitingFor.map { "\($0.peerName) (\($0.why))" }.joined(separator: ", ")
                out.append(.showText("Waiting for \(who.isEmpty ? "the group" : who)"))
            }
        case .correction(let c):
            guard case .playing(let rate) = wish, pendingStart == nil else { break }
            if c.kind == .rate, let r = c.rate, let until = c.untilHostTimeNs {
                out.append(setSpeed(r, now: now))
                speedRestore = until > now ? until : nil
            } else if c.kind == .seek, let p = c.positionNs, let h = c.hostTimeNs {
                out += start(position: p, at: h, rate: rate, mayKeepPlaying: false, now: now)
            }
        case .itemProposed(let e):
            if configuration.osd, let proposed = e.item, proposed != item, !e.origin.local {
                out.append(.showText("\(e.origin.name) plays \(e.title ?? proposed)"))
            }
        case .tick:
            break
        }
        out += due(now: now)
        return out
    }

    /// Carries out whatever is due at `now`.
    private mutating func due(now: Int64) -> [Action] {
        var out: [Action] = []
        if let at = pendingStart, now >= at {
            pendingStart = nil
            reportFrom = max(reportFrom, now + 100 * Nanos.millisecond)
            out.append(.setPause(false))
        }
        if let h = pendingHold, now >= h.due, !h.refined, paused == false, usableReading(now: now) == nil,
           now < h.at + configuration.pauseLateByAtMostNs {
            // mpv plays (resumed after its user's own pause, say) but has not said where since:
            // wait a little for its next reading rather than pause and seek now (paused after a
            // seek, mpv misreports its position for a while).
            pendingHold?.due = min(now + Self.readingWaitNs, h.at + configuration.pauseLateByAtMostNs)
        }
        if let h = pendingHold, now >= h.at, !h.refined, let reaches = instant(of: h.position, now: now), reaches > now,
           reaches - h.at <= configuration.pauseLateByAtMostNs {
            // mpv is a little behind the group (it lost time, say, to the user's own pause):
            // pausing when it gets there leaves it exactly at the group's position, no seek.
            pendingHold = (h.at, h.position, true, reaches)
        }
        if let h = pendingHold, now >= h.due {
            pendingHold = nil
            let wasPlaying = paused == false
            if wasPlaying { out.append(.setPause(true)) }
            if !wasPlaying || !onTimeline(h.position, at: h.due, now: now, within: configuration.pauseWithoutSeekWithinNs) {
                out.append(ownSeek(h.position, now: now))
            }
        }
        if let at = speedRestore, now >= at, case .playing(let rate) = wish {
            speedRestore = nil
            out.append(setSpeed(rate, now: now))
        }
        return out
    }

    private mutating func start(position: Int64, at: Int64, rate: Double, mayKeepPlaying: Bool, now: Int64) -> [Action] {
        wish = .playing(rate: rate)
        pendingHold = nil
        commandedSpeed = rate
        var out: [Action] = []
        if speed.map({ $0 != rate }) ?? true { out.append(setSpeed(rate, now: now)) }
        if mayKeepPlaying, pendingStart == nil, paused == false, let s = speed, (s - rate).magnitude <= Self.speedTolerance,
           onTimeline(position, at: at, now: now, within: configuration.keepPlayingWithinNs) {
            return out
        }
        var startAt = at, from = position
        if startAt < now + configuration.seekLeadNs {
            startAt = now + configuration.seekLeadNs
            from = position + Int64((Double(startAt - at) * rate).rounded())
        }
        if paused != true { out.append(.setPause(true)) }
        out.append(ownSeek(from, now: now))
        pendingStart = startAt
        return out
    }

    /// Whether mpv, playing, will be within `tolerance` of `position` at host time `at`, by its
    /// last position reading.
    private func onTimeline(_ position: Int64, at: Int64, now: Int64, within tolerance: Int64) -> Bool {
        guard let r = usableReading(now: now), let s = speed, s > 0 else { return false }
        let predicted = r.position + Int64((Double(at - r.at) * s).rounded())
        return (predicted - position).magnitude <= tolerance
    }

    /// How often a due pause looks again for a position reading it waits for (readings come
    /// ten times a second).
    static let readingWaitNs: Int64 = 25 * Nanos.millisecond

    /// The host time at which mpv, playing, reaches `position`, by its last position reading.
    private func instant(of position: Int64, now: Int64) -> Int64? {
        guard let r = usableReading(now: now), let s = speed, s > 0 else { return nil }
        return r.at + Int64((Double(position - r.position) / s).rounded())
    }

    /// The last position reading if it still describes mpv: playing since before it, no seek
    /// of the bridge's under way, recent.
    private func usableReading(now: Int64) -> (position: Int64, at: Int64)? {
        guard paused == false, !ownSeekRunning, let r = lastReading, r.at > lastPauseChange, now - r.at < 500 * Nanos.millisecond else { return nil }
        return r
    }

    private mutating func hold(position: Int64, at: Int64, now: Int64) -> [Action] {
        wish = .paused
        pendingStart = nil
        pendingHold = (at, position, false, at)
        return []
    }

    /// A speed change. While mpv plays at another speed than the group's (a rate correction), and
    /// until the change has gone through its audio buffer, `audio-pts` is off by about the
    /// buffer's length times the speed difference: no reports are made from such readings.
    private mutating func setSpeed(_ rate: Double, now: Int64) -> Action {
        commandedSpeed = rate
        reportFrom = max(reportFrom, now + configuration.speedSettleNs)
        return .setSpeed(rate)
    }

    private mutating func ownSeek(_ position: Int64, now: Int64) -> Action {
        unstartedOwnSeeks += 1
        ownSeekRunning = true
        ownSeekUntil = now + configuration.ownSeekWindowNs
        userSeeking = false
        return .seek(positionNs: max(0, position))
    }

    private mutating func resetTimeline() {
        wish = .none
        pendingStart = nil
        pendingHold = nil
        speedRestore = nil
        userSeeking = false
        lastReading = nil
    }

    private func osd(_ origin: Origin) -> [Action] {
        guard configuration.osd, !origin.local, origin.reason == nil else { return [] }
        let verb: String
        switch origin.action {
        case .play: verb = "played"
        case .pause: verb = "paused"
        case .seek: verb = "seeked"
        case .rate: verb = "changed the speed"
        default: return []
        }
        return [.showText("\(origin.name) \(verb)")]
    }
}
