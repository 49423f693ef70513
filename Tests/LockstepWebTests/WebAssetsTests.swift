import Foundation
import Testing

@testable import LockstepWeb

@Suite struct WebAssetsTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/LockstepWeb/Assets").path

    @Test func theEmbeddedAssetsAreTheFilesInTheRepository() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.folder).filter { !$0.hasPrefix(".") }.sorted()
        #expect(EmbeddedAssets.files.map(\.name) == names, "run tools/web-assets")
        for (name, text) in EmbeddedAssets.files {
            let onDisk = try String(contentsOfFile: Self.folder + "/" + name, encoding: .utf8)
            #expect(text == onDisk, "\(name) changed since tools/web-assets ran: run it again")
        }
    }

    @Test func thePagesAndTheSDKAreServedWithTheirTypes() throws {
        #expect(try #require(WebAssets.byPath["/"]).name == "index.html")
        #expect(try #require(WebAssets.byPath["/lockstep.js"]).contentType == "text/javascript; charset=utf-8")
        #expect(try #require(WebAssets.byPath["/style.css"]).contentType == "text/css; charset=utf-8")
        #expect(WebAssets.byPath["/../Package.swift"] == nil)
    }
}
