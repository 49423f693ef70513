import LockstepClient
import LockstepCore
import LockstepPlayerProtocol

/// What `lockstep mpv` does between one mpv and the SDK's ``PlaybackCoordinator``, with no I/O:
/// it takes what mpv said and the coordinator's commands (and the host time), and returns what
/// to tell mpv and the coordinator. The coordinator speaks the protocol (hello, load, readiness,
/// position reports at its cadence, drift corrections, reconnection); this policy is the mpv side
/// of it: when exactly to unpause, pause and seek so that mpv lands on the group's instant. The
/// shell (``MPVBridge``, the coordinator's ``PlayerDelegate``) only moves these and keeps time.
///
/// ## The user's actions and the bridge's own
/// mpv's IPC is shared by the user's keys and the bridge, and mpv does not say who changed a
/// property. The policy keeps what the *group* wants mpv to be (paused or not, speed) and a
/// window in which a seek is its own; a change that contradicts the group's wish is the user's:
///
/// - the user **unpauses** → `coordinatePlay`, and mpv is paused again at once: the player must not
///   act on its own intent; it starts with everyone at the anchor the agent sends back;
/// - the user **pauses** → `coordinatePause`; mpv stays paused (what the user expects), and seeks
///   exactly to the group's pause position when that arrives;
/// - the user **seeks** → `coordinateSeek` to where mpv landed (read after `playback-restart`);
/// - the user changes **speed** → `coordinateSpeedChange`, and the speed is put back until the group's
///   timeline sets it at the anchor.
///
/// ## The coordinator's commands
/// - play from P at host time H, mpv paused where it stands S (known: where the
///   bridge's last exact seek went, or where it paused, read once paused): no seek, unpause at
///   H + (S − P) / rate (a start *in place*: mpv moves within about 2 ms of an unpause, where an
///   exact seek costs it tens of milliseconds). Otherwise pause, seek to P exactly, unpause at H. If mpv is
///   already playing at that rate and would be within ``Configuration/keepPlayingWithinNs`` of
///   P at H, it keeps playing (the agent's rate corrections close the rest) and nobody sees a
///   hiccup. An instruction due sooner than ``Configuration/minimumLeadNs`` is moved that far
///   later, to the matching position (the player joins where the group is then).
/// - pause (or stop) at P from H, and buffer: keep playing until H, then pause and seek to P
///   exactly.
/// - `setRate`: `speed` (a drift correction, then its end); a seek correction: as a play.
/// - The coordinator reads the position (`audio-pts`, with host timestamps) at its cadence while
///   mpv plays on the group's timeline; ``reports(readingAt:now:)`` says which readings it may
///   report: not while an instruction of the bridge is being carried out, nor until a resume or
///   a speed change has gone through mpv's audio buffer.
///
/// ## The start latency declared
/// Before the group has a timeline for mpv's file the next start may be a seek (a late join):
/// the bridge declares the calibrated latency of this mpv's exact seeks. Once it follows the
/// group, its plays and pauses are in place, and it declares
/// ``Configuration/inPlaceLatencyNs`` (``Action/declareStartLatency(_:)``, the coordinator's
/// `updateStartLatency`), so
/// that the group's lead is not a seek's. A seek of the playing group then gets that shorter
/// lead too: mpv jumps at once, and an unpause written before its seek completes starts a few
/// milliseconds behind, which the agent's rate corrections close.
///
/// ## Readiness
/// `file-loaded` → `transition(toItem:)` (the item: the `--id` given for that file, else its URL
/// or absolute path) and `setReady`; `paused-for-cache` → `setReady(false)` until it clears (the
/// agent then holds this player in stall recovery and rejoins it to the group when it is ready);
/// `end-file` → `leaveItem`. The coordinator restores the item and readiness when the agent
/// restarts; one that mpv loaded while the agent was away is loaded when it is back.
///
/// ## State
/// What the group wants and what the bridge is doing about it is one `Phase` (free, starting,
/// following, holding, held), each with its own data; the rest is what mpv last
/// said (its properties, its last position reading), whose seeks are under way
/// (`SeekAttribution`), and from when reports may go again.
public struct MPVBridgePolicy: Sendable {
    public let configuration: Configuration
    /// The item loaded on the agent, if any, and how it was loaded.
    public private(set) var item: String?
    private var load: LoadRequest?
    /// What the group wants of mpv and what the bridge is doing about it.
    private(set) var phase: Phase = .free
    /// mpv's properties as last observed (nil until the first observation).
    private var paused: Bool?
    private var speed: Double?
    private var cacheStalled = false
    /// The speed mpv should have now (the group's rate, or a drift correction's).
    private var commandedSpeed = 1.0
    /// When mpv last paused or resumed: readings from before say nothing about now.
    private var lastPauseChange: Int64 = .min
    private var seeks = SeekAttribution()
    /// The last position reading.
    private var lastReading: (position: Int64, at: Int64)?
    /// Reports start again from here (after a start or seek lands, or a speed change has gone
    /// through mpv's audio buffer).
    private var reportFrom: Int64 = .min
    /// What this mpv's exact seeks have cost: its start latency, unless fixed.
    public private(set) var calibration: StartLatencyCalibration
    /// Where mpv stands, paused, as far as the bridge knows (nil: it does not, or mpv moves):
    /// what makes a start in place possible.
    private(set) var standing: Int64?
    /// `standing` is an estimate made when mpv paused, to be replaced by a reading.
    private var standingEstimated = false
    /// Where mpv stood before it last resumed, if the bridge knew (a user's unpause that the
    /// bridge takes back moves it by how long it played).
    private var standingBeforeResume: Int64?
    /// The target of the bridge's own seek under way.
    private var seekTarget: Int64?
    /// The start latency last declared to the agent.
    public private(set) var declaredStartLatencyNs: Int64

