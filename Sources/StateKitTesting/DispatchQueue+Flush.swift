import Dispatch
import Foundation

extension DispatchQueue {
    /// Waits until everything submitted to this serial queue before the call has run.
    ///
    /// StateKit delivers synchronously on the writing thread by default, so most tests need no
    /// waiting at all. Handlers given a queue (``StateKit/MonitoredState/subscribe(on:_:)``,
    /// ``StateKit/StateListener/stateListenerQueue``) are submitted to it during the write, so
    /// once the writes have returned, one `flush()` of that queue lets them all run:
    ///
    /// ```swift
    /// let queue = DispatchQueue(label: "test.delivery")
    /// let subscription = counter.subscribe(on: queue) { seen.append($0) }
    /// counter ~> 1
    /// await queue.flush()
    /// #expect(seen.all == [0, 1])
    /// ```
    ///
    /// > Warning: The queue must be serial, and on ``main`` it needs the main queue to be serviced
    /// > (an app, or an async test runner); never call it from a block already running on this queue.
    public func flush() async {
        // ThreadSanitizer on Linux does not see a continuation resumed from a queue as ordering
        // what the queue ran before the awaiting task goes on (measured: reads after a plain
        // `flush()` were reported as races). Passing one lock on each side makes the ordering
        // visible, so tests can read what the queue's blocks wrote without a false report.
        let handOff = NSLock()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            async {
                handOff.withLock {}
                continuation.resume()
            }
        }
        handOff.withLock {}
    }
}
