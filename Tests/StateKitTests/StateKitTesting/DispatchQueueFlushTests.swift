import Foundation
import StateKit
import StateKitTesting
import Testing

/// A listener with its own queue, as a command-line tool or a test gives it.
private final class CountingListener: StateListener, @unchecked Sendable {
    let stateListenerQueue = DispatchQueue(label: "test.listener")
    private(set) var seenVersions: [UInt64] = []

    func stateModified<T>(_ state: State<T>) {
        seenVersions.append(state.version)
    }
}

/// A value with no lock of its own: only `flush()` orders the queue's writes before the test's reads.
private final class UnguardedBox: @unchecked Sendable {
    var values: [Int] = []
}

@Suite struct DispatchQueueFlushTests {
    @Test func flushRunsEverySubscriberDeliveryQueuedBeforeIt() async {
        let counter = MonitoredState(0, key: uniqueKey())
        let queue = DispatchQueue(label: "test.delivery")
        let seen = Collector<Int>()
        let subscription = counter.subscribe(on: queue) { seen.append($0) }
        for value in 1...100 { counter ~> value }
        await queue.flush()
        #expect(seen.all == Array(0...100))
        subscription.cancel()
    }

    @Test func flushRunsListenerCallsOnTheListenersQueue() async {
        let location = MonitoredState<String?>(nil, key: uniqueKey())
        let listener = CountingListener()
        location.attach(listener: listener)
        location ~> "Atlanta"
        location ~> nil
        await listener.stateListenerQueue.flush()
        #expect(listener.seenVersions.count == 2)
        #expect(listener.seenVersions.last == 2)
    }

    /// Under `--sanitize=thread` this fails without `flush()`'s lock hand-off: ThreadSanitizer on
    /// Linux does not order a continuation resumed from a queue after that queue's earlier blocks.
    @Test func whatQueuedBlocksWroteIsVisibleAfterFlushWithoutALock() async {
        await withTaskGroup(of: Int.self) { group in
            for task in 0..<8 {
                group.addTask {
                    let queue = DispatchQueue(label: "test.flush.\(task)")
                    var consistent = 0
                    for _ in 0..<50 {
                        let box = UnguardedBox()
                        queue.async { box.values.append(1) }
                        queue.async { box.values.append(2) }
                        await queue.flush()
                        if box.values == [1, 2] { consistent += 1 }
                    }
                    return consistent
                }
            }
            var consistent = 0
            for await count in group { consistent += count }
            #expect(consistent == 8 * 50)
        }
    }

    @Test func synchronousSubscribersNeedNoWaiting() {
        let counter = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = counter.subscribe { seen.append($0) }
        counter ~> 1
        #expect(seen.all == [0, 1])
        subscription.cancel()
    }

    @Test func flushOfTheMainQueueRunsMainActorHandlers() async {
        let counter = MonitoredState(0, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = counter.subscribeOnMain { seen.append($0) }
        counter ~> 1
        await DispatchQueue.main.flush()
        #expect(seen.all == [0, 1])
        subscription.cancel()
    }
}
