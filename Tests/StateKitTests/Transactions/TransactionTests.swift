import Foundation
import StateKit
import StateKitTesting
import Testing

private struct Refused: Error, Equatable {}

@Suite struct TransactionTests {
    @Test func readsInsideSeeTheBodysOwnWrites() {
        let a = State(1, key: uniqueKey("a"))
        let seen = withStateTransaction {
            a.modify { $0 += 1 }
            let afterModify = a.value
            a.modify(10)
            return [afterModify, a.value]
        }
        #expect(seen == [2, 10])
        #expect(a.value == 10)
    }

    @Test func otherThreadsSeeNothingUntilTheBodyReturns() {
        let a = State(0, key: uniqueKey("a"))
        let seenOutside = withStateTransaction {
            a.modify(5)
            return readOnAnotherThread { a.value }
        }
        #expect(seenOutside == 0)
        #expect(a.value == 5)
    }

    @Test func eachChangedContainerGetsOneChangeAfterTheBody() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState("", key: uniqueKey("b"))
        let untouched = MonitoredState(0, key: uniqueKey("c"))
        let aValues = a.record()
        let bValues = b.record()
        let cValues = untouched.record()
        withStateTransaction {
            a.modify { $0 += 1 }
            a.modify { $0 += 1 }
            b.modify("x")
            b.modify("xy")
            #expect(aValues.values == [0])
            _ = untouched.value
        }
        #expect(aValues.values == [0, 2])
        #expect(bValues.values == ["", "xy"])
        #expect(cValues.values == [0])
        #expect(a.version == 1)
        #expect(b.version == 1)
        #expect(untouched.version == 0)
    }

    @Test func aHandlerReadingAnotherContainerOfTheTransactionSeesItsNewValue() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let seenFromA = Collector<Int>()
        let seenFromB = Collector<Int>()
        let subscriptions = [
            a.subscribe { _ in seenFromA.append(b.value) },
            b.subscribe { _ in seenFromB.append(a.value) },
        ]
        withStateTransaction {
            a.modify(1)
            b.modify(2)
        }
        #expect(seenFromA.all == [0, 2])
        #expect(seenFromB.all == [0, 1])
        subscriptions.forEach { $0.cancel() }
    }

    @Test func aHandlerWritingAfterTheCommitWritesForReal() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let echo = MonitoredState(0, key: uniqueKey("echo"))
        let subscription = a.subscribe { echo.modify($0 * 10) }
        withStateTransaction { a.modify(4) }
        #expect(echo.value == 40)
        #expect(echo.version == 1)
        subscription.cancel()
    }

    @Test func containerEqualAtTheEndToItsStartIsNotChanged() {
        let a = MonitoredState(3, key: uniqueKey("a"))
        let values = a.record()
        withStateTransaction {
            a.modify(4)
            a.modify(3)
        }
        #expect(a.version == 0)
        #expect(values.values == [3])
    }

    @Test func throwingBodyUndoesEveryWriteAndNotifiesNobody() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = MonitoredState(2, key: uniqueKey("b"))
        let aValues = a.record()
        let bValues = b.record()
        #expect(throws: Refused.self) {
            try withStateTransaction {
                a.modify(10)
                b.modify { $0 += 10 }
                throw Refused()
            }
        }
        #expect(a.value == 1 && b.value == 2)
        #expect(a.version == 0 && b.version == 0)
        #expect(aValues.values == [1] && bValues.values == [2])
    }

    @Test func validatorRejectionThroughSetOrUpdateUndoesTheTransaction() {
        let positive = MonitoredState(1, key: uniqueKey("positive")) { _, proposed in
            if proposed < 0 { throw Refused() }
        }
        let other = MonitoredState(0, key: uniqueKey("other"))
        let error = #expect(throws: RejectedWriteError.self) {
            try withStateTransaction {
                other.modify(7)
                try positive.set(5)
                try positive.update { $0 -= 10 }
            }
        }
        #expect(error?.key == positive.key)
        #expect(positive.value == 1 && positive.version == 0)
        #expect(other.value == 0 && other.version == 0)
        #expect(throws: RejectedWriteError.self) {
            try withStateTransaction { try positive.set(-1) }
        }
        #expect(positive.value == 1 && positive.version == 0)
    }

    @Test func validatorSeesTheTransactionsWorkingValue() throws {
        let increasing = MonitoredState(0, key: uniqueKey("increasing")) { current, proposed in
            if proposed <= current { throw Refused() }
        }
        try withStateTransaction {
            try increasing.set(5)
            #expect(throws: RejectedWriteError.self) { try increasing.set(3) }
            try increasing.set(6)
        }
        #expect(increasing.value == 6)
        #expect(increasing.version == 1)
    }

    @Test func nestedTransactionJoinsTheOutermost() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let values = a.record()
        withStateTransaction {
            a.modify(1)
            withStateTransaction { a.modify { $0 += 1 } }
            #expect(a.value == 2)
            #expect(values.values == [0])
        }
        #expect(values.values == [0, 2])
        #expect(a.version == 1)
    }

    @Test func innerErrorCaughtByTheOuterBodyUndoesOnlyTheInnerWrites() {
        let a = State(0, key: uniqueKey("a"))
        let b = State(0, key: uniqueKey("b"))
        withStateTransaction {
            a.modify(1)
            do {
                try withStateTransaction {
                    a.modify(2)
                    b.modify(2)
                    throw Refused()
                }
            } catch {}
            #expect(a.value == 1)
            #expect(b.value == 0)
            b.modify { $0 += 5 }
        }
        #expect(a.value == 1 && b.value == 5)
        #expect(a.version == 1 && b.version == 1)
    }

    /// Past a few containers the log keeps an index; reads, writes and a nested body's undo must
    /// find every container's own entry through it.
    @Test func aTransactionOverManyContainersFindsEachOnesEntry() {
        let containers = (0..<40).map { MonitoredState($0, key: uniqueKey("c\($0)")) }
        let changes = containers.map { $0.record() }
        withStateTransaction {
            for container in containers { container.modify { $0 += 100 } }
            do {
                try withStateTransaction {
                    for container in containers.reversed() { container.modify { $0 += 1 } }
                    let late = MonitoredState(0, key: uniqueKey("late"))
                    late.modify(1)
                    throw Refused()
                }
            } catch {}
            for container in containers { container.modify { $0 *= 2 } }
            #expect(containers.map(\.value) == (0..<40).map { ($0 + 100) * 2 })
        }
        #expect(containers.map(\.value) == (0..<40).map { ($0 + 100) * 2 })
        #expect(containers.allSatisfy { $0.version == 1 })
        #expect(changes.map(\.values.count) == Array(repeating: 2, count: 40))
    }

    /// A body may read the container it is modifying: inside a transaction that reads the working
    /// copy (outside one, `modify`'s body runs under the container's lock).
    @Test func aModifyBodyMayReadItsOwnContainerInsideATransaction() {
        let a = State(1, key: uniqueKey("a"))
        withStateTransaction {
            a.modify { $0 = a.value + 10 }
            a.modify { $0 = a.value * 2 }
        }
        #expect(a.value == 22)
        #expect(a.version == 1)
    }

    @Test func readOnlyTransactionIsASnapshotAndChangesNothing() {
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = MonitoredState(2, key: uniqueKey("b"))
        let values = a.record()
        let pair = withStateTransaction { (a.value, b.value) }
        #expect(pair == (1, 2))
        #expect(a.version == 0 && b.version == 0)
        #expect(values.values == [1])
    }

    @Test func plainAndNonEquatableValuesCommit() {
        final class Box {}
        let boxes = State<[Box]>([], key: uniqueKey("boxes"))
        withStateTransaction { boxes.modify { $0.append(Box()) } }
        #expect(boxes.value.count == 1)
        #expect(boxes.version == 1)
    }

    @Test func persistedContainerSavesTheTransactionsResultNotItsSteps() throws {
        let storage = SaveLoggingStorage()
        let key = uniqueKey("persisted")
        let score = PersistedState(0, key: key, storage: storage)
        let changes = score.record()
        withStateTransaction {
            for step in 1...50 { score.modify(step) }
        }
        score.flush()
        #expect(changes.values == [0, 50])
        #expect(storage.saved == [Data("50".utf8)])
    }

    @Test func didModifyHookRunsOncePerTransaction() {
        let hook = CountingHookState(0, key: uniqueKey("hook"))
        withStateTransaction {
            hook.modify(1)
            hook.modify(2)
        }
        #expect(hook.calls.all == [2])
    }
}

