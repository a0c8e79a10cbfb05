import Foundation
import Synchronization
import Testing

@testable import StateKit

/// A derived state whose sources are all containers computes as ``LeafDerivation`` does: it takes
/// every source's lock at once and delivers from the thread that computed. These pin what that
/// path must keep.
@Suite struct ContainerSourcesTests {
    final class Counter<Value>: MonitoredState<Value>, @unchecked Sendable {}

    @Test func aSourceGivenTwiceIsReadOnceUnderItsLock() {
        let a = MonitoredState(3, key: uniqueKey("a"))
        // Taking the same lock twice would trap (debug) or hang.
        let difference = DerivedState(a, a) { $0 - $1 }
        let seen = Collector<Int>()
        let subscription = difference.subscribe { seen.append($0) }
        for next in 4...6 { a ~> next }
        #expect(difference.value == 0)
        #expect(seen.all == [0])
        subscription.cancel()
    }

    @Test func subclassesOfMonitoredStateAreContainerSources() {
        let a = Counter(2, key: uniqueKey("a"))
        let b = MonitoredState(5, key: uniqueKey("b"))
        let product = DerivedState(a, b) { $0 * $1 }
        let seen = Collector<Int>()
        let subscription = product.subscribe { seen.append($0) }
        a ~> 3
        b ~> 7
        #expect(seen.all == [10, 15, 21])
        #expect(product.version == 2)
        subscription.cancel()
    }

