import Foundation
import StateKit
import StateKitHTTP
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The conformance matrix: the same test code against three real servers nobody here wrote
/// (Apache httpd + mod_dav, wsgidav, moto's S3 server), each started on 127.0.0.1 by the test and
/// stopped by it. Apache, configured to, also redirects writes and answers 503 with Retry-After;
/// a server that never answers is only in `HTTPSyncSinkTests`, against the hostile fixture server.
@Suite(.timeLimit(.minutes(2)), .serialized) struct HTTPConformanceTests {
    struct Note: Codable, Equatable, Sendable {
        var text: String
        var tags: [String] = []
    }

    init() { DiagnosticsRecorder.start() }

    /// Runs `body` with a fresh server of `kind`, or skips (loudly) when it is not installed.
    private func with(_ kind: RealHTTPServer.Kind, _ body: (RealHTTPServer) async throws -> Void) async throws {
        guard let server = try await RealHTTPServer.start(kind) else { return }
        defer { server.stop() }
        try await body(server)
    }

    /// A network failure, for `failing`.
    struct Unreachable: Error {}

    /// A sink to `url` recording its requests in `requests`; a request `failing` picks fails before
    /// it is sent, as when the network drops it.
    private func sink(
        _ server: RealHTTPServer, _ url: URL, _ conflictPolicy: SyncConflictPolicy<Note> = .serverWins,
        requests: Collector<String>? = nil, failing: (@Sendable (URLRequest) -> Bool)? = nil
    ) -> HTTPSyncSink<Note> {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(10), maximumAttempts: 3)
        policy.afterRepeatedFailures = .giveUpAndReport
        let headers = server.headers
        return HTTPSyncSink(
            endpoint: url, timeout: .seconds(10), conflictPolicy: conflictPolicy, policy: policy
        ) { request in
            for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
            requests?.append("\(request.httpMethod ?? "?") \(request.value(forHTTPHeaderField: "If-Match") ?? "")")
            if failing?(request) == true { throw Unreachable() }
        }
    }

    private func serverValue(_ server: RealHTTPServer, _ url: URL) async throws -> Note? {
        let (status, body, _) = try await server.request("GET", url)
        return status == 200 ? try JSONDecoder().decode(Note.self, from: body) : nil
    }

    /// A resource holding the first bytes of a value, as a client killed in the middle of its `PUT`
    /// leaves it on wsgidav: an unsent local edit is written over it under every policy (reported),
    /// as there is nothing to keep or merge (semantics 27). Before, only `.clientWins` did; the
    /// others left the key stranded for good.
    @Test(arguments: RealHTTPServer.Kind.allCases)
    func aTornServerValueIsOverwrittenByAnUnsentEdit(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let torn = Data(#"{"text":"half-wr"#.utf8)
            for policy in [SyncConflictPolicy<Note>.serverWins, .clientWins] {
                #expect(try await server.request("PUT", url, body: torn).status < 300)
                let key = uniqueKey()
                let state = SyncedState(Note(text: ""), key: key) { sink(server, url, policy) }
                state.modify { $0.text = "local edit" }
                #expect(await state.flush(timeout: .seconds(10)))
                #expect(try await serverValue(server, url) == Note(text: "local edit"))
                #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind).contains(.decodingFailed))
            }
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func createsTheResourceWithIfNoneMatchStar(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let requests = Collector<String>()
            let state = SyncedState(Note(text: ""), key: uniqueKey()) { sink(server, url, requests: requests) }
            state.modify { $0.text = "created" }
            await state.flush()
            #expect(try await serverValue(server, url) == Note(text: "created"))
            // The load at start found nothing; the create has no If-Match. Apache answers a PUT
            // without an ETag, so the sink reads it back (a GET after the PUT) there only.
            #expect(requests.all.prefix(2) == ["GET ", "PUT "])
            #expect(requests.all.dropFirst(2) == (kind == .apache ? ["GET "] : []))
            #expect(state.statistics[0].sent == 1)
            #expect(state.statistics[0].failed == 0)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func updatesWithIfMatchOnTheLastETag(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let requests = Collector<String>()
            let state = SyncedState(Note(text: ""), key: uniqueKey()) { sink(server, url, requests: requests) }
            state.modify { $0.text = "one" }
            await state.flush()
            let (_, _, etag) = try await server.request("GET", url)
            state.modify { $0.text = "second" }
            await state.flush()
            #expect(try await serverValue(server, url) == Note(text: "second"))
            #expect(requests.all.last { $0.hasPrefix("PUT") } == "PUT \(try #require(etag))")
            #expect(state.statistics[0].sent == 2)
            #expect(state.statistics[0].failed == 0)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func aStaleWriteIsRefused(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let first = try await server.request("PUT", url, body: Data(#"{"tags":[],"text":"first"}"#.utf8))
            #expect((200..<300).contains(first.status))
            let (_, _, staleETag) = try await server.request("GET", url)
            let second = try await server.request("PUT", url, body: Data(#"{"tags":[],"text":"second, longer"}"#.utf8))
            #expect((200..<300).contains(second.status))
            let stale = try await server.request(
                "PUT", url, body: Data(#"{"tags":[],"text":"stale"}"#.utf8),
                headers: ["If-Match": try #require(staleETag)])
            #expect([412, 409, 404].contains(stale.status))
            let exists = try await server.request(
                "PUT", url, body: Data(#"{"tags":[],"text":"stale"}"#.utf8), headers: ["If-None-Match": "*"])
            #expect([412, 409].contains(exists.status))
            #expect(try await serverValue(server, url) == Note(text: "second, longer"))
        }
    }

    /// Two containers on one resource: `other` writes after `mine` loaded, then `mine` writes.
    private func conflict(
        _ server: RealHTTPServer, _ policy: SyncConflictPolicy<Note>, failing: (@Sendable (URLRequest) -> Bool)? = nil
    ) async throws -> (mine: SyncedState<Note>, server: Note?, requests: [String]) {
        let url = server.resource()
        let other = SyncedState(Note(text: ""), key: uniqueKey("other")) { sink(server, url) }
        other.modify { $0 = Note(text: "base", tags: ["base"]) }
        await other.flush()
        let requests = Collector<String>()
        let mine = SyncedState(Note(text: ""), key: uniqueKey("mine")) {
            sink(server, url, policy, requests: requests, failing: failing)
        }
        try await mine.refresh()
        #expect(mine.value == Note(text: "base", tags: ["base"]))
        other.modify { $0 = Note(text: "theirs, longer", tags: ["base", "theirs"]) }
        await other.flush()
        mine.modify { $0 = Note(text: "mine", tags: ["base", "mine"]) }
        await mine.flush()
        await mine.flush()  // a merge made while resolving is sent by the next round
        #expect(mine.statistics[0].failed == 0)
        #expect(other.statistics[0].failed == 0)
        return (mine, try await serverValue(server, url), requests.all)
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func serverWinsTakesTheServersValueWithoutSendingItBack(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let (mine, remote, requests) = try await conflict(server, .serverWins)
            #expect(remote == Note(text: "theirs, longer", tags: ["base", "theirs"]))
            #expect(mine.value == remote)
            #expect(requests.filter { $0.hasPrefix("PUT") }.count == 1)  // the refused one; no echo
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func clientWinsWritesAgainOnTheNewETag(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let (mine, remote, requests) = try await conflict(server, .clientWins)
            #expect(remote == Note(text: "mine", tags: ["base", "mine"]))
            #expect(mine.value == remote)
            #expect(requests.filter { $0.hasPrefix("PUT") }.count == 2)
        }
    }

    /// The server's text, then the local one; the server's tags, then those only the local side added.
    private static let merge = SyncConflictPolicy<Note>.merge { base, local, remote in
        let added = local.tags.filter { !(base?.tags ?? []).contains($0) && !remote.tags.contains($0) }
        return Note(text: "\(remote.text) + \(local.text)", tags: remote.tags + added)
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func mergeWritesTheThreeWayMergeAndTheContainerTakesIt(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let (mine, remote, _) = try await conflict(server, Self.merge)
            let expected = Note(text: "theirs, longer + mine", tags: ["base", "theirs", "mine"])
            #expect(remote == expected)
            #expect(mine.value == expected)
        }
    }

    /// The merged write fails on its way (the network drops it) and is retried: the retry meets the
    /// conflict again and merges again. Before, the engine kept the server's `ETag` from the merge
    /// and the retry wrote the local value alone over the other device's change.
    @Test(arguments: RealHTTPServer.Kind.allCases)
    func aMergedWriteThatFailsIsMergedAgainWhenRetried(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            // The first `PUT` meets the conflict; the second carries the merge, and is dropped.
            let puts = LockedBox(0)
            let (mine, remote, requests) = try await conflict(server, Self.merge) { request in
                guard request.httpMethod == "PUT" else { return false }
                return puts.withLock { count in
                    count += 1
                    return count == 2
                }
            }
            let expected = Note(text: "theirs, longer + mine", tags: ["base", "theirs", "mine"])
            #expect(remote == expected, "requests: \(requests)")
            #expect(mine.value == expected)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func pullLoadsTheServersValueAtStartAndOnRefreshWithoutEchoingIt(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let written = try await server.request(
                "PUT", url, body: Data(#"{"tags":["x"],"text":"on the server"}"#.utf8))
            #expect((200..<300).contains(written.status))
            let requests = Collector<String>()
            let state = SyncedState(Note(text: "default"), key: uniqueKey()) { sink(server, url, requests: requests) }
            try await state.refresh()
            #expect(state.value == Note(text: "on the server", tags: ["x"]))
            let changed = try await server.request("PUT", url, body: Data(#"{"tags":["x","y"],"text":"changed"}"#.utf8))
            #expect((200..<300).contains(changed.status))
            try await state.refresh()
            await state.flush()
            #expect(state.value == Note(text: "changed", tags: ["x", "y"]))
            #expect(requests.all.allSatisfy { $0.hasPrefix("GET") })  // nothing sent back
            #expect(state.version == 2)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func anUnchangedResourceCostsA304(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            let state = SyncedState(Note(text: ""), key: uniqueKey()) { sink(server, url) }
            state.modify { $0.text = "stored" }
            await state.flush()
            try await state.refresh()
            try await state.refresh()
            #expect(state.version == 1)
            let (_, _, etag) = try await server.request("GET", url)
            let conditional = try await server.request("GET", url, headers: ["If-None-Match": try #require(etag)])
            #expect(conditional.status == 304)
        }
    }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func unsentLocalChangesGoThroughThePolicyOnPull(kind: RealHTTPServer.Kind) async throws {
        try await with(kind) { server async throws in
            let url = server.resource()
            _ = try await server.request("PUT", url, body: Data(#"{"tags":[],"text":"remote"}"#.utf8))
            let state = SyncedState(Note(text: ""), key: uniqueKey()) { sink(server, url, .clientWins) }
            try await state.refresh()
            _ = try await server.request("PUT", url, body: Data(#"{"tags":[],"text":"remote, changed"}"#.utf8))
            state.modify { $0.text = "local" }
            try await state.refresh()  // clientWins: the unsent local change stays, and is written
            #expect(state.value.text == "local")
            await state.flush()
            #expect(try await serverValue(server, url)?.text == "local")
            #expect(state.statistics[0].failed == 0)
        }
    }

    /// 307 and 308 keep method and body, so the write lands at the new place; any other redirect
    /// of a write is a failure, never counted as sent.
    @Test(arguments: [(307, true), (308, true), (301, false), (302, false)])
    func aWriteRedirectedByApacheLandsOnlyWhenMethodAndBodyAreKept(status: Int, lands: Bool) async throws {
        try await with(.apache) { server async throws in
            let name = "r-\(UUID().uuidString).json"
            let state = SyncedState(Note(text: ""), key: uniqueKey()) {
                sink(server, server.resource("moved-\(status)/\(name)"))
            }
            state.modify { $0.text = "redirected" }
            await state.flush()
            #expect(try await serverValue(server, server.resource(name)) == (lands ? Note(text: "redirected") : nil))
            #expect(state.statistics[0].sent == (lands ? 1 : 0))
            #expect(state.statistics[0].failed == (lands ? 0 : 1))
        }
    }

    @Test func serviceUnavailableFromApacheIsRetriedNoSoonerThanRetryAfter() async throws {
        try await with(.apache) { server async throws in
            let root = server.directory.appending(path: "root")
            try FileManager.default.createDirectory(at: root.appending(path: "busy"), withIntermediateDirectories: true)
            let flag = root.appending(path: "busy.flag")
            try Data().write(to: flag)
            var policy = SinkPolicy.latestValue
            policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .seconds(5), maximumAttempts: 100)
            let state = SyncedState(Note(text: ""), key: uniqueKey()) {
                HTTPSyncSink(endpoint: server.resource("busy/r.json"), loadsOnStart: false, policy: policy)
            }
            let start = ContinuousClock.now
            state.modify { $0.text = "after the pause" }
            let deadline = ContinuousClock.now + .seconds(60)
            while state.statistics[0].retried == 0 && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            try FileManager.default.removeItem(at: flag)
            await state.flush()
            #expect(ContinuousClock.now - start >= .milliseconds(950))
            #expect(try await serverValue(server, server.resource("busy/r.json")) == Note(text: "after the pause"))
            #expect(state.statistics[0].sent == 1)
            #expect(state.statistics[0].retried >= 1)
        }
    }
}
