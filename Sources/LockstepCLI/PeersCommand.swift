import ArgumentParser
import LockstepClient
import LockstepPlayerProtocol
import LockstepPeerWire

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
        subcommands: [Show.self, Create.self, Join.self, Rotate.self, NewCode.self])

    struct NewCode: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new-code",
            abstract: "Print a join code for a brand-new group, without touching any agent (for scripts: give it to every agent with LOCKSTEP_JOIN_CODE).")

        func run() {
            print(JoinCode.make(GroupIdentity(name: "new", key: .random())))
        }
    }
}

extension Group {
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The group: name, id, public tag, key epoch. The key only with --reveal.")
        @OptionGroup var options: CommonOptions
        @Flag(help: "Also print the join code (it carries the key: anyone with it joins the group).") var reveal = false
        func run() async throws {
            let r: GroupShowResult = try await options.withAgent { try await $0.request("group_show", GroupRequest(reveal: reveal)) }
            print(options.json ? try jsonText(r) : Group.render(r))
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Make a new group with a fresh key, switch this agent to it, and print its join code.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "A local name for the group.") var name = "default"
        func run() async throws {
            let r: GroupShowResult = try await options.withAgent { try await $0.request("group_create", GroupRequest(name: name)) }
            if options.json { print(try jsonText(r)); return }
            print(Group.render(r))
            print("\nOn each other device: lockstep group join \(r.joinCode ?? "")")
        }
    }

    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Join the group of a join code (stored in the agent's state directory).")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The join code from 'lockstep group create' or 'group show --reveal'.") var code: String
        @Option(help: "A local name for the group.") var name: String?
        func run() async throws {
            let r: GroupShowResult = try await options.withAgent { agent in
                do {
                    return try await agent.request("group_join", GroupRequest(name: name, code: code))
                } catch LockstepClient.Failure.rejected(let e) {
                    printError(e.message)
                    throw ExitCode(1)
                }
            }
            print(options.json ? try jsonText(r) : Group.render(r))
        }
    }

    struct Rotate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Replace the group key; reachable peers get the new one at once and nobody restarts.")
        @OptionGroup var options: CommonOptions
        func run() async throws {
            let r: GroupShowResult = try await options.withAgent { try await $0.request("group_rotate") }
            print(options.json ? try jsonText(r) : Group.render(r) + "\nDevices that were away get the new key when next heard; give new devices a fresh code (group show --reveal).")
        }
    }

    static func render(_ r: GroupShowResult) -> String {
        var f: [(String, String)] = [("group", r.name), ("id", r.id), ("tag", r.tag), ("key epoch", String(r.epoch) + (r.previousEpoch.map { " (still accepting \($0))" } ?? ""))]
        if let code = r.joinCode { f.append(("join code", code)) }
        return Fields(f).render()
    }
}
