/// Runs `body` as one transaction: its writes to any containers are applied together, as one
/// change per container, or not at all.
///
/// - Inside `body`, reads see its own writes; other threads see all of them or none.
/// - After `body` returns, each container it changed gets exactly one change (one version, one
///   call per subscriber); a handler reading another container written in the same transaction
///   sees the new value. A container whose value ends equal to its start (`Equatable`) is not
///   changed. Persisted and synced containers save and send the result once.
/// - If `body` throws (a validator's refusal through ``MonitoredState/set(_:)`` or
///   ``MonitoredState/update(_:)`` included), nothing it wrote is applied, versions stay, nobody
///   is notified, and the error is rethrown.
/// - A nested call joins the outermost one; if its body throws and the outer body catches the
///   error, only the inner body's writes are undone.
/// - A transaction that only reads is a consistent snapshot.
///
/// ```swift
/// let checking = State(100, key: "checking")
/// let savings = State(0, key: "savings")
/// withStateTransaction {
///     checking.modify { $0 -= 10 }
///     savings.modify { $0 += 10 }
/// }
/// let (a, b) = withStateTransaction { (checking.value, savings.value) }   // a + b == 100
/// ```
///
/// Transactions are optimistic: the body runs without holding any lock, and the commit checks
/// that no container it read changed meanwhile (a container it assigned before reading it, it
/// did not read). If one did, the body runs again, so it must have no side effects other than its
/// reads and writes of containers. A body runs again only because another write to a container
/// it read was committed, so some thread always makes progress (no deadlock, no livelock between
/// transactions: a body that loses backs off before it runs again). Under contention on the same
/// containers, expect a few re-runs, not many; see the "Transactions" article.
///
/// - Parameter body: Reads and writes containers. Handlers of its changes run after it returns.
/// - Returns: What `body` returns.
@inlinable
public func withStateTransaction<R>(_ body: () throws -> R) rethrows -> R {
    var result: R?
    try runTransaction { result = try body() }
    return result.unsafelyUnwrapped
}
