extension StringProtocol {
    /// This text without the characters at either end for which `trim` holds: whitespace and
    /// newlines unless told otherwise (Foundation's `trimmingCharacters(in:)`, which the agent does
    /// not link).
    public func trimmed(where trim: (Character) -> Bool = { $0.isWhitespace }) -> String {
        guard let first = firstIndex(where: { !trim($0) }), let last = lastIndex(where: { !trim($0) }) else { return "" }
        return String(self[first...last])
    }
}
