/// A container a derived state's computation reads, directly or through projections and other
/// derived states: its version tells whether a cached result is still current.
@usableFromInline
protocol DerivationLeaf: AnyObject {
    /// The container's version, read under its lock.
    var derivationVersion: UInt64 { get }
    /// Reads the value, so that an open transaction records the container as read.
    func touchValue()
}

extension State: DerivationLeaf {
    @usableFromInline
    var derivationVersion: UInt64 { version }

    @usableFromInline
    func touchValue() {
        _ = untrackedValue
    }

    /// The current value, as ``State/value`` reads it but without registering the read with
    /// Observation: what a derived state's computation reads.
    final var untrackedValue: Value {
        if isAnyTransactionOpen, let log = TransactionLog.current { return transactionalValue(in: log) }
        lock.lock()
        defer { lock.unlock() }
        return storedValue
    }
}

/// Something whose changes make a derived state recompute: a container, or one key path of it.
///
/// A derived state watches these (not the derived states it reads), so a chain of derived states
/// is told of a change once, by the containers at its root, and reads its way up the chain.
@usableFromInline
struct DerivationInput {
    /// The container whose version says whether this input may have changed.
    let leaf: any DerivationLeaf
    /// Identifies the input, so that a diamond watches its shared root once.
    let id: AnyHashable
    /// Subscribes `handler` to the input's changes, from the next one on.
    let watch: (@escaping () -> Void) -> Subscription
}

extension Array where Element == DerivationInput {
    /// The inputs without repeats (by ``DerivationInput/id``), in their first order.
    func removingRepeatedInputs() -> [DerivationInput] {
        var seen = Set<AnyHashable>()
        return filter { seen.insert($0.id).inserted }
    }
}
