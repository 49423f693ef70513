import ArgumentParser
import LockstepWire

struct Peers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The peers the agent knows: id, name, addresses, state, since when, last heard, incarnation.")

    @OptionGroup var options: CommonOptions

    func run() async throws {
        let result: PeersResult = try await options.withAgent { try await $0.request("peers") }
        print(options.json ? try jsonText(result) : Self.render(result))
    }

    static func render(_ r: PeersResult) -> String {
        if r.peers.isEmpty { return "no peers yet" }
        return Table(
            headers: ["NAME", "PEER ID", "STATE", "SINCE", "LAST HEARD", "ADDRESS", "INCARNATION"],
            rows: r.peers.map { p in
                let others = p.addresses.count - (p.preferred == nil ? 0 : 1)
                let address = (p.preferred ?? p.addresses.first ?? "-") + (others > 0 && p.preferred != nil ? " (+\(others))" : "")
                return [
                    p.name, String(p.peerID.prefix(8)), p.state, Human.duration(ns: p.stateAgeNs) + " ago",
                    p.lastHeardAgoNs.map { Human.duration(ns: $0) + " ago" } ?? "never", address,
                    p.incarnation.map(String.init) ?? "-",
                ]
            }
        ).render()
    }
}

struct Group: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The group this agent belongs to: its key, join codes, rotation.",
        subcommands: [NewCode.self])

    struct NewCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-code",
            abstract: "Print a join code for a brand-new group, without touching any agent (for scripts: give it to every agent with LOCKSTEP_JOIN_CODE).")

        func run() {
            print(JoinCode.make(GroupIdentity(name: "new", key: .random())))
        }
    }
}
