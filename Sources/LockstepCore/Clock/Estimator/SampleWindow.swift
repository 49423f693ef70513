/// The estimator's window: the last `capacity` samples, none older than ``maxAgeNs`` relative to
/// the newest. A fixed ring, allocated once: nothing is allocated after `init`.
///
/// Longer windows average more but trust the skew to stay constant for longer. Samples arrive
/// in exchange order, which is close to (not exactly) local-time order: ageing goes by arrival,
/// ``sorted(into:)`` gives the time order the fit needs.
struct SampleWindow: Sendable {
    /// One exchange as kept in the window: two one-way measurements at a local time.
    struct Entry: Sendable, Equatable {
        /// Midpoint, local clock.
        var local: Int64
        /// `t2 − t1`: offset plus the outbound delay.
        var out: Int64
        /// `t4 − t3`: minus the offset plus the return delay.
        var back: Int64

        init(local: Int64, out: Int64, back: Int64) {
            self.local = local
            self.out = out
            self.back = back
        }

        init(_ s: ClockSample) {
            self.init(local: s.midpointLocal.ns, out: s.t2.ns &- s.t1.ns, back: s.t4.ns &- s.t3.ns)
        }

        /// The exchange's own offset, `θ = (out − back) / 2`.
        var offset: Double { (Double(out) - Double(back)) / 2 }
        /// The round trip, `δ = out + back`.
        var delay: Int64 { out &+ back }
    }

    /// Samples older than this, relative to the newest, leave the window.
    let maxAgeNs: Int64
    /// Fixed-capacity ring, oldest at `head`.
    private var ring: ContiguousArray<Entry>
    private var head = 0
    /// Number of samples held.
    private(set) var count = 0

    init(capacity: Int, maxAgeNs: Int64) {
        precondition(capacity >= 1)
        self.maxAgeNs = maxAgeNs
        self.ring = ContiguousArray(repeating: Entry(local: 0, out: 0, back: 0), count: capacity)
    }

    /// Most samples held.
    var capacity: Int { ring.count }

    mutating func removeAll() {
        head = 0
        count = 0
    }

    /// Adds the newest sample: the oldest leaves when the window is full, and so does every
    /// sample more than ``maxAgeNs`` older than this one (the newest always stays).
    mutating func append(_ entry: Entry) {
        let capacity = ring.count
        if count == capacity {
            ring[head] = entry
            head = (head + 1) % capacity
        } else {
            ring[(head + count) % capacity] = entry
            count += 1
        }
        // Age out (the ring is in arrival order, close enough to time order).
        while count > 1, entry.local &- ring[head].local > maxAgeNs {
            head = (head + 1) % capacity
            count -= 1
        }
    }

    /// Calls `body` with each sample, oldest arrival first.
    @inline(__always)
    func forEach(_ body: (Entry) -> Void) {
        let capacity = ring.count
        var i = head
        for _ in 0..<count {
            body(ring[i])
            i += 1
            if i == capacity { i = 0 }
        }
    }

    /// The mean of `delay − minDelay` over the window (0 when empty).
    func meanExcess(over minDelay: Int64) -> Double {
        var sum = 0.0
        forEach { sum += Double($0.delay &- minDelay) }
        return count > 0 ? sum / Double(count) : 0
    }

    /// Replaces the contents of `sorted` with the window in local-time order (ties in arrival
    /// order). The window arrives nearly sorted, so an insertion sort is linear; `sorted` keeps
    /// its capacity, so nothing is allocated once it has reserved ``capacity``.
    func sorted(into sorted: inout ContiguousArray<Entry>) {
        sorted.removeAll(keepingCapacity: true)
        var slot = head
        for _ in 0..<count {
            let e = ring[slot]
            slot = slot + 1 == ring.count ? 0 : slot + 1
            sorted.append(e)
            var j = sorted.count - 1
            while j > 0, sorted[j - 1].local > e.local {
                sorted[j] = sorted[j - 1]
                j -= 1
            }
            sorted[j] = e
        }
    }
}
