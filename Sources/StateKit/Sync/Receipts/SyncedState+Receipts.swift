import Foundation

extension SyncedState {
    /// Mutates the value in place, atomically, as one change (as ``State/modify(_:)->_`` does),
    /// and returns the write's receipt: its version, and what became of it.
    ///
    /// ```swift
    /// let receipt = cart.write { $0.items.append(book) }
    /// switch await receipt.outcome(timeout: .seconds(10)) {
    /// case .delivered?: print("on the server")
    /// case let outcome?: print("not delivered:", outcome)
    /// case nil: print("still waiting; see cart.pendingWrites")
    /// }
    /// ```
    ///
    /// A write the container's validator refuses changes nothing, is reported as
    /// ``StateDiagnostic/Kind/rejectedWrite``, and its receipt is ``WriteOutcome/rejected(reason:)``
    /// at once. Inside a transaction, the receipt learns its version when the transaction commits;
    /// if it never commits the write (its body throws, or runs again), the receipt says
    /// ``WriteOutcome/discarded(reason:)``.
    ///
    /// - Parameter body: Mutates the value. If it throws, the error is rethrown (see
    ///   ``State/modify(_:)->_`` for what a throwing body leaves).
    @discardableResult
    public func write(_ body: (inout Value) throws -> Void) rethrows -> WriteReceipt {
        var rejection: RejectedWriteError?
        defer { rejection?.report() }
        if let log = openTransactionLog {
            let slot = TransactionReceiptSlot(container: cellID)
            log._withUnsafeGuaranteedRef { $0.addReceiptSlot(slot) }
            try mutate(rejection: &rejection, body)
            if let rejection { slot.settle(.refused("the container's validator refused it: \(rejection.reason)")) }
            return WriteReceipt(book: receipts, slot: slot)
        }
        // Read under the container's lock, where the body runs: the version the write takes.
        var version: UInt64 = 0
        try mutate(rejection: &rejection) { value in
            version = storedVersion &+ 1
            try body(&value)
        }
        guard let rejection else { return WriteReceipt(book: receipts, version: version) }
        return WriteReceipt(
            book: receipts, version: version &- 1,
            decided: .rejected(reason: "the container's validator refused it: \(rejection.reason)"))
    }

    /// The receipt of the write of `version`: one this launch made (through any container of the
    /// key, once this one existed), or one an earlier launch logged in a ``DurableOutbox``; `nil`
    /// for a version this container does not know.
    ///
    /// ```swift
    /// // After a relaunch: what became of the last edit made before the app was killed?
    /// if let receipt = cart.receipt(for: cart.version) {
    ///     print(await receipt.outcome(timeout: .seconds(5)) ?? .discarded(reason: "unknown"))
    /// }
    /// ```
    public func receipt(for version: UInt64) -> WriteReceipt? {
        guard receipts.knows(version, current: self.version) else { return nil }
        return WriteReceipt(book: receipts, version: version)
    }

    /// The writes without an outcome yet, oldest first: the visible outbox.
    ///
    /// Each names the sinks it waits for, how often they tried it, and their last error. Behind a
    /// ``DurableOutbox`` it lists what the log holds, read from the file. A write that a newer one
    /// replaced in a full buffer (``SinkPolicy/Overflow/coalesceToLatest``) is not listed: it
    /// shares the outcome of the newer write, which is.
    ///
    /// ```swift
    /// for write in cart.pendingWrites {
    ///     print(write.version, write.attempts, write.lastError ?? "waiting")
    /// }
    /// ```
    public var pendingWrites: [PendingWrite] {
        var found: [UInt64: (change: StateChange<Value>, attempts: Int, sinks: [String], lastError: String?)] = [:]
        for pipeline in pipelines {
            let lastError = pipeline.statistics.lastError
            for (change, attempts) in pipeline.waitingChanges() {
                var entry = found[change.version] ?? (change, 0, [], nil)
                entry.attempts = max(entry.attempts, attempts)
                entry.sinks.append(pipeline.sink.name)
                entry.lastError = entry.lastError ?? lastError
                found[change.version] = entry
            }
        }
        return found.keys.sorted().compactMap { version in
            // Settled by another sink's rule meanwhile (a drop): it has its outcome.
            guard receipts.outcome(of: version) == nil, let entry = found[version] else { return nil }
            return PendingWrite(
                version: version, timestamp: entry.change.timestamp, origin: entry.change.origin,
                attempts: entry.attempts, lastError: entry.lastError, waitsFor: entry.sinks)
        }
    }
}
