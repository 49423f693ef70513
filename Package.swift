// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "lockstep",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "lockstepd", targets: ["lockstepd"]),
        .executable(name: "lockstep", targets: ["lockstep"]),
        .library(name: "LockstepClient", targets: ["LockstepClient", "LockstepPlayerProtocol"]),
        .library(name: "LockstepCore", targets: ["LockstepCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
    ],
    targets: [
        // The C API of avahi's Bonjour compatibility library.
        // Debian package: libavahi-compat-libdnssd-dev (tools/demo and tools/test install it).
        .systemLibrary(name: "CDNSSD"),
        // recvmsg(2) with kernel receive timestamps: the CMSG_* macros are not importable into Swift.
        // It also zeroes avahi's allocations (a workaround for avahi 0.8's compat library).
        .target(name: "CLockstepPosix", linkerSettings: [.linkedLibrary("avahi-common", .when(platforms: [.linux]))]),
        // SPAKE2 (a password-authenticated key exchange, for pairing with a short code): BoringSSL's,
        // as linked by swift-crypto; this target only declares it.
        .target(name: "CLockstepSPAKE2"),
        // Pure protocol logic: no sockets, no sleeping, no clock, no dependencies; time is an argument.
        .target(name: "LockstepCore"),
        // The player socket protocol: line-delimited JSON between an agent and its players, and
        // host time. All a player needs: no crypto, no core.
        .target(
            name: "LockstepPlayerProtocol",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")]
        ),
        // The peer protocol's bytes: datagram codec, envelopes, group keys.
        .target(
            name: "LockstepPeerWire",
            dependencies: ["LockstepCore", "CLockstepSPAKE2", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // The I/O shell: UDP to peers, DNS-SD, the player socket server, the daemon.
        .target(
            name: "LockstepAgent",
            dependencies: [
                "LockstepCore", "LockstepPeerWire", "LockstepPlayerProtocol", "CDNSSD", "CLockstepPosix",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        // A client of the player socket, for the CLI, the tools and any Swift player.
        .target(
            name: "LockstepClient",
            dependencies: [
                "LockstepPlayerProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The debug CLI's commands and table formatting, testable without a process.
        .target(
            name: "LockstepCLI",
            dependencies: [
                "LockstepClient", "LockstepMPV", "LockstepCore", "LockstepPeerWire", "LockstepPlayerProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // mpv's JSON IPC and the bridge between mpv and the agent (lockstep mpv).
        .target(
            name: "LockstepMPV",
            dependencies: [
                "LockstepClient", "LockstepCore", "LockstepPlayerProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The reference player: a precise virtual player, for tests, benchmarks, and as an example.
        .target(
            name: "LockstepRefPlayer",
            dependencies: [
                "LockstepClient", "LockstepCore", "LockstepPlayerProtocol",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "lockstep-refplayer",
            dependencies: [
                "LockstepRefPlayer", "LockstepCore", "LockstepPlayerProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Simulated clocks and links: the clock scenarios of the unit tests and of
        // `lockstep-bench scenarios`. Pure, like the core: simulated time, seeded randomness.
        .target(name: "LockstepSimKit", dependencies: ["LockstepCore"]),
        // The network lab (tools/lab) driven from Swift, and the instruments of the lab tests and
        // benchmarks (mpv's position probe).
        .target(
            name: "LockstepLab",
            dependencies: ["LockstepClient", "LockstepCore", "LockstepMPV", "LockstepPeerWire", "LockstepPlayerProtocol"]
        ),
        // The opt-in web endpoint (lockstepd --web): the embedded page, JS SDK and dashboard, and a
        // WebSocket relayed to the agent's own player socket, plus a time service for the page.
        .target(
            name: "LockstepWeb",
            dependencies: [
                "LockstepCore", "LockstepPlayerProtocol",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            exclude: ["Assets"]
        ),
        .executableTarget(
            name: "lockstepd",
            dependencies: [
                "LockstepAgent", "LockstepCore", "LockstepPlayerProtocol", "LockstepWeb",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(name: "lockstep", dependencies: ["LockstepCLI"]),
        // tools/bench: the benchmarks, on the network lab.
        .executableTarget(
            name: "lockstep-bench",
            dependencies: [
                "LockstepLab", "LockstepClient", "LockstepCore", "LockstepMPV", "LockstepPeerWire", "LockstepPlayerProtocol",
                "LockstepSimKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(
            name: "LockstepCoreTests",
            dependencies: [
                "LockstepCore", "LockstepSimKit",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // Helpers for tests: temporary directories, an in-process agent, a raw socket.
        .target(
            name: "LockstepTestKit",
            dependencies: [
                "LockstepAgent", "LockstepClient", "LockstepCore",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            path: "Tests/LockstepTestKit"
        ),
        // Both wire protocols: peer datagrams and envelopes, the player socket's framing, vectors.
        .testTarget(
            name: "LockstepWireTests",
            dependencies: [
                "LockstepPeerWire", "LockstepPlayerProtocol", "LockstepCore",
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // mpv's IPC against a real mpv, the bridge's policy, and the position probe.
        .testTarget(
            name: "LockstepMPVTests",
            dependencies: [
                "LockstepMPV", "LockstepClient", "LockstepPlayerProtocol", "LockstepCore", "LockstepLab", "LockstepTestKit",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "LockstepAgentTests",
            dependencies: [
                "LockstepAgent", "LockstepClient", "LockstepTestKit", "LockstepCore", "LockstepPeerWire", "LockstepPlayerProtocol",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The Swift player SDK: the coordinator's policy on a manual clock, the coordinator against an agent.
        .testTarget(
            name: "LockstepClientTests",
            dependencies: [
                "LockstepClient", "LockstepPlayerProtocol", "LockstepTestKit",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .testTarget(name: "LockstepCLITests", dependencies: ["LockstepCLI", "LockstepTestKit", "LockstepLab", "LockstepPlayerProtocol"]),
        // The web endpoint's pure parts (pairing, origins, the time service, the asset table) and
        // the endpoint against an agent in this process.
        .testTarget(
            name: "LockstepWebTests",
            dependencies: ["LockstepWeb", "LockstepTestKit", "LockstepPlayerProtocol"]
        ),
        // Tests on the network lab: real avahi-daemons, several hosts. Need root and LOCKSTEP_LAB=1.
        .testTarget(
            name: "LabTests",
            dependencies: ["LockstepLab", "LockstepClient", "LockstepCore", "LockstepMPV", "LockstepPeerWire", "LockstepPlayerProtocol", "LockstepRefPlayer"]
        ),
    ]
)

// The decoders of hostile input (peer datagrams, the player socket, join codes) as libFuzzer
// targets. A plain build gives a tool that writes the seed corpus and replays inputs; tools/fuzz
// builds it for fuzzing, in .build-fuzz.
package.targets.append(
    .executableTarget(
        name: "LockstepFuzz",
        dependencies: [
            "LockstepPeerWire", "LockstepPlayerProtocol", "LockstepCore",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]
    )
)
