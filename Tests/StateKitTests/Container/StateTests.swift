import Foundation
import StateKit
import Testing

/// The seed article's reference type: mutable in place, so changes must be announced.
final class CEO: CustomDebugStringConvertible {
    var name: String
    init(name: String) { self.name = name }
    var debugDescription: String { name }
}

/// Counts hook calls and checks they never overlap and see values in order.
final class HookedCounter: MonitoredState<Int>, @unchecked Sendable {
    private let lock = NSLock()
    private var inside = false
    private(set) var calls = 0
    private(set) var overlapped = false
    private(set) var wentBackwards = false
    private var lastSeen = Int.min

    override func didModify() {
        lock.withLock {
            if inside { overlapped = true }
            inside = true
        }
        let seen = value
        lock.withLock {
            if seen < lastSeen { wentBackwards = true }
            lastSeen = seen
            calls += 1
            inside = false
        }
        super.didModify()
    }
}

@Suite struct StateTests {
    @Test func readAfterModifyReturnsNewValue() {
        let state = State(1, key: uniqueKey())
        state.modify(2)
        #expect(state.value == 2)
        state ~> 3
        #expect(state.value == 3)
        state.modify { $0 += 1 }
        #expect(state.value == 4)
        #expect(state.version == 3)
    }

    @Test func readOnAnotherThreadAfterModifyReturnsSeesNewValue() {
        let state = State(0, key: uniqueKey())
        let seen = Collector<Int>()
        for round in 1...200 {
            let written = DispatchSemaphore(value: 0)
            let read = DispatchSemaphore(value: 0)
            Thread {
                written.wait()
                seen.append(state.value)
                read.signal()
            }.start()
            state.modify(round)
            written.signal()
            waitFor(read, "reader")
        }
        #expect(seen.all == Array(1...200))
    }

    @Test func seedOptionalStateAcceptsNilThroughOperator() {
        let appRating = State<Int?>(nil, key: uniqueKey())
        #expect(appRating.value == nil)
        appRating.modify(4)
        #expect(appRating.value == 4)
        appRating ~> nil
        #expect(appRating.value == nil)
        #expect(appRating.version == 2)
    }

    @Test func seedReferenceTypeChangedInPlaceIsAnnouncedByDidModify() {
        let currentCEO = MonitoredState(CEO(name: "John Sculley"), key: uniqueKey())
        let names = Collector<String>()
        let subscription = currentCEO.subscribe { names.append($0.name) }
        currentCEO ~> CEO(name: "Steve Jobs")
        currentCEO.value.name = "Tim Cook"
        currentCEO.didModify()
        #expect(names.all == ["John Sculley", "Steve Jobs", "Tim Cook"])
        #expect(currentCEO.version == 2)
        subscription.cancel()
    }

    @Test func assigningEqualValueChangesNothing() {
        let state = MonitoredState("a", key: uniqueKey())
        let seen = Collector<String>()
        let subscription = state.subscribe { seen.append($0) }
        state.modify("a")
        state ~> "a"
        #expect(state.version == 0)
        state ~> "b"
        state ~> "b"
        #expect(state.version == 1)
        #expect(seen.all == ["a", "b"])
        subscription.cancel()
    }

    @Test func closureModifyIsAlwaysOneChange() {
        let state = MonitoredState(5, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { seen.append($0) }
        state.modify { _ in }
        state ~> { $0 += 0 }
        #expect(state.version == 2)
        #expect(seen.all == [5, 5, 5])
        subscription.cancel()
    }

    @Test func didModifyAlwaysNotifiesWithNewVersion() {
        let state = MonitoredState(1, key: uniqueKey())
        let changes = Collector<StateChange<Int>>()
        let subscription = state.subscribeChanges { changes.append($0) }
        state.didModify()
        state.didModify()
        #expect(state.version == 2)
        #expect(changes.all.map(\.version) == [1, 2])
        #expect(changes.all.allSatisfy { $0.oldValue == 1 && $0.newValue == 1 })
        subscription.cancel()
    }

    @Test func modifyReturnsBodysResult() {
        let state = State([1, 2], key: uniqueKey())
        let count = state.modify { list -> Int in
            list.append(3)
            return list.count
        }
        #expect(count == 3)
        #expect(state.value == [1, 2, 3])
    }

    @Test func throwingBodyKeepsItsMutationAndAnnouncesIt() {
        struct Stop: Error {}
        let state = MonitoredState([1], key: uniqueKey())
        let seen = Collector<[Int]>()
        let subscription = state.subscribe { seen.append($0) }
        #expect(throws: Stop.self) {
            try state.modify { list in
                list.append(2)
                throw Stop()
            }
        }
        #expect(state.value == [1, 2])
        #expect(seen.all == [[1], [1, 2]])
        subscription.cancel()
    }

    @Test func concurrentIncrementsLoseNothing() async {
        let state = MonitoredState(0, key: uniqueKey())
        let deliveries = Collector<Int>()
        let subscription = state.subscribe { if $0 % 25_000 == 0 { deliveries.append($0) } }
        await onThreads(8) { _ in
            for _ in 0..<25_000 { state.modify { $0 += 1 } }
        }
        await waitUntilDelivered(state)
        #expect(state.value == 200_000)
        #expect(state.version == 200_000)
        #expect(deliveries.all == Array(stride(from: 0, through: 200_000, by: 25_000)))
        subscription.cancel()
    }

    @Test func concurrentIncrementsWithoutObserversLoseNothing() async {
        let state = State(0, key: uniqueKey())
        await onThreads(8) { _ in
            for _ in 0..<100_000 { state.modify { $0 += 1 } }
        }
        #expect(state.value == 800_000)
        #expect(state.version == 800_000)
    }

    @Test func didModifyOverrideSeesEveryChangeOnceInOrderNeverConcurrently() async {
        let state = HookedCounter(0, key: uniqueKey())
        await onThreads(8) { _ in
            for _ in 0..<10_000 { state.modify { $0 += 1 } }
        }
        await waitUntilDelivered(state)
        #expect(state.calls == 80_000)
        #expect(!state.overlapped)
        #expect(!state.wentBackwards)
    }

    @Test func didModifyCalledByHandOnSubclassRunsOverrideOnceAndNotifies() {
        let state = HookedCounter(7, key: uniqueKey())
        let seen = Collector<Int>()
        let subscription = state.subscribe { seen.append($0) }
        state.didModify()
        #expect(state.calls == 1)
        #expect(state.version == 1)
        #expect(seen.all == [7, 7])
        state.modify(8)
        #expect(state.calls == 2)
        subscription.cancel()
    }

    @Test func descriptionNamesKeyAndValue() {
        let key = uniqueKey()
        #expect(State(3, key: key).description == "State<Int>(\(key): 3)")
    }
}
