/// What a player shares about an item when it proposes it to the group (SharePlay's activity metadata).
public struct ItemMetadata: Equatable, Hashable, Sendable, Codable {
    public static let maxTitleBytes = 128
    public static let maxArtworkBytes = 256

    public var title: String?
    public var artworkURL: String?
    /// The media's length, when known (at most ``MediaPosition/max``).
    public var duration: TimeSpan?

    public init(title: String? = nil, artworkURL: String? = nil, duration: TimeSpan? = nil) {
        self.title = title.map { $0.truncated(toUTF8: ItemMetadata.maxTitleBytes) }
        self.artworkURL = artworkURL.flatMap { $0.utf8.count <= ItemMetadata.maxArtworkBytes ? $0 : nil }
        self.duration = duration.flatMap { Limits.positionNs.contains($0.ns) ? $0 : nil }
    }

    // JSON (test vectors, debugging) names nanosecond fields with their unit.
    enum CodingKeys: String, CodingKey {
        case title, artworkURL
        case duration = "durationNs"
    }

}