    /// Speeds closer than this are the same: mpv reports `speed` with 6 decimals, and no user
    /// changes speed by less (the group's rates differ from 1 by the clocks' skew, a few ppm).
    static let speedTolerance = 1e-5

    /// How often a due pause looks again for a position reading it waits for (readings come
    /// ten times a second).
    static let readingWaitNs: Int64 = 25 * Nanos.millisecond

    /// `calibration`: what an earlier session of the same mpv learnt, if any.
    public init(configuration: Configuration = .init(), calibration: StartLatencyCalibration? = nil) {
        self.configuration = configuration
        let calibration = calibration ?? StartLatencyCalibration(configuration: configuration.calibration)
        self.calibration = calibration
        declaredStartLatencyNs = configuration.startLatencyNs ?? calibration.startLatencyNs
    }

    /// How far ahead this mpv needs its next start (declared to the agent): the fixed start
    /// latency; else, while it follows a group timeline, ``Configuration/inPlaceLatencyNs`` (its
    /// plays and pauses need no seek); else the calibrated latency of its exact seeks.
    public var startLatencyNs: Int64 {
        if let fixed = configuration.startLatencyNs { return fixed }
        return phase == .free ? calibration.startLatencyNs : configuration.inPlaceLatencyNs
    }

    /// True while position readings are useful: mpv plays on the group's timeline, or has just
    /// paused where the bridge wants to know it stands.
    public var wantsPositions: Bool {
        item != nil && (paused == false || (paused == true && standingEstimated))
    }

    /// True while the shell must read positions itself: the coordinator reads them (for its
    /// reports) only while mpv follows the group's playing timeline, and the bridge also needs
    /// them while the group's pause is pending, and paused to know where mpv stands.
    public var wantsOwnPositions: Bool {
        guard wantsPositions else { return false }
        if case .following = phase, paused == false { return false }
        return true
    }

    /// True while a position reading is wanted as soon as possible: the group's pause is pending
    /// and mpv plays towards it with no reading since it last resumed (after its user's own
    /// pause the bridge has just resumed it, and with a short lead the next of the ten readings a
    /// second may come too late to pause where the group pauses without a seek).
    public var wantsPositionsSoon: Bool {
        guard wantsPositions, case .holding = phase else { return false }
        return (lastReading?.at ?? .min) <= lastPauseChange
    }

