import Dispatch
import Foundation
import StateKit
import StateKitHTTP
import StateKitTesting
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `SyncedState.syncStatus` says what is pending, paused and failing, errors clear on recovery,
/// and `flush(timeout:)` returns `true` only when nothing it waited for is still pending.
@Suite struct SyncStatusTests {
    struct Offline: Error, CustomStringConvertible {
        var description: String { "could not connect to the server" }
    }

    /// A sink that fails until told otherwise, paused after two attempts and retried every `retryEvery`.
    static func failingSink(gate: Gate? = nil, retryEvery: Duration = .milliseconds(20)) -> TestSink<Int> {
        let policy = SinkPolicy(
            retry: RetryPolicy(initialDelay: .microseconds(1), maximumDelay: .microseconds(10), maximumAttempts: 2),
            afterRepeatedFailures: .pauseAndKeep(retryEvery: retryEvery)
        )
        return TestSink<Int>(policy: policy, gate: gate) { _ in Offline() }
    }

    // MARK: The defects, reproduced

    @Test func flushWithTimeoutIsFalseWhileAPausedSinkHoldsChanges() async {
        let sink = Self.failingSink()
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        #expect(await state.flush(timeout: .milliseconds(200)) == false)
        #expect(state.statistics[0].isPaused)
        #expect(state.statistics[0].pending == 1)
        sink.setFailures { _ in nil }
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(sink.versions == [1])
        #expect(state.statistics[0].pending == 0)
    }

    @Test func lastErrorIsClearedOnceTheSinkDeliversAgain() async {
        let sink = Self.failingSink()
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        await state.flush()
        #expect(state.statistics[0].lastError == "could not connect to the server")
        sink.setFailures { _ in nil }
        await sink.received(1)
        await state.flush()
        #expect(state.statistics[0].lastError == nil)
    }

    @Test func aPausedSinkThatDeliversAgainIsReportedResumedOnce() async {
        DiagnosticsRecorder.start()
        let sink = Self.failingSink()
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        await state.flush()
        sink.setFailures { _ in nil }
        await sink.received(1)
        state.modify(2)
        await state.flush()
        let kinds = DiagnosticsRecorder.diagnostics(involving: state.key).map(\.kind)
        #expect(kinds.filter { $0 == StateDiagnostic.Kind("sink-paused") }.count == 1)
        #expect(kinds.filter { $0 == StateDiagnostic.Kind("sink-resumed") }.count == 1)
    }
}

extension SyncStatusTests {
    // MARK: The status

    @Test func statusGoesFromSyncedToPendingToPausedAndBackToSynced() async {
        let gate = Gate()
        // Retried after a second, so the paused status is read before the retry starts.
        let sink = Self.failingSink(gate: gate, retryEvery: .seconds(1))
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        let initial = state.syncStatus.value
        #expect(initial.isSynced)
        #expect(initial.pending == 0 && initial.lastDeliveredAt == nil && initial.retryAt == nil)

        state.modify(1)
        await gate.arrived()
        let pending = state.syncStatus.value
        #expect(pending.pending == 1)
        #expect(!pending.isSynced && !pending.isPaused && pending.lastError == nil)

        gate.open()
        await state.flush()
        let paused = state.syncStatus.value
        #expect(paused.isPaused)
        #expect(paused.pending == 1)
        #expect(paused.lastError == "could not connect to the server")
        #expect(paused.retryAt != nil)
        #expect(paused.lastDeliveredAt == nil)
        #expect(!paused.isSynced)

        sink.setFailures { _ in nil }
        #expect(await state.flush(timeout: .seconds(60)))
        let synced = state.syncStatus.value
        #expect(synced.isSynced)
        #expect(synced.pending == 0 && !synced.isPaused && synced.lastError == nil && synced.retryAt == nil)
        #expect(synced.lastDeliveredAt != nil)
        #expect(synced.sinks == state.statistics)
        #expect(synced.sinks[0].sent == 1)
    }

    @Test func subscribersToPendingSeeEachCount() async throws {
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        let pending = state.syncStatus.pending.record()
        state.modify(1)
        await gate.arrived()
        state.modify(2)
        state.modify(3)
        gate.open()
        await state.flush()
        #expect(try await pending.next(6, timeout: .seconds(60)) == [0, 1, 2, 3, 2, 0])
        #expect(sink.batches == [1, 2])
    }

    @Test func observationTrackingFiresWhenTheStatusChanges() async {
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        let probe = TrackingProbe<SyncStatus>()
        probe.trackOnce { state.syncStatus.value }
        let isPaused = TrackingProbe<Bool>()
        isPaused.trackOnce { state.syncStatus.isPaused.value }
        state.modify(1)  // buffered, on the writer's thread: the status says one change waits
        #expect(probe.firings.count == 1)
        #expect(isPaused.firings.isEmpty, "a projection of the status is told only when its part changes")
        gate.open()
        await state.flush()
    }

