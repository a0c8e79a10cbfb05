import Foundation
import Synchronization
import Testing

// `@testable` to check the projection bookkeeping a container keeps (and drops).
@testable import StateKit

struct User: Equatable, Sendable {
    var name: String
    var age: Int
}

struct AppModel: Equatable, Sendable {
    var user = User(name: "Ann", age: 30)
    var launches = 0
    var scores = [Int](repeating: 0, count: 1_000)

    /// A computed (read-only) part.
    var isAdult: Bool { user.age >= 18 }
}

/// Counts evaluations of a computed property across the process.
let evaluations = Atomic<Int>(0)

struct Counted: Equatable, Sendable {
    var raw = 0
    var observedPart: Int {
        evaluations.add(1, ordering: .relaxed)
        return raw
    }
}

@Suite struct ObservedTests {
    @Test func projectionNotifiesOnlyWhenItsOwnPartChanges() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let names = Collector<String>()
        let subscription = app.user.name.subscribe { names.append($0) }
        app.launches.modify { $0 += 1 }
        app.user.age ~> 31
        app.user.name ~> "Ann"
        app.modify { $0.user.name = "Ann" }
        #expect(names.all == ["Ann"])
        app.user.name ~> "Bob"
        #expect(names.all == ["Ann", "Bob"])
        subscription.cancel()
    }

    @Test func thousandProjectionsOnDistinctPathsOnlyChangedOneIsCalled() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let calls = Collector<Int>()
        let subscriptions = (0..<1_000).map { index in
            app.observe(\.scores[index]).subscribe { _ in calls.append(index) }
        }
        #expect(calls.count == 1_000)
        app.modify { $0.scores[500] += 1 }
        app.launches ~> 9
        #expect(calls.count == 1_001)
        #expect(calls.all.last == 500)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func projectionsOfOnePathShareOneEvaluationPerChange() {
        let state = MonitoredState(Counted(), key: uniqueKey())
        let subscriptions = (0..<1_000).map { _ in state.observedPart.subscribe { _ in } }
        let before = evaluations.load(ordering: .relaxed)
        state.modify { $0.raw += 1 }
        let perWrite = evaluations.load(ordering: .relaxed) - before
        // Other tests never touch `Counted`, so the only evaluations are this write's.
        #expect(perWrite == 1)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func nestedAndFlatProjectionsOfOnePathShareBookkeeping() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let nested = app.user.observe(\.name).subscribe { _ in }
        let flat = app.observe(\.user.name).subscribe { _ in }
        let member = app.user.name.subscribe { _ in }
        #expect(app.lock.withLock { app.projectionIndex.count } == 1)
        nested.cancel()
        flat.cancel()
        #expect(app.lock.withLock { app.projectionIndex.count } == 1)
        member.cancel()
        #expect(app.lock.withLock { app.projectionIndex.isEmpty && app.audience.projections.isEmpty })
    }

    @Test func writingThroughProjectionIsOneChangeOfTheRoot() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let roots = Collector<AppModel>()
        let subscription = app.subscribe { roots.append($0) }
        app.user.name ~> "Tim"
        #expect(app.version == 1)
        #expect(app.value.user.name == "Tim")
        #expect(roots.count == 2)
        app.user.name ~> "Tim"
        #expect(app.version == 1)
        app.user.age.modify { $0 += 1 }
        app.user ~> { $0.age += 1 }
        #expect(app.version == 3)
        #expect(app.value.user.age == 32)
        subscription.cancel()
    }

    @Test(.contendingTimeLimit) func projectionModifyIsAtomicUnderContention() async {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let age = app.user.age
        let seen = Collector<Int>()
        let subscription = age.subscribe { seen.append($0) }
        await onThreads(4) { _ in
            for _ in 0..<2_000 { age.modify { $0 += 1 } }
        }
        await waitUntilDelivered(app)
        #expect(app.value.user.age == 8_030)
        #expect(app.version == 8_000)
        #expect(seen.all == Array(30...8_030))
        subscription.cancel()
    }

    @Test func computedPathProjectionIsReadOnly() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let adult: Observed<Bool> = app.isAdult
        let name: Observed<String> = app.user.name
        #expect(!(adult is MutableObserved<Bool>))
        #expect(name is MutableObserved<String>)
        #expect(!(app.readOnly is MutableObserved<AppModel>))
        let flags = Collector<Bool>()
        let subscription = adult.subscribe { flags.append($0) }
        app.user.age ~> 40
        app.user.age ~> 10
        #expect(flags.all == [true, false])
        subscription.cancel()
    }

    @Test func readOnlyViewSeesEveryChangeOfTheContainer() {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        let view = app.readOnly
        let launches = Collector<Int>()
        let subscription = view.subscribe { launches.append($0.launches) }
        app.launches ~> 1
        app.modify { _ in }
        #expect(launches.all == [0, 1, 1])
        #expect(view.value == app.value)
        #expect(view.key == app.key)
        subscription.cancel()
    }

    @Test func projectionChangesCarryPartValuesAndRootVersion() {
        let key = uniqueKey()
        let app = MonitoredState(AppModel(), key: key)
        let changes = Collector<StateChange<String>>()
        let subscription = app.user.name.subscribeChanges { changes.append($0) }
        app.launches ~> 5
        app.user.name ~> "Eve"
        #expect(changes.all.count == 1)
        #expect(changes.all.first?.oldValue == "Ann")
        #expect(changes.all.first?.newValue == "Eve")
        #expect(changes.all.first?.version == 2)
        #expect(changes.all.first?.key == "\(key).user.name")
        #expect(app.user.name.key == "\(key).user.name")
        subscription.cancel()
    }

    @Test func heldProjectionKeepsRootAliveAndRootKeepsNothingOfIt() {
        weak var weakRoot: MonitoredState<AppModel>?
        var projection: Observed<String>?
        do {
            let app = MonitoredState(AppModel(), key: uniqueKey())
            weakRoot = app
            projection = app.user.name
        }
        #expect(weakRoot != nil)
        let subscription = projection?.subscribe { _ in }
        #expect(weakRoot?.lock.withLock { weakRoot?.projectionIndex.count } == 1)
        subscription?.cancel()
        #expect(weakRoot?.lock.withLock { weakRoot?.projectionIndex.isEmpty } == true)
        // A read gives the projection its Observation subscription, which it holds until released.
        #expect(projection?.value == "Ann")
        weak let weakProjection = projection
        projection = nil
        #expect(weakProjection == nil)
        #expect(weakRoot == nil)
    }

    @Test func projectionValuesSequenceStartsWithCurrentPart() async {
        let app = MonitoredState(AppModel(), key: uniqueKey())
        var iterator = app.user.name.values(buffering: .unbounded).makeAsyncIterator()
        #expect(await iterator.next() == "Ann")
        app.launches ~> 3
        app.user.name ~> "Zoe"
        #expect(await iterator.next() == "Zoe")
    }
}
