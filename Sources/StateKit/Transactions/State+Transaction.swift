import Foundation

/// How a container reads and writes inside a transaction: through the thread's
/// ``TransactionLog``, never the container itself, until the commit.
///
/// Inlinable, so that the entry of a container, and the operations the commit runs on it, are
/// made in code specialised for its value type.
extension State {
    /// The value as the open transaction sees it: its own working copy, or, on the first touch,
    /// the container's value, which the log records with its version.
    @inlinable
    final func transactionalValue(in log: Unmanaged<TransactionLog>) -> Value {
        entry(in: log)._withUnsafeGuaranteedRef { $0.working }
    }

    /// The container's entry in `log`, unretained: the log keeps it until the transaction ends
    /// (each retain and release would be an atomic operation).
    @inlinable
    final func entry(in log: Unmanaged<TransactionLog>) -> Unmanaged<TypedTransactionEntry<Value>> {
        if let entry = log._withUnsafeGuaranteedRef({ $0.entry(for: cellID) }) {
            return Unmanaged.fromOpaque(entry.toOpaque())
        }
        return addEntry(to: log)
    }

    /// The container's entry on its first touch: its value and version, read under the lock,
    /// in the container's spare entry if no other transaction has it.
    ///
    /// Not inlined, so that the write paths it is reachable from stay small enough to inline.
    @inlinable
    @inline(never)
    final func addEntry(to log: Unmanaged<TransactionLog>) -> Unmanaged<TypedTransactionEntry<Value>> {
        let operations =
            transactionOperations.unretained
            ?? Unmanaged.passUnretained(
                transactionOperations.install(makeTransactionOperations()))
        let entry = operations._withUnsafeGuaranteedRef { operations in
            operations.takeSpare().map { Unmanaged<TypedTransactionEntry<Value>>.fromOpaque($0.toOpaque()) }
                ?? Unmanaged.passRetained(TypedTransactionEntry(container: self, operations: operations))
        }
        entry._withUnsafeGuaranteedRef { entry in
            lock.lock()
            entry.originalSlot = storedValue
            entry.workingSlot = storedValue
            entry.begin(firstVersion: storedVersion, hasValidator: validator != nil, retaining: self)
            lock.unlock()
        }
        log._withUnsafeGuaranteedRef { $0.add(Unmanaged.fromOpaque(entry.toOpaque())) }
        return entry
    }

