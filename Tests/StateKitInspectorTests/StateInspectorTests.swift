import Foundation
import StateKit
import Testing

@testable import StateKitInspector

/// The inspector over real sockets on 127.0.0.1. What reads or watches the state runs against a
/// program of its own (``InspectorFixtureProcess``); the refusals, which read nothing, run here.
@Suite struct StateInspectorTests {
    private func token(of inspector: StateInspector) -> String {
        URLComponents(url: inspector.url, resolvingAgainstBaseURL: false)!.queryItems!.first { $0.name == "token" }!
            .value!
    }

    @Test func everyRequestNeedsTheToken() throws {
        let inspector = try StateInspector.start()
        defer { inspector.stop() }
        let token = token(of: inspector)
        for path in ["/", "/api/state", "/events", "/api/history/1/undo"] {
            #expect(try RawHTTPClient.request("GET", path, port: inspector.port).status == 403, "\(path) without token")
            #expect(
                try RawHTTPClient.request("GET", path + "?token=wrong", port: inspector.port).status == 403,
                "\(path) with a wrong token")
            #expect(
                try RawHTTPClient.request("GET", path + "?token=\(token)x", port: inspector.port).status == 403,
                "\(path) with a longer token")
            #expect(
                try RawHTTPClient.request("POST", path + "?token=\(token.dropLast())", port: inspector.port).status
                    == 403, "\(path) with a shorter token")
        }
        let page = try RawHTTPClient.request("GET", "/?token=\(token)", port: inspector.port)
        #expect(page.status == 200)
        #expect(page.body.contains("StateKit Inspector"))
        #expect(!page.body.contains("src=\"http"), "the page loads nothing from elsewhere")
        #expect(!page.body.contains("href=\"http"), "the page loads nothing from elsewhere")
        #expect(
            try RawHTTPClient.request(
                "GET", "/", port: inspector.port, headers: ["X-Inspector-Token: \(token)"]
            ).status == 200)
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

/// The inspector of another program: its state as the page reads it, and time travel.
@Suite struct InspectedProgramTests {
    private func state(of fixture: InspectorFixtureProcess) throws -> [String: Any] {
        let response = try RawHTTPClient.request("GET", "/api/state?token=\(fixture.token)", port: fixture.port)
        #expect(response.status == 200)
        return try #require(try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any])
    }

    @Test func theStateListsContainersCreatedBeforeItStarted() throws {
        let fixture = try InspectorFixtureProcess()
        let json = try state(of: fixture)
        let containers = try #require(json["containers"] as? [[String: Any]])
        let profile = try #require(containers.first { $0["key"] as? String == "profile" })
        #expect(profile["version"] as? Int == 0)
        #expect(profile["value"] as? String == #"{"name":"Ada","tags":["admin"]}"#)
        #expect(profile["valueIsJSON"] as? Bool == true)
        #expect(profile["type"] as? String == "Profile")
        let opaque = try #require(containers.first { $0["key"] as? String == "opaque" })
        #expect(opaque["value"] as? String == "an opaque value")
        #expect(opaque["valueIsJSON"] as? Bool == false)
        let note = try #require(containers.first { $0["key"] as? String == "note" })
        let storage = try #require(note["storage"] as? [String: Any])
        #expect((storage["location"] as? String)?.contains("file://") == true)
        #expect((json["histories"] as? [[String: Any]])?.count == 1)
    }

    @Test func undoAndRedoAreAcceptedOnlyByPost() throws {
        let fixture = try InspectorFixtureProcess()
        #expect(fixture.send("title Final") == ["title=Final"])
        let history = try #require((try state(of: fixture)["histories"] as? [[String: Any]])?.first)
        let id = try #require(history["id"] as? String)
        #expect(history["canUndo"] as? Bool == true)
        let path = "/api/history/\(id)"
        #expect(
            try RawHTTPClient.request("GET", "\(path)/undo?token=\(fixture.token)", port: fixture.port).status == 405)
        #expect(try RawHTTPClient.request("POST", "\(path)/undo?token=nope", port: fixture.port).status == 403)

        #expect(
            try RawHTTPClient.request("POST", "\(path)/undo?token=\(fixture.token)", port: fixture.port).status == 200)
        #expect(fixture.nextLine(startingWith: "title=") == "title=Draft")
        #expect(
            try RawHTTPClient.request("POST", "\(path)/redo?token=\(fixture.token)", port: fixture.port).status == 200)
        #expect(fixture.nextLine(startingWith: "title=") == "title=Final")
        let back = try RawHTTPClient.request("POST", "\(path)/back?steps=0&token=\(fixture.token)", port: fixture.port)
        #expect(back.status == 200)
        #expect(fixture.nextLine(startingWith: "title=") == "title=Draft")
        #expect(
            try RawHTTPClient.request("POST", "\(path)/undo?token=\(fixture.token)", port: fixture.port).status == 409)
        #expect(
            try RawHTTPClient.request("POST", "/api/history/0/undo?token=\(fixture.token)", port: fixture.port).status
                == 404)
    }
}
