import Dispatch
import Foundation
import Synchronization
import Testing

// `@testable` to check the element nodes a container keeps (and drops).
@testable import StateKit

/// An element that counts its comparisons, to tell which positions a change looked at.
struct CountedCell: Equatable, Sendable {
    var value: Int
    let comparisons: ComparisonCounter

    static func == (lhs: CountedCell, rhs: CountedCell) -> Bool {
        lhs.comparisons.count.add(1, ordering: .relaxed)
        return lhs.value == rhs.value
    }
}

final class ComparisonCounter: Sendable {
    let count = Atomic<Int>(0)
}

struct Board: Equatable, Sendable {
    var cells: [Int]
    var title = "board"
    var user = User(name: "Ann", age: 30)

    /// A computed part that depends on the cells.
    var total: Int { cells.reduce(0, +) }

    init(size: Int) {
        cells = [Int](repeating: 0, count: size)
    }
}

struct CountedBoard: Equatable, Sendable {
    var cells: [CountedCell]
    var other = 0
}

@Suite struct ElementProjectionTests {
    @Test func writeThroughOneOfTenThousandNotifiesExactlyThatOne() {
        let board = MonitoredState(Board(size: 10_000), key: uniqueKey())
        let cells = (0..<10_000).map { board.cells[$0] }
        let calls = Collector<(Int, Int)>()
        let subscriptions = cells.indices.map { index in cells[index].subscribe { calls.append((index, $0)) } }
        #expect(calls.count == 10_000)
        cells[4_321] ~> 7
        #expect(calls.count == 10_001)
        #expect(calls.all.last! == (4_321, 7))
        #expect(board.value.cells[4_321] == 7)
        #expect(cells[4_321].value == 7)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func writeThroughOneElementComparesOnlyThatPosition() {
        let counter = ComparisonCounter()
        let initial = CountedBoard(cells: (0..<10_000).map { CountedCell(value: $0, comparisons: counter) })
        let board = MonitoredState(initial, key: uniqueKey())
        let subscriptions = (0..<10_000).map { board.cells[$0].subscribe { _ in } }
        let before = counter.count.load(ordering: .relaxed)
        board.cells[17] ~> CountedCell(value: -1, comparisons: counter)
        // One comparison to skip an equal write, one for the projection of position 17.
        #expect(counter.count.load(ordering: .relaxed) - before == 2)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func wholeValueModifyNotifiesExactlyTheChangedElements() {
        let counter = ComparisonCounter()
        let initial = CountedBoard(cells: (0..<10_000).map { CountedCell(value: $0, comparisons: counter) })
        let board = MonitoredState(initial, key: uniqueKey())
        let calls = Collector<Int>()
        let subscriptions = (0..<10_000).map { index in board.cells[index].subscribe { _ in calls.append(index) } }
        let before = counter.count.load(ordering: .relaxed)
        board.modify {
            $0.cells[3].value += 1
            $0.cells[9_999].value += 1
            $0.other += 1
        }
        #expect(calls.all.dropFirst(10_000).sorted() == [3, 9_999])
        // Every position is compared once: the collection is read once for all of them.
        #expect(counter.count.load(ordering: .relaxed) - before == 10_000)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func equalWriteThroughAnElementChangesNothing() {
        let board = MonitoredState(Board(size: 10), key: uniqueKey())
        let calls = Collector<Int>()
        let subscription = board.cells[2].subscribe { calls.append($0) }
        let whole = board.subscribe { _ in calls.append(-1) }
        let version = board.version
        board.cells[2] ~> 0
        board.cells[2].modify(0)
        #expect(board.version == version)
        #expect(calls.all == [0, -1])
        subscription.cancel()
        whole.cancel()
    }

    @Test func writeThroughAnElementReachesEveryProjectionThatSeesIt() {
        let board = MonitoredState(Board(size: 100), key: uniqueKey())
        let seen = Collector<String>()
        let subscriptions = [
            board.cells[5].subscribe { seen.append("element \($0)") },
            board.observe(\.cells[5]).subscribe { seen.append("key path \($0)") },
            board.cells.subscribe { seen.append("cells \($0[5])") },
            board.total.subscribe { seen.append("total \($0)") },
            board.cells.count.subscribe { seen.append("count \($0)") },
            board.title.subscribe { seen.append("title \($0)") },
            board.cells[6].subscribe { seen.append("neighbour \($0)") },
        ]
        let initial = seen.count
        board.cells[5] ~> 9
        #expect(Set(seen.all.dropFirst(initial)) == ["element 9", "key path 9", "cells 9", "total 9"])
        #expect(seen.count == initial + 4)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func writeThroughAStoredPathReachesEveryProjectionThatSeesIt() {
        let board = MonitoredState(Board(size: 10), key: uniqueKey())
        let seen = Collector<String>()
        let subscriptions = [
            board.user.name.subscribe { seen.append("name \($0)") },
            board.user.subscribe { seen.append("user \($0.name)") },
            board.title.subscribe { seen.append("title \($0)") },
            board.cells[0].subscribe { seen.append("cell \($0)") },
        ]
        let initial = seen.count
        board.user.name ~> "Tim"
        #expect(Set(seen.all.dropFirst(initial)) == ["name Tim", "user Tim"])
        #expect(seen.count == initial + 2)
        subscriptions.forEach { $0.cancel() }
    }

