import Foundation
import StateKit
import StateKitHTTP
import Testing

/// Semantics 28: a destination that comes back is found without asking, within the sink's retry
/// interval, and at once when asked (`flush(timeout:)`, `refresh()`); the status never stays
/// "offline" or "not contacted" after a successful exchange.
@Suite(.timeLimit(.minutes(2))) struct SyncRecoveryTests {
    init() { DiagnosticsRecorder.start() }

    /// A sink that retries after `firstDelay`, three attempts, then pauses for `pause`.
    private static func sink(_ url: URL, loadsOnStart: Bool = true, firstDelay: Duration, pause: Duration)
        -> HTTPSyncSink<Int>
    {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: firstDelay, maximumDelay: firstDelay, maximumAttempts: 3)
        policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: pause)
        policy.drainTimeout = .milliseconds(200)
        return HTTPSyncSink(endpoint: url, timeout: .seconds(60), loadsOnStart: loadsOnStart, policy: policy)
    }

    private static let threeFailures = Array(repeating: FixtureHTTPServer.Response(status: 503), count: 3)

    /// A container whose sink failed three sends of its write to `server` and paused for ten minutes.
    private static func pausedForTenMinutes(_ server: FixtureHTTPServer) async -> SyncedState<Int> {
        let state = SyncedState(0, key: uniqueKey()) {
            sink(server.url, loadsOnStart: false, firstDelay: .milliseconds(10), pause: .seconds(600))
        }
        state.modify(1)
        await eventually("the sink to pause") { state.syncStatus.value.isPaused }
        return state
    }

    /// Down at launch (503), then up (404: nothing stored yet): found without a write, a flush or
    /// a refresh, within the sink's retry interval; before, it stayed "not contacted" for good.
    @Test func aDestinationDownAtLaunchIsFoundWhenItComesBack() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 503), .init(status: 404)])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            Self.sink(server.url, firstDelay: .milliseconds(50), pause: .milliseconds(100))
        }
        let status = state.syncStatus
        await eventually("the destination to be contacted again") { status.value.hasContactedEveryDestination }
        #expect(status.value.isSynced)
        #expect(status.value.lastError == nil)
        #expect(server.requests.map(\.method) == ["GET", "GET"])
    }

    /// A load at start that failed, with the next retry minutes away: `flush(timeout:)` tries it
    /// again at once and says synced.
    @Test func flushRetriesAFailedLoadAtStartAtOnce() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 503), .init(status: 200, body: Data("7".utf8))])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            Self.sink(server.url, firstDelay: .seconds(600), pause: .seconds(600))
        }
        let status = state.syncStatus
        await eventually("the load at start to fail") { status.value.lastError != nil }
        #expect(await state.flush(timeout: .seconds(30)), "the load at start was not tried again")
        #expect(state.value == 7)
        #expect(status.value.isSynced)
    }

    /// A flush with a deadline that starts while the load at start is failing waits through the
    /// load's retries, as it waits through a paused sink's, and says synced once one succeeds.
    @Test func aFlushWithADeadlineWaitsThroughTheLoadsRetries() async throws {
        let failing = FixtureHTTPServer.Response(status: 503)
        let server = try FixtureHTTPServer(
            script: [failing, failing, failing, failing, .init(status: 200, body: Data("7".utf8))])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            Self.sink(server.url, firstDelay: .milliseconds(20), pause: .milliseconds(50))
        }
        #expect(await state.flush(timeout: .seconds(30)))
        #expect(state.value == 7)
        #expect(server.requests.count == 5)
    }

    /// A plain `flush()` does not wait through a failing load: it returns once the load failed.
    @Test func aPlainFlushDoesNotWaitThroughAFailingLoad() async throws {
        let server = try FixtureHTTPServer(fallback: .init(status: 503))
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey()) {
            Self.sink(server.url, firstDelay: .seconds(600), pause: .seconds(600))
        }
        await state.flush()
        #expect(!state.syncStatus.value.hasContactedEveryDestination)
        #expect(server.requests.count == 1)
    }

    /// Three failed sends pause the sink for ten minutes; the destination is back: a flush with a
    /// deadline sends at once (an app's "flush before it suspends" returned `false` before).
    @Test func flushRetriesAPausedSinkAtOnce() async throws {
        let server = try FixtureHTTPServer(script: Self.threeFailures)
        defer { server.stop() }
        let state = await Self.pausedForTenMinutes(server)
        let status = state.syncStatus
        #expect(await state.flush(timeout: .seconds(30)), "the paused sink was not tried again")
        #expect(server.requests.count == 4)
        #expect(status.value.isSynced && !status.value.isPaused && status.value.lastError == nil)
    }

    /// A paused sink whose destination answers a refresh sends again at once: the status does not
    /// stay "offline" after the successful exchange.
    @Test func aRefreshThatReachesThePausedSinksDestinationResumesIt() async throws {
        let server = try FixtureHTTPServer(script: Self.threeFailures + [.init(status: 404)])
        defer { server.stop() }
        let state = await Self.pausedForTenMinutes(server)
        let status = state.syncStatus
        try await state.refresh()
        await eventually("the sink to deliver after the refresh") { status.value.isSynced }
        #expect(server.requests.map(\.method) == ["PUT", "PUT", "PUT", "GET", "PUT"])
        #expect(state.statistics[0].sent == 1)
    }

    /// A remote sink whose first send merges: the server held a value of its own, and the merge's
    /// result is a new local change, made while the send is in flight, to send next.
    final class MergingSink: RemoteSyncSink, @unchecked Sendable {
        private let lock = NSLock()
        private var channel: RemoteChannel<Int>?
        private var sends: [Int] = []
        var sent: [Int] { lock.withLock { sends } }

        func connect(_ channel: RemoteChannel<Int>) { lock.withLock { self.channel = channel } }
        func refresh() async throws {}

        func send(_ changes: [StateChange<Int>]) async throws {
            let (channel, isFirst) = lock.withLock {
                sends += changes.map(\.newValue)
                return (self.channel, sends.count == changes.count)
            }
            guard isFirst else { return }
            try await Task.sleep(for: .milliseconds(20))
            _ = channel?.modify { $0 += 100 }
        }
    }

    /// A flush given 30 s waits, within them, for what its own merges produce: the merge's result
    /// is one more change to send (issue 51, 7, which saw `false` after 0.1 s with one change
    /// pending; not reproduced here, kept as its guard).
    @Test func aFlushWithADeadlineWaitsForTheChangeItsMergeMade() async {
        let sink = MergingSink()
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        #expect(await state.flush(timeout: .seconds(30)), "\(state.syncStatus.value)")
        #expect(state.value == 101)
        #expect(sink.sent == [1, 101])
    }
}
