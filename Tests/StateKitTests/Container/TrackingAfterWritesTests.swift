import Dispatch
import Observation
import Synchronization
import Testing

@testable import StateKit

/// Tracking scopes installed after writes that nobody tracked still fire on the next write.
///
/// A write could skip the registrar when no read happened since the last write that called it,
/// were it not that `withObservationTracking` installs its observers only after its closure
/// returns, long after the read: a write can come between, find nothing installed, and the skip
/// would then leave the scope waiting for good. The contended test caught that (6 of 2,000 scopes).
@Suite struct TrackingAfterWritesTests {
    @Test func trackingAfterUntrackedWritesFiresOnTheNextWrite() {
        let state = MonitoredState(0, key: uniqueKey())
        let first = TrackingProbe<Int>()
        first.trackOnce { state.value }
        state.modify(1)
        for value in 2...4 { state.modify(value) }
        let second = TrackingProbe<Int>()
        second.trackOnce { state.value }
        state.modify { $0 += 1 }
        #expect(first.firings == [0])
        #expect(second.firings == [4])
    }

    @Test func aProjectionsTrackingAfterUntrackedChangesFires() {
        struct Profile: Equatable, Sendable { var name = "", visits = 0 }
        let state = MonitoredState(Profile(), key: uniqueKey())
        let name = state.observe(\.name)
        let first = TrackingProbe<String>()
        first.trackOnce { name.value }
        state.modify { $0.name = "a" }
        state.modify { $0.name = "b" }
        let second = TrackingProbe<String>()
        second.trackOnce { name.value }
        state.modify { $0.visits += 1 }
        state.modify { $0.name = "c" }
        #expect(first.firings == ["a"])
        #expect(second.firings == ["c"])
    }

    @Test func aDerivedStatesTrackingAfterUntrackedChangesFires() {
        let a = MonitoredState(1, key: uniqueKey())
        let b = MonitoredState(2, key: uniqueKey())
        let sum = DerivedState(a, b) { $0 + $1 }
        let first = TrackingProbe<Int>()
        first.trackOnce { sum.value }
        a.modify(10)
        b.modify(20)
        let second = TrackingProbe<Int>()
        second.trackOnce { sum.value }
        a.modify(100)
        #expect(first.firings == [12])
        #expect(second.firings == [120])
    }

    @Test func aTransactionsWriteAfterUntrackedOnesFires() {
        let state = MonitoredState(0, key: uniqueKey())
        let first = TrackingProbe<Int>()
        first.trackOnce { state.value }
        withStateTransaction { state.modify(1) }
        withStateTransaction { state.modify(2) }
        let second = TrackingProbe<Int>()
        second.trackOnce { state.value }
        withStateTransaction { state.modify(3) }
        #expect(first.firings.count == 1)
        #expect(second.firings.count == 1)
    }

    /// One thread writes without pause while another tracks a read, waits for its firing, and
    /// tracks again: a scope installed just after a write must be told by a later one.
    @Test(.contendingTimeLimit) func everyTrackingFiresWhileAnotherThreadWrites() async {
        let stuck = await contending {
            let state = MonitoredState(0, key: uniqueKey())
            let stop = StopFlag()
            let writer = DispatchGroup()
            DispatchQueue.global().async(group: writer) {
                while !stop.isSet.load(ordering: .relaxed) { state.modify { $0 += 1 } }
            }
            var stuck = 0
            for _ in 0..<2_000 {
                let fired = DispatchSemaphore(value: 0)
                withObservationTracking {
                    _ = state.value
                } onChange: {
                    fired.signal()
                }
                if fired.wait(timeout: .now() + 5) == .timedOut { stuck += 1 }
            }
            stop.isSet.store(true, ordering: .relaxed)
            writer.wait()
            return stuck
        }
        #expect(stuck == 0)
    }
}

private final class StopFlag: Sendable {
    let isSet = Atomic(false)
}
