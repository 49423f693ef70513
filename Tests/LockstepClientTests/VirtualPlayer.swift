import LockstepClient
import LockstepPlayerProtocol

/// A player whose media clock is the host clock, exactly (plus ``offsetNs``): it does what each
/// command says at the instant the command says, and records the commands and rates it got.
actor VirtualPlayer: PlayerDelegate {
    private(set) var commands: [PlayerCommand] = []
    private(set) var rates: [Double] = []
    private(set) var received: [Int64] = []
    var offsetNs: Int64
    private var anchor: (item: Int64, host: Int64) = (0, 0)
    private var rate = 0.0

    init(offsetNs: Int64 = 0) {
        self.offsetNs = offsetNs
    }

    func play(_ c: PlayCommand) { follow(.play(c), c, rate: c.rate) }
    func pause(_ c: PauseCommand) { follow(.pause(c), c, rate: 0) }
    func buffer(_ c: BufferingCommand) { follow(.buffer(c), c, rate: 0) }

    func seek(_ c: SeekCommand) {
        offsetNs = 0  // an exact seek lands where it was told
        follow(.seek(c), c, rate: c.rate)
    }

    func setRate(_ rate: Double) {
        let now = MonotonicClock.read()
        anchor = (position(now) - offsetNs, now)
        self.rate = rate
        rates.append(rate)
    }

    func currentPosition() -> PositionSample? {
        let now = MonotonicClock.read()
        return PositionSample(itemTimeNs: position(now), hostTimeNs: now)
    }

    private func follow(_ command: PlayerCommand, _ c: any TimedCommand, rate: Double) {
        anchor = (c.itemTimeNs, c.hostTimeNs)
        self.rate = rate
        commands.append(command)
        received.append(MonotonicClock.read())
    }

    private func position(_ host: Int64) -> Int64 {
        anchor.item + Int64((Double(host - anchor.host) * rate).rounded()) + offsetNs
    }

    /// The plays received so far.
    var plays: [PlayCommand] {
        commands.compactMap { if case .play(let p) = $0 { p } else { nil } }
    }
}

/// Polls `check` every 20 ms until it holds or `seconds` pass; records an issue if it never does.
func eventually(_ what: String, within seconds: Double = 10, _ check: @Sendable () async throws -> Bool) async rethrows -> Bool {
    let deadline = MonotonicClock.read() + Int64(seconds * 1e9)
    while MonotonicClock.read() < deadline {
        if try await check() { return true }
        try? await Task.sleep(nanoseconds: 20_000_000)
    }
    return try await check()
}

extension VirtualPlayer {
    /// The drift corrections by seek received so far.
    var seeks: [SeekCommand] {
        commands.compactMap { if case .seek(let s) = $0 { s } else { nil } }
    }

    func setOffset(_ ns: Int64) { offsetNs = ns }
}
