import Dispatch
import Foundation
import StateKit
import Testing

/// Durations from outside never trap or block, flushes can be cancelled and bounded, and
/// statistics say which sink they belong to.
@Suite struct SinkFaultTests {
    struct RetryLater: StateSinkError {
        var retryAfter: Duration?
        var isRetryable: Bool { true }
    }

    @Test(arguments: [72, 73, 1_000, Int.max])
    func backoffNeverTrapsAndNeverExceedsTheMaximum(retry: Int) {
        let policy = RetryPolicy(maximumDelay: .seconds(30), maximumAttempts: 100)
        let delay = policy.delay(beforeRetry: retry)
        #expect(delay <= .seconds(30))
        #expect(delay >= .seconds(24))
    }

    @Test(arguments: [Duration.seconds(Int.max), .seconds(Int64.max / 2), .seconds(3_600)])
    func retryAfterIsClampedToThePolicysMaximum(retryAfter: Duration) {
        let policy = RetryPolicy(maximumDelay: .seconds(30))
        #expect(policy.delay(beforeRetry: 1, retryAfter: retryAfter) == .seconds(30))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .milliseconds(500)) == .milliseconds(500))
    }

    @Test func retryAfterBeyondTheMaximumPausesTheSinkAtOnceInsteadOfBlockingFlush() async {
        DiagnosticsRecorder.start()
        let sink = TestSink<Int>(policy: SinkPolicy(retry: RetryPolicy(maximumDelay: .seconds(1)))) { _ in
            RetryLater(retryAfter: .seconds(Int.max))
        }
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        await state.flush()
        // Paused is not delivered: the bounded flush waits for the sink and says it did not.
        #expect(await state.flush(timeout: .milliseconds(100)) == false)
        #expect(state.statistics[0].isPaused)
        #expect(state.statistics[0].pending == 1)
        #expect(DiagnosticsRecorder.diagnostics(involving: state.key).contains { $0.kind == .sinkPaused })
    }

    @Test func flushReturnsWhenItsTaskIsCancelled() async {
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        let returned = DispatchSemaphore(value: 0)
        let flushing = Task {
            await state.flush()
            returned.signal()
        }
        await gate.arrived()
        flushing.cancel()
        await awayFromThePool { waitFor(returned, "the cancelled flush to return", seconds: 10) }
        gate.open()
        await state.flush()
        #expect(sink.versions == [1])
    }

    @Test func flushWithTimeoutSaysWhetherItFinished() async {
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        // Opens the gate much later, so a flush that ignored its deadline would return `true`
        // instead of hanging. A clock here would measure the machine: other tests' threads can
        // delay the deadline's task by seconds on a 2-core runner.
        let opener = DispatchWorkItem { gate.open() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: opener)
        #expect(await state.flush(timeout: .milliseconds(100)) == false)
        opener.cancel()
        gate.open()
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(sink.versions == [1])
    }

    @Test func statisticsNameTheirSink() async {
        let analytics = TestSink<Int>()
        let remote = TestSink<Int>()
        let state = SyncedState(0, key: uniqueKey(), sinks: [analytics.named("analytics"), remote])
        state.modify(1)
        await state.flush()
        #expect(state.statistics.map(\.sinkName) == ["analytics", "TestSink<Int>"])
        #expect(state.statistics(for: "analytics")?.sent == 1)
        #expect(state.statistics(for: "nothing") == nil)
    }
}
