import Dispatch
import Foundation
import Synchronization
import Testing

@testable import StateKit

/// Lifetimes end visibly: subscriptions, async sequences and listeners (issue: the dispatcher as
/// a state machine, point 4), and listener cycles are cut like subscriber cycles.
@Suite struct LifetimeTests {
    @Test func subscriptionOfAReleasedContainerIsNotActive() {
        var state: MonitoredState<Int>? = MonitoredState(0, key: uniqueKey())
        let subscription = state!.subscribe { _ in }
        let projected = state!.observe(\.self).subscribe { _ in }
        #expect(subscription.isActive)
        #expect(projected.isActive)
        state = nil
        #expect(!subscription.isActive)
        #expect(!projected.isActive)
    }

    /// A cancel on one thread while the container is released on another: the cancel either
    /// finds the container whole (it cannot finish going away meanwhile) or finds it gone, never
    /// half gone.
    @Test(.contendingTimeLimit) func cancellingWhileTheContainerIsReleasedElsewhere() async {
        let stillActive = await contending {
            (0..<2_000).reduce(0) { stillActive, round in
                let holder = ReleasedElsewhere(MonitoredState(0, key: uniqueKey()))
                let tokens = [
                    holder.state!.subscribe { _ in },
                    holder.state!.observe(\.self).subscribe { _ in },
                    holder.state!.subscribeChanges { _ in },
                ]
                return stillActive + holder.releaseWhileCancelling(tokens, reversed: round.isMultiple(of: 2))
            }
        }
        #expect(stillActive == 0)
    }

    /// The same for a container that shares its key's cell: the one released ends its own
    /// subscriptions under the cell's lock, which a cancel on the other thread may hold; and when
    /// it is the cell's last container, the cell goes with it.
    @Test(.contendingTimeLimit) func cancellingWhileACellsContainerIsReleasedElsewhere() async {
        let stillActive = await contending {
            let storage = InMemoryStateStorage()
            let key = uniqueKey()
            return (0..<2_000).reduce(0) { stillActive, round in
                let kept = round.isMultiple(of: 3) ? nil : PersistedState(0, key: key, storage: storage)
                let holder = ReleasedElsewhere(PersistedState(0, key: key, storage: storage))
                let tokens = [holder.state!.subscribe { _ in }, holder.state!.observe(\.self).subscribe { _ in }]
                let active = holder.releaseWhileCancelling(tokens, reversed: round.isMultiple(of: 2))
                kept?.modify(round)
                return stillActive + active
            }
        }
        #expect(stillActive == 0)
    }

    /// Cancels from two threads leave nothing behind, for plain and projected subscribers alike,
    /// whichever kind of subscription was a container's first (the first subscribe installs the
    /// removal later cancels use, and two threads race to install it).
    @Test(.contendingTimeLimit) func cancelsFromTwoThreadsLeaveNoSubscriber() async {
        let left = await contending {
            (0..<500).reduce(0) { left, round in
                let state = MonitoredState(0, key: uniqueKey())
                DispatchQueue.concurrentPerform(iterations: 2) { thread in
                    for turn in 0..<20 {
                        let tokens =
                            (thread + round + turn).isMultiple(of: 2)
                            ? [state.subscribe { _ in }, state.observe(\.self).subscribe { _ in }]
                            : [state.observe(\.self).subscribe { _ in }, state.subscribeChanges { _ in }]
                        state.modify(turn)
                        for token in tokens { token.cancel() }
                    }
                }
                return left + state.subscriberCount
            }
        }
        #expect(left == 0)
    }

