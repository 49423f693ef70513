import Testing

@testable import LockstepWeb

@Suite struct WebEndpointTests {
    @Test func aPortAloneIsLoopback() throws {
        let e = try WebEndpoint(parsing: "8080")
        #expect(e == WebEndpoint(host: "127.0.0.1", port: 8080))
        #expect(e.isLoopback)
    }

    @Test func anAddressAndPortAreKept() throws {
        #expect(try WebEndpoint(parsing: "0.0.0.0:8080") == WebEndpoint(host: "0.0.0.0", port: 8080))
        #expect(try WebEndpoint(parsing: "[::1]:80") == WebEndpoint(host: "::1", port: 80))
        #expect(try !WebEndpoint(parsing: "192.168.1.2:8080").isLoopback)
        #expect(try WebEndpoint(parsing: "[::1]:80").isLoopback)
    }

    @Test(arguments: ["", "http", "65536", "-1", "1.2.3.4:", ":80", "::1:80", "[::1]80", "[::1]:x"])
    func badSpecsAreRefusedWithTheirReason(spec: String) {
        #expect(throws: WebEndpoint.Invalid.self) { try WebEndpoint(parsing: spec) }
    }

    @Test func mediaWithoutWebIsRefused() throws {
        #expect(throws: WebEndpoint.Invalid.self) { try WebConfiguration(settings: (nil, "/tmp"), socketPath: "/s") }
        #expect(throws: WebEndpoint.Invalid.self) { try WebConfiguration(settings: ("8080", "/nonexistent/folder"), socketPath: "/s") }
        #expect(try WebConfiguration(settings: (nil, nil), socketPath: "/s") == nil)
        #expect(try WebConfiguration(settings: ("8080", nil), socketPath: "/s")?.codeFile == "/s.web-code")
    }
}
