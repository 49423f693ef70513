// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "lockstep",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "lockstepd", targets: ["lockstepd"]),
        .executable(name: "lockstep", targets: ["lockstep"]),
        .library(name: "LockstepClient", targets: ["LockstepClient"]),
        .library(name: "LockstepCore", targets: ["LockstepCore"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", from: "2.0.1"),
    ],
    targets: [
        // The C API of avahi's Bonjour compatibility library.
        // Debian package: libavahi-compat-libdnssd-dev (tools/demo and tools/test install it).
        .systemLibrary(name: "CDNSSD"),
        // recvmsg(2) with kernel receive timestamps: the CMSG_* macros are not importable into Swift.
        .target(name: "CLockstepPosix"),
        // Pure protocol logic: no sockets, no sleeping, time is an argument.
        .target(
            name: "LockstepCore",
            dependencies: [.product(name: "Collections", package: "swift-collections")]
        ),
        // Bytes on the wire: peer datagrams, the player socket's JSON lines, sealing.
        .target(
            name: "LockstepWire",
            dependencies: [
                "LockstepCore",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        // The I/O shell: UDP to peers, DNS-SD, the player socket server, the daemon.
        .target(
            name: "LockstepAgent",
            dependencies: [
                "LockstepCore", "LockstepWire", "CDNSSD", "CLockstepPosix",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // A client of the player socket, for the CLI, the tools and any Swift player.
        .target(
            name: "LockstepClient",
            dependencies: [
                "LockstepWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The debug CLI's commands and table formatting, testable without a process.
        .target(
            name: "LockstepCLI",
            dependencies: [
                "LockstepClient", "LockstepMPV",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // mpv's JSON IPC: the bridge (lockstep mpv) and the mpv benchmark's probe.
        .target(
            name: "LockstepMPV",
            dependencies: [
                "LockstepWire", "LockstepCore", "LockstepClient",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // The reference player: a precise virtual player, for tests, benchmarks, and as an example.
        .target(name: "LockstepRefPlayer", dependencies: ["LockstepClient", "LockstepCore", "LockstepWire"]),
        .executableTarget(
            name: "lockstep-refplayer",
            dependencies: [
                "LockstepRefPlayer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The network lab (tools/lab) driven from Swift, for lab tests and benchmarks.
        .target(name: "LockstepLab", dependencies: ["LockstepClient", "LockstepWire", "LockstepMPV"]),
        .executableTarget(
            name: "lockstepd",
            dependencies: [
                "LockstepAgent",
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
                "LockstepLab", "LockstepClient", "LockstepWire", "LockstepCore", "LockstepMPV",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(
            name: "LockstepCoreTests",
            dependencies: [
                "LockstepCore",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        // Helpers for tests: temporary directories, an in-process agent, the lab.
        .target(
            name: "LockstepTestKit",
            dependencies: [
                "LockstepAgent", "LockstepClient",
                .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
            ],
            path: "Tests/LockstepTestKit"
        ),
        .testTarget(name: "LockstepWireTests", dependencies: ["LockstepWire"]),
        // mpv's IPC against a real mpv, and the bridge's policy.
        .testTarget(name: "LockstepMPVTests", dependencies: ["LockstepMPV", "LockstepWire", "LockstepCore", "LockstepLab"]),
        .testTarget(
            name: "LockstepAgentTests",
            dependencies: ["LockstepAgent", "LockstepClient", "LockstepTestKit"]
        ),
        .testTarget(name: "LockstepCLITests", dependencies: ["LockstepCLI", "LockstepAgent", "LockstepTestKit", "LockstepLab"]),
        // Tests on the network lab: real avahi-daemons, several hosts. Need root and LOCKSTEP_LAB=1.
        .testTarget(name: "LabTests", dependencies: ["LockstepLab", "LockstepClient", "LockstepWire", "LockstepCore", "LockstepMPV"]),
    ]
)

// The decoders of hostile input (peer datagrams, the player socket, join codes) as libFuzzer
// targets. A plain build gives a tool that writes the seed corpus and replays inputs; tools/fuzz
// builds it for fuzzing, in .build-fuzz.
package.targets.append(
    .executableTarget(
        name: "LockstepFuzz",
        dependencies: [
            "LockstepWire", "LockstepCore",
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]
    )
)
