import Foundation
import StateKit
import Testing

@testable import StateKitHTTP  // for HTTPSyncSink.retryAfter(from:now:) and the Idempotency-Key form

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The sink against the hostile fixture server: what real servers cannot be made to do
/// (503 with Retry-After, never answering, redirects) and the exact bytes of requests.
@Suite(.timeLimit(.minutes(1))) struct HTTPSyncSinkTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var visits: Int
    }

    init() { DiagnosticsRecorder.start() }

    /// Retries at once, except when a server's Retry-After asks for a pause (up to `maximumDelay`;
    /// a longer one pauses the sink).
    private func retries(_ attempts: Int = 5, maximumDelay: Duration = .microseconds(10)) -> SinkPolicy {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(
            initialDelay: .microseconds(1), maximumDelay: maximumDelay, maximumAttempts: attempts)
        policy.afterRepeatedFailures = .giveUpAndReport
        return policy
    }

    /// A sink sent changes on its own, with no container to keep its record, keeps it in a ledger
    /// of its own: each write is conditional on the last one's `ETag`, and a change the server
    /// already reflects is not sent again.
    @Test func aSinkUsedOnItsOwnWritesOnItsLastAgreementAndSendsNothingTwice() async throws {
        let server = try FixtureHTTPServer()
        defer { server.stop() }
        let sink = HTTPSyncSink<Int>(endpoint: server.url, loadsOnStart: false)
        func change(_ version: UInt64) -> StateChange<Int> {
            StateChange(
                key: "alone", oldValue: Int(version) - 1, newValue: Int(version), version: version, timestamp: Date())
        }
        try await sink.send([change(1)])
        try await sink.send([change(2)])
        try await sink.send([change(2)])
        try await sink.send([change(1)])
        let requests = server.requests
        #expect(requests.map { $0.headers["state-version"] } == ["1", "2"])
        #expect(requests.map { $0.headers["if-none-match"] } == ["*", nil])
        #expect(requests.map { $0.headers["if-match"] } == [nil, "\"fixture-1\""])
        #expect(await sink.currentETag == "\"fixture-2\"")
    }

    @Test func writesSortedJSONConditionallyWithTheDraftIdempotencyKey() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 201, headers: ["ETag": "\"e1\""])])
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(Profile(name: "a", visits: 0), key: key) {
            HTTPSyncSink(
                endpoint: server.url, headers: ["Authorization": "Bearer t"], loadsOnStart: false, policy: retries()
            ) {
                request in request.setValue("signed", forHTTPHeaderField: "X-Signature")
            }
        }
        state.modify { $0.visits = 1 }
        await state.flush()
        state.modify { $0.visits = 2 }
        await state.flush()
        let requests = server.requests
        #expect(requests.count == 2)
        let first = try #require(requests.first)
        #expect(first.method == "PUT")
        #expect(first.path == "/state")
        #expect(first.headers["if-none-match"] == "*")
        #expect(first.headers["if-match"] == nil)
        // A SyncedState without an outbox: the key carries the container instance's random part.
        let instance = try #require(
            first.headers["idempotency-key"]?.split(separator: "#").last?.split(separator: ":").first)
        #expect(first.headers["idempotency-key"] == "\"\(key)#\(instance):1\"")
        #expect(first.headers["state-version"] == "1")
        #expect(first.headers["state-key"] == key)
        #expect(first.headers["authorization"] == "Bearer t")
        #expect(first.headers["x-signature"] == "signed")
        #expect(first.headers["content-type"] == "application/json")
        #expect(String(decoding: first.body, as: UTF8.self) == #"{"name":"a","visits":1}"#)
        #expect(requests.last?.headers["if-match"] == "\"e1\"")
        #expect(requests.last?.headers["if-none-match"] == nil)
        #expect(state.statistics[0].sent == 2)
    }

    @Test func theGivenEncoderWritesTheBody() async throws {
        let server = try FixtureHTTPServer()
        defer { server.stop() }
        let encoder = JSONEncoder()
        encoder.keyEncodingStrategy = .convertToSnakeCase
        encoder.outputFormatting = .sortedKeys
        struct Tagged: Codable, Sendable { var firstName = "Ada" }
        let state = SyncedState(Tagged(), key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, encoder: encoder, loadsOnStart: false, policy: retries())
        }
        state.modify { $0.firstName = "Grace" }
        await state.flush()
        #expect(server.requests.map { String(decoding: $0.body, as: UTF8.self) } == [#"{"first_name":"Grace"}"#])
    }

    @Test func idempotencyKeyIsAStructuredFieldString() {
        #expect(HTTPSyncEngine<Int>.idempotencyKeyField("cart#7") == #""cart#7""#)
        #expect(HTTPSyncEngine<Int>.idempotencyKeyField(#"a"b\c#1"#) == #""a\"b\\c#1""#)
        #expect(HTTPSyncEngine<Int>.idempotencyKeyField("caf\u{e9} 50%#2") == #""caf%C3%A9 50%25#2""#)
    }

    @Test func pendingChangesAreCoalescedToTheNewest() async throws {
        let server = try FixtureHTTPServer(script: [FixtureHTTPServer.Response(status: 200, waitsForRelease: true)])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries())
        }
        state.modify(1)
        await server.received(1)  // version 1 is on the wire, its answer held
        for value in 2...20 { state.modify(value) }
        server.release()
        await state.flush()
        let requests = server.requests
        #expect(requests.map { $0.headers["state-version"] } == ["1", "20"])
        #expect(requests.last.map { String(decoding: $0.body, as: UTF8.self) } == "20")
        #expect(state.statistics[0].coalesced == 18)
    }

    @Test func serviceUnavailableIsRetriedNoSoonerThanRetryAfter() async throws {
        let server = try FixtureHTTPServer(script: [
            .init(status: 503, headers: ["Retry-After": "1"]),
            .init(status: 429, headers: ["Retry-After": "0"]),
            .init(status: 500),
        ])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries(maximumDelay: .seconds(5)))
        }
        let start = ContinuousClock.now
        state.modify(7)
        await state.flush()
        #expect(ContinuousClock.now - start >= .milliseconds(950))
        #expect(server.requests.count == 4)
        #expect(Set(server.requests.map { $0.headers["idempotency-key"] }).count == 1)
        let statistics = state.statistics[0]
        #expect(statistics.sent == 1)
        #expect(statistics.retried == 3)
    }

    @Test func aServerThatNeverAnswersFailsAfterTheTimeout() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 200, waitsForRelease: true)])
        defer {
            server.release()
            server.stop()
        }
        let key = uniqueKey()
        let state = SyncedState(0, key: key) {
            HTTPSyncSink(endpoint: server.url, timeout: .milliseconds(300), loadsOnStart: false, policy: retries(1))
        }
        state.modify(1)
        await state.flush()
        // A 300 ms timeout, against URLSession's default of 60 s, measured where the server holds
        // the answer: the test's own clock also counts the time its tasks wait for a thread of the
        // shared pool, once 43 s in a loaded run of the whole suite.
        // The server's clock starts once its thread has read the request, after the client's did:
        // on a busy machine it saw 244 ms of the 300. The bug this guards against hung up at once.
        let hangUp = try #require(await server.firstHangUp())
        #expect(hangUp >= .milliseconds(100))
        #expect(hangUp < .seconds(10))
        #expect(state.statistics[0].failed == 1)
        #expect(state.statistics[0].sent == 0)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkGaveUp })
    }

    @Test(arguments: [307, 308])
    func aWriteRedirectedWith307Or308KeepsMethodAndBody(status: Int) async throws {
        let server = try FixtureHTTPServer(script: [.init(status: status, headers: ["Location": "/moved"])])
        defer { server.stop() }
        let state = SyncedState(Profile(name: "a", visits: 0), key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries())
        }
        state.modify { $0.visits = 3 }
        await state.flush()
        let requests = server.requests
        #expect(requests.map(\.path) == ["/state", "/moved"])
        #expect(requests.map(\.method) == ["PUT", "PUT"])
        #expect(requests.last?.body == requests.first?.body)
        #expect(requests.last?.headers["if-none-match"] == "*")
        #expect(state.statistics[0].sent == 1)
    }

    @Test(arguments: [301, 302, 303])
    func anyOtherRedirectOfAWriteIsAFailureNeverCountedAsSent(status: Int) async throws {
        let server = try FixtureHTTPServer(script: [.init(status: status, headers: ["Location": "/moved"])])
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(0, key: key) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries())
        }
        state.modify(1)
        await state.flush()
        #expect(server.requests.map(\.path) == ["/state"])
        #expect(state.statistics[0].sent == 0)
        #expect(state.statistics[0].failed == 1)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkRejected })
    }

    @Test func conflictRoundsAreBoundedThenReported() async throws {
        let remote = FixtureHTTPServer.Response(status: 200, headers: ["ETag": "\"r\""], body: Data("5".utf8))
        let refused = FixtureHTTPServer.Response(status: 412)
        let server = try FixtureHTTPServer(script: [refused, remote, refused, remote, refused, remote, refused])
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(0, key: key) {
            HTTPSyncSink(
                endpoint: server.url, conflictPolicy: .clientWins, maximumConflictRounds: 3, loadsOnStart: false,
                policy: retries())
        }
        state.modify(1)
        await state.flush()
        #expect(server.requests.map(\.method) == ["PUT", "GET", "PUT", "GET", "PUT", "GET", "PUT"])
        #expect(server.requests.dropFirst(2).first?.headers["if-match"] == "\"r\"")
        #expect(state.statistics[0].failed == 1)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .syncConflictUnresolved })
        #expect(state.value == 1)
    }

    @Test(arguments: [400, 403, 405])
    func otherClientErrorsAreReportedAndDropped(status: Int) async throws {
        let server = try FixtureHTTPServer(script: [.init(status: status)])
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(0, key: key) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries())
        }
        state.modify(1)
        await state.flush()
        state.modify(2)
        await state.flush()
        #expect(server.requests.map { $0.headers["state-version"] } == ["1", "2"])
        #expect(state.statistics[0].failed == 1)
        #expect(state.statistics[0].sent == 1)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkRejected })
    }

    @Test func networkErrorsAreRetriedThenGivenUpAsThePolicySays() async throws {
        let refused = try RefusedPort()
        let key = uniqueKey()
        let state = SyncedState(0, key: key) { HTTPSyncSink(endpoint: refused.url, policy: retries(3)) }
        state.modify(1)
        await state.flush()
        let statistics = state.statistics[0]
        #expect(statistics.failed == 1)
        #expect(statistics.retried == 2)
        #expect(statistics.lastError != nil)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkGaveUp })
        withExtendedLifetime(refused) {}
    }

    /// The refused port of the test above is held: no server a parallel test starts can take it,
    /// as one took a stopped server's port in a CI run. Connections to it are refused.
    @Test func aRefusedPortIsKeptFromEveryServer() throws {
        let refused = try RefusedPort()
        #expect(throws: POSIXError.self) { try LoopbackSocket.bind(port: refused.port, reusingAddress: true) }
        let client = try LoopbackSocket.bind(reusingAddress: false)
        defer { close(client.socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = refused.port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(client.socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        let error = errno
        #expect(connected == -1)
        #expect(error == ECONNREFUSED)
        withExtendedLifetime(refused) {}
    }

    @Test func anUndecodableServerValueIsAnErrorNamingTheType() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 200, body: Data("not json".utf8))])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, loadsOnStart: false, policy: retries())
        }
        let error = await #expect(throws: HTTPSyncError.self) { try await state.refresh() }
        #expect(error?.description.contains("cannot be decoded as Int") == true)
        #expect(state.version == 0)
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDate() throws {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        #expect(HTTPSyncSink<Int>.retryAfter(from: "120", now: now) == .seconds(120))
        #expect(HTTPSyncSink<Int>.retryAfter(from: "Tue, 14 Nov 2023 22:13:27 GMT", now: now) == .seconds(7))
        #expect(HTTPSyncSink<Int>.retryAfter(from: "soon", now: now) == nil)
        let error = HTTPSyncError(statusCode: 429, body: Data(), retryAfter: .seconds(2), isRetryable: true)
        #expect(
            RetryPolicy(initialDelay: .milliseconds(1), jitter: 0).delay(beforeRetry: 1, retryAfter: error.retryAfter)
                == .seconds(2))
    }
}
