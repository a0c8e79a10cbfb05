/// A value and the lock that guards it, kept together so that the value is reachable only while
/// the lock is held.
///
/// Code off the hot paths keeps its shared mutable state in one of these instead of in `var`s
/// beside a lock and a comment naming which lock guards them:
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// let count = LockedBox(0)
/// count.withLock { $0 += 1 }
/// let now = count.withLock { $0 }
/// ```
///
/// It is a reference: copies of a `LockedBox` share one value and one lock.
///
/// - Note: All operations on `LockedBox` are thread-safe.
package final class LockedBox<Value> {
    private let lock = Lock()
    private var value: Value

    /// Creates a box holding `value`.
    package init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` on the value while holding the lock, and returns what `body` returns.
    ///
    /// The lock is released when `body` returns or throws. `body` must not call `withLock` on the
    /// same box (the lock is not recursive: debug builds on Linux trap, others hang), and should
    /// not block: every other thread using the box waits for it.
    ///
    /// - Parameter body: Reads or changes the value in place.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value) }
    }
}

/// Sendable by hand, as its invariant makes it: `value` is private and every access to it is in
/// ``withLock(_:)``, under `lock`, so threads that share the box never touch the value at once.
extension LockedBox: @unchecked Sendable where Value: Sendable {}
