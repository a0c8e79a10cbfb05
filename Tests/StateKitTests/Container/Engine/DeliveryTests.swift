import Foundation
import StateKit
import Testing

/// A seed-style listener with a queue of its own (the default, main, is not serviced in tests).
final class QueueListener: StateListener, @unchecked Sendable {
    let stateListenerQueue = DispatchQueue(label: "listener")
    let calls = Collector<String>()
    let called = DispatchSemaphore(value: 0)

    func stateModified<T>(_ state: State<T>) {
        calls.append(state.key)
        called.signal()
    }
}

@Suite struct DeliveryTests {
    @Test func subscriberIsHandedCurrentValueThenEachWrittenValue() {
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { seen.append($0) }
        #expect(seen.all == [0])
        state.modify(1)
        #expect(seen.all == [0, 1])
        state ~> 2
        state.modify { $0 *= 10 }
        #expect(seen.all == [0, 1, 2, 20])
        subscription.cancel()
    }

    @Test func changeSubscriberGetsOldNewVersionAndKey() {
        let key = uniqueKey()
        let state = MonitoredState("a", key: key)
        let changes = Collector<StateChange<String>>()
        let subscription = state.subscribeChanges { changes.append($0) }
        state ~> "b"
        state ~> "c"
        #expect(changes.all.map(\.oldValue) == ["a", "b"])
        #expect(changes.all.map(\.newValue) == ["b", "c"])
        #expect(changes.all.map(\.version) == [1, 2])
        #expect(changes.all.allSatisfy { $0.key == key })
        #expect(changes.all.last?.idempotencyKey == "\(key)#2")
        subscription.cancel()
    }

    @Test(.contendingTimeLimit) func subscribersSeeVersionsInOrderUnderConcurrentWritersAndEndOnCurrentValue() async {
        let state = MonitoredState(0, key: uniqueKey())
        let versionsA = Collector<UInt64>()
        let versionsB = Collector<UInt64>()
        let lastValue = Collector<Int>()
        let subscriptions = [
            state.subscribeChanges { versionsA.append($0.version) },
            state.subscribeChanges { versionsB.append($0.version) },
            state.subscribe { lastValue.append($0) },
        ]
        await onThreads(4) { _ in
            for _ in 0..<5_000 { state.modify { $0 += 1 } }
        }
        await waitUntilDelivered(state)
        let expected = Array(UInt64(1)...20_000)
        #expect(versionsA.all == expected)
        #expect(versionsB.all == expected)
        #expect(lastValue.all.last == state.value)
        #expect(state.value == 20_000)
        subscriptions.forEach { $0.cancel() }
    }

    @Test(.contendingTimeLimit) func concurrentAssignmentsEndWithEverySubscriberOnCurrentValue() async {
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { seen.append($0) }
        await onThreads(4) { thread in
            for round in 0..<2_000 { state.modify(thread * 10_000 + round) }
        }
        await waitUntilDelivered(state)
        #expect(seen.all.last == state.value)
        subscription.cancel()
    }

