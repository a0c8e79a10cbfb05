/// How a container reads and writes inside a transaction: through the thread's
/// ``TransactionLog``, never the container itself, until the commit.
///
/// Inlinable, so that the entry of a container, and the operations the commit runs on it, are
/// made in code specialised for its value type.
extension State: TransactionParticipant {
    /// The value as the open transaction sees it: its own working copy, or, on the first touch,
    /// the container's value, which the log records with its version.
    @inlinable
    final func transactionalValue(in log: TransactionLog) -> Value {
        entry(in: log).working
    }

    @inlinable
    final func entry(in log: TransactionLog) -> TypedTransactionEntry<Value> {
        if let entry = log.entry(for: ObjectIdentifier(self)) {
            return unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
        }
        lock.lock()
        let value = storedValue
        let version = storedVersion
        lock.unlock()
        let entry = TypedTransactionEntry(
            container: self, firstVersion: version, value: value, operations: transactionOperations)
        log.add(entry)
        return entry
    }

    /// What the commit does with this container's entry.
    ///
    /// The entry keeps its container alive, so the functions reach it without retaining it
    /// (a container that has weak references keeps its counts in a side table, and each retain
    /// and release there cost about 200 instructions).
    @inlinable
    final var transactionOperations: TransactionOperations {
        TransactionOperations(
            isUnchanged: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                guard !entry.isAnnounced else { return false }
                return Self.withContainer(of: entry) { state in
                    guard let isEqual = state.isEqual else { return false }
                    return isEqual(entry.original, entry.working)
                }
            },
            applyLocked: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                Self.withContainer(of: entry) { state in
                    if state.wantsChangeRecords { entry.replaced = state.storedValue }
                    state.storedValue = entry.working
                    state.storedVersion &+= 1
                }
            },
            publishAndUnlock: { entry, context in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                Self.withContainer(of: entry) { state in
                    guard state.hasAudience else {
                        state.lock.unlock()
                        return
                    }
                    state.scheduleChangeAndUnlock(oldValue: entry.replaced, announcedByHand: false, in: context)
                }
            },
            revert: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                entry.working = entry.original
            },
            checkpoint: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                let (working, isWritten, isAnnounced) = (entry.working, entry.isWritten, entry.isAnnounced)
                return {
                    entry.working = working
                    entry.isWritten = isWritten
                    entry.isAnnounced = isAnnounced
                }
            }
        )
    }

    /// Runs `body` on the entry's container, which the entry keeps alive, without retaining it.
    @inlinable
    static func withContainer<R>(of entry: TypedTransactionEntry<Value>, _ body: (State<Value>) -> R) -> R {
        Unmanaged.passUnretained(unsafeDowncast(entry.container, to: State<Value>.self))
            ._withUnsafeGuaranteedRef(body)
    }

    /// Writes to the transaction's working copy: `write(unlessAlready:_:)` and
    /// `mutate(rejection:_:)` inside a transaction.
    ///
    /// The validator checks the working copy against the proposed value at once, so `set` and
    /// `update` throw its refusal inside the body. A throwing body leaves its partial changes, as
    /// outside a transaction, unless there is a validator.
    @inlinable
    final func writeInTransaction<Result>(
        _ log: TransactionLog,
        rejection: inout RejectedWriteError?,
        unlessAlready isUnchanged: (Value) -> Bool,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result? {
        let entry = entry(in: log)
        if isUnchanged(entry.working) { return nil }
        let validator = lock.withLock { self.validator }
        // A copy, not `&entry.working`: the body may read the container, which reads the entry.
        var proposed = entry.working
        guard let validator else {
            defer {
                entry.working = proposed
                entry.isWritten = true
            }
            return try body(&proposed)
        }
        let result = try body(&proposed)
        do {
            try validator(entry.working, proposed)
        } catch {
            rejection = RejectedWriteError(key: key, reason: error)
            return result
        }
        entry.working = proposed
        entry.isWritten = true
        return result
    }

    /// ``didModify()`` inside a transaction: the container gets a change at the commit, even if
    /// its value compares equal (a reference mutated in place).
    final func announceInTransaction(_ log: TransactionLog) {
        let entry = entry(in: log)
        entry.isWritten = true
        entry.isAnnounced = true
    }

    @usableFromInline
    func lockForCommit() { lock.lock() }

    @usableFromInline
    func unlockAfterCommit() { lock.unlock() }

    @usableFromInline
    var versionLocked: UInt64 { storedVersion }

    @usableFromInline
    func willCommit() {
        observation.unretained?._withUnsafeGuaranteedRef { $0.willSet() }
    }

    @usableFromInline
    func didCommit() {
        observation.unretained?._withUnsafeGuaranteedRef { $0.didSet() }
    }
}
