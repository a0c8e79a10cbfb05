import Dispatch
import Foundation
import StateKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct SyncedStateTests {
    init() { DiagnosticsRecorder.start() }

    @Test func everyChangeReachesEachSinkInVersionOrder() async throws {
        let first = TestSink<Int>()
        let second = TestSink<Int>()
        let key = uniqueKey()
        let state = SyncedState(0, key: key, sinks: [first, second])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<250 { state.modify { $0 += 1 } }
        }
        await state.flush()
        #expect(state.value == 2_000)
        for sink in [first, second] {
            #expect(sink.versions == Array(1...2_000))
            #expect(sink.changes.map(\.newValue) == Array(1...2_000))
            let instance = try #require(sink.changes.last?.instance)
            #expect(sink.changes.last?.idempotencyKey == "\(key)#\(instance):2000")
        }
        #expect(state.statistics.map(\.sent) == [2_000, 2_000])
        #expect(state.statistics.map(\.pending) == [0, 0])
    }

    @Test func writersNeverWaitForABlockedSink() async {
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        for value in 1...500 { state.modify(value) }  // would hang here if a writer waited for the sink
        #expect(state.version == 500)
        #expect(state.statistics[0].pending == 500)
        #expect(state.statistics[0].sent == 0)
        gate.open()
        await state.flush()
        #expect(sink.versions == Array(1...500))
    }

    @Test func aHangingSinkDoesNotDelayAnother() async {
        let gate = Gate()
        let hanging = TestSink<Int>(gate: gate)
        let healthy = TestSink<Int>()
        let state = SyncedState(0, key: uniqueKey(), sinks: [hanging, healthy])
        for value in 1...100 { state.modify(value) }
        await healthy.received(100)
        #expect(healthy.versions == Array(1...100))
        #expect(hanging.changes.isEmpty)
        gate.open()
        await state.flush()
        #expect(hanging.versions == Array(1...100))
    }

    @Test func changesMadeWhileASendIsInFlightFormTheNextBatch() async {
        let gate = Gate()
        let sink = TestSink<Int>(policy: SinkPolicy(maximumBatchSize: 100), gate: gate)
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        state.modify(1)
        await gate.arrived(1)
        for value in 2...251 { state.modify(value) }
        gate.open()
        await state.flush()
        #expect(sink.batches == [1, 100, 100, 50])
        #expect(sink.versions == Array(1...251))
    }

    @Test func failedBatchIsRetriedInOrderWithoutLoss() async {
        let sink = TestSink<Int>(policy: instantRetries()) { attempt in
            attempt <= 3 ? ScriptedFailure(attempt: attempt) : nil
        }
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        for value in 1...10 { state.modify(value) }
        await state.flush()
        #expect(Set(sink.versions) == Set(1...10))
        #expect(sink.versions == sink.versions.sorted())
        let statistics = state.statistics[0]
        #expect(statistics.sent == 10)
        #expect(statistics.retried == 3)
        #expect(statistics.failed == 0)
        #expect(statistics.lastError == nil)
    }

    @Test func giveUpAfterMaximumAttemptsCountsAndReportsTheLostVersions() async {
        let sink = TestSink<Int>(policy: instantRetries(maximumAttempts: 5, after: .giveUpAndReport)) { attempt in
            attempt <= 5 ? ScriptedFailure(attempt: attempt) : nil
        }
        let key = uniqueKey()
        let state = SyncedState(0, key: key, sinks: [sink])
        state.modify(1)
        await state.flush()
        state.modify(2)
        await state.flush()
        #expect(sink.attemptCount == 6)
        #expect(sink.versions == [2])
        let statistics = state.statistics[0]
        #expect(statistics.failed == 1)
        #expect(statistics.retried == 4)
        #expect(statistics.sent == 1)
        let gaveUp = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .sinkGaveUp }
        #expect(gaveUp.count == 1)
        #expect(gaveUp.first?.message.contains("version 1") == true)
    }

    @Test func pauseAndKeepHoldsTheBatchUntilTheSinkRecovers() async {
        let policy = instantRetries(maximumAttempts: 2, after: .pauseAndKeep(retryEvery: .microseconds(1)))
        let sink = TestSink<Int>(policy: policy) { attempt in ScriptedFailure(attempt: attempt) }
        let key = uniqueKey()
        let state = SyncedState(0, key: key, sinks: [sink])
        for value in 1...3 { state.modify(value) }
        await state.flush()  // returns: a paused sink does not hold a flush
        #expect(state.statistics[0].isPaused)
        #expect(state.statistics[0].pending == 3)
        #expect(state.statistics[0].failed == 0)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkPaused })
        sink.setFailures { _ in nil }
        await sink.received(3)
        await state.flush()
        #expect(sink.versions == [1, 2, 3])
        #expect(!state.statistics[0].isPaused)
        #expect(state.statistics[0].sent == 3)
    }

    @Test func nonRetryableErrorDropsTheBatchAndReportsIt() async {
        struct Refusal: StateSinkError {
            var isRetryable: Bool { false }
        }
        let sink = TestSink<Int>(policy: instantRetries()) { attempt in attempt == 1 ? Refusal() : nil }
        let key = uniqueKey()
        let state = SyncedState(0, key: key, sinks: [sink])
        state.modify(1)
        await state.flush()
        state.modify(2)
        await state.flush()
        #expect(sink.attemptCount == 2)
        #expect(sink.versions == [2])
        #expect(state.statistics[0].failed == 1)
        #expect(state.statistics[0].retried == 0)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .sinkRejected })
    }

    @Test(arguments: [SinkPolicy.Overflow.dropOldest, .dropNewest, .coalesceToLatest])
    func fullBufferAppliesTheOverflowPolicyAndCountsIt(overflow: SinkPolicy.Overflow) async {
        let gate = Gate()
        let limit = overflow == .coalesceToLatest ? 1 : 10
        let sink = TestSink<Int>(policy: instantRetries(bufferLimit: limit, overflow: overflow), gate: gate)
        let key = uniqueKey()
        let state = SyncedState(0, key: key, sinks: [sink])
        state.modify(1)
        await gate.arrived(1)  // version 1 is in flight; the buffer is empty
        for value in 2...21 { state.modify(value) }
        let statistics = state.statistics[0]
        gate.open()
        await state.flush()
        switch overflow {
        case .dropOldest:
            #expect(sink.versions == [1] + Array(12...21))
            #expect(statistics.dropped == 10)
        case .dropNewest:
            #expect(sink.versions == [1] + Array(2...11))
            #expect(statistics.dropped == 10)
        case .coalesceToLatest:
            #expect(sink.versions == [1, 21])
            #expect(statistics.coalesced == 19)
            #expect(statistics.dropped == 0)
        }
        let reported = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .sinkDroppedChanges }
        #expect(reported.isEmpty == (overflow == .coalesceToLatest))
    }

    @Test func flushWaitsForChangesQueuedBehindAnotherThreadsDelivery() async {
        let sink = TestSink<Int>()
        let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
        let inHandler = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let subscription = state.subscribeChanges { change in
            if change.version == 1 {
                inHandler.signal()
                release.wait()
            }
        }
        let writer = Thread { state.modify(1) }
        writer.start()
        await awayFromThePool { waitFor(inHandler, "the handler to block") }
        state.modify(2)  // returns at once: queued behind the blocked delivery of version 1
        let returned = Collector<Bool>()
        let flushed = Task {
            await state.flush()
            returned.append(true)
        }
        for _ in 0..<20 { await Task.yield() }
        try? await Task.sleep(for: .milliseconds(20))  // time for a flush that does not wait to return
        #expect(returned.all.isEmpty, "flush() returned while version 2 was still queued")
        release.signal()
        await flushed.value
        #expect(returned.all == [true])
        #expect(sink.versions == [1, 2])
        subscription.cancel()
    }

    @Test func idempotencyKeysAreKeyInstanceAndVersionAndSurviveRetries() async throws {
        let sink = TestSink<String>(policy: instantRetries()) { attempt in
            attempt == 1 ? ScriptedFailure(attempt: attempt) : nil
        }
        let key = uniqueKey()
        let state = SyncedState("a", key: key, sinks: [sink])
        state.modify("b")
        state.modify("c")
        await state.flush()
        let instance = try #require(sink.changes.first?.instance)
        #expect(instance.count == 16 && instance.allSatisfy(\.isHexDigit))
        #expect(sink.changes.map(\.idempotencyKey) == ["\(key)#\(instance):1", "\(key)#\(instance):2"])
        #expect(sink.changes.map(\.oldValue) == ["a", "b"])
    }

    @Test func resultBuilderListsSinksWithConditionsAndLoops() async {
        let always = TestSink<Int>()
        let never = TestSink<Int>()
        let looped = [TestSink<Int>(), TestSink<Int>()]
        let includeNever = false
        let state = SyncedState(0, key: uniqueKey()) {
            always
            if includeNever { never }
            for sink in looped { sink }
        }
        state.modify(1)
        await state.flush()
        #expect(state.statistics.count == 3)
        #expect(always.versions == [1])
        #expect(never.versions.isEmpty)
        #expect(looped.map(\.versions) == [[1], [1]])
    }

    @Test func releasedContainerStillDeliversWhatItBuffered() async {
        let gate = Gate()
        // A drain timeout far above how long the gate stays shut, even on a starved machine.
        var policy = SinkPolicy.default
        policy.drainTimeout = .seconds(120)
        let sink = TestSink<Int>(policy: policy, gate: gate)
        weak var released: SyncedState<Int>?
        do {
            let state = SyncedState(0, key: uniqueKey(), sinks: [sink])
            released = state
            for value in 1...5 { state.modify(value) }
        }
        #expect(released == nil)
        gate.open()
        await sink.received(5)
        #expect(sink.versions == Array(1...5))
    }

    @Test func handAnnouncedChangeIsSentToo() async {
        final class Box: @unchecked Sendable { var count = 0 }
        let sink = TestSink<Box>()
        let box = Box()
        let state = SyncedState(box, key: uniqueKey(), sinks: [sink])
        box.count = 1
        state.didModify()
        await state.flush()
        #expect(sink.versions == [1])
    }
}
