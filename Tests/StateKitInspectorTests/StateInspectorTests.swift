import Foundation
import StateKit
import Testing

@testable import StateKitInspector

/// The inspector's port and address, over real sockets on 127.0.0.1. What answers requests runs
/// against a program of its own (``InspectorFixtureProcess``).
@Suite struct StateInspectorTests {
    private func token(of inspector: StateInspector) -> String {
        URLComponents(url: inspector.url, resolvingAgainstBaseURL: false)!.queryItems!.first { $0.name == "token" }!
            .value!
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

/// The inspector of another program: its state as the page reads it, and time travel. What
/// blocks (the child's output, the sockets) runs off Swift concurrency's pool.
@Suite struct InspectedProgramTests {
    @Test func everyRequestNeedsTheToken() async throws {
        let statuses = try await offThePool { () -> [String] in
            let fixture = try InspectorFixtureProcess()
            let token = fixture.token
            var statuses: [String] = []
            func request(_ method: String, _ target: String, headers: [String] = []) throws {
                let response = try RawHTTPClient.request(method, target, port: fixture.port, headers: headers)
                let loadsNothing = !response.body.contains("src=\"http") && !response.body.contains("href=\"http")
                let isPage = response.body.contains("StateKit Inspector") && loadsNothing
                statuses.append(
                    "\(method) \(target.replacingOccurrences(of: token, with: "TOKEN")): \(response.status)"
                        + (isPage ? " page" : ""))
            }
            for path in ["/", "/api/state", "/events", "/api/history/1/undo"] {
                try request("GET", path)
                try request("GET", path + "?token=wrong")
                try request("GET", path + "?token=\(token)x")
                try request("POST", path + "?token=\(token.dropLast())")
            }
            try request("GET", "/?token=\(token)")
            try request("GET", "/", headers: ["X-Inspector-Token: \(token)"])
            return statuses
        }
        #expect(statuses.count == 18)
        #expect(statuses.filter { $0.hasSuffix(": 403") }.count == 16, "\(statuses)")
        #expect(statuses.suffix(2) == ["GET /?token=TOKEN: 200 page", "GET /: 200 page"], "\(statuses)")
    }

    @Test func theStateListsContainersCreatedBeforeItStarted() async throws {
        let response = try await offThePool {
            let fixture = try InspectorFixtureProcess()
            return try RawHTTPClient.request("GET", "/api/state?token=\(fixture.token)", port: fixture.port)
        }
        #expect(response.status == 200)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [String: Any])
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

    @Test func undoAndRedoAreAcceptedOnlyByPost() async throws {
        let steps = try await offThePool { () -> [String] in
            let fixture = try InspectorFixtureProcess()
            var steps = ["sent " + fixture.send("title Final").joined(separator: ",")]
            let state = try RawHTTPClient.request("GET", "/api/state?token=\(fixture.token)", port: fixture.port)
            let json = try JSONSerialization.jsonObject(with: Data(state.body.utf8)) as? [String: Any]
            let history = (json?["histories"] as? [[String: Any]])?.first
            steps.append("canUndo \(history?["canUndo"] as? Bool ?? false)")
            let path = "/api/history/\(history?["id"] as? String ?? "?")"
            func request(_ method: String, _ target: String) throws {
                steps.append(
                    "\(method) \(target): \(try RawHTTPClient.request(method, target, port: fixture.port).status)")
            }
            func title() { steps.append(fixture.nextLine(startingWith: "title=") ?? "no title") }
            try request("GET", "\(path)/undo?token=\(fixture.token)")
            try request("POST", "\(path)/undo?token=nope")
            try request("POST", "\(path)/undo?token=\(fixture.token)")
            title()
            try request("POST", "\(path)/redo?token=\(fixture.token)")
            title()
            try request("POST", "\(path)/back?steps=0&token=\(fixture.token)")
            title()
            try request("POST", "\(path)/undo?token=\(fixture.token)")
            try request("POST", "/api/history/0/undo?token=\(fixture.token)")
            return steps.map { $0.replacingOccurrences(of: fixture.token, with: "TOKEN") }
        }
        let path =
            steps.dropFirst(2).first.map { String($0.split(separator: " ")[1].split(separator: "/undo")[0]) } ?? "?"
        #expect(
            steps == [
                "sent title=Final", "canUndo true",
                "GET \(path)/undo?token=TOKEN: 405", "POST \(path)/undo?token=nope: 403",
                "POST \(path)/undo?token=TOKEN: 200", "title=Draft",
                "POST \(path)/redo?token=TOKEN: 200", "title=Final",
                "POST \(path)/back?steps=0&token=TOKEN: 200", "title=Draft",
                "POST \(path)/undo?token=TOKEN: 409", "POST /api/history/0/undo?token=TOKEN: 404",
            ])
    }
}

/// Runs `body` on a thread of its own and returns what it returns: the child's output and the
/// sockets block, and Swift concurrency's pool has two threads here, which every other test needs.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
