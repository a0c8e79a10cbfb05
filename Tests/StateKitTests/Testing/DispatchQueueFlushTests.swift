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
