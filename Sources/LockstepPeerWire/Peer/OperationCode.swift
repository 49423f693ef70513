import LockstepCore

/// The one-byte code of an operation's command on the wire (`Protocol/peer-protocol.md` §4.5).
enum OperationCode: UInt8, CaseIterable {
    case load = 1
    case play = 2
    case pause = 3
    case seek = 4
    case rate = 5
    case hold = 6
    case start = 7
    case stop = 8
    case join = 9
}