    /// When ``handle(_:now:)`` must next be called with ``Input/tick`` (a host time), if ever.
    public var nextDeadline: Int64? {
        phase.deadline
    }

    /// The item identifier for a loaded file.
    public func itemID(for path: String) -> String {
        configuration.itemIDs[path] ?? path
    }

    public mutating func handle(_ input: Input, now: Int64) -> [Action] {
        let out: [Action]
        switch input {
        case .pause(let p): out = pauseChanged(to: p, now: now)
        case .speed(let s): out = speedChanged(to: s)
        case .pausedForCache(let stalled): out = cacheChanged(stalled: stalled)
        case .fileLoaded(let path, let duration, let title): out = fileLoaded(path, durationNs: duration, title: title)
        case .fileEnded: out = fileEnded()
        case .seekStarted:
            seeks.started(now: now, loaded: item != nil)
            if seekTarget == nil { forgetWhereItStood() }  // the user's seek
            out = []
        case .playbackRestarted(let position): out = playbackRestarted(at: position, now: now)
        case .position(let position, let at): out = positionRead(position, at: at, now: now)
        case .command(.play(let c)): out = play(c, now: now)
        case .command(.pause(let c)): out = pause(c)
        case .command(.buffer(let c)): out = buffer(c)
        case .command(.seek(let c)): out = seekCorrection(c, now: now)
        case .rate(let r): out = rateCorrection(r, now: now)
        case .itemProposed(let e): out = itemProposed(e)
        case .agentConnected(let current): out = agentConnected(current)
        case .tick: out = []
        }
        return out + due(now: now) + declareStartLatency()
    }

    /// The start latency, when it is not the one last declared.
    private mutating func declareStartLatency() -> [Action] {
        let wanted = startLatencyNs
        guard wanted != declaredStartLatencyNs else { return [] }
        declaredStartLatencyNs = wanted
        return [.declareStartLatency(wanted)]
    }

    // MARK: - mpv

    private mutating func pauseChanged(to p: Bool, now: Int64) -> [Action] {
        let previous = paused
        if previous != p { noteStanding(paused: p, now: now) }
        paused = p
        if previous != p { lastPauseChange = now }
        guard item != nil, let previous, previous != p else { return [] }
        // The bridge's own change, or one the group wants anyway.
        if p == phase.wantsPaused { return [] }
        let grouped = phase != .free
        if p {
            // The user paused: the group pauses at the anchor the agent sends back, this
            // mpv with the others (a pause now would leave it behind the group's position).
            return [.intent(IntentRequest(action: .pause))] + (grouped ? [.setPause(false)] : [])
        }
        if case .starting = phase {
            return [.setPause(true)]  // the group starts at its anchor anyway
        }
        // The user pressed play: back to paused (first: the less it moves, the better the
        // bridge knows where it stands) until the group starts together.
        return (grouped ? [.setPause(true)] : []) + [.intent(IntentRequest(action: .play))]
    }

    private mutating func speedChanged(to s: Double) -> [Action] {
        let previous = speed
        speed = s
        // mpv prints speed with 6 decimals; the group's rates carry clock skew (ppm).
        guard item != nil, previous != nil, (s - commandedSpeed).magnitude > Self.speedTolerance else { return [] }
        return [.intent(IntentRequest(action: .rate, rate: s))] + (phase != .free ? [.setSpeed(commandedSpeed)] : [])
    }

    private mutating func cacheChanged(stalled: Bool) -> [Action] {
        guard stalled != cacheStalled else { return [] }
        cacheStalled = stalled
        return item != nil ? [stalled ? .buffering : .ready] : []
    }

    private mutating func fileLoaded(_ path: String, durationNs: Int64?, title: String?) -> [Action] {
        resetTimeline()
        let request = LoadRequest(item: itemID(for: path), share: .group, title: title, durationNs: durationNs)
        (item, load) = (request.item, request)
        return [.load(request), cacheStalled ? .buffering : .ready]
    }