    @Test func elementSubscribersSeeVersionOrderUnderConcurrentWriters() async {
        let board = MonitoredState(Board(size: 8), key: uniqueKey())
        let seen = (0..<8).map { _ in Collector<Int>() }
        let subscriptions = (0..<8).map { index in board.cells[index].subscribe { seen[index].append($0) } }
        let whole = Collector<Int>()
        let wholeSubscription = board.cells[0].subscribeChanges { whole.append(Int($0.version)) }
        await onThreads(8) { thread in
            let cell = board.cells[thread]
            for value in 1...500 {
                if value.isMultiple(of: 50) {
                    board.modify { $0.cells[thread] = value }
                } else {
                    cell ~> value
                }
            }
        }
        // Writes queued behind another thread's delivery may still be on their way.
        await waitUntilDelivered(board)
        for index in 0..<8 {
            let values = seen[index].all
            #expect(values.first == 0)
            #expect(values.last == 500)
            #expect(values == Array(0...500))
        }
        let versions = whole.all
        #expect(versions == versions.sorted())
        #expect(board.version == 8 * 500)
        subscriptions.forEach { $0.cancel() }
        wholeSubscription.cancel()
    }

    @Test func transactionThroughElementsIsSeenWhole() {
        let board = MonitoredState(Board(size: 10), key: uniqueKey())
        let changes = Collector<[Int]>()
        let elementCalls = Collector<Int>()
        let subscriptions = [
            board.subscribeChanges { changes.append($0.newValue.cells) },
            board.cells[1].subscribe { elementCalls.append($0) },
            board.cells[2].subscribe { elementCalls.append($0) },
        ]
        withStateTransaction {
            board.cells[1] ~> 5
            board.cells[2] ~> 6
            #expect(elementCalls.all == [0, 0])
        }
        #expect(changes.all.map { Array($0.prefix(3)) } == [[0, 5, 6]])
        #expect(elementCalls.all.sorted() == [0, 0, 5, 6])
        subscriptions.forEach { $0.cancel() }
    }

    @Test func aHandlerWritingThroughAnotherElementIsDeliveredAfter() {
        let board = MonitoredState(Board(size: 3), key: uniqueKey())
        let order = Collector<String>()
        let second = board.cells[1]
        let subscriptions = [
            board.cells[0].subscribe { value in
                order.append("first \(value)")
                if value == 1 { second ~> 2 }
                order.append("first done")
            },
            second.subscribe { order.append("second \($0)") },
        ]
        board.cells[0] ~> 1
        #expect(order.all == ["first 0", "first done", "second 0", "first 1", "first done", "second 2"])
        subscriptions.forEach { $0.cancel() }
    }

    @Test func derivedStateOfAnElementFollowsIt() {
        let board = MonitoredState(Board(size: 4), key: uniqueKey())
        let doubled = board.cells[3].map { $0 * 2 }
        let values = Collector<Int>()
        let subscription = doubled.subscribe { values.append($0) }
        board.cells[3] ~> 4
        board.cells[2] ~> 5
        #expect(values.all == [0, 8])
        subscription.cancel()
    }

    @Test func cancellingTheLastElementSubscriptionDropsItsNode() {
        let board = MonitoredState(Board(size: 10), key: uniqueKey())
        let subscriptions = (0..<10).map { board.cells[$0 % 5].subscribe { _ in } }
        #expect(board.lock.withLock { board.fields.pointee.elementNodes.count } == 1)
        #expect(board.lock.withLock { board.audience.projections.count } == 1)
        subscriptions.forEach { $0.cancel() }
        #expect(board.lock.withLock { board.fields.pointee.elementNodes.count } == 0)
        #expect(board.lock.withLock { board.audience.projections.count } == 0)
    }

    @Test func elementSubscriptionsKeepNeitherTheContainerNorTheirNode() {
        let released = ReleaseCounter()
        weak var weakBoard: MonitoredState<Board>?
        weak var weakNode: ProjectionGroup<Board>?
        var subscriptions: [StateKit.Subscription] = []
        do {
            let board = MonitoredState(Board(size: 4), key: uniqueKey())
            weakBoard = board
            let kept = CountedRelease(released)
            subscriptions = (0..<4).map { index in
                board.cells[index].subscribe { _ in kept.touch() }
            }
            weakNode = board.lock.withLock { board.fields.pointee.elementNodes.values.first }
            #expect(weakNode != nil)
        }
        #expect(weakBoard == nil)
        #expect(weakNode == nil)
        subscriptions.forEach { $0.cancel() }
        subscriptions = []
        #expect(released.count.load(ordering: .acquiring) == 1)
    }
}
