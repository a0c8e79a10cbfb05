import Foundation
import Synchronization
import Testing

@testable import StateKit

/// How threads count their open transactions: one thread owns a count of its own, which it
/// writes with plain stores; every other thread adds to the shared one.
@Suite struct OpenTransactionsTests {
    /// Runs `body` on a new thread and waits for what it returns.
    private func onNewThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let returned = DispatchSemaphore(value: 0)
        Thread {
            let value = body()
            result.withLock { $0 = value }
            returned.signal()
        }.start()
        waitFor(returned, "the thread's result")
        return result.withLock { $0! }
    }

    @Test func oneThreadAtATimeOwnsItsCountAndGivesItBackWithItsLog() {
        let counts = OpenTransactions()
        let firstOwns = onNewThread {
            let log = TransactionLog(isThreadsFirst: true, countedIn: counts)
            let second = onNewThread { TransactionLog(isThreadsFirst: true, countedIn: counts).ownsOwnersCount }
            let inner = TransactionLog(countedIn: counts).ownsOwnersCount
            return [log.ownsOwnersCount, second, inner]
        }
        // The first log owned it while it lived; a log made meanwhile on another thread, and a
        // log that is not its thread's first, did not.
        #expect(firstOwns == [true, false, false])
        // That log is gone, so the next thread's first log owns it.
        #expect(onNewThread { TransactionLog(isThreadsFirst: true, countedIn: counts).ownsOwnersCount })
    }

    @Test func eachThreadsOpenTransactionsAreCountedUntilTheyClose() {
        let counts = OpenTransactions()
        let owner = TransactionLog(isThreadsFirst: true, countedIn: counts)
        let other = TransactionLog(countedIn: counts)
        #expect(owner.ownsOwnersCount && !other.ownsOwnersCount)
        #expect(!counts.mayBeOpen)
        owner.open()
        #expect(counts.mayBeOpen)
        other.open()
        owner.close()
        #expect(counts.mayBeOpen)
        other.close()
        #expect(!counts.mayBeOpen)
        other.open()
        #expect(counts.mayBeOpen)
        other.close()
        #expect(!counts.mayBeOpen)
    }

    @Test(.contendingTimeLimit)
    func theOwnersTransactionsAndOthersStayApartUnderContention() async {
        // Whichever thread owns the shared count, these four do not all share its role: a
        // non-owner's transactions and the owner's (if one of them is) run side by side.
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let apart = Collector<[Int]>()
        let roles = Collector<Bool>()
        await onThreads(4) { index in
            for step in 1...5_000 {
                withStateTransaction {
                    a.modify { $0 += 1 }
                    b.modify { $0 += 1 }
                }
                if step == 1 {
                    roles.append(TransactionLog.unretainedOfThisThread._withUnsafeGuaranteedRef { $0.ownsOwnersCount })
                }
                let snapshot = withStateTransaction { [a.value, b.value] }
                if snapshot[0] != snapshot[1] { apart.append(snapshot) }
            }
        }
        #expect(apart.all == [])
        #expect(a.value == 20_000 && b.value == 20_000)
        #expect(roles.all.filter { $0 }.count <= 1)
    }
}