    /// Connected to the agent again: what mpv loaded while it was away (the coordinator restores
    /// only what it loaded itself).
    private func agentConnected(_ current: String?) -> [Action] {
        guard current != item else { return [] }
        guard let load else { return [.unload] }
        return [.load(load), cacheStalled ? .buffering : .ready]
    }

    private mutating func fileEnded() -> [Action] {
        guard item != nil else { return [] }
        (item, load) = (nil, nil)
        resetTimeline()
        return [.unload]
    }

    private mutating func playbackRestarted(at position: Int64?, now: Int64) -> [Action] {
        let own = seeks.ownRunning, target = seekTarget
        seekTarget = nil
        guard seeks.restarted() else {
            if own {
                calibration.seekCompleted(now: now)
                // Paused after an exact seek, mpv stands at its target (its readings say less
                // for a while: see ``Configuration/pauseWithoutSeekWithinNs``).
                if paused == true, let target { (standing, standingEstimated) = (target, false) }
            }
            return []
        }
        forgetWhereItStood()
        guard let position else { return [] }
        return [.intent(IntentRequest(action: .seek, positionNs: max(0, position)))]
    }

    private mutating func positionRead(_ position: Int64, at: Int64, now: Int64) -> [Action] {
        if paused == true {
            // Paused without a seek since: where mpv stands, as it will resume.
            if standingEstimated, seekTarget == nil, at >= lastPauseChange + configuration.standingSettleNs {
                (standing, standingEstimated) = (position, false)
            }
            return []
        }
        lastReading = (position, at)
        return []
    }

    /// Whether a reading taken at host time `at` may be reported to the group: mpv plays on the
    /// group's timeline at the group's rate (not while a rate correction runs), no seek of the
    /// bridge is under way, and its last resume or speed change has gone through its audio buffer.
    public func reports(readingAt at: Int64, now: Int64) -> Bool {
        guard case .following(let rate) = phase, paused == false, !seeks.ownUnderWay(now: now) else { return false }
        return (commandedSpeed - rate).magnitude <= Self.speedTolerance && at >= reportFrom
    }

    // MARK: - The coordinator

    private mutating func play(_ c: PlayCommand, now: Int64) -> [Action] {
        guard c.item == item else { return [] }
        guard c.rate > 0 else { return pause(c) }
        return start(position: c.itemTimeNs, at: c.hostTimeNs, rate: c.rate, mayKeepPlaying: true, now: now) + osd(c.originator)
    }

    private mutating func pause(_ c: some TimedCommand) -> [Action] {
        hold(c) ? osd(c.originator) : []
    }

    private mutating func buffer(_ c: BufferingCommand) -> [Action] {
        guard hold(c), configuration.osd else { return [] }
        let who = c.waitingFor.map { "\($0.peerName) (\($0.why))" }.joined(separator: ", ")
        return [.showText("Waiting for \(who.isEmpty ? "the group" : who)")]
    }

    /// The group pauses at the command's position from its instant: mpv plays on until then.
    /// False for a command about another item.
    private mutating func hold(_ c: some TimedCommand) -> Bool {
        guard c.item == item else { return false }
        phase = .holding(Phase.Hold(at: c.hostTimeNs, position: c.itemTimeNs, due: c.hostTimeNs))
        return true
    }

    /// A seek correction: as a start, while mpv follows the group's playing timeline (not
    /// during a start).
    private mutating func seekCorrection(_ c: SeekCommand, now: Int64) -> [Action] {
        guard c.item == item, case .following = phase else { return [] }
        return start(position: c.itemTimeNs, at: c.hostTimeNs, rate: c.rate, mayKeepPlaying: false, now: now)
    }

    /// A rate correction, or its end (the group's rate again): only while mpv follows.
    private mutating func rateCorrection(_ rate: Double, now: Int64) -> [Action] {
        guard case .following = phase, rate > 0 else { return [] }
        return [setSpeed(rate, now: now)]
    }

    private func itemProposed(_ e: GroupItem) -> [Action] {
        guard configuration.osd, let proposed = e.item, proposed != item, let origin = e.originator, !origin.local else { return [] }
        return [.showText("\(origin.name) plays \(e.title ?? proposed)")]
    }

