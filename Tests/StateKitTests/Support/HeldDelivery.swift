import Foundation
import Testing

/// Holds one handler call still: the handler calls ``hold()``, which tells the test it arrived and
/// waits until the test calls ``release()``. Meanwhile the container's delivery stands still, and
/// the test can queue writes behind it.
///
/// ```swift
/// let held = HeldDelivery()
/// let token = state.subscribe { value in if value == 1 { held.hold() } }
/// Thread { state.modify(1) }.start()
/// held.waitUntilHeld()
/// ```
final class HeldDelivery: Sendable {
    private let entered = DispatchSemaphore(value: 0)
    private let released = DispatchSemaphore(value: 0)

    /// From the handler: signals that the call arrived, then waits for ``release()``.
    func hold() {
        entered.signal()
        released.wait()
    }

    /// Waits until a handler is in ``hold()``, failing the test if none comes in time.
    func waitUntilHeld(_ what: String = "the held delivery", sourceLocation: SourceLocation = #_sourceLocation) {
        waitFor(entered, what, sourceLocation: sourceLocation)
    }

    /// Lets the held call go on.
    func release() {
        released.signal()
    }
}
