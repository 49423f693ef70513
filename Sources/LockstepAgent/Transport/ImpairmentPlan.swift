#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LockstepCore

/// Network impairments the agent applies to its own outgoing datagrams, because the lab's
/// kernel has no netem. Test hooks only: the default is no impairment at all.
///
/// Written as `delay=5ms,jitter=1ms,loss=10%,dup=1%`, optionally per destination with
/// `--impair-to ADDRESS=SPEC` (the address of the destination, without port).
public struct ImpairmentPlan: Sendable, Equatable {
    public struct Spec: Sendable, Equatable {
        /// Fixed one-way delay added to every datagram (ns).
        public var delayNs: Int64 = 0
        /// Uniform extra delay in [-jitter, +jitter] (ns), never below zero in total.
        public var jitterNs: Int64 = 0
        /// Probability of dropping a datagram.
        public var loss: Double = 0
        /// Probability of sending a datagram twice.
        public var duplicate: Double = 0

        public init(delayNs: Int64 = 0, jitterNs: Int64 = 0, loss: Double = 0, duplicate: Double = 0) {
            self.delayNs = delayNs
            self.jitterNs = jitterNs
            self.loss = loss
            self.duplicate = duplicate
        }

        public var isNone: Bool { delayNs == 0 && jitterNs == 0 && loss == 0 && duplicate == 0 }

        /// Parses `delay=5ms,jitter=1ms,loss=10%,dup=1%` (units: ns, us, ms, s; percent or fraction).
        public init(parsing text: String) throws(ParseError) {
            for part in text.split(separator: ",") {
                let kv = part.split(separator: "=", maxSplits: 1).map { $0.trimmed() }
                guard kv.count == 2 else { throw ParseError(text: String(part), reason: "expected key=value") }
                switch kv[0] {
                case "delay": delayNs = try Self.duration(kv[1])
                case "jitter": jitterNs = try Self.duration(kv[1])
                case "loss": loss = try Self.fraction(kv[1])
                case "dup", "duplicate": duplicate = try Self.fraction(kv[1])
                default: throw ParseError(text: String(part), reason: "unknown impairment '\(kv[0])' (delay, jitter, loss, dup)")
                }
            }
        }

        static func duration(_ s: String) throws(ParseError) -> Int64 {
            let units: [(String, Double)] = [("ns", 1), ("us", 1e3), ("µs", 1e3), ("ms", 1e6), ("s", 1e9)]
            for (suffix, scale) in units where s.hasSuffix(suffix) {
                if let v = Double(s.dropLast(suffix.count)), v >= 0, v < 1e6 { return Int64(v * scale) }
            }
            throw ParseError(text: s, reason: "expected a duration such as 5ms, 200us or 1s")
        }

        static func fraction(_ s: String) throws(ParseError) -> Double {
            if s.hasSuffix("%"), let v = Double(s.dropLast()), (0...100).contains(v) { return v / 100 }
            if let v = Double(s), (0...1).contains(v) { return v }
            throw ParseError(text: s, reason: "expected a probability such as 10% or 0.1")
        }
    }

    public struct ParseError: Error, CustomStringConvertible {
        public var text: String
        public var reason: String
        public var description: String { "cannot parse impairment '\(text)': \(reason)" }
    }

    /// Applied to every destination without its own spec.
    public var all: Spec
    /// Per destination address (host part only, as printed by ``Endpoint/host``).
    public var perDestination: [String: Spec]

    public init(all: Spec = .init(), perDestination: [String: Spec] = [:]) {
        self.all = all
        self.perDestination = perDestination
    }

    public static let none = ImpairmentPlan()

    public var isNone: Bool { all.isNone && perDestination.values.allSatisfy(\.isNone) }

    public func spec(for destination: Endpoint) -> Spec {
        perDestination[destination.host] ?? all
    }
}