    @Test func statusIsExactUnderContention() async {
        let first = TestSink<Int>()
        let second = TestSink<Int>()
        let state = SyncedState(0, key: uniqueKey(), sinks: [first, second.named("second")])
        let statuses = state.syncStatus.record()
        await onThreads(4) { _ in
            for _ in 0..<1_000 { state.modify { $0 += 1 } }
        }
        #expect(await state.flush(timeout: .seconds(120)))
        let status = state.syncStatus.value
        #expect(status.pending == 0)
        #expect(status.isSynced)
        #expect(status.sinks.map(\.sent) == [4_000, 4_000])
        #expect(status.sinks.map(\.pending) == [0, 0])
        #expect(first.versions == Array(1...4_000))
        #expect(second.versions == Array(1...4_000))
        // A new subscriber's first call is queued behind the status deliveries still on their way.
        let delivered = await awayFromThePool {
            let arrived = DispatchSemaphore(value: 0)
            let barrier = state.syncStatus.subscribe { _ in arrived.signal() }
            defer { barrier.cancel() }
            return arrived.wait(timeout: .now() + 60) == .success
        }
        #expect(delivered)
        #expect(statuses.latest == status, "a subscriber's last status is the current one")
        // Statuses are written in the order their statistics were read: none goes back to older counts.
        for sink in 0..<2 {
            let sent = statuses.values.map { $0.sinks[sink].sent }
            let wentBack = zip(sent, sent.dropFirst()).filter { $0 > $1 }.count
            #expect(wentBack == 0, "sink \(sink)'s sent count went back in the published statuses")
        }
    }

    @Test func lastErrorIsOneShortLine() async {
        struct Verbose: Error, CustomStringConvertible {
            var description: String { String(repeating: "x", count: 300) + "\nsecond line" }
        }
        let urlError = URLError(
            .cannotConnectToHost,
            userInfo: [
                NSLocalizedDescriptionKey: "Could not connect to the server.",
                NSURLErrorFailingURLErrorKey: URL(fileURLWithPath: "/" + String(repeating: "p", count: 500)),
            ])
        let verbose = TestSink<Int>(policy: instantRetries(maximumAttempts: 1)) { _ in Verbose() }
        let network = TestSink<Int>(policy: instantRetries(maximumAttempts: 1)) { _ in urlError }
        let state = SyncedState(0, key: uniqueKey(), sinks: [verbose, network.named("network")])
        state.modify(1)
        await state.flush()
        #expect(state.statistics[0].lastError == String(repeating: "x", count: 119) + "…")
        #expect(state.statistics[1].lastError == "URLError -1004: Could not connect to the server.")
        #expect(state.syncStatus.value.lastError != nil)
        #expect(state.syncStatus.value.sinks.map(\.failed) == [1, 1])
    }
}

extension SyncStatusTests {
    // MARK: Status tells the truth (semantics 23)

