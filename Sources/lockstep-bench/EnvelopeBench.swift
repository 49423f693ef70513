import ArgumentParser
import LockstepCore
import LockstepLab
import LockstepPeerWire
import LockstepPlayerProtocol

/// `lockstep-bench envelope`: what sealing and opening one datagram cost the agent. Every
/// datagram an agent sends is sealed and every one it takes is opened (ChaCha20-Poly1305 through
/// swift-crypto, the header, padding, the replay window), so at idle these are paid a few dozen
/// times a second and while a group of 64 forms thousands of times. No lab, no root.
struct EnvelopeBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "envelope",
        abstract: "CPU cost of sealing and of opening one datagram under a group key, by message size.")

    @Flag(help: "Print one JSON object instead of a table.")
    var json = false

    @Option(help: "Timed datagrams per size (2…200,000; all are kept, to be opened after).")
    var datagrams = 20_000

    func validate() throws {
        guard (2...200_000).contains(datagrams) else { throw ValidationError("--datagrams must be within 2…200,000") }
    }

    func run() throws {
        var report = Report(benchmark: "envelope")
        report.parameters = ["datagrams": String(datagrams)]
        let order = "message bytes,datagram bytes,seal p50 us,seal p99 us,open p50 us,open p99 us"
        var rows: [[String: String]] = []
        let key = GroupKey.random()
        let sender = PeerID.random(), receiver = PeerID.random()
        // Sizes of an interleaved clock request, a digest, and the largest message.
        for size in [40, 300, Envelope.maxMessageBytes] {
            let sealer = EnvelopeSealer(sender: sender, incarnation: 1, key: key)
            let opener = EnvelopeOpener(me: receiver, keys: [key])
            let message = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31) }
            var sealed: [[UInt8]] = []
            sealed.reserveCapacity(datagrams)
            var sealCosts: [Double] = [], openCosts: [Double] = []
            sealCosts.reserveCapacity(datagrams)
            openCosts.reserveCapacity(datagrams)
            // A warm-up: the first calls pay for the runtime's metadata and the sender's key.
            for _ in 0..<100 { _ = try? opener.open(sealer.seal(message)) }
            for _ in 0..<datagrams {
                let start = MonotonicClock.read()
                let datagram = sealer.seal(message)
                sealCosts.append(Double(MonotonicClock.read() - start) / 1_000)
                sealed.append(datagram)
            }
            var opened = 0
            for datagram in sealed {
                let start = MonotonicClock.read()
                let ok = (try? opener.open(datagram)) != nil
                openCosts.append(Double(MonotonicClock.read() - start) / 1_000)
                if ok { opened += 1 }
            }
            guard opened == datagrams else { throw ValidationError("only \(opened) of \(datagrams) datagrams opened") }
            let sealing = Stats(sealCosts), opening = Stats(openCosts)
            let bytes = sealed[0].count
            rows.append([
                "_order": order, "message bytes": String(size), "datagram bytes": String(bytes),
                "seal p50 us": fmt(sealing.median, 2), "seal p99 us": fmt(sealing.percentile(99), 2),
                "open p50 us": fmt(opening.median, 2), "open p99 us": fmt(opening.percentile(99), 2),
            ])
            report.figures["message_\(size)_seal_p50_us"] = sealing.median
            report.figures["message_\(size)_seal_p99_us"] = sealing.percentile(99)
            report.figures["message_\(size)_open_p50_us"] = opening.median
            report.figures["message_\(size)_open_p99_us"] = opening.percentile(99)
        }
        report.tables["cost per datagram (one thread, release build)"] = rows
        report.notes.append("opened in the order sealed, from one sender, so every open passes the replay window; a datagram's bytes include the 36-byte header and 16-byte tag")
        report.print(json: json)
    }
}
