import ArgumentParser
import LockstepClient
import LockstepPlayerProtocol
import LockstepCore
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
            headers: ["NAME", "FINGERPRINT", "STATE", "SINCE", "LAST HEARD", "ADDRESS", "INCARNATION"],
            rows: r.peers.map { p in
                let others = p.addresses.count - (p.preferred == nil ? 0 : 1)
                let address = (p.preferred ?? p.addresses.first ?? "-") + (others > 0 && p.preferred != nil ? " (+\(others))" : "")
                return [
                    p.name, PeerID(hex: p.peerID).map(MemberKey.fingerprint(of:)) ?? String(p.peerID.prefix(8)), p.state, Human.duration(ns: p.stateAgeNs) + " ago",
                    p.lastHeardAgoNs.map { Human.duration(ns: $0) + " ago" } ?? "never", address,
                    p.incarnation.map(String.init) ?? "-",
                ]
            }
        ).render()
    }
}

struct Group: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The group this agent belongs to: its members, key, join codes; removing a device.",
        subcommands: [Show.self, Create.self, Invite.self, Join.self, Members.self, Remove.self, Rotate.self, NewCode.self, ResetIdentity.self])

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
            print("\nTo add a device: lockstep group invite here, then lockstep group join CODE on it.")
            print("(For scripted installs, the join code above also works; it carries the key until the next rotation or removal.)")
        }
    }

    struct Invite: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show a one-time 8-digit code that lets a new device join this group (lockstep group join CODE on it).",
            discussion: "The code is good for 10 minutes and for --uses devices; it is worth nothing once used, and a wrong guess is spent: after 5 failed tries the invite closes. The new device must be on the same network (DNS-SD), or have this device as a --peer.")
        @OptionGroup var options: CommonOptions
        @Option(help: "How many devices may join with this code (1-64).") var uses = 1
        func validate() throws {
            guard (1...64).contains(uses) else { throw ValidationError("--uses must be within 1...64") }
        }
        func run() async throws {
            let r: GroupInviteResult = try await options.withAgent { try await $0.request("group_invite", GroupInviteRequest(uses: uses)) }
            if options.json { print(try jsonText(r)); return }
            print(Fields([("code", r.code), ("valid for", Human.duration(ns: r.expiresInNs)), ("devices", String(r.uses))]).render())
            print("\nOn the new device: lockstep group join \(r.code)")
        }
    }

    struct Join: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Join a group: with the 8-digit code of 'lockstep group invite' on a member (paired over the network), or with a join code (stored in the agent's state directory).")
        @OptionGroup var options: CommonOptions
        @Argument(help: "An 8-digit code from 'lockstep group invite', or a join code (lk1-…). Omit it, or give '-', to type it at a prompt or pipe it on standard input: then it shows neither in 'ps' nor in the shell's history.") var code: String?
        @Option(help: "A local name for the group.") var name: String?
        func run() async throws {
            let code: String
            if let given = self.code, given != "-" {
                code = given
            } else {
                do {
                    code = try SecretPrompt.read("join code: ")
                } catch {
                    printError(error.description)
                    throw ExitCode(2)
                }
            }
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
        static let configuration = CommandConfiguration(abstract: "Replace the group key (old join codes stop working); each member gets the new one under a key it shares with this device alone, and nobody restarts.")
        @OptionGroup var options: CommonOptions
        func run() async throws {
            let r: GroupShowResult = try await options.withAgent { try await $0.request("group_rotate") }
            print(options.json ? try jsonText(r) : Group.render(r) + "\nMembers that were away get the new key when next heard; give new devices a fresh code (group show --reveal).")
        }
    }

    struct ResetIdentity: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset-identity",
            abstract: "Give this device a new device key: the way out when two devices run from copies of one state directory (lockstep doctor says so).",
            discussion: """
                Run it on one of the two copies only. The agent writes a new key to STATE_DIR/identity and starts again under it, in the same process; \
                it still holds the group key, so every member admits the new key when the device announces it. The old key stays a member: the \
                other copy uses it. A device that is no copy needs no new key; if one was made anyway, remove its old fingerprint (lockstep group remove).
                """)
        @OptionGroup var options: CommonOptions
        func run() async throws {
            let r: GroupResetIdentityResult = try await options.withAgent { agent in
                do {
                    return try await agent.request("group_reset_identity")
                } catch LockstepClient.Failure.rejected(let e) {
                    printError(e.message)
                    throw ExitCode(1)
                }
            }
            print(options.json ? try jsonText(r) : """
                this device's key is new: fingerprint \(Terminal.escaped(r.fingerprint)) (it was \(Terminal.escaped(r.previousFingerprint)), which the other copy keeps)
                the agent starts again under it; the group's members admit it when it announces itself (lockstep group members)
                """)
        }
    }

    struct Members: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The group's members (name, fingerprint, reachable) and the devices removed from it.")
        @OptionGroup var options: CommonOptions
        func run() async throws {
            let r: GroupMembersResult = try await options.withAgent { try await $0.request("group_members") }
            print(options.json ? try jsonText(r) : Group.render(r))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove a device from the group, for good: the group moves to a new key that reaches every other member and not that device.",
            discussion: "Compare the fingerprint with the one the device shows (lockstep peers) before removing it. Members that are away learn of the removal, and get the new key, when they are next heard; the removed device gets nothing, and what it sends is dropped.")
        @OptionGroup var options: CommonOptions
        @Argument(help: "The device: its name, fingerprint, or peer id (see lockstep group members).") var device: String
        func run() async throws {
            let r: GroupMembersResult = try await options.withAgent { agent in
                do {
                    return try await agent.request("group_remove", GroupRemoveRequest(device: device))
                } catch LockstepClient.Failure.rejected(let e) {
                    printError(e.message)
                    throw ExitCode(1)
                }
            }
            print(options.json ? try jsonText(r) : Group.render(r))
        }
    }

    static func render(_ r: GroupMembersResult) -> String {
        var lines = [Table(headers: ["MEMBER", "FINGERPRINT", "REACHABLE"], rows: r.members.map { m in
            [m.name + (m.thisDevice ? " (this device)" : ""), m.fingerprint, m.thisDevice ? "-" : (m.reachable ? "yes" : "no")]
        }).render()]
        var f: [(String, String)] = [("key epoch", String(r.epoch))]
        if !r.removed.isEmpty { f.append(("removed", r.removed.joined(separator: ", "))) }
        if r.unacknowledged > 0 { f.append(("waiting for", "\(r.unacknowledged) members to acknowledge the newest key")) }
        lines.append(Fields(f).render())
        return lines.joined(separator: "\n")
    }

    static func render(_ r: GroupShowResult) -> String {
        var f: [(String, String)] = [("group", r.name), ("id", r.id), ("tag", r.tag), ("key epoch", String(r.epoch) + (r.previousEpoch.map { " (still accepting \($0))" } ?? ""))]
        if let code = r.joinCode { f.append(("join code", code)) }
        return Fields(f).render()
    }
}
