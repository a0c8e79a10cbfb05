import Foundation
import StateKit
import Synchronization
import Testing

/// A released container's sinks drain for a bounded time, then stop. One test waits for its turn
/// to contend (see `contending`), hence the suite's limit.
@Suite(.contendingTimeLimit) struct SinkDrainTests {
    init() { DiagnosticsRecorder.start() }

    private func alwaysFailing(drainTimeout: Duration) -> SinkPolicy {
        SinkPolicy(
            retry: RetryPolicy(initialDelay: .microseconds(1), maximumDelay: .microseconds(10)),
            afterRepeatedFailures: .pauseAndKeep(retryEvery: .seconds(30)),
            drainTimeout: drainTimeout
        )
    }

    @Test func tenThousandReleasedContainersWithFailingSinksLeaveNoLiveSinks() async {
        let key = uniqueKey()
        // One attempt, then paused for 30 s: the sinks would sit there for good without the drain
        // timeout. Made on a thread of its own, one contention run at a time: 10,000 containers
        // take seconds under the thread sanitizer, which must not stall the shared pool.
        var oneAttempt = alwaysFailing(drainTimeout: .milliseconds(200))
        oneAttempt.retry.maximumAttempts = 1
        let policy = oneAttempt
        let pipelines = PipelineWatch()
        await contending {
            for value in 1...10_000 {
                let state = SyncedState(0, key: key) {
                    TestSink<Int>(policy: policy) { attempt in ScriptedFailure(attempt: attempt) }
                }
                pipelines.watch(state)
                state.modify(value)
            }
        }
        #expect(await pipelines.allStopped())
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkStopped })
    }

    @Test(arguments: [false, true])
    func aReleasedContainersSinkIsFreedOnceItsPipelineStops(persisted: Bool) async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        weak var released: TestSink<Int>?
        let pipelines = PipelineWatch()
        do {
            let sink = TestSink<Int>(policy: alwaysFailing(drainTimeout: .milliseconds(50))) {
                ScriptedFailure(attempt: $0)
            }
            released = sink
            let state =
                persisted
                ? SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
                : SyncedState(0, key: key, sinks: [sink])
            pipelines.watch(state)
            state.modify(1)
        }
        // Before the fix, the cancelled drain timer's block held the pipeline, and so the sink,
        // for good.
        #expect(await pipelines.allStopped())
        let deadline = ContinuousClock.now + .seconds(30)
        while released != nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(released == nil)
    }

    @Test func aSinkThatNeverReturnsIsAccountedForAtTheDrainTimeoutAndFreesItsContainer() async {
        let key = uniqueKey()
        let neverOpened = Gate()
        var policy = SinkPolicy.default
        policy.drainTimeout = .milliseconds(100)
        let hung = TestSink<Int>(policy: policy, gate: neverOpened)
        let healthy = TestSink<Int>(policy: policy)
        weak var released: SyncedState<Int>?
        let pipelines = PipelineWatch()
        do {
            let state = SyncedState(0, key: key, sinks: [hung, healthy])
            pipelines.watch(state)
            released = state
            for value in 1...3 { state.modify(value) }
            await neverOpened.arrived()
            await healthy.received(3)
        }
        #expect(released == nil)
        // The hung send ignores cancellation and never returns; the accounting must not wait for it.
        #expect(await pipelines.allStopped(within: 10))
        let stopped = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .sinkStopped }
        #expect(stopped.count == 1)
        #expect(stopped.first?.message.contains("3 changes undelivered") == true)
        neverOpened.open()
    }

    /// Containers each with a sink whose send never returns (and ignores cancellation) beside a
    /// healthy one, released on a machine kept busy by spinning threads, two per core: what each
    /// healthy sink captured is freed within 3 s of the release, though the hung sends still hold
    /// their own sinks, and each hung sink is stopped at its 1 s drain timeout and reported.
    /// Fifty of them, one after the other, because what held a healthy sink for good was a race
    /// between its release and its idle task.
    @Test func aHungSinkKeepsOnlyWhatItCapturedItself() async {
        let key = uniqueKey()
        let containers = 50
        let neverOpened = Gate()
        var policy = SinkPolicy.default
        policy.drainTimeout = .seconds(1)
        let sinkPolicy = policy
        let counter = ReleaseCounter()
        let pipelines = PipelineWatch()
        let freedAfter: Duration? = await contending {
            let spinning = SpinningThreads(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
            defer { spinning.stop() }
            let sent = DispatchSemaphore(value: 0)
            for _ in 0..<containers {
                let captured = CountedRelease(counter)
                let hung = ClosureSink<Int>(policy: sinkPolicy) { _ in
                    sent.signal()
                    await neverOpened.wait()
                }
                let healthy = ClosureSink<Int>(policy: sinkPolicy) { _ in
                    captured.touch()
                    sent.signal()
                }
                let state = SyncedState(0, key: key, sinks: [hung, healthy])
                pipelines.watch(state)
                state.modify(1)
                for _ in 0..<2 { waitFor(sent, "the sinks' sends", seconds: 30) }
            }
            let released = ContinuousClock.now
            while counter.count.load(ordering: .acquiring) < containers
                && ContinuousClock.now - released < .seconds(3)
            {
                usleep(10_000)
            }
            return counter.count.load(ordering: .acquiring) == containers ? ContinuousClock.now - released : nil
        }
        #expect(
            freedAfter != nil,
            """
            what \(containers - counter.count.load(ordering: .acquiring)) healthy sinks captured was alive 3 s after \
            the last release
            """)
        #expect(await pipelines.allStopped(within: 10))
        let stopped = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .sinkStopped }
        #expect(stopped.count == containers)
        #expect(stopped.allSatisfy { $0.message.contains("1 changes undelivered") })
        neverOpened.open()
    }

    @Test func whatAStoppedSinkDidNotDeliverStaysInTheOutboxForTheNextLaunch() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let pipelines = PipelineWatch()
        do {
            let failing = TestSink<Int>(policy: alwaysFailing(drainTimeout: .milliseconds(100))) { attempt in
                ScriptedFailure(attempt: attempt)
            }
            let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: failing) }
            pipelines.watch(state)
            for value in 1...3 { state.modify(value) }
        }
        #expect(await pipelines.allStopped())
        let stopped = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .sinkStopped }
        #expect(stopped.count == 1)
        #expect(stopped.first?.message.contains("kept in the outbox") == true)

        let sink = TestSink<Int>()
        let next = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        await next.flush()
        #expect(sink.versions == [1, 2, 3])
    }

    @Test func aReleasedContainersHealthySinkDeliversEverythingItBuffered() async {
        let key = uniqueKey()
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let pipelines = PipelineWatch()
        do {
            let state = SyncedState(0, key: key, sinks: [sink])
            pipelines.watch(state)
            for value in 1...5 { state.modify(value) }
            await gate.arrived()
        }
        gate.open()
        #expect(await pipelines.allStopped())
        #expect(sink.versions == [1, 2, 3, 4, 5])
    }
}
