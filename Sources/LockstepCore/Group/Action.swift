/// What a command did, as the peers and players are told ("who changed what").
public enum Action: UInt8, Sendable, Codable, CaseIterable, CustomStringConvertible {
    case load = 1
    case play = 2
    case pause = 3
    case seek = 4
    case setRate = 5
    case stop = 6
    /// Playback started automatically because every participant became ready (or waiting timed out).
    case start = 7

    public var description: String {
        switch self {
        case .load: "load"
        case .play: "play"
        case .pause: "pause"
        case .seek: "seek"
        case .setRate: "rate"
        case .stop: "stop"
        case .start: "start"
        }
    }
}