    /// An `HTTPSyncSink` to `url` that retries fast and pauses after three attempts.
    static func httpSink(_ url: URL, loadsOnStart: Bool = true, retryEvery: Duration = .milliseconds(40))
        -> HTTPSyncSink<Int>
    {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .milliseconds(20), maximumDelay: .milliseconds(40), maximumAttempts: 3)
        policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: retryEvery)
        policy.drainTimeout = .milliseconds(200)
        // Beside the whole suite (processes contending for a shared key, threads spinning to keep
        // the machine busy) an answer held at the fixture server and then released took more than
        // 10 s to arrive; under the thread sanitizer, more than 60 s.
        let timeout: Duration = isThreadSanitized ? .seconds(120) : .seconds(60)
        return HTTPSyncSink(endpoint: url, timeout: timeout, loadsOnStart: loadsOnStart, policy: policy)
    }

    @Test func aRemoteSinkIsNotSyncedBeforeItsDestinationFirstAnswers() async throws {
        // The load at start waits at the server until released: no contact yet.
        let server = try FixtureHTTPServer(script: [.init(status: 404, waitsForRelease: true)])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey(), sinks: [Self.httpSink(server.url)])
        await server.received(1)
        let before = state.syncStatus.value
        #expect(!before.isSynced, "synced before any answer from the server")
        #expect(!before.hasContactedEveryDestination)
        #expect(before.sinks.map(\.isAwaitingFirstContact) == [true])
        #expect(before.lastError == nil && before.pending == 0)
        server.release()
        await state.flush()
        let after = state.syncStatus.value
        #expect(after.isSynced)
        #expect(after.hasContactedEveryDestination)
        #expect(after.sinks.map(\.isAwaitingFirstContact) == [false])
    }

    @Test func aLoadAtStartThatFailsLeavesTheStatusUnknownWithItsError() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 503), .init(status: 404)])
        defer { server.stop() }
        // The load's next try is ten minutes away: only the refresh below contacts the server again.
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(initialDelay: .seconds(600), maximumDelay: .seconds(600), maximumAttempts: 3)
        let sink = HTTPSyncSink<Int>(endpoint: server.url, timeout: .seconds(60), policy: policy)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        await state.flush()
        let failed = state.syncStatus.value
        #expect(!failed.isSynced && !failed.hasContactedEveryDestination)
        #expect(failed.lastError == "HTTP 503 (retryable)")
        // The next answer (a 404 to a pull: nothing there yet) is the first contact, and clears the error.
        try await state.refresh()
        let contacted = state.syncStatus.value
        #expect(contacted.hasContactedEveryDestination)
        #expect(contacted.lastError == nil)
        #expect(contacted.isSynced)
        #expect(server.requests.count == 2)
    }

    @Test func aRemoteSinkThatDeliveredIsContacted() async throws {
        let server = try FixtureHTTPServer()
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey(), sinks: [Self.httpSink(server.url, loadsOnStart: false)])
        #expect(!state.syncStatus.value.hasContactedEveryDestination)
        state.modify(1)
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(state.syncStatus.value.isSynced)
        #expect(state.statistics[0].sent == 1)
    }

    @Test func anAnalyticsOnlyContainerIsSyncedAtLaunch() async {
        let state = SyncedState(0, key: uniqueKey(), sinks: [TestSink<Int>()])
        let status = state.syncStatus.value
        #expect(status.isSynced && status.hasContactedEveryDestination)
    }

    @Test func anOutageChangesTheStatusAtMostOncePerAttemptAndKeepsItsError() async throws {
        let server = try FixtureHTTPServer(fallback: .init(status: 503), maximumRequests: 200)
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey(), sinks: [Self.httpSink(server.url, loadsOnStart: false)])
        let statuses = state.syncStatus.record()
        state.modify(1)
        // Alone, 30 attempts take about a second. Beside the whole suite, whose blocking tests hold
        // the cooperative pool that the sink's retry loop runs on, 70 took 28 s, and under the
        // thread sanitizer 20 did not come within a minute. A status that flipped on every
        // attempt (issue 42) shows in 8: 16 statuses or more against the 11 allowed.
        await server.received(isThreadSanitized ? 8 : 30, within: 180)
        let attempts = server.requests.count
        let seen = statuses.values
        statuses.cancel()
        // The first status, the change buffered, then at most one per attempt.
        #expect(seen.count <= attempts + 3, "\(seen.count) statuses for \(attempts) attempts")
        let afterFirstError = seen.drop { $0.lastError == nil }
        #expect(afterFirstError.allSatisfy { $0.lastError != nil }, "the error went away during the outage")
        let afterFirstRetry = seen.drop { $0.retryAt == nil }
        #expect(afterFirstRetry.allSatisfy { $0.retryAt != nil }, "retryAt was cleared between attempts")
        #expect(seen.allSatisfy { !$0.isSynced && !$0.hasContactedEveryDestination })
        #expect(seen.allSatisfy { !$0.isSynced })
    }

    @Test func oneOfflineEditIsOneChangeWaiting() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let remote = TestRemoteSink<Int>(offline: true)
        let analytics = Self.failingSink()
        let state = SyncedState(
            0, key: uniqueKey(), storage: .file(directory.url),
            sinks: [
                DurableOutbox(fileURL: directory.url.appendingPathComponent("outbox.log"), wrapping: remote),
                analytics.named("analytics"),
            ])
        state.modify(1)
        await state.flush()
        #expect(state.statistics.map(\.pending) == [1, 1])
        #expect(state.syncStatus.value.pending == 1, "one edit shows \(state.syncStatus.value.pending) changes waiting")
    }

    @Test func flushWaitsForTheLoadAtStart() async throws {
        let server = try FixtureHTTPServer(script: [.init(status: 200, body: Data("42".utf8), waitsForRelease: true)])
        defer { server.stop() }
        let state = SyncedState(0, key: uniqueKey(), sinks: [Self.httpSink(server.url)])
        let flushed = Task {
            await state.flush()
            return state.value
        }
        await server.received(1)
        server.release()
        #expect(await flushed.value == 42, "flush returned before the server's value was loaded")
    }

    /// A value storage cannot take (JSON has no NaN): every sink got it, but the file still holds
    /// the value before it. Not synced, and `flush(timeout:)` says so, until a save succeeds.
    @Test func aValueThatCannotBeSavedIsNotSynced() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let sink = RecordingSink<Double>()
        let state = SyncedState(1.0, key: uniqueKey(), storage: .file(directory.url), sinks: [sink])
        let status = state.syncStatus
        state.modify(.nan)
        #expect(await state.flush(timeout: .seconds(60)) == false, "synced while storage holds the old value")
        #expect(state.saveError != nil)
        #expect(!status.value.isSynced)
        #expect(status.value.saveError != nil)
        state.modify(2)
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(state.saveError == nil)
        #expect(status.value.isSynced && status.value.saveError == nil)
        #expect(sink.values.count == 2)
    }
}
