import Dispatch
import Foundation
import Synchronization
import Testing

@testable import StateKit

/// A deliverer reads the subscriber list without retaining it; a subscribe or cancel made while
/// it delivers, on its own thread or another, must neither change that list under it nor free
/// the subscribers in it, and what it replaced must still be released once the delivery ends.
/// Each test runs on a plain container, whose writes take the dispatcher's fast path, and on one
/// with a `didModify()` hook, whose writes go through its state machine.
@Suite struct AudienceChangeDuringDeliveryTests {
    private static func container(hooked: Bool) -> MonitoredState<Int> {
        hooked ? HookedCounter(0, key: uniqueKey()) : MonitoredState(0, key: uniqueKey())
    }

    /// A handler cancels a later subscriber and drops its token, and subscribes more than the
    /// list has room for: the cancelled one is not called, every other one is called once, the
    /// new ones start with the value after the change, and the cancelled handler's captures are
    /// released once the write returns.
    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func handlerCancelsALaterSubscriberAndSubscribesOthers(hooked: Bool) {
        let state = Self.container(hooked: hooked)
        let calls = Collector<String>()
        let tokens = LockedBox<[String: Subscription]>([:])
        let first = state.subscribe { value in
            calls.append("first \(value)")
            guard value == 1 else { return }
            tokens.withLock { tokens in
                tokens["third"] = nil
                for index in 0..<8 {
                    tokens["added \(index)"] = state.subscribe { calls.append("added \(index) \($0)") }
                }
            }
        }
        let second = state.subscribe { calls.append("second \($0)") }
        var captured: Captured? = Captured()
        weak let weakCaptured = captured
        tokens.withLock {
            $0["third"] = state.subscribe { [captured] value in calls.append("third \(value) \(captured!.name)") }
        }
        captured = nil
        let fourth = state.subscribe { calls.append("fourth \($0)") }
        state.modify(1)
        #expect(weakCaptured == nil)
        let added = (0..<8).map { "added \($0) 1" }
        #expect(
            calls.all == ["first 0", "second 0", "third 0 captured", "fourth 0", "first 1", "second 1", "fourth 1"]
                + added)
        #expect(state.subscriberCount == 11)
        withExtendedLifetime((first, second, fourth, tokens)) {}
    }

    /// One thread writes while another subscribes and cancels as fast as it can: the subscribers
    /// that stay get the first value and every change, in order; none of the churned handlers' captures outlive the
    /// run; and the audience is back to the subscribers that stay.
    @Test(.contendingTimeLimit, arguments: [false, true])
    func churnWhileAnotherThreadDelivers(hooked: Bool) async {
        let writes = 10_000
        let churns = 10_000
        let outcome = await contending {
            let state = Self.container(hooked: hooked)
            let seen = (0..<3).map { _ in Collector<Int>() }
            let tokens = seen.enumerated().map { index, seen in
                index == 1
                    ? state.observe(\.self).subscribe { seen.append($0) }
                    : state.subscribe { seen.append($0) }
            }
            let released = ReleaseCounter()
            DispatchQueue.concurrentPerform(iterations: 2) { thread in
                if thread == 0 {
                    for value in 1...writes { state.modify(value) }
                    return
                }
                for turn in 0..<churns {
                    let captured = CountedRelease(released)
                    let token =
                        turn.isMultiple(of: 3)
                        ? state.subscribeChanges { _ in captured.touch() }
                        : state.subscribe { _ in captured.touch() }
                    token.cancel()
                }
            }
            // A write queued behind another thread's delivery returns before it is delivered.
            let deadline = Date() + 30
            while Date() < deadline
                && (seen.contains { $0.count < writes + 1 } || released.count.load(ordering: .acquiring) < churns)
            {
                usleep(1_000)
            }
            let inOrder = seen.map { $0.all == Array(0...writes) }
            withExtendedLifetime(tokens) {}
            return (inOrder, released.count.load(ordering: .acquiring), state.subscriberCount)
        }
        #expect(outcome.0 == [true, true, true])
        #expect(outcome.1 == churns)
        #expect(outcome.2 == 3)
    }
}

/// Something a handler captures, to see when the container lets go of it.
private final class Captured: Sendable {
    let name = "captured"
}
