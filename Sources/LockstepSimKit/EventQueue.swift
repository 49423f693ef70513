/// A binary min-heap of timed events; ties keep insertion order.
public struct EventQueue<Event> {
    private var heap: [(time: Int64, seq: Int, event: Event)] = []
    private var seq = 0

    public init() {}

    public var peekTime: Int64? { heap.first?.time }

    public var isEmpty: Bool { heap.isEmpty }

    public mutating func push(at time: Int64, _ event: Event) {
        heap.append((time, seq, event))
        seq += 1
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(i, parent) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    public mutating func pop() -> (Int64, Event)? {
        guard !heap.isEmpty else { return nil }
        heap.swapAt(0, heap.count - 1)
        let top = heap.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1, r = l + 1
            var m = i
            if l < heap.count && less(l, m) { m = l }
            if r < heap.count && less(r, m) { m = r }
            if m == i { break }
            heap.swapAt(i, m)
            i = m
        }
        return (top.time, top.event)
    }

    private func less(_ a: Int, _ b: Int) -> Bool {
        (heap[a].time, heap[a].seq) < (heap[b].time, heap[b].seq)
    }
}
