extension Array {
    /// The elements in order, cut into consecutive parts of at most `size` (the last may be
    /// shorter; none when empty): a list that may not fit one message, in message-sized parts.
    func parts(of size: Int) -> [[Element]] {
        precondition(size > 0)
        return stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
