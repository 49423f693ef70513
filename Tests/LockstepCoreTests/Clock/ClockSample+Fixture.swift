import LockstepCore

extension ClockSample {
    /// A sample from four raw readings in nanoseconds: fixtures only (the agent's samples come
    /// typed from the transport).
    init(t1: Int64, t2: Int64, t3: Int64, t4: Int64) {
        self.init(t1: LocalTime(ns: t1), t2: PeerTime(ns: t2), t3: PeerTime(ns: t3), t4: LocalTime(ns: t4))
    }
}