    // MARK: - Time

    /// Carries out whatever is due at `now`.
    private mutating func due(now: Int64) -> [Action] {
        var out: [Action] = []
        if case .starting(let s) = phase, now >= s.at {
            phase = .following(rate: s.rate)
            reportFrom = max(reportFrom, now + configuration.resumeSettleNs)
            out.append(.setPause(false))
        }
        if case .holding(let h) = phase {
            out += carryOut(h, now: now)
        }
        return out
    }

    /// The group's pause, when due: mpv pauses where the group paused, and is sought there
    /// unless it is there already.
    private mutating func carryOut(_ hold: Phase.Hold, now: Int64) -> [Action] {
        var h = hold
        let latest = h.at + configuration.pauseLateByAtMostNs
        if now >= h.due, !h.refined, paused == false, reading(now: now) == nil, now < latest {
            // mpv plays (resumed after its user's own pause, say) but has not said where since:
            // wait a little for its next reading rather than pause and seek now (paused after a
            // seek, mpv misreports its position for a while); but no longer than until it gets
            // to the group's position by where it stood when it resumed, if the bridge knew.
            var next = min(now + Self.readingWaitNs, latest)
            if let reaches = instant(of: h.position, now: now) { next = min(next, reaches) }
            if next > now { h.due = next }
        }
        if now >= h.at, !h.refined, let reaches = instant(of: h.position, now: now, readingOnly: true), reaches > now, reaches <= latest {
            // mpv is a little behind the group (it lost time, say, to the user's own pause):
            // pausing when it gets there leaves it exactly at the group's position, no seek.
            h.refined = true
            h.due = reaches
        }
        guard now >= h.due else {
            phase = .holding(h)
            return []
        }
        phase = .held
        var out: [Action] = []
        let wasPlaying = paused == false
        if wasPlaying { out.append(.setPause(true)) }
        if !wasPlaying || !onTimeline(h.position, at: h.due, now: now, within: configuration.pauseWithoutSeekWithinNs) {
            out.append(ownSeek(h.position, now: now))
        }
        return out
    }

    /// Starts mpv at `position` at host time `at`: pauses it, seeks exactly, and unpauses at `at`
    /// (see ``Configuration/minimumLeadNs``); or, `mayKeepPlaying`, leaves it playing if it is there.
    private mutating func start(position: Int64, at: Int64, rate: Double, mayKeepPlaying: Bool, now: Int64) -> [Action] {
        let wasStarting = if case .starting = phase { true } else { false }
        commandedSpeed = rate
        var out: [Action] = []
        if speed.map({ $0 != rate }) ?? true { out.append(setSpeed(rate, now: now)) }
        if mayKeepPlaying, !wasStarting, paused == false, let s = speed, (s - rate).magnitude <= Self.speedTolerance,
           onTimeline(position, at: at, now: now, within: configuration.keepPlayingWithinNs) {
            phase = .following(rate: rate)
            return out
        }
        if paused == true, let s = standing, seekTarget == nil, (s - position).magnitude <= configuration.inPlaceWithinNs {
            // In place: unpause when the group's timeline reaches where mpv stands.
            let u = at.addingSaturating(Int64(saturating: (Double(s - position) / rate).rounded()))
            let soonest = now + configuration.minimumLeadNs
            if u.addingSaturating(configuration.inPlaceLateByAtMostNs) >= soonest {
                phase = .starting(Phase.Start(at: max(u, soonest), rate: rate))
                return out
            }
        }
        var startAt = at, from = position
        if startAt < now + configuration.minimumLeadNs {
            startAt = now + configuration.minimumLeadNs
            from = position.addingSaturating(Int64(saturating: (Double(startAt - at) * rate).rounded()))
        }
        if paused != true { out.append(.setPause(true)) }
        out.append(ownSeek(from, now: now))
        phase = .starting(Phase.Start(at: startAt, rate: rate))
        return out
    }

    // MARK: - Readings

