import Foundation

/// Test media made with ffmpeg's lavfi sources, cached by their parameters so each file is
/// made once per machine (under `tools/.cache/media/`, which git ignores; or LOCKSTEP_MEDIA_CACHE).
///
/// - ``tone(seconds:frequency:)``: a sine tone in Opus with 10 ms frames (48 kHz mono, 64 kb/s);
/// - ``video(seconds:)``: 320×180 `testsrc2` at 25 fps in H.264 (a keyframe every second) with
///   an 880 Hz tone in Opus (10 ms frames), in Matroska.
///
/// Files are written under a temporary name and renamed, so concurrent callers never see half a
/// file. Needs `ffmpeg` with libopus and libx264 (Debian's has both).
public enum TestMedia {
    /// Where the files go.
    public static var cacheDirectory: String {
        ProcessInfo.processInfo.environment["LOCKSTEP_MEDIA_CACHE"] ?? Lab.repositoryRoot + "/tools/.cache/media"
    }

    /// A sine tone, Opus with 10 ms frames. 600 s takes about 4 s to make.
    public static func tone(seconds: Int = 600, frequency: Int = 440) throws -> String {
        try make("tone-\(frequency)hz-\(seconds)s-opus10ms.opus", [
            "-f", "lavfi", "-i", "sine=frequency=\(frequency):sample_rate=48000:duration=\(seconds)",
            "-c:a", "libopus", "-b:a", "64k", "-frame_duration", "10", "-application", "audio",
        ])
    }

    /// A 25 fps test picture with a tone. 600 s takes about 15 s to make (2 cores).
    public static func video(seconds: Int = 600) throws -> String {
        try make("video-320x180-25fps-\(seconds)s-h264-opus10ms.mkv", [
            "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=25:duration=\(seconds)",
            "-f", "lavfi", "-i", "sine=frequency=880:sample_rate=48000:duration=\(seconds)",
            "-c:v", "libx264", "-preset", "veryfast", "-crf", "30", "-g", "25", "-pix_fmt", "yuv420p",
            "-c:a", "libopus", "-b:a", "64k", "-frame_duration", "10", "-application", "audio",
            "-shortest",
        ])
    }

    private static func make(_ name: String, _ arguments: [String]) throws -> String {
        let dir = cacheDirectory
        let path = dir + "/" + name
        if FileManager.default.fileExists(atPath: path) { return path }
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let ext = (name as NSString).pathExtension
        let partial = "\(dir)/.\(name).\(getpid())-\(UInt32.random(in: 0...UInt32.max)).\(ext)"
        defer { unlink(partial) }
        let r = try Shell.run("ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + arguments + [partial])
        guard r.status == 0 else {
            throw Lab.Failure(description: "ffmpeg could not make \(name): \(r.stderr.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
        guard rename(partial, path) == 0 else {
            throw Lab.Failure(description: "cannot move \(partial) to \(path): \(String(cString: strerror(errno)))")
        }
        return path
    }
}
