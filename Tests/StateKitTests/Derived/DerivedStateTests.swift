import Foundation
import Observation
import StateKitTesting
import Synchronization
import Testing

@testable import StateKit

/// Counts how many times a derived state's computation ran.
private final class Computations: Sendable {
    private let counter = Atomic<Int>(0)

    var count: Int { counter.load(ordering: .relaxed) }

    func note() { counter.add(1, ordering: .relaxed) }
}

@Suite struct DerivedStateTests {
    struct Cart: Equatable, Sendable {
        var items: [String] = []
        var coupon = ""
    }

    struct Totals: Equatable, Sendable {
        var count = 0
        var label = ""
    }

    @Test func valueIsComputedFromTheSourcesCurrentValues() {
        let price = MonitoredState(10, key: uniqueKey("price"))
        let quantity = MonitoredState(2, key: uniqueKey("quantity"))
        let total = DerivedState(key: "total", price, quantity) { $0 * $1 }
        #expect(total.value == 20)
        #expect(total.key == "total")
        price ~> 12
        #expect(total.value == 24)
        #expect(total.version == 1)
    }

    @Test func keyDefaultsToTheSourcesKeys() {
        let a = MonitoredState(1, key: "left")
        let b = MonitoredState(2, key: "right")
        #expect(DerivedState(a, b) { $0 + $1 }.key == "derived(left, right)")
        #expect(a.map { $0 + 1 }.key == "left.map")
    }

