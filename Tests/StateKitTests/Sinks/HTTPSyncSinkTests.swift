import Foundation
import StateKit
import Testing

@testable import StateKitHTTP  // for HTTPSyncSink.retryAfter(from:now:), the Retry-After parser

@Suite(.timeLimit(.minutes(1))) struct HTTPSyncSinkTests {
    struct Profile: Codable, Equatable, Sendable {
        var name: String
        var visits: Int
    }

    init() { DiagnosticsRecorder.start() }

    private func retries(_ attempts: Int = 5) -> SinkPolicy {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(
            initialDelay: .microseconds(1), maximumDelay: .microseconds(10), maximumAttempts: attempts)
        policy.afterRepeatedFailures = .giveUpAndReport
        return policy
    }

    @Test func sendsTheLatestValueAsJSONWithVersionAndIdempotencyHeaders() async throws {
        let server = try FixtureHTTPServer()
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(Profile(name: "a", visits: 0), key: key) {
            HTTPSyncSink(endpoint: server.url, headers: ["Authorization": "Bearer t"], policy: retries())
        }
        state.modify { $0.visits = 1 }
        await state.flush()
        let requests = server.requests
        #expect(requests.count == 1)
        let request = try #require(requests.first)
        #expect(request.method == "PUT")
        #expect(request.path == "/state")
        #expect(request.headers["state-version"] == "1")
        #expect(request.headers["idempotency-key"] == "\(key)#1")
        #expect(request.headers["state-key"] == key)
        #expect(request.headers["authorization"] == "Bearer t")
        #expect(request.headers["content-type"] == "application/json")
        #expect(try JSONDecoder().decode(Profile.self, from: request.body) == Profile(name: "a", visits: 1))
        #expect(state.statistics[0].sent == 1)
    }

    @Test func pendingChangesAreCoalescedToTheNewest() async throws {
        let server = try FixtureHTTPServer(script: [FixtureHTTPServer.Response(status: 200, waitsForRelease: true)])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) { HTTPSyncSink(endpoint: server.url, policy: retries()) }
        state.modify(1)
        await server.received(1)  // version 1 is on the wire, its answer held
        for value in 2...20 { state.modify(value) }
        server.release()
        await state.flush()
        let requests = server.requests
        #expect(requests.map { $0.headers["state-version"] } == ["1", "20"])
        #expect(requests.last.map { String(decoding: $0.body, as: UTF8.self) } == "20")
        #expect(state.statistics[0].coalesced == 18)
        #expect(state.statistics[0].sent == 2)
    }

    @Test func serverErrorsAndTooManyRequestsAreRetried() async throws {
        let server = try FixtureHTTPServer(script: [
            .init(status: 503),
            .init(status: 429, headers: ["Retry-After": "0"]),
            .init(status: 500),
        ])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) { HTTPSyncSink(endpoint: server.url, policy: retries()) }
        state.modify(7)
        await state.flush()
        #expect(server.requests.count == 4)
        #expect(Set(server.requests.map { $0.headers["idempotency-key"] }).count == 1)
        let statistics = state.statistics[0]
        #expect(statistics.sent == 1)
        #expect(statistics.retried == 3)
        #expect(statistics.lastError?.hasPrefix("HTTP 500") == true)
    }

    @Test(arguments: [409, 412])
    func staleWriteRefusalGoesToTheConflictHandler(status: Int) async throws {
        let server = try FixtureHTTPServer(script: [.init(status: status, body: Data("{\"version\":9}".utf8))])
        defer { server.stop() }
        let conflicts = Collector<HTTPSyncConflict<Int>>()
        let state = SyncedState(0, key: uniqueKey()) {
            HTTPSyncSink(endpoint: server.url, policy: retries()) { conflicts.append($0) }
        }
        state.modify(1)
        await state.flush()
        #expect(server.requests.count == 1)
        #expect(conflicts.all.map(\.statusCode) == [status])
        #expect(conflicts.all.map(\.change.version) == [1])
        #expect(conflicts.all.first.map { String(decoding: $0.body, as: UTF8.self) } == "{\"version\":9}")
        #expect(state.statistics[0].failed == 0)
    }

    @Test(arguments: [400, 404, 409])
    func otherClientErrorsAreReportedAndDropped(status: Int) async throws {
        let server = try FixtureHTTPServer(script: [.init(status: status)])
        defer { server.stop() }
        let key = uniqueKey()
        let state = SyncedState(0, key: key) { HTTPSyncSink(endpoint: server.url, policy: retries()) }
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
        let stopped = try FixtureHTTPServer()
        let url = stopped.url
        stopped.stop()  // nothing listens on the port now: connections are refused
        let key = uniqueKey()
        let state = SyncedState(0, key: key) { HTTPSyncSink(endpoint: url, policy: retries(3)) }
        state.modify(1)
        await state.flush()
        let statistics = state.statistics[0]
        #expect(statistics.failed == 1)
        #expect(statistics.retried == 2)
        #expect(statistics.lastError != nil)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkGaveUp })
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
