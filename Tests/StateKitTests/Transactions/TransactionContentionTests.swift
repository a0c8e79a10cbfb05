import Foundation
import StateKit
import Synchronization
import Testing

/// Transactions under contention, on real threads.
@Suite struct TransactionContentionTests {
    /// Runs `work(index)` on `count` new threads at once and waits for all, for at most `limit`.
    private func onThreadsWithin(
        _ count: Int,
        limit: TimeInterval = 60,
        _ work: @escaping @Sendable (Int) -> Void
    ) async -> Bool {
        await contending {
            let group = DispatchGroup()
            for index in 0..<count {
                group.enter()
                Thread {
                    work(index)
                    group.leave()
                }.start()
            }
            return group.wait(timeout: .now() + limit) == .success
        }
    }

    @Test func concurrentTransfersLoseNothingAndSnapshotsSeeTheInvariant() async {
        let a = MonitoredState(10_000, key: uniqueKey("a"))
        let b = MonitoredState(10_000, key: uniqueKey("b"))
        let aVersions = Collector<UInt64>()
        let subscription = a.subscribeChanges { aVersions.append($0.version) }
        let brokenSnapshots = Collector<Int>()
        let snapshots = Atomic<Int>(0)
        let writersDone = Atomic<Int>(0)
        let finished = await onThreadsWithin(5) { index in
            guard index < 4 else {
                while writersDone.load(ordering: .acquiring) < 4 {
                    let (x, y) = withStateTransaction { (a.value, b.value) }
                    if x + y != 20_000 { brokenSnapshots.append(x + y) }
                    snapshots.add(1, ordering: .relaxed)
                }
                return
            }
            for step in 0..<5_000 {
                withStateTransaction {
                    if step.isMultiple(of: 2) {
                        a.modify { $0 -= 1 }
                        b.modify { $0 += 1 }
                    } else {
                        b.modify { $0 -= 1 }
                        a.modify { $0 += 1 }
                    }
                }
            }
            writersDone.add(1, ordering: .releasing)
        }
        await waitUntilDelivered(a)
        subscription.cancel()
        #expect(finished)
        #expect(brokenSnapshots.all == [])
        #expect(snapshots.load(ordering: .relaxed) > 0)
        // Each thread moved 2,500 units each way: every transaction counted, none lost.
        #expect(a.value == 10_000 && b.value == 10_000)
        // Each transaction moved one unit, so it changed both containers once.
        #expect(a.version == 20_000 && b.version == 20_000)
        #expect(aVersions.all == Array(1...20_000))
    }

    @Test func transactionsTouchingContainersInOppositeOrdersFinish() async {
        let containers = (0..<4).map { MonitoredState(0, key: uniqueKey("c\($0)")) }
        let finished = await onThreadsWithin(4, limit: 30) { index in
            let order = index.isMultiple(of: 2) ? containers : containers.reversed()
            for _ in 0..<2_000 {
                withStateTransaction {
                    for container in order { container.modify { $0 += 1 } }
                }
            }
        }
        #expect(finished)
        #expect(containers.map(\.value) == [8_000, 8_000, 8_000, 8_000])
        #expect(containers.map(\.version) == [8_000, 8_000, 8_000, 8_000])
    }

    @Test func plainWritesRacingTransactionsLoseNothing() async {
        let a = State(0, key: uniqueKey("a"))
        let b = State(0, key: uniqueKey("b"))
        let finished = await onThreadsWithin(4) { index in
            for _ in 0..<3_000 {
                if index < 2 {
                    withStateTransaction {
                        a.modify { $0 += 1 }
                        b.modify { $0 += 1 }
                    }
                } else {
                    a.modify { $0 += 1 }
                }
            }
        }
        #expect(finished)
        #expect(a.value == 12_000)
        #expect(b.value == 6_000)
    }

    @Test func handlersWritingInsideTransactionsOnManyThreadsFinish() async {
        let source = MonitoredState(0, key: uniqueKey("source"))
        let mirror = MonitoredState(0, key: uniqueKey("mirror"))
        let subscription = source.subscribe { value in
            withStateTransaction { mirror.modify { $0 = max($0, value) } }
        }
        let finished = await onThreadsWithin(4) { _ in
            for _ in 0..<2_000 {
                withStateTransaction { source.modify { $0 += 1 } }
            }
        }
        await waitUntilDelivered(source)
        await waitUntilDelivered(mirror)
        subscription.cancel()
        #expect(finished)
        #expect(source.value == 8_000)
        #expect(mirror.value == 8_000)
    }
}
