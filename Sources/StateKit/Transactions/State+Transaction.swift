/// How a container reads and writes inside a transaction: through the thread's
/// ``TransactionLog``, never the container itself, until the commit.
extension State: TransactionParticipant {
    /// The value as the open transaction sees it: its own working copy, or, on the first touch,
    /// the container's value, which the log records with its version.
    @usableFromInline
    final func transactionalValue(in log: TransactionLog) -> Value {
        entry(in: log).working as! Value
    }

    private func entry(in log: TransactionLog) -> TransactionEntry {
        let id = ObjectIdentifier(self)
        if let entry = log.entries[id] { return entry }
        lock.lock()
        let value = storedValue
        let version = storedVersion
        lock.unlock()
        let entry = TransactionEntry(container: self, firstVersion: version, original: value, working: value)
        log.entries[id] = entry
        return entry
    }

    /// Writes to the transaction's working copy: `write(unlessAlready:_:)` and
    /// `mutate(rejection:_:)` inside a transaction.
    ///
    /// The validator checks the working copy against the proposed value at once, so `set` and
    /// `update` throw its refusal inside the body. A throwing body leaves its partial changes, as
    /// outside a transaction, unless there is a validator.
    @usableFromInline
    final func writeInTransaction<Result>(
        _ log: TransactionLog,
        rejection: inout RejectedWriteError?,
        unlessAlready isUnchanged: (Value) -> Bool,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result? {
        var entry = entry(in: log)
        let current = entry.working as! Value
        if isUnchanged(current) { return nil }
        let validator = lock.withLock { self.validator }
        var proposed = current
        var isFinished = false
        defer {
            if isFinished || validator == nil {
                entry.working = proposed
                entry.isWritten = true
                log.entries[ObjectIdentifier(self)] = entry
            }
        }
        let result = try body(&proposed)
        if let validator {
            do {
                try validator(current, proposed)
            } catch {
                rejection = RejectedWriteError(key: key, reason: error)
                return result
            }
        }
        isFinished = true
        return result
    }

    /// ``didModify()`` inside a transaction: the container gets a change at the commit, even if
    /// its value compares equal (a reference mutated in place).
    final func announceInTransaction(_ log: TransactionLog) {
        var entry = entry(in: log)
        entry.isWritten = true
        entry.isAnnounced = true
        log.entries[ObjectIdentifier(self)] = entry
    }

    func lockForCommit() { lock.lock() }

    func unlockAfterCommit() { lock.unlock() }

    var versionLocked: UInt64 { storedVersion }

    func isUnchanged(_ entry: TransactionEntry) -> Bool {
        guard !entry.isAnnounced, let isEqual else { return false }
        return isEqual(entry.original as! Value, entry.working as! Value)
    }

    func applyLocked(_ entry: inout TransactionEntry) {
        if wantsChangeRecords { entry.replaced = storedValue }
        storedValue = entry.working as! Value
        storedVersion &+= 1
    }

    func publishCommittedAndUnlock(_ entry: TransactionEntry, in context: DeliveryContext) {
        guard hasAudience else {
            lock.unlock()
            return
        }
        scheduleChangeAndUnlock(oldValue: entry.replaced as? Value, announcedByHand: false, in: context)
    }

    func willCommit() {
        observation.unretained?._withUnsafeGuaranteedRef { $0.willSet() }
    }

    func didCommit() {
        observation.unretained?._withUnsafeGuaranteedRef { $0.didSet() }
    }
}
