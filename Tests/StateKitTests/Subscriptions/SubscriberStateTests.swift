import Dispatch
import Foundation
import Synchronization
import Testing

@testable import StateKit

/// A subscriber keeps its start version and flags in one word, and its token counts readers in
/// the low bits of the subscriber's address: the promises hold at the edges of both.
@Suite struct SubscriberStateTests {
    /// Versions at and around the largest a subscriber packs. Larger ones come only from records
    /// on disk (an outbox's last version), so they are set here directly.
    static let startVersions: [UInt64] = [
        5, SubscriptionEntry.largestPackedVersion - 1, SubscriptionEntry.largestPackedVersion,
        SubscriptionEntry.largestPackedVersion + 1, 1 << 62, UInt64.max - 8,
    ]

    /// Each kind of subscriber joined at `version` gets the value it joined with, then exactly
    /// the changes after it: a plain handler, a change handler, a projection's, one on a queue.
    @Test(arguments: startVersions) func aSubscriberGetsExactlyTheChangesAfterItJoined(version: UInt64) {
        let state = MonitoredState(0, key: uniqueKey())
        state.setVersionForTesting(version)
        let values = Collector<Int>()
        let changes = Collector<UInt64>()
        let projected = Collector<Int>()
        let queued = Collector<Int>()
        let queue = DispatchQueue(label: "SubscriberStateTests")
        let tokens = [
            state.subscribe { values.append($0) },
            state.subscribeChanges { changes.append($0.version) },
            state.observe(\.self).subscribe { projected.append($0) },
            state.subscribe(on: queue) { queued.append($0) },
        ]
        state.modify(1)
        state.modify(2)
        queue.sync {}
        #expect(values.all == [0, 1, 2])
        #expect(changes.all == [version + 1, version + 2])
        #expect(projected.all == [0, 1, 2])
        #expect(queued.all == [0, 1, 2])
        #expect(tokens.filter { !$0.isActive }.isEmpty)
        for token in tokens { token.cancel() }
        state.modify(3)
        queue.sync {}
        #expect(values.count == 3)
        #expect(changes.count == 2)
        #expect(projected.count == 3)
        #expect(queued.count == 3)
        #expect(tokens.filter { $0.isActive }.isEmpty)
    }

    /// A subscriber that joins while a change is queued is handed the value it joined with, not
    /// that change again (its start version is the change's), at every start version.
    @Test(arguments: startVersions) func aSubscriberJoiningBehindAQueuedChangeSkipsIt(version: UInt64) {
        let state = MonitoredState(0, key: uniqueKey())
        state.setVersionForTesting(version)
        let late = Collector<Int>()
        let lateChanges = Collector<Int>()
        let lateTokens = Collector<Subscription>()
        let first = state.subscribe { value in
            guard value == 1 else { return }
            state.modify(10)
            lateTokens.append(state.subscribe { late.append($0) })
            lateTokens.append(state.subscribeChanges { lateChanges.append($0.newValue) })
        }
        state.modify(1)
        state.modify(11)
        #expect(late.all == [10, 11])
        #expect(lateChanges.all == [11])
        #expect(lateTokens.all.filter { !$0.isActive }.isEmpty)
        withExtendedLifetime(first) {}
    }

    /// The token counts at most 7 readers of its subscriber in its spare bits: an eighth
    /// `isActive` waits for one of them rather than overflow into the address, and a `cancel()`
    /// waits for all of them before it releases the subscriber.
    @Test(.timeLimit(.minutes(1))) func anEighthReaderWaitsAndACancelWaitsForAllReaders() {
        let state = MonitoredState(0, key: uniqueKey())
        let released = ReleaseCounter()
        let subscribe = { (captured: CountedRelease) in state.subscribe { _ in captured.touch() } }
        let token = subscribe(CountedRelease(released))
        for _ in 0..<7 { #expect(token.beginReading() != nil) }
        let answered = DispatchSemaphore(value: 0)
        let answer = Atomic<Bool>(false)
        Thread {
            answer.store(token.isActive, ordering: .releasing)
            answered.signal()
        }.start()
        #expect(answered.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        token.endReading()
        #expect(answered.wait(timeout: .now() + .seconds(30)) == .success)
        let wasActive = answer.load(ordering: .acquiring)
        #expect(wasActive)
        let cancelled = startCancelling(token, of: state)
        #expect(!token.isActive)
        for _ in 0..<5 { token.endReading() }
        #expect(cancelled.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        #expect(released.count.load(ordering: .acquiring) == 0)
        token.endReading()
        #expect(cancelled.wait(timeout: .now() + .seconds(30)) == .success)
        #expect(released.count.load(ordering: .acquiring) == 1)
    }

    /// More threads than the token counts readers call `isActive` on the same tokens while one
    /// thread cancels them: no answer is `true` after the cancel returned, every token ends
    /// inactive, and every handler's captures are released once.
    @Test(.contendingTimeLimit) func manyReadersOfOneTokenWhileItIsCancelled() async {
        let count = 2_000
        let readers = 12
        let outcome = await contending {
            let state = MonitoredState(0, key: uniqueKey())
            let released = ReleaseCounter()
            let tokens = (0..<count).map { _ in
                let captured = CountedRelease(released)
                return state.subscribe { _ in captured.touch() }
            }
            let cancelledUpTo = Atomic<Int>(-1)
            let activeAfterCancel = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: readers + 1) { thread in
                guard thread > 0 else {
                    for (index, token) in tokens.enumerated() {
                        token.cancel()
                        cancelledUpTo.store(index, ordering: .releasing)
                    }
                    return
                }
                for (index, token) in tokens.enumerated() {
                    while true {
                        let wasCancelled = cancelledUpTo.load(ordering: .acquiring) >= index
                        let isActive = token.isActive
                        if wasCancelled && isActive { activeAfterCancel.add(1, ordering: .relaxed) }
                        if !isActive || wasCancelled { break }
                    }
                }
            }
            return (
                activeAfterCancel.load(ordering: .relaxed), tokens.count { $0.isActive },
                released.count.load(ordering: .acquiring), state.subscriberCount
            )
        }
        #expect(outcome.0 == 0)
        #expect(outcome.1 == 0)
        #expect(outcome.2 == count)
        #expect(outcome.3 == 0)
    }
}

extension MonitoredState {
    /// Sets the version, as a container opened on records that end at `version` would have it.
    func setVersionForTesting(_ version: UInt64) {
        lock.lock()
        storedVersion = version
        lock.unlock()
    }
}