    @Test func subscribersGetTheCurrentValueThenEachNewOne() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = MonitoredState("x", key: uniqueKey("b"))
        let joined = DerivedState(a, b) { "\($1)\($0)" }
        let values = joined.record()
        a ~> 2
        b ~> "y"
        #expect(values.values == ["x1", "x2", "y2"])
    }

    @Test func diamondSubscribersNeverSeeMixedInputs() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = a.map { $0 * 2 }
        let c = a.map { $0 * 3 }
        let d = DerivedState(b, c) { $0 + $1 }
        let values = d.record()
        for next in 2...20 { a ~> next }
        #expect(values.values == (1...20).map { $0 * 5 })
    }

    @Test func diamondWhoseLegsWereSubscribedFirstIsStillGlitchFree() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = a.map { $0 * 2 }
        let c = a.map { $0 * 3 }
        let bValues = b.record()
        let d = DerivedState(a, b, c) { $0 + $1 + $2 }
        let dValues = d.record()
        let cValues = c.record()
        a ~> 2
        a ~> 3
        #expect(dValues.values == [6, 12, 18])
        #expect(bValues.values == [2, 4, 6])
        #expect(cValues.values == [3, 6, 9])
    }

    @Test func withSubscribersComputesOncePerChange() {
        let computations = Computations()
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { a, b in
            computations.note()
            return a + b
        }
        let values = sum.record()
        let before = computations.count
        a ~> 1
        b ~> 1
        a.modify { $0 += 1 }
        #expect(computations.count - before == 3)
        #expect(values.values == [0, 1, 2, 3])
    }

    @Test func transactionIsOneComputationAndOneChange() {
        let computations = Computations()
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { a, b in
            computations.note()
            return a * 10 + b
        }
        let values = sum.record()
        let before = computations.count
        withStateTransaction {
            a.modify(1)
            b.modify(2)
        }
        #expect(computations.count - before == 1)
        #expect(values.values == [0, 12])
        #expect(sum.version == 1)
    }

    @Test func withoutSubscribersComputesOnlyWhenReadAndOncePerChange() {
        let computations = Computations()
        let a = MonitoredState(0, key: uniqueKey("a"))
        let doubled = a.map { value in
            computations.note()
            return value * 2
        }
        let afterCreation = computations.count
        a ~> 1
        a ~> 2
        a ~> 3
        #expect(computations.count == afterCreation)
        #expect(doubled.value == 6)
        #expect(doubled.value == 6)
        #expect(computations.count == afterCreation + 1)
    }

    @Test func equalResultNotifiesNobodyAndKeepsTheVersion() {
        let a = MonitoredState(4, key: uniqueKey("a"))
        let isEven = a.map { $0.isMultiple(of: 2) }
        let values = isEven.record()
        a ~> 6
        a ~> 8
        #expect(values.values == [true])
        #expect(isEven.version == 0)
        a ~> 9
        #expect(values.values == [true, false])
        #expect(isEven.version == 1)
    }

    @Test func derivedFromAProjectionIgnoresWritesToOtherParts() {
        let computations = Computations()
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let count = cart.items.map { items in
            computations.note()
            return items.count
        }
        let values = count.record()
        let before = computations.count
        cart.coupon ~> "SPRING"
        cart.coupon ~> "SUMMER"
        #expect(computations.count == before)
        cart.items ~> { $0.append("book") }
        #expect(computations.count == before + 1)
        #expect(values.values == [0, 1])
    }

    @Test func chainOfDerivedStatesComputesEachNodeOncePerChange() {
        let computations = Computations()
        let root = MonitoredState(0, key: uniqueKey("root"))
        var last = root.map { $0 }
        for _ in 0..<999 {
            last = last.map { value in
                computations.note()
                return value + 1
            }
        }
        let values = last.record()
        let before = computations.count
        root ~> 1
        #expect(computations.count - before == 999)
        #expect(values.values == [999, 1_000])
    }

    @Test func aDerivedStateWhoseInputsKeptTheirValuesDoesNotComputeAgain() {
        let computations = Computations()
        let a = MonitoredState(7, key: uniqueKey("a"))
        let parity = a.map { $0 % 2 }
        let text = DerivedState(parity) { parity in
            computations.note()
            return parity == 0 ? "even" : "odd"
        }
        let heard = text.record()
        let before = computations.count
        a ~> 9
        #expect(computations.count == before, "parity stayed 1: text must not compute")
        #expect(text.value == "odd")
        a ~> 10
        #expect(computations.count == before + 1)
        #expect(heard.values == ["odd", "even"])
    }

    @Test func earlyCutoffHoldsAtEveryDepthOfAChain() {
        let bComputations = Computations()
        let cComputations = Computations()
        let dComputations = Computations()
        let a = MonitoredState(11, key: uniqueKey("a"))
        let b = DerivedState(a) { a in
            bComputations.note()
            return a / 10
        }
        let c = DerivedState(b) { b in
            cComputations.note()
            return b * 2
        }
        let d = DerivedState(c) { c in
            dComputations.note()
            return c + 1
        }
        let heard = d.record()
        let (b0, c0, d0) = (bComputations.count, cComputations.count, dComputations.count)
        for value in 12...19 { a ~> value }
        #expect(bComputations.count - b0 == 8)
        #expect(cComputations.count == c0)
        #expect(dComputations.count == d0)
        a ~> 20
        #expect(cComputations.count == c0 + 1)
        #expect(dComputations.count == d0 + 1)
        #expect(heard.values == [3, 5])
        #expect(d.value == 5)
    }

    @Test func earlyCutoffWithoutSubscribersComputesNothingWhenRead() {
        let computations = Computations()
        let a = MonitoredState(1, key: uniqueKey("a"))
        let sign = a.map { $0 > 0 }
        let label = DerivedState(sign) { isPositive in
            computations.note()
            return isPositive ? "+" : "-"
        }
        #expect(label.value == "+")
        let before = computations.count
        for value in 2...50 { a ~> value }
        #expect(label.value == "+")
        #expect(computations.count == before)
    }

    @Test func aDiamondWithEarlyCutoffStaysGlitchFreeUnderWriters() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let tens = a.map { $0 / 10 }
        let doubledTens = a.map { ($0 / 10) * 2 }
        let check = DerivedState(tens, doubledTens) { tens, doubled in doubled == tens * 2 }
        let heard = check.record()
        await onThreads(2) { _ in
            for _ in 0..<2_000 { a.modify { $0 += 1 } }
        }
        await waitUntilDelivered(a)
        #expect(check.value)
        #expect(heard.values.allSatisfy { $0 })
        #expect(tens.value == 400)
    }

    @Test func projectionsOfADerivedStateNotifyOnlyForTheirPart() {
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let totals = DerivedState(cart.items, cart.coupon) { items, coupon in
            Totals(count: items.count, label: coupon.isEmpty ? "none" : coupon)
        }
        let counts = totals.count.record()
        let labels = totals.observe(\.label).record()
        cart.coupon ~> "SPRING"
        cart.items ~> { $0.append("book") }
        #expect(counts.values == [0, 1])
        #expect(labels.values == ["none", "SPRING"])
        #expect(totals.count.value == 1)
        #expect(totals.count.key == totals.key + ".count")
    }

    @Test func mapWorksOnContainersProjectionsAndDerivedStates() {
        let cart = MonitoredState(Cart(), key: uniqueKey("cart"))
        let fromContainer = cart.map { $0.items.count }
        let fromProjection = cart.items.map { $0.count }
        let fromDerived = fromContainer.map { $0 * 100 }
        cart.items ~> ["a", "b"]
        #expect(fromContainer.value == 2)
        #expect(fromProjection.value == 2)
        #expect(fromDerived.value == 200)
    }

    @Test func valuesSequenceStartsWithTheCurrentValue() async {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let tripled = a.map { $0 * 3 }
        var iterator = tripled.values(buffering: .unbounded).makeAsyncIterator()
        a ~> 2
        #expect(await iterator.next() == 3)
        #expect(await iterator.next() == 6)
    }

    @Test func observationFiresWhenTheDerivedValueChanges() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        let subscription = doubled.subscribe { _ in }
        let probe = TrackingProbe<Int>()
        probe.trackContinuously { doubled.value }
        a ~> 2
        a ~> 3
        #expect(probe.firings == [4, 6])
        subscription.cancel()
    }

    @Test func observationFiresWithoutSubscribersToo() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        let probe = TrackingProbe<Int>()
        probe.trackOnce { doubled.value }
        a ~> 5
        #expect(probe.firings == [10])
    }

    @Test func readInsideATransactionSeesTheBodysWritesWithoutKeepingThem() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        struct Undo: Error {}
        let seen = Collector<Int>()
        #expect(throws: Undo.self) {
            try withStateTransaction {
                a.modify(10)
                seen.append(doubled.value)
                throw Undo()
            }
        }
        #expect(seen.all == [20])
        #expect(doubled.value == 2)
        #expect(doubled.version == 0)
    }

    @Test func holdingADerivedStateKeepsItsSourcesAlive() {
        weak var weakSource: MonitoredState<Int>?
        var derived: DerivedState<Int>?
        do {
            let source = MonitoredState(7, key: uniqueKey("source"))
            weakSource = source
            derived = source.map { $0 + 1 }
        }
        #expect(weakSource != nil)
        #expect(derived?.value == 8)
        derived = nil
        #expect(weakSource == nil)
    }

    @Test func sourcesKeepNothingOfAReleasedDerivedState() {
        let a = MonitoredState(Cart(), key: uniqueKey("a"))
        weak var weakDerived: DerivedState<Int>?
        do {
            let derived = DerivedState(a, a.items) { $0.coupon.count + $1.count }
            let subscription = derived.subscribe { _ in }
            weakDerived = derived
            #expect(a.subscriberCount == 2)
            subscription.cancel()
        }
        #expect(weakDerived == nil)
        #expect(a.subscriberCount == 0)
    }

    @Test func aLiveSubscriptionKeepsTheDerivedStateAlive() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let seen = Collector<Int>()
        let subscription = a.map { $0 * 2 }.subscribe { seen.append($0) }
        a ~> 2
        #expect(seen.all == [2, 4])
        subscription.cancel()
        a ~> 3
        #expect(seen.all == [2, 4])
        #expect(a.subscriberCount == 0)
    }

    @Test func handlersMayReadTheDerivedStateAndWriteItsSources() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        let seen = Collector<Int>()
        let subscription = doubled.subscribe { value in
            seen.append(doubled.value)
            if value < 6 { a.modify { $0 += 1 } }
        }
        #expect(seen.all == [0, 2, 4, 6])
        #expect(doubled.value == 6)
        subscription.cancel()
    }

    @Test func queueSubscribersGetEveryNewValueInOrder() async throws {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let squared = a.map { $0 * $0 }
        let queue = DispatchQueue(label: "derived.test")
        let seen = Collector<Int>()
        let subscription = squared.subscribe(on: queue) { seen.append($0) }
        for next in 1...5 { a ~> next }
        queue.sync {}
        #expect(seen.all == [0, 1, 4, 9, 16, 25])
        subscription.cancel()
    }

    @Test func handlerOfASourcePublishedDuringAComputationMayReadTheComputedState() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let held = HeldDelivery()
        // Registered before `b` exists, so it runs before `b` hears of the change.
        let blocker = a.subscribe { value in if value == 1 { held.hold() } }
        let b = a.map { $0 + 100 }
        let c = b.map { $0 * 2 }
        let seenByB = Collector<Int>()
        let bWatcher = b.subscribe { _ in seenByB.append(c.value) }
        let writer = Thread { a.modify(1) }
        writer.start()
        let readOnTime = await awayFromThePool { () -> Int? in
            held.waitUntilHeld()
            // `b` is stale: reading `c` computes `b` here, and `b`'s subscriber reads `c`.
            let done = DispatchSemaphore(value: 0)
            let result = Collector<Int>()
            Thread {
                result.append(c.value)
                done.signal()
            }.start()
            let finished = done.wait(timeout: .now() + 5) == .success
            held.release()
            return finished ? result.all.first : nil
        }
        #expect(readOnTime == 202)
        await waitUntilDelivered(a)
        #expect(seenByB.all.last == 202)
        withExtendedLifetime((blocker, bWatcher)) {}
    }

    @Test func cycleThroughADerivedStateIsCutWithADiagnostic() async {
        DiagnosticsRecorder.start()
        let a = MonitoredState(0, key: uniqueKey("a"))
        let doubled = a.map { $0 * 2 }
        let feedback = doubled.subscribe { value in if value > 0 { a.modify { $0 += 1 } } }
        await onThreads(1, stackSize: 256 * 1024) { _ in a.modify(1) }
        await waitUntilDelivered(a)
        #expect(a.value > StateDiagnostics.maximumChainDepth / 2)
        let reports = DiagnosticsRecorder.diagnostics(involving: a.key)
        #expect(reports.map(\.kind) == [.cycle])
        #expect(reports.first?.keys.contains(doubled.key) == true)
        feedback.cancel()
        a.modify(-5)
        #expect(doubled.value == -10)
    }

    @Test func concurrentTransfersNeverShowAMixedSum() async {
        let a = MonitoredState(1_000, key: uniqueKey("a"))
        let b = MonitoredState(1_000, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { $0 + $1 }
        let difference = DerivedState(a.map { $0 }, b.map { -$0 }) { $0 + $1 }
        let broken = Collector<Int>()
        let subscriptions = [
            sum.subscribe { if $0 != 2_000 { broken.append($0) } },
            difference.subscribe { if !$0.isMultiple(of: 2) { broken.append($0) } },
        ]
        await onThreads(4) { index in
            for step in 0..<2_000 {
                if index == 3 {
                    if sum.value != 2_000 { broken.append(sum.value) }
                    continue
                }
                withStateTransaction {
                    let amount = step.isMultiple(of: 2) ? 1 : -1
                    a.modify { $0 -= amount }
                    b.modify { $0 += amount }
                }
            }
        }
        await waitUntilDelivered(a)
        await waitUntilDelivered(b)
        await waitUntilDelivered(sum.node.storage)
        #expect(broken.all == [])
        #expect(sum.value == 2_000)
        #expect(difference.value == a.value - b.value)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func concurrentWritersDeliverIncreasingVersionsEndingOnTheCurrentValue() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let sum = DerivedState(a, b) { $0 + $1 }
        let changes = Collector<StateChange<Int>>()
        let subscription = sum.subscribeChanges { changes.append($0) }
        await onThreads(4) { index in
            for _ in 0..<2_000 {
                (index.isMultiple(of: 2) ? a : b).modify { $0 += 1 }
            }
        }
        await waitUntilDelivered(a)
        await waitUntilDelivered(b)
        await waitUntilDelivered(sum.node.storage)
        let versions = changes.all.map(\.version)
        #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 })
        #expect(changes.all.last?.newValue == 8_000)
        #expect(sum.value == 8_000)
        #expect(sum.version == versions.last)
        subscription.cancel()
    }
}