    @Test func nestedWriteIsDeliveredAfterCurrentDelivery() {
        let state = MonitoredState(0, key: uniqueKey())
        let log = Collector<String>()
        let first = state.subscribe { value in
            log.append("A begin \(value)")
            if value == 1 { state.modify(2) }
            log.append("A end \(value)")
        }
        let second = state.subscribe { log.append("B \($0)") }
        state.modify(1)
        #expect(
            log.all == [
                "A begin 0", "A end 0", "B 0",
                "A begin 1", "A end 1", "B 1",
                "A begin 2", "A end 2", "B 2",
            ])
        first.cancel()
        second.cancel()
    }

    @Test(.contendingTimeLimit) func handlerMayReadAndWriteAnotherContainerWithoutDeadlock() async {
        let source = MonitoredState(0, key: uniqueKey())
        let doubled = MonitoredState(0, key: uniqueKey())
        let link = source.subscribe { value in
            _ = source.value
            doubled.modify(value * 2)
        }
        await onThreads(2) { _ in
            for _ in 0..<1_000 { source.modify { $0 += 1 } }
        }
        await waitUntilDelivered(source)
        #expect(doubled.value == 4_000)
        link.cancel()
    }

    @Test(.contendingTimeLimit) func chainOf10000HandlerTriggeredWritesDoesNotGrowTheStack() async {
        let state = MonitoredState(0, key: uniqueKey())
        let containers = (0..<10_000).map { MonitoredState(0, key: "chain-\($0)-\(uniqueKey())") }
        let calls = Collector<Int>()
        var subscriptions = [
            state.subscribe { value in
                calls.append(value)
                if value > 0 && value < 10_000 { state.modify(value + 1) }
            }
        ]
        for index in 0..<(containers.count - 1) {
            let next = containers[index + 1]
            subscriptions.append(containers[index].subscribe { if $0 > 0 { next.modify($0 + 1) } })
        }
        await onThreads(1, stackSize: 256 * 1024) { _ in
            state.modify(1)
            containers[0].modify(1)
        }
        #expect(state.value == 10_000)
        #expect(calls.count == 10_001)
        #expect(containers.last?.value == 10_000)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func containersUpdatingEachOtherAreStoppedWithDiagnosticNamingBoth() async {
        DiagnosticsRecorder.start()
        let ping = MonitoredState(0, key: uniqueKey("ping"))
        let pong = MonitoredState(0, key: uniqueKey("pong"))
        let forward = ping.subscribe { value in if value > 0 { pong.modify(value + 1) } }
        let back = pong.subscribe { value in if value > 0 { ping.modify(value + 1) } }
        await onThreads(1, stackSize: 256 * 1024) { _ in ping.modify(1) }
        let limit = StateDiagnostics.maximumChainDepth
        #expect(ping.value + pong.value > limit)
        let reports = DiagnosticsRecorder.diagnostics(involving: ping.key)
        #expect(reports.count == 1)
        #expect(reports.first?.kind == .cycle)
        #expect(reports.first?.keys.contains(pong.key) == true)
        #expect(reports.first?.description.contains(ping.key) == true)
        back.cancel()
        let after = Collector<Int>()
        let watcher = pong.subscribe { after.append($0) }
        ping.modify(-1)
        pong.modify(-2)
        #expect(ping.value == -1)
        #expect(after.all.last == -2)
        forward.cancel()
        watcher.cancel()
    }

    @Test func writerReturnsWhileAnotherThreadDeliversAndLateSubscriberIsQueued() {
        let state = MonitoredState(0, key: uniqueKey())
        let held = HeldDelivery()
        let sawTwo = DispatchSemaphore(value: 0)
        let seen = Collector<Int>()
        let blocking = state.subscribe { value in
            seen.append(value)
            if value == 1 { held.hold() }
            if value == 2 { sawTwo.signal() }
        }
        Thread { state.modify(1) }.start()
        held.waitUntilHeld("the first delivery to start")
        state.modify(2)
        #expect(state.value == 2)
        #expect(seen.all == [0, 1])
        let late = Collector<Int>()
        let lateArrived = DispatchSemaphore(value: 0)
        let lateSubscription = state.subscribe { value in
            late.append(value)
            lateArrived.signal()
        }
        #expect(late.all.isEmpty)
        held.release()
        waitFor(sawTwo, "the queued change")
        waitFor(lateArrived, "the late subscriber's first call")
        #expect(seen.all == [0, 1, 2])
        #expect(late.all == [2])
        blocking.cancel()
        lateSubscription.cancel()
    }

    @Test func queueSubscriberRunsOnItsQueueInOrder() {
        let state = MonitoredState(0, key: uniqueKey())
        let queue = DispatchQueue(label: "subscriber")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let seen = Collector<Int>()
        let onQueue = Collector<Bool>()
        let done = DispatchSemaphore(value: 0)
        let subscription = state.subscribe(on: queue) { value in
            seen.append(value)
            onQueue.append(DispatchQueue.getSpecific(key: key) == true)
            if value == 100 { done.signal() }
        }
        for value in 1...100 { state.modify(value) }
        waitFor(done, "queue delivery")
        #expect(seen.all == Array(0...100))
        #expect(onQueue.all.allSatisfy { $0 })
        subscription.cancel()
    }

    @Test func cancelledQueueSubscriberIsNotCalledForAlreadyQueuedValues() {
        let state = MonitoredState(0, key: uniqueKey())
        let queue = DispatchQueue(label: "blocked")
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let seen = Collector<Int>()
        let subscription = state.subscribe(on: queue) { seen.append($0) }
        state.modify(1)
        subscription.cancel()
        gate.signal()
        queue.sync {}
        #expect(seen.all.isEmpty)
    }

    @Test func listenerIsCalledOnItsQueueAndHeldWeakly() {
        let state = MonitoredState(0, key: uniqueKey())
        var listener: QueueListener? = QueueListener()
        weak let weakListener = listener
        state.attach(listener: listener!)
        #expect(state.allListeners.count == 1)
        state.modify(1)
        waitFor(listener!.called, "listener")
        listener?.stateListenerQueue.sync {}
        #expect(listener?.calls.all == [state.key])
        listener = nil
        #expect(weakListener == nil)
        #expect(state.allListeners.isEmpty)
        state.modify(2)
        #expect(state.value == 2)
    }

    @Test func cancelledSubscriptionIsNeverCalledAgain() {
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { seen.append($0) }
        state.modify(1)
        subscription.cancel()
        subscription.cancel()
        state.modify(2)
        #expect(seen.all == [0, 1])
        #expect(!subscription.isActive)
    }

    @Test func releasedSubscriptionIsNeverCalledAgainAndFreesItsHandler() {
        final class Sentinel: Sendable {}
        let state = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        weak var weakSentinel: Sentinel?
        do {
            let sentinel = Sentinel()
            weakSentinel = sentinel
            _ = state.subscribe { value in
                _ = sentinel
                seen.append(value)
            }
        }
        state.modify(1)
        #expect(seen.all == [0])
        #expect(weakSentinel == nil)
    }

    @Test func cancelledSubscriptionStillHeldFreesItsHandler() {
        final class Sentinel: Sendable {}
        let state = MonitoredState(0, key: uniqueKey())
        weak var weakSentinel: Sentinel?
        var subscriptions = Set<Subscription>()
        do {
            let sentinel = Sentinel()
            weakSentinel = sentinel
            state.subscribe { _ in _ = sentinel }.store(in: &subscriptions)
        }
        #expect(weakSentinel != nil)
        subscriptions.first?.cancel()
        #expect(subscriptions.count == 1)
        #expect(weakSentinel == nil)
    }

    @Test func containerWhoseSubscribersCaptureItWeaklyIsFreed() {
        weak var weakState: MonitoredState<Int>?
        var subscriptions = Set<Subscription>()
        do {
            let state = MonitoredState(0, key: uniqueKey())
            weakState = state
            state.subscribe { [weak state] value in _ = state?.value }.store(in: &subscriptions)
            state.observe(\.description).subscribe { _ in }.store(in: &subscriptions)
            state.modify(1)
        }
        #expect(weakState == nil)
        #expect(subscriptions.count == 2)
    }

    @Test func subscriptionsAreHashableTokens() {
        let state = MonitoredState(0, key: uniqueKey())
        var subscriptions = Set<Subscription>()
        let first = state.subscribe { _ in }
        first.store(in: &subscriptions)
        first.store(in: &subscriptions)
        state.subscribe { _ in }.store(in: &subscriptions)
        #expect(subscriptions.count == 2)
    }

    @Test func valuesSequenceStartsWithCurrentValueAndEndsWhenCancelled() async {
        let state = MonitoredState(0, key: uniqueKey())
        let ready = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let consumer = Task {
            var seen: [Int] = []
            for await value in state.values(buffering: .unbounded) {
                seen.append(value)
                if value == 0 { ready.signal() }
                if value == 3 { break }
            }
            finished.signal()
            return seen
        }
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                waitFor(ready, "first value")
                continuation.resume()
            }
        }
        for value in 1...3 { state.modify(value) }
        await Task.detached { waitFor(finished, "the consumer to see 3", seconds: 10) }.value
        #expect(await consumer.value == [0, 1, 2, 3])
        let ended = DispatchSemaphore(value: 0)
        let cancelled = Task {
            for await _ in state.values {}
            ended.signal()
        }
        cancelled.cancel()
        await Task.detached { waitFor(ended, "the cancelled iteration to end", seconds: 10) }.value
    }
}