    /// What the commit does with this container's entries.
    ///
    /// The entry keeps its container alive, so the functions reach it without retaining it
    /// (a container that has weak references keeps its counts in a side table, and each retain
    /// and release there cost about 200 instructions).
    @inlinable
    final func makeTransactionOperations() -> TransactionOperations {
        TransactionOperations(
            tellObservation: { entry, isBefore in
                State.withContainer(of: unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)) { state in
                    guard let observation = state.observation.unretained else { return false }
                    if isBefore {
                        observation._withUnsafeGuaranteedRef { $0.willSet() }
                    } else {
                        observation._withUnsafeGuaranteedRef { $0.didSet() }
                    }
                    return true
                }
            },
            applyLocked: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                return State.withContainer(of: entry) { state in
                    if !entry.isAnnounced {
                        if let isEqual = entry.knownEquality {
                            if isEqual { return false }
                        } else if let isEqual = state.isEqual, isEqual(entry.original, entry.working) {
                            return false
                        }
                    }
                    if state.wantsChangeRecords {
                        entry.replacedSlot = state.storedValue
                        entry.recordTimestamp = Date()
                    }
                    state.storedValue = entry.working
                    state.storedVersion &+= 1
                    return true
                }
            },
            publishAndUnlock: { entry, context, mayClaim in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                return State.withContainer(of: entry) { state in
                    guard state.hasAudience else {
                        state.lock.unlock()
                        return false
                    }
                    if mayClaim && state.mayClaimLocked {
                        state.deliveryClaim.take()
                        entry.claimedSubscribers = UnretainedSubscribers(state.audience.subscribers)
                        entry.isClaimedWithOthers = state.audience.hasProjectionsOrListeners
                        state.lock.unlock()
                        return true
                    }
                    state.scheduleChangeAndUnlock(
                        oldValue: entry.replaced, announcedByHand: false, origin: entry.origin, in: context)
                    return false
                }
            },
            deliverClaimed: { entry, context in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                State.withContainer(of: entry) { state in
                    let change = PendingChange(
                        oldValue: entry.replaced,
                        newValue: entry.working,
                        version: entry.firstVersion &+ 1,
                        timestamp: entry.recordTimestamp,
                        depth: 0,
                        isAnnouncedByHand: false,
                        origin: context.id,
                        changeOrigin: entry.origin
                    )
                    let subscribers = entry.claimedSubscribers
                    entry.claimedSubscribers = UnretainedSubscribers()
                    // Projections and listeners are read now, as a queued change's are: one that
                    // joined since starts after this version, and one that left is not called.
                    var others: Audience<Value>?
                    if entry.isClaimedWithOthers {
                        state.lock.lock()
                        others = state.audience.hasProjectionsOrListeners ? state.audience : nil
                        state.lock.unlock()
                    }
                    state.notify(change, subscribers: subscribers, others: others, in: context)
                    state.finishDelivery(in: context)
                }
            },
            revert: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                entry.working = entry.original
                entry.knownEquality = true
            },
            checkpoint: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                let (working, isWritten, isAnnounced) = (entry.working, entry.isWritten, entry.isAnnounced)
                let knownEquality = entry.knownEquality
                return {
                    entry.working = working
                    entry.isWritten = isWritten
                    entry.isAnnounced = isAnnounced
                    entry.knownEquality = knownEquality
                }
            },
            empty: { entry in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                entry.originalSlot = nil
                entry.workingSlot = nil
                entry.replacedSlot = nil
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
    ///
    /// Not inlined, so that the write paths stay small enough to inline.
    @inlinable
    @inline(never)
    final func writeInTransaction<Result>(
        _ log: Unmanaged<TransactionLog>,
        rejection: inout RejectedWriteError?,
        unlessAlready isUnchanged: (Value) -> Bool,
        assignsWholeValue: Bool,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result? {
        try entry(in: log)._withUnsafeGuaranteedRef { entry in
            try writeWorkingCopy(
                of: entry, rejection: &rejection, unlessAlready: isUnchanged, assignsWholeValue: assignsWholeValue, body
            )
        }
    }

    /// ``writeInTransaction(_:rejection:unlessAlready:assignsWholeValue:_:)`` on the container's
    /// entry.
    @inlinable
    final func writeWorkingCopy<Result>(
        of entry: TypedTransactionEntry<Value>,
        rejection: inout RejectedWriteError?,
        unlessAlready isUnchanged: (Value) -> Bool,
        assignsWholeValue: Bool,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result? {
        if isUnchanged(entry.working) { return nil }
        // A copy, not `&entry.working`: the body may read the container, which reads the entry.
        var proposed = entry.working
        guard entry.hasValidator, let validator = lock.withLock({ self.validator }) else {
            defer {
                entry.working = proposed
                entry.isWritten = true
                // After `$0 = newValue`, `isUnchanged(x)` says whether `x` equals the new value.
                entry.knownEquality = assignsWholeValue ? isUnchanged(entry.original) : nil
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
        entry.knownEquality = assignsWholeValue ? isUnchanged(entry.original) : nil
        return result
    }

    /// ``didModify()`` inside a transaction: the container gets a change at the commit, even if
    /// its value compares equal (a reference mutated in place).
    final func announceInTransaction(_ log: Unmanaged<TransactionLog>) {
        entry(in: log)._withUnsafeGuaranteedRef { entry in
            entry.isWritten = true
            entry.isAnnounced = true
        }
    }
}
