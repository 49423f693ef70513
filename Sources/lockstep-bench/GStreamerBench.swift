import ArgumentParser

/// `tools/bench gstreamer`: `tools/bench mpv --systems gstreamer --probe-trials 0` under its own
/// name. Lab host h2 runs the Python SDK's GStreamer player
/// (`tools/clients/python/examples/gst_player.py`), h1 and h3 `lockstep mpv`; the same users'
/// script and the same position probe (each player's own position: mpv's `audio-pts`,
/// GStreamer's position query) give the spread of the three, each pair's offset, and each
/// player's error against the group's timeline (as the GStreamer player logged what it was told).
struct GStreamerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gstreamer",
        abstract: "A GStreamer player (Python SDK) beside two mpv on 3 lab hosts: start and steady spread, reactions, stall recovery.",
        discussion: """
            Takes every option of `lockstep-bench mpv` (--json, --steady, --runs, --media…); \
            --systems gstreamer,lockstep adds three mpv alone to the same report, for comparison.
            """)

    @Argument(parsing: .captureForPassthrough, help: "Options of lockstep-bench mpv.")
    var options: [String] = []

    func run() async throws {
        if options.contains("--help") || options.contains("-h") {
            print(Self.helpMessage())
            print(MpvBench.helpMessage())
            return
        }
        try await MpvBench.parse(["--systems", "gstreamer", "--probe-trials", "0"] + options).run()
    }
}
