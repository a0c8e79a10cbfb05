/// A write's front door: a write made while a transaction is open on its thread goes to the
/// transaction's working copy (`State+Transaction.swift`); any other goes to the container's
/// engine (`Container/Engine/State+Write.swift`), which knows nothing of transactions.
extension State {
    /// Applies `body` to the value as one change, unless `isUnchanged` says the value already is
    /// what `body` would make it: assigning an equal value is not a change.
    ///
    /// For an observable container, Observation's `willSet` runs between the check and the write,
    /// outside the lock (its `onChange` may read the container), so the check is made again after
    /// it; `didSet` follows the write and its delivery.
    /// - Parameter origin: Where the change comes from; a write inside a transaction takes the
    ///   transaction's.
    /// - Returns: The validator's refusal, if it refused.
    @inlinable
    final func write(
        unlessAlready isUnchanged: (Value) -> Bool,
        origin: ChangeOrigin = .local,
        _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        if let log = openTransactionLog {
            var rejection: RejectedWriteError?
            _ = writeInTransaction(log, rejection: &rejection, unlessAlready: isUnchanged, body)
            return rejection
        }
        return writeOutsideTransaction(unlessAlready: isUnchanged, origin: origin, body)
    }

    /// ``write(unlessAlready:origin:_:)`` for a write that changes only the part one projection
    /// group looks at (`state.cells[k] ~> v`): `scope`, called with the lock held, finds that group,
    /// so that groups of disjoint parts need not evaluate the change. A transaction's commit
    /// delivers to every group.
    final func write(
        unlessAlready isUnchanged: (Value) -> Bool,
        confinedTo scope: () -> ProjectionGroupBase?,
        _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        if let log = openTransactionLog {
            var rejection: RejectedWriteError?
            _ = writeInTransaction(log, rejection: &rejection, unlessAlready: isUnchanged, body)
            return rejection
        }
        return writeOutsideTransaction(unlessAlready: isUnchanged, confinedTo: scope, body)
    }

    /// Replaces the value with `newValue`, unless `isUnchanged` says the value already equals it.
    ///
    /// ``write(unlessAlready:origin:_:)``, but inside a transaction the container need not be read
    /// (see ``assignInTransaction(_:_:unlessAlready:)``).
    /// - Returns: The validator's refusal, if it refused.
    @inlinable
    final func assign(_ newValue: Value, unlessAlready isUnchanged: (Value) -> Bool) -> RejectedWriteError? {
        if let log = openTransactionLog { return assignInTransaction(log, newValue, unlessAlready: isUnchanged) }
        return writeOutsideTransaction(unlessAlready: isUnchanged) { $0 = newValue }
    }

    /// Applies `body` to the value as one change, always (see ``State/modify(_:)->_``), between
    /// Observation's `willSet` and `didSet` for an observable container.
    @inlinable
    final func mutate<Result>(
        rejection: inout RejectedWriteError?,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        if let log = openTransactionLog {
            return try writeInTransaction(log, rejection: &rejection, unlessAlready: { _ in false }, body)!
        }
        return try mutateOutsideTransaction(rejection: &rejection, body)
    }
}
