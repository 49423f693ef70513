extension String {
    /// The longest prefix with at most `limit` UTF-8 bytes, cut at a character boundary.
    /// Fields on the wire have byte limits; text from users is cut, not refused.
    public func truncated(toUTF8 limit: Int) -> String {
        if utf8.count <= limit { return self }
        var out = ""
        var bytes = 0
        for ch in self {
            let n = String(ch).utf8.count
            if bytes + n > limit { break }
            out.append(ch)
            bytes += n
        }
        return out
    }
}