/// What `read` returns on a new thread (not `DispatchQueue.sync`, which runs on the caller's).
private func readOnAnotherThread<Value: Sendable>(_ read: @escaping @Sendable () -> Value) -> Value {
    let result = Collector<Value>()
    let done = DispatchSemaphore(value: 0)
    Thread {
        result.append(read())
        done.signal()
    }.start()
    done.wait()
    return result.all[0]
}

private final class CountingHookState: State<Int>, @unchecked Sendable {
    let calls = Collector<Int>()
    override func didModify() { calls.append(value) }
}

/// Storage that remembers every save.
private final class SaveLoggingStorage: StateStorage, @unchecked Sendable {
    private let lock = NSLock()
    private var saves: [Data] = []
    var location: String { "memory://counting" }
    var saved: [Data] { lock.withLock { saves } }
    func load(forKey key: String) throws -> Data? { nil }
    func save(_ data: Data, forKey key: String) throws { lock.withLock { saves.append(data) } }
    func remove(forKey key: String) throws {}
}

@Suite struct TransactionAnnouncementTests {
    final class Counter: @unchecked Sendable {
        var count = 0
    }

    @Test func didModifyInsideATransactionIsOneChangeAtTheCommit() {
        let counter = MonitoredState(Counter(), key: uniqueKey("counter"))
        let versions = counter.recordChanges()
        withStateTransaction {
            counter.value.count += 1
            counter.didModify()
            counter.didModify()
        }
        #expect(counter.version == 1)
        #expect(versions.values.map(\.version) == [1])
        #expect(counter.value.count == 1)
    }

    @Test func projectionReadsInsideATransactionSeeItsWrites() {
        struct Profile: Equatable, Sendable {
            var name: String
        }
        let profile = MonitoredState(Profile(name: "Ann"), key: uniqueKey("profile"))
        let seen = withStateTransaction {
            profile.name.modify("Tim")
            return profile.name.value
        }
        #expect(seen == "Tim")
        #expect(profile.version == 1)
    }
}
