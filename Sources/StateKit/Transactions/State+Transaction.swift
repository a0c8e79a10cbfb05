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

    /// The container's entry on its first touch: its value and version, read under the lock.
    ///
    /// Not inlined, so that the write paths it is reachable from stay small enough to inline.
    @inlinable
    @inline(never)
    final func addEntry(to log: Unmanaged<TransactionLog>) -> Unmanaged<TypedTransactionEntry<Value>> {
        let entry = newEntry(in: log)
        let writeGate = unretainedWriteGate
        if writeGate != nil { log._withUnsafeGuaranteedRef { $0.hasWriteGates = true } }
        entry._withUnsafeGuaranteedRef { entry in
            lock.lock()
            entry.originalSlot = storedValue
            entry.workingSlot = storedValue
            entry.begin(
                firstVersion: storedVersion, hasValidator: validator != nil, writeGate: writeGate, retaining: self)
            lock.unlock()
        }
        return entry
    }

    /// An empty entry for this container, added to `log`: the one the log kept from an earlier
    /// transaction of its thread, if it did, or a new one.
    @inlinable
    final func newEntry(in log: Unmanaged<TransactionLog>) -> Unmanaged<TypedTransactionEntry<Value>> {
        let operations =
            transactionOperations.unretained
            ?? Unmanaged.passUnretained(
                transactionOperations.install(makeTransactionOperations()))
        let entry =
            log._withUnsafeGuaranteedRef { log in
                operations._withUnsafeGuaranteedRef { log.addRecent(serial: $0.serial) }
            }
            ?? addNewEntry(to: log, operations: operations)
        return Unmanaged.fromOpaque(entry.toOpaque())
    }

    /// Makes this container an entry and adds it to `log`.
    @inlinable
    @inline(never)
    final func addNewEntry(
        to log: Unmanaged<TransactionLog>,
        operations: Unmanaged<TransactionOperations>
    ) -> Unmanaged<TransactionEntry> {
        let entry = Unmanaged<TransactionEntry>.passRetained(
            operations._withUnsafeGuaranteedRef { TypedTransactionEntry(container: self, operations: $0) })
        log._withUnsafeGuaranteedRef { $0.add(entry) }
        return entry
    }

    /// ``assign(_:unlessAlready:)`` inside a transaction.
    ///
    /// On the container's first touch, when it can have no validator, the value is taken without
    /// reading the container (a blind write, ``TransactionEntry/isBlind``): nothing was read, so
    /// there is nothing for the commit to check, and the lock is taken once, by the commit, which
    /// compares the value with the one it replaces.
    ///
    /// Not inlined, so that the write paths stay small enough to inline.
    @inlinable
    @inline(never)
    final func assignInTransaction(
        _ log: Unmanaged<TransactionLog>,
        _ newValue: Value,
        unlessAlready isUnchanged: (Value) -> Bool
    ) -> RejectedWriteError? {
        let found = log._withUnsafeGuaranteedRef { $0.entry(for: cellID) }
        guard found == nil, assignsBlindly else {
            let entry =
                found.map { Unmanaged<TypedTransactionEntry<Value>>.fromOpaque($0.toOpaque()) }
                ?? addEntry(to: log)
            var rejection: RejectedWriteError?
            entry._withUnsafeGuaranteedRef { entry in
                _ = writeWorkingCopy(
                    of: entry, rejection: &rejection, unlessAlready: isUnchanged, assignsWholeValue: true
                ) {
                    $0 = newValue
                }
            }
            return rejection
        }
        let entry = newEntry(in: log)
        entry._withUnsafeGuaranteedRef { entry in
            entry.workingSlot = newValue
            // Only a container that shares a cell has a write gate, and those never assign blindly.
            assert(!hasWriteGate, "a blind write skipped a write gate")
            entry.begin(firstVersion: 0, hasValidator: false, writeGate: nil, retaining: self)
            entry.isBlind = true
            entry.isWritten = true
        }
        return nil
    }

    /// What the commit does with this container's entries.
    ///
    /// The entry keeps its container alive, so the functions reach it without retaining it
    /// (a container that has weak references keeps its counts in a side table, and each retain
    /// and release there cost about 200 instructions).
    @inlinable
    final func makeTransactionOperations() -> TransactionOperations {
        let isEquatable = isEqual != nil
        return TransactionOperations(
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
                        if entry.isBlind {
                            assert(state.validator == nil, "a blind write skipped a validator")
                            if isEquatable && areEqual(state.storedValue, entry.working) { return false }
                        } else if let isEqual = entry.knownEquality {
                            if isEqual { return false }
                        } else if isEquatable && areEqual(entry.original, entry.working) {
                            return false
                        }
                    }
                    if state.wantsChangeRecords {
                        entry.replacedSlot = state.storedValue
                        entry.recordTimestamp = Date()
                    }
                    entry.firstVersion = state.storedVersion
                    state.storedValue = entry.working
                    state.storedVersion &+= 1
                    return true
                }
            },
            publishAndUnlock: { entry, context, mayClaim in
                let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                return State.withContainer(of: entry) { state in
                    guard state.hasAudience, !(state.fields.pointee.tally.isOn && state.countChangeLocked(entry.origin))
                    else {
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
                if entry.isBlind { State.read(into: entry) }
                entry.working = entry.original
                entry.knownEquality = true
            },
            read: { entry in
                State.read(into: unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self))
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
            // A value that holds no reference keeps nothing alive: its copies stay until the next
            // transaction overwrites them.
            empty: _isPOD(Value.self)
                ? nil
                : { entry in
                    let entry = unsafeDowncast(entry, to: TypedTransactionEntry<Value>.self)
                    entry.originalSlot = nil
                    entry.workingSlot = nil
                    entry.replacedSlot = nil
                }
        )
    }

    /// Whether the container's writes pass a ``WriteGate``.
    @usableFromInline
    final var hasWriteGate: Bool {
        unretainedWriteGate != nil
    }

    /// The ``WriteGate`` the container's writes pass, if any (a key shared across processes),
    /// unretained: once installed, it lives as long as the container.
    @inlinable
    final var unretainedWriteGate: Unmanaged<WriteGate>? {
        guard let point = observation.unretained else { return nil }
        return point._withUnsafeGuaranteedRef { $0.writeGate.unretained }
    }

    /// Reads the container's value and version into the blind `entry`, which then is an entry
    /// that was read, its working copy kept.
    @inlinable
    static func read(into entry: TypedTransactionEntry<Value>) {
        withContainer(of: entry) { state in
            state.lock.lock()
            entry.originalSlot = state.storedValue
            entry.firstVersion = state.storedVersion
            state.lock.unlock()
        }
        entry.isBlind = false
    }

    /// Runs `body` on the entry's container, which the entry keeps alive, without retaining it.
    @inlinable
    static func withContainer<R>(of entry: TypedTransactionEntry<Value>, _ body: (State<Value>) -> R) -> R {
        Unmanaged.passUnretained(unsafeDowncast(entry.container, to: State<Value>.self))
            ._withUnsafeGuaranteedRef(body)
    }

    /// Writes to the transaction's working copy: `write(unlessAlready:origin:_:)` and
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
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result? {
        try entry(in: log)._withUnsafeGuaranteedRef { entry in
            try writeWorkingCopy(
                of: entry, rejection: &rejection, unlessAlready: isUnchanged, assignsWholeValue: false, body
            )
        }
    }

    /// ``writeInTransaction(_:rejection:unlessAlready:_:)`` and ``assignInTransaction(_:_:unlessAlready:)``
    /// on the container's entry.
    /// - Parameter assignsWholeValue: Whether `body` assigns the value `isUnchanged` compares
    ///   with (`$0 = newValue`); the transaction then learns at once whether its working copy is
    ///   back at its start.
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
                entry.knownEquality = assignsWholeValue && !entry.isBlind ? isUnchanged(entry.original) : nil
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
        entry.knownEquality = assignsWholeValue && !entry.isBlind ? isUnchanged(entry.original) : nil
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