    /// Whether mpv, playing, will be within `tolerance` of `position` at host time `at`, by its
    /// last position reading.
    private func onTimeline(_ position: Int64, at: Int64, now: Int64, within tolerance: Int64) -> Bool {
        guard let r = usableReading(now: now), let s = speed, s > 0 else { return false }
        let predicted = r.position.addingSaturating(Int64(saturating: (Double(at - r.at) * s).rounded()))
        return (predicted - position).magnitude <= tolerance
    }

    /// The host time at which mpv, playing, reaches `position`, by its last position reading
    /// (`readingOnly`: not by where it stood when it resumed).
    private func instant(of position: Int64, now: Int64, readingOnly: Bool = false) -> Int64? {
        guard let r = readingOnly ? reading(now: now) : usableReading(now: now), let s = speed, s > 0 else { return nil }
        return r.at.addingSaturating(Int64(saturating: (Double(position - r.position) / s).rounded()))
    }

    /// The last position reading (``reading(now:)``); with none since mpv last resumed, where it stood then
    /// (when the bridge knew) stands in for one taken at the resume: the pausing user's own mpv,
    /// resumed by the bridge until the group's instant, then pauses where the group pauses even
    /// if no reading comes in time (with a short lead, on a busy machine, none may).
    private func usableReading(now: Int64) -> (position: Int64, at: Int64)? {
        if let r = reading(now: now) { return r }
        guard paused == false, !seeks.ownRunning, let s = standingBeforeResume, now - lastPauseChange < configuration.readingMaxAgeNs else { return nil }
        return (s, lastPauseChange)
    }

    /// The last position reading if it still describes mpv: read since it last resumed, no seek
    /// of the bridge's under way, recent. (A reading is stamped at its IPC round trip's middle;
    /// where mpv stood when it resumed, with the time the bridge learnt of the resume, which
    /// can be late on a busy machine.)
    private func reading(now: Int64) -> (position: Int64, at: Int64)? {
        guard paused == false, !seeks.ownRunning, let r = lastReading, r.at > lastPauseChange,
              now - r.at < configuration.readingMaxAgeNs else { return nil }
        return r
    }

    // MARK: - Actions

    /// A speed change. While mpv plays at another speed than the group's (a drift correction), and
    /// until the change has gone through its audio buffer, `audio-pts` is off by about the
    /// buffer's length times the speed difference: no reports are made from such readings.
    private mutating func setSpeed(_ rate: Double, now: Int64) -> Action {
        commandedSpeed = rate
        reportFrom = max(reportFrom, now + configuration.speedSettleNs)
        return .setSpeed(rate)
    }

    private mutating func ownSeek(_ position: Int64, now: Int64) -> Action {
        seeks.issued(now: now, window: configuration.ownSeekWindowNs)
        calibration.seekIssued(now: now)
        forgetWhereItStood()
        seekTarget = max(0, position)
        return .seek(positionNs: max(0, position))
    }

    private mutating func resetTimeline() {
        phase = .free
        seeks.forgetUser()
        lastReading = nil
        forgetWhereItStood()
        seekTarget = nil
    }

    // MARK: - Where mpv stands

    /// mpv pauses (`paused`) or resumes at `now`: where it stands on pausing is estimated from its
    /// last reading (or from where it stood when it resumed, plus how long it played), until a
    /// reading once paused says.
    private mutating func noteStanding(paused p: Bool, now: Int64) {
        guard p else {
            standingBeforeResume = seekTarget == nil ? standing : nil
            forgetStanding()
            return
        }
        guard seekTarget == nil, let s = speed, s > 0, let r = usableReading(now: now) else { return forgetStanding() }
        standing = r.position.addingSaturating(Int64(saturating: (Double(now - r.at) * s).rounded()))
        standingEstimated = true
    }

    private mutating func forgetStanding() {
        standing = nil
        standingEstimated = false
    }

    /// mpv moves by a seek: where it stood says nothing any more.
    private mutating func forgetWhereItStood() {
        forgetStanding()
        standingBeforeResume = nil
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
