import Foundation
import Synchronization

/// A headless Chromium driven over its DevTools protocol, for the browser tests and
/// `tools/bench web`. `tools/cdp-pipe` runs the browser with `--remote-debugging-pipe` and relays
/// the protocol as JSON lines; this class speaks to it, optionally inside a lab host
/// (`tools/lab exec`), so the browser is on that host's network.
///
/// Needs Debian's `chromium` (tools/lib.sh installs it with the `browser` group).
public final class ChromiumDriver: @unchecked Sendable {
    // @unchecked: the process and handles are set once in init; `pending` is behind a mutex.
    private let process = Process()
    private let input: FileHandle
    private let pending = Waiters()

    /// Whether `chromium` is installed.
    public static var isAvailable: Bool {
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// A failure of the browser or of a command sent to it.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Starts the browser, on lab host `host` of `lab` if given. `flags` go to Chromium.
    public init(lab: Lab? = nil, host: Int = 1, flags: [String] = []) throws {
        let relay = Lab.repositoryRoot + "/tools/cdp-pipe"
        if let lab {
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.arguments = [lab.script, "exec", lab.directory, String(host), "python3", relay] + flags
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", relay] + flags
        }
        let toBrowser = Pipe(), fromBrowser = Pipe()
        process.standardInput = toBrowser
        process.standardOutput = fromBrowser
        process.standardError = FileHandle.nullDevice
        try process.run()
        input = toBrowser.fileHandleForWriting
        let output = fromBrowser.fileHandleForReading
        let pending = self.pending
        let thread = Thread {
            var buffer = Data()
            while true {
                let chunk = output.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let nl = buffer.firstIndex(of: 0x0A) {
                    let line = buffer[buffer.startIndex..<nl]
                    buffer = Data(buffer[(nl + 1)...])
                    guard let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any] else { continue }
                    guard let id = object["id"] as? Int else {
                        // An event: kept for takeEvents (only those asked for, tracing data).
                        if let method = object["method"] as? String, method.hasPrefix("Tracing.") { pending.state.withLock { $0.events.append(Data(line)) } }
                        continue
                    }
                    let waiter = pending.state.withLock { $0.waiting.removeValue(forKey: id) }
                    waiter?.resume(returning: Data(line))
                }
            }
            let all = pending.state.withLock { p in
                defer { p.waiting = [:] }
                return Array(p.waiting.values)
            }
            for w in all { w.resume(throwing: Failure(description: "the browser exited")) }
        }
        thread.start()
    }

    deinit { close() }

    /// Ends the browser.
    public func close() {
        try? input.close()
        if process.isRunning { process.waitUntilExit() }
    }

    /// Sends a DevTools command and returns its `result` as JSON.
    @discardableResult
    public func send(_ method: String, _ params: [String: any Sendable] = [:], session: String? = nil, timeout: Double = 30) async throws -> [String: Any] {
        var message: [String: Any] = ["method": method, "params": params]
        if let session { message["sessionId"] = session }
        let data: Data = try await withCheckedThrowingContinuation { c in
            let id = pending.state.withLock { p in
                defer { p.next += 1 }
                p.waiting[p.next] = c
                return p.next
            }
            message["id"] = id
            do {
                var line = try JSONSerialization.data(withJSONObject: message)
                line.append(0x0A)
                try input.write(contentsOf: line)
            } catch {
                if let w = pending.state.withLock({ $0.waiting.removeValue(forKey: id) }) { w.resume(throwing: error) }
            }
        }
        let reply = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        if let error = reply["error"] as? [String: Any] {
            throw Failure(description: "\(method): \(error["message"] ?? error)")
        }
        return reply["result"] as? [String: Any] ?? [:]
    }

    /// Opens `url` in a new tab; returns the tab's session.
    public func open(_ url: String, newWindow: Bool = false) async throws -> String {
        let target = try await send("Target.createTarget", ["url": url, "newWindow": newWindow])
        guard let targetID = target["targetId"] as? String else { throw Failure(description: "no target for \(url)") }
        let attached = try await send("Target.attachToTarget", ["targetId": targetID, "flatten": true])
        guard let session = attached["sessionId"] as? String else { throw Failure(description: "cannot attach to \(url)") }
        return session
    }

    /// Evaluates `expression` (awaiting a promise) in the tab; its value must be a JSON string
    /// (wrap it in `JSON.stringify`), decoded as `T`.
    public func evaluate<T: Decodable>(_ expression: String, session: String, as: T.Type = T.self) async throws -> T {
        let result = try await send("Runtime.evaluate", ["expression": expression, "awaitPromise": true, "returnByValue": true], session: session)
        if let exception = result["exceptionDetails"] as? [String: Any] {
            let text = ((exception["exception"] as? [String: Any])?["description"] as? String) ?? "\(exception["text"] ?? "exception")"
            throw Failure(description: "page: \(text.prefix(300))")
        }
        guard let value = (result["result"] as? [String: Any])?["value"] as? String else {
            throw Failure(description: "page: '\(expression.prefix(60))' gave no JSON string")
        }
        return try JSONDecoder().decode(T.self, from: Data(value.utf8))
    }

    /// The `Tracing.*` events received so far (JSON), and forgets them.
    public func takeEvents() -> [Data] {
        pending.state.withLock { p in
            defer { p.events = [] }
            return p.events
        }
    }

    /// A PNG of the tab, written to `path`.
    public func screenshot(session: String, to path: String, width: Int = 1280, height: Int = 900) async throws {
        try await send("Emulation.setDeviceMetricsOverride", ["width": width, "height": height, "deviceScaleFactor": 1, "mobile": false], session: session)
        let shot = try await send("Page.captureScreenshot", ["format": "png"], session: session)
        guard let base64 = shot["data"] as? String, let png = Data(base64Encoded: base64) else { throw Failure(description: "no screenshot") }
        try png.write(to: URL(fileURLWithPath: path))
    }
}

/// The commands waiting for their replies, by id.
private final class Waiters: Sendable {
    let state = Mutex<(next: Int, waiting: [Int: CheckedContinuation<Data, any Error>], events: [Data])>((1, [:], []))
}
