import Testing

@testable import LockstepWeb

@Suite struct WebAccessTests {
    func request(origin: String? = "http://127.0.0.1:8080", host: String? = "127.0.0.1:8080", loopback: Bool = true, paired: Bool = false) -> WebAccess.Request {
        .init(origin: origin, host: host, peerIsLoopback: loopback, paired: paired)
    }

    @Test func aPageOfThisMachineOnLoopbackGetsTheWebSocketWithoutPairing() {
        #expect(WebAccess.webSocket(request()) == .allow)
        #expect(WebAccess.webSocket(request(origin: "http://localhost:8080", host: "localhost:8080")) == .allow)
        #expect(WebAccess.webSocket(request(origin: "http://[::1]:8080", host: "[::1]:8080")) == .allow)
    }

    @Test func aPageFromAnotherOriginIsRefusedEvenOnLoopbackAndPaired() {
        #expect(WebAccess.webSocket(request(origin: "http://evil.example")) == .refuse(.foreignOrigin))
        #expect(WebAccess.webSocket(request(origin: "http://127.0.0.1:9999")) == .refuse(.foreignOrigin))
        #expect(WebAccess.webSocket(request(origin: "https://127.0.0.1:8080")) == .refuse(.foreignOrigin))
        #expect(WebAccess.webSocket(request(origin: "http://evil.example", paired: true)) == .refuse(.foreignOrigin))
        #expect(WebAccess.webSocket(request(origin: "null")) == .refuse(.foreignOrigin))
    }

    @Test func anUpgradeWithoutOriginIsRefused() {
        #expect(WebAccess.webSocket(request(origin: nil)) == .refuse(.missingOrigin))
        #expect(WebAccess.webSocket(request(origin: "")) == .refuse(.missingOrigin))
    }

    @Test func aRemoteBrowserNeedsPairing() {
        let remote = request(origin: "http://192.168.1.5:8080", host: "192.168.1.5:8080", loopback: false)
        #expect(WebAccess.webSocket(remote) == .refuse(.notPaired))
        var paired = remote
        paired.paired = true
        #expect(WebAccess.webSocket(paired) == .allow)
    }

    @Test func aLoopbackPeerAskingForAnotherNameIsTreatedAsRemote() {
        // DNS rebinding: evil.example resolved to 127.0.0.1; Origin and Host agree, the name is not loopback.
        let rebound = request(origin: "http://evil.example:8080", host: "evil.example:8080", loopback: true)
        #expect(WebAccess.webSocket(rebound) == .refuse(.notPaired))
        #expect(WebAccess.media(rebound) == .refuse(.notPaired))
    }

    @Test func mediaFollowsTheSameTrustWithoutAnOrigin() {
        #expect(WebAccess.media(request(origin: nil)) == .allow)
        #expect(WebAccess.media(request(origin: nil, host: "10.0.0.2:8080", loopback: false)) == .refuse(.notPaired))
        #expect(WebAccess.media(request(origin: nil, host: "10.0.0.2:8080", loopback: false, paired: true)) == .allow)
    }

    @Test func hostNamesLoseTheirPort() {
        #expect(WebAccess.hostName("127.0.0.1:8080") == "127.0.0.1")
        #expect(WebAccess.hostName("[::1]:8080") == "::1")
        #expect(WebAccess.hostName("localhost") == "localhost")
    }
}