    /// `isActive` reads a token's subscriber while another thread's `cancel()` lets go of it: two
    /// threads read each token until it reads inactive while a third cancels them in order. No
    /// read touches a released subscriber, no token reads active again after reading inactive,
    /// and every handler's captures are released.
    @Test(.contendingTimeLimit) func isActiveWhileAnotherThreadCancels() async {
        let count = 20_000
        let outcome = await contending {
            let states = (0..<100).map { _ in MonitoredState(0, key: uniqueKey()) }
            let released = ReleaseCounter()
            let tokens = (0..<count).map { index in
                let captured = CountedRelease(released)
                return states[index % states.count].subscribe { _ in captured.touch() }
            }
            let reactivated = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: 3) { thread in
                guard thread > 0 else {
                    for token in tokens { token.cancel() }
                    return
                }
                for token in tokens {
                    while token.isActive {}
                    if token.isActive { reactivated.add(1, ordering: .relaxed) }
                }
            }
            return (
                reactivated.load(ordering: .relaxed), tokens.count { $0.isActive },
                released.count.load(ordering: .acquiring), states.reduce(0) { $0 + $1.subscriberCount }
            )
        }
        #expect(outcome.0 == 0)
        #expect(outcome.1 == 0)
        #expect(outcome.2 == count)
        #expect(outcome.3 == 0)
    }

    /// A `cancel()` does not release the subscriber while an `isActive` on another thread may be
    /// reading it: here a reader that counted itself and has not finished (as one preempted
    /// between its load and its read would be). The cancel ends once the reader does, and only
    /// then are the handler's captures released.
    @Test(.timeLimit(.minutes(1))) func cancelWaitsForAReaderOfTheSubscriber() {
        let state = MonitoredState(0, key: uniqueKey())
        let released = ReleaseCounter()
        let subscribe = { (captured: CountedRelease) in state.subscribe { _ in captured.touch() } }
        let token = subscribe(CountedRelease(released))
        #expect(token.beginReading() != nil)
        // The cancel takes the subscriber out of the container; it must go no further.
        let cancelled = startCancelling(token, of: state)
        #expect(cancelled.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        #expect(released.count.load(ordering: .acquiring) == 0)
        token.endReading()
        #expect(cancelled.wait(timeout: .now() + .seconds(30)) == .success)
        #expect(released.count.load(ordering: .acquiring) == 1)
    }

    @Test func cancelledSubscriptionIsNotActiveWhileItsContainerLives() {
        let state = MonitoredState(0, key: uniqueKey())
        let subscription = state.subscribe { _ in }
        subscription.cancel()
        #expect(!subscription.isActive)
        #expect(state.value == 0)
    }

    @Test func valuesIterationFinishesWhenItsContainerIsReleased() async {
        var state: MonitoredState<Int>? = MonitoredState(0, key: uniqueKey())
        let values = state!.values(buffering: .unbounded)
        let changes = state!.changes
        let seenValues = Task { await values.reduce(into: [Int]()) { $0.append($1) } }
        let seenVersions = Task { await changes.reduce(into: [UInt64]()) { $0.append($1.version) } }
        while state!.subscriberCount < 2 { await Task.yield() }  // both iterations have subscribed
        state!.modify(1)
        state!.modify(2)
        state = nil
        #expect(await seenValues.value.last == 2)
        #expect(await seenVersions.value == [1, 2])
    }

    @Test func valuesOfAContainerAlreadyGoneFinishAtOnce() async {
        var state: MonitoredState<Int>? = MonitoredState(0, key: uniqueKey())
        let values = state!.values
        state = nil
        var count = 0
        for await _ in values { count += 1 }
        #expect(count == 0)
    }

    @Test func detachedListenerIsNotToldOfLaterChanges() {
        let state = MonitoredState(0, key: uniqueKey())
        let listener = QueueListener()
        state.attach(listener: listener)
        state.modify(1)
        waitFor(listener.called, "the listener")
        state.detach(listener: listener)
        #expect(state.allListeners.isEmpty)
        state.modify(2)
        listener.stateListenerQueue.sync {}
        #expect(listener.calls.all == [state.key])
    }

    /// Copies its container's value, plus one, into another container, as the seed's listeners do.
    final class ForwardingListener: StateListener, @unchecked Sendable {
        let stateListenerQueue = DispatchQueue(label: "forwarding listener")
        let target: MonitoredState<Int>

        init(target: MonitoredState<Int>) {
            self.target = target
        }

        func stateModified<T>(_ state: State<T>) {
            guard let value = state.value as? Int, value > 0 else { return }
            target.modify(value + 1)
        }
    }

    @Test func listenersUpdatingEachOthersContainersAreStoppedWithDiagnosticNamingBoth() async throws {
        DiagnosticsRecorder.start()
        let ping = MonitoredState(0, key: uniqueKey("ping"))
        let pong = MonitoredState(0, key: uniqueKey("pong"))
        let toPong = ForwardingListener(target: pong)
        let toPing = ForwardingListener(target: ping)
        ping.attach(listener: toPong)
        pong.attach(listener: toPing)
        ping.modify(1)
        let deadline = ContinuousClock.now + .seconds(120)
        while DiagnosticsRecorder.diagnostics(involving: ping.key).isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let reports = DiagnosticsRecorder.diagnostics(involving: ping.key)
        #expect(reports.count == 1)
        #expect(reports.first?.kind == .cycle)
        #expect(reports.first?.keys.contains(pong.key) == true)
        #expect(ping.value + pong.value > StateDiagnostics.maximumChainDepth)
        toPong.stateListenerQueue.sync {}
        toPing.stateListenerQueue.sync {}
        let settled = ping.version + pong.version
        try await Task.sleep(for: .milliseconds(100))
        toPong.stateListenerQueue.sync {}
        toPing.stateListenerQueue.sync {}
        #expect(ping.version + pong.version == settled)
        ping.detach(listener: toPong)
        ping.modify(-1)
        #expect(ping.value == -1)
    }
}

/// A container that one thread releases while another cancels its subscriptions.
private final class ReleasedElsewhere: @unchecked Sendable {
    var state: MonitoredState<Int>?

    init(_ state: MonitoredState<Int>) {
        self.state = state
    }

    /// Releases the container on one thread while another cancels `tokens` (in reverse order if
    /// `reversed`), both started at once; returns how many tokens are still active after.
    func releaseWhileCancelling(_ tokens: [Subscription], reversed: Bool) -> Int {
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            start.wait()
            self.state = nil
        }
        DispatchQueue.global().async(group: done) {
            start.wait()
            for token in reversed ? tokens.reversed() : tokens { token.cancel() }
        }
        start.signal()
        start.signal()
        done.wait()
        return tokens.count { $0.isActive }
    }
}
