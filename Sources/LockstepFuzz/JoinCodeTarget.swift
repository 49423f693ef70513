import Foundation
import LockstepPeerWire

/// `JoinCode.parse` on arbitrary text (invalid UTF-8 replaced). Properties: it returns or throws
/// a `ParseError`, never traps; what it accepts holds a 16-byte group id and a 32-byte key, and
/// making a code from it and parsing that gives the same group and the same code.
enum JoinCodeTarget {
    static func run(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let group = try? JoinCode.parse(text, name: "fuzz") else { return }
        require(group.idBytes.count == 16 && group.key.count == 32, "joincode: \(text.debugDescription) gave a group id of \(group.idBytes.count) bytes and a key of \(group.key.count)")
        let code = JoinCode.make(group)
        let again: GroupIdentity
        do {
            again = try JoinCode.parse(code, name: "fuzz")
        } catch {
            fatalError("joincode: \(text.debugDescription) was accepted, but its canonical form \(code) is not: \(error)")
        }
        require(again == group, "joincode: \(text.debugDescription) and \(code) give different groups")
        require(JoinCode.make(again) == code, "joincode: making a code is not stable for \(code)")
    }

    static var seeds: [(name: String, bytes: [UInt8])] {
        let first = GroupIdentity(name: "home", key: GroupKey(bytes: Array(0..<32), epoch: 1)!)
        let rotated = GroupIdentity(name: "home", key: GroupKey(bytes: Array(repeating: 0xff, count: 32), epoch: .max)!, groupID: Array(repeating: 0, count: 16))
        let code = JoinCode.make(first)
        return [
            ("code", Array(code.utf8)),
            ("code-rotated", Array(JoinCode.make(rotated).utf8)),
            ("code-uppercase", Array(code.uppercased().utf8)),
            ("code-spaced", Array(("  " + code.replacingOccurrences(of: "-", with: " ") + "\n").utf8)),
            ("code-undashed", Array((JoinCode.prefix + code.dropFirst(JoinCode.prefix.count).filter { $0 != "-" }).utf8)),
            ("code-typo", Array((code.dropLast() + (code.last == "a" ? "b" : "a")).utf8)),
        ]
    }

    static var dictionary: [[UInt8]] {
        [JoinCode.prefix, "-", " ", "\n", "LK1-"].map { Array($0.utf8) }
    }
}