    @Test func subscribersRunAfterEveryHandlerOfTheChangeThatCausedThem() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let doubled = DerivedState(a) { $0 * 2 }
        let calls = Collector<String>()
        let derivedSubscription = doubled.subscribe { calls.append("doubled \($0)") }
        // Subscribed after the derived state, so it is after its watch in `a`'s list.
        let sourceSubscription = a.subscribe { calls.append("a \($0)") }
        a ~> 1
        a ~> 2
        #expect(calls.all == ["doubled 0", "a 0", "a 1", "doubled 2", "a 2", "doubled 4"])
        withExtendedLifetime((derivedSubscription, sourceSubscription)) {}
    }

    @Test func aHandlerWritingASourceSeesItsChangeDeliveredAfterItsOwn() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { $0 + $1 }
        let seen = Collector<Int>()
        let sumSubscription = sum.subscribe { seen.append($0) }
        let relay = a.subscribe { value in if value > 0 { b ~> (value * 10) } }
        a ~> 1
        // `a`'s change is one computation (1), the relay's write of `b` another (11).
        #expect(seen.all == [0, 1, 11])
        #expect(sum.version == 2)
        withExtendedLifetime((sumSubscription, relay)) {}
    }

    @Test func aTransactionsDerivedChangeComesAfterEveryContainersHandlers() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { $0 + $1 }
        let calls = Collector<String>()
        let subscriptions = [
            sum.subscribe { calls.append("sum \($0)") },
            a.subscribe { calls.append("a \($0)") },
            b.subscribe { calls.append("b \($0)") },
        ]
        withStateTransaction {
            a ~> 1
            b ~> 2
        }
        // The commit delivers the containers in an order of its own; the derived state, after both.
        #expect(calls.all.count == 6)
        #expect(Set(calls.all.dropFirst(3).prefix(2)) == ["a 1", "b 2"])
        #expect(calls.all.last == "sum 3")
        subscriptions.forEach { $0.cancel() }
    }

    @Test func writesOfADerivedStatesHandlerWaitForTheOtherDerivedStatesOfTheChange() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let c = MonitoredState(0, key: uniqueKey("c"))
        let doubled = a.map { $0 * 2 }
        let tripled = a.map { $0 * 3 }
        let calls = Collector<String>()
        let subscriptions = [
            doubled.subscribe { value in
                calls.append("doubled \(value)")
                if value > 0 { c ~> value }
            },
            tripled.subscribe { calls.append("tripled \($0)") },
            c.subscribe { calls.append("c \($0)") },
        ]
        a ~> 1
        #expect(calls.all == ["doubled 0", "tripled 0", "c 0", "doubled 2", "tripled 3", "c 2"])
        subscriptions.forEach { $0.cancel() }
    }

    @Test func aWriteQueuedBeforeTheComputationIsDeliveredBeforeTheDerivedChange() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let c = MonitoredState(0, key: uniqueKey("c"))
        let calls = Collector<String>()
        // Subscribed before the derived state exists, so it writes `c` before the derived state
        // computes: `c`'s change was made first, and is delivered first.
        let relay = a.subscribe { if $0 > 0 { c ~> $0 } }
        let doubled = a.map { $0 * 2 }
        let subscriptions = [
            doubled.subscribe { calls.append("doubled \($0)") },
            c.subscribe { calls.append("c \($0)") },
        ]
        a ~> 1
        #expect(calls.all == ["doubled 0", "c 0", "c 1", "doubled 2"])
        withExtendedLifetime(relay) { subscriptions.forEach { $0.cancel() } }
    }

    @Test func aDerivedStateDroppedByASourcesHandlerMidDeliveryCallsNobodyAndGoesAway() {
        final class Holder: @unchecked Sendable {
            var derived: DerivedState<Int>?
            var subscription: Subscription?
        }
        let a = MonitoredState(0, key: uniqueKey("a"))
        let seen = Collector<Int>()
        let holder = Holder()
        weak var weakDerived: DerivedState<Int>?
        do {
            let doubled = a.map { $0 * 2 }
            holder.subscription = doubled.subscribe { seen.append($0) }
            holder.derived = doubled
            weakDerived = doubled
        }
        // Runs after the derived state computed, before its change is delivered.
        let dropper = a.subscribe { value in
            guard value > 0 else { return }
            holder.subscription?.cancel()
            holder.subscription = nil
            holder.derived = nil
        }
        a ~> 1
        #expect(seen.all == [0])
        #expect(weakDerived == nil)
        #expect(a.subscriberCount == 1)
        dropper.cancel()
    }

    @Test func madeInsideATransactionItComputesAgainOnceOutside() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = MonitoredState(2, key: uniqueKey("b"))
        let sum = withStateTransaction {
            a ~> 10
            return DerivedState(a, b) { $0 + $1 }
        }
        #expect(sum.value == 12)
        try? withStateTransaction {
            b ~> 20
            #expect(sum.value == 30)
            throw CancellationError()
        }
        #expect(sum.value == 12)
        #expect(sum.version == 0)
    }

    @Test func transactionsAndDerivedStatesTakingLocksInOppositeOrdersFinish() async {
        let a = MonitoredState(5_000, key: uniqueKey("a"))
        let b = MonitoredState(5_000, key: uniqueKey("b"))
        let ab = DerivedState(a, b) { $0 + $1 }
        let ba = DerivedState(b, a) { $0 + $1 }
        let broken = Collector<Int>()
        let subscriptions = [ab, ba].map { sum in sum.subscribe { if $0 != 10_000 { broken.append($0) } } }
        let finished = Atomic<Int>(0)
        await onThreads(4) { index in
            for step in 0..<3_000 {
                let amount = step.isMultiple(of: 2) ? 1 : -1
                switch index {
                case 0:
                    withStateTransaction {
                        a.modify { $0 -= amount }
                        b.modify { $0 += amount }
                    }
                case 1:
                    withStateTransaction {
                        b.modify { $0 -= amount }
                        a.modify { $0 += amount }
                    }
                case 2:
                    if ab.value != 10_000 { broken.append(ab.value) }
                default:
                    if ba.value != 10_000 { broken.append(ba.value) }
                }
            }
            finished.add(1, ordering: .relaxed)
        }
        await waitUntilDelivered(ab.node.storage)
        await waitUntilDelivered(ba.node.storage)
        #expect(finished.load(ordering: .relaxed) == 4)
        #expect(broken.all == [])
        #expect(ab.value == 10_000 && ba.value == 10_000)
        #expect(a.value == 5_000 && b.value == 5_000)
        subscriptions.forEach { $0.cancel() }
    }
}
