import Foundation
import StateKit
import Testing

@testable import StateKitInspector

/// The inspector over real sockets on 127.0.0.1. Serialized: while a page is open, every
/// container of the process counts its changes.
@Suite(.serialized) struct StateInspectorTests {
    private func token(of inspector: StateInspector) -> String {
        URLComponents(url: inspector.url, resolvingAgainstBaseURL: false)!.queryItems!.first { $0.name == "token" }!
            .value!
    }

    @Test func everyRequestNeedsTheToken() throws {
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let token = token(of: inspector)
        for path in ["/", "/api/state", "/events"] {
            #expect(try RawHTTPClient.request("GET", path, port: inspector.port).status == 403, "\(path) without token")
            #expect(
                try RawHTTPClient.request("GET", path + "?token=wrong", port: inspector.port).status == 403,
                "\(path) with a wrong token")
            #expect(
                try RawHTTPClient.request("GET", path + "?token=\(token)x", port: inspector.port).status == 403,
                "\(path) with a longer token")
        }
        let page = try RawHTTPClient.request("GET", "/?token=\(token)", port: inspector.port)
        #expect(page.status == 200)
        #expect(page.body.contains("StateKit Inspector"))
        #expect(!page.body.contains("src=\"http"), "the page loads nothing from elsewhere")
        #expect(
            try RawHTTPClient.request(
                "GET", "/", port: inspector.port, headers: ["X-Inspector-Token: \(token)"]
            ).status == 200)
    }

    @Test func undoAndRedoAreAcceptedOnlyByPost() throws {
        let key = uniqueKey("title")
        let title = MonitoredState("Draft", key: key)
        let history = StateHistory(tracking: title)
        title.modify("Final")
        #expect(eventually { history.canUndo })
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let token = token(of: inspector)
        let id = InspectorSnapshot.identifier(of: history)
        let get = try RawHTTPClient.request("GET", "/api/history/\(id)/undo?token=\(token)", port: inspector.port)
        #expect(get.status == 405)
        #expect(title.value == "Final")
        let forbidden = try RawHTTPClient.request("POST", "/api/history/\(id)/undo?token=nope", port: inspector.port)
        #expect(forbidden.status == 403)
        #expect(title.value == "Final")

        let undo = try RawHTTPClient.request("POST", "/api/history/\(id)/undo?token=\(token)", port: inspector.port)
        #expect(undo.status == 200)
        #expect(title.value == "Draft")
        #expect(eventually { history.canRedo })
        let redo = try RawHTTPClient.request("POST", "/api/history/\(id)/redo?token=\(token)", port: inspector.port)
        #expect(redo.status == 200)
        #expect(title.value == "Final")
        #expect(eventually { history.canUndo })
        let back = try RawHTTPClient.request(
            "POST", "/api/history/\(id)/back?steps=0&token=\(token)", port: inspector.port)
        #expect(back.status == 200)
        #expect(title.value == "Draft")
    }

    @Test func theStateListsContainersCreatedBeforeItStarted() throws {
        struct Profile: Codable { var name: String }
        final class Opaque: CustomStringConvertible {
            var description: String { "an opaque value" }
        }
        let profileKey = uniqueKey("profile")
        let opaqueKey = uniqueKey("opaque")
        let profile = MonitoredState(Profile(name: "Ada"), key: profileKey)
        let opaque = State(Opaque(), key: opaqueKey)
        profile.modify { $0.name = "Grace" }
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let state = try RawHTTPClient.request("GET", "/api/state?token=\(token(of: inspector))", port: inspector.port)
        #expect(state.status == 200)
        let json = try JSONSerialization.jsonObject(with: Data(state.body.utf8)) as! [String: Any]
        let containers = json["containers"] as! [[String: Any]]
        let listedProfile = try #require(containers.first { $0["key"] as? String == profileKey })
        #expect(listedProfile["version"] as? Int == 1)
        #expect(listedProfile["value"] as? String == #"{"name":"Grace"}"#)
        #expect(listedProfile["valueIsJSON"] as? Bool == true)
        #expect(listedProfile["type"] as? String == "Profile")
        let listedOpaque = try #require(containers.first { $0["key"] as? String == opaqueKey })
        #expect(listedOpaque["value"] as? String == "an opaque value")
        #expect(listedOpaque["valueIsJSON"] as? Bool == false)
        withExtendedLifetime((profile, opaque)) {}
    }

    @Test func stopFreesThePort() throws {
        let first = try StateInspector.start()
        let port = first.port
        first.stop()
        let second = try StateInspector.start(port: port)
        #expect(second.port == port)
        #expect(try RawHTTPClient.request("GET", "/", port: port).status == 403)
        second.stop()
        #expect(throws: (any Error).self) { try RawHTTPClient.request("GET", "/", port: port) }
    }

    @Test func startingOnATakenPortThrowsAnErrorNamingIt() throws {
        let first = try StateInspector.start()
        defer { first.stop() }
        let error = #expect(throws: StateInspectorError.self) { try StateInspector.start(port: first.port) }
        #expect(error?.port == first.port)
        #expect(error?.description == "the inspector cannot listen on 127.0.0.1:\(first.port): Address already in use")
    }

    @Test func anAddressThatIsNotIPv4IsRefused() {
        #expect(throws: StateInspectorError(address: "localhost", port: 0, reason: "not an IPv4 address")) {
            try StateInspector.start(address: "localhost")
        }
    }
}
