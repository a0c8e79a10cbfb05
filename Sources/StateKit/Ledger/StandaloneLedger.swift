import Dispatch

/// The ledger of a synced container without storage: its value lives in memory or in its
/// outbox's log (so every version counts as saved), and its records beside the log.
///
/// What the ledger says to store is stored on a serial queue of its own, never on the writer's
/// thread; ``flushLedger()`` awaits that queue.
final class StandaloneLedger: LedgerHost {
    private struct State {
        var ledger = CellLedger(savesValue: false)
        /// Held weakly: the store holds this ledger.
        weak var store: SyncRecordStore?
    }

    private let state = LockedBox(State())
    private let queue: DispatchQueue

    init(key: String) {
        queue = DispatchQueue(label: "StateKit.ledger.\(key)", qos: .utility)
    }

    func withLedger<Result>(_ body: (inout CellLedger) -> Result) -> Result {
        state.withLock { body(&$0.ledger) }
    }

    func noteLocalChange(_ version: UInt64) -> Bool {
        state.withLock { $0.ledger.localChange(version) }
    }

    func keepRecords(in store: SyncRecordStore) {
        state.withLock { $0.store = store }
    }

    func storeLedgerSoon() {
        let isNew = state.withLock { state in
            state.store != nil && state.ledger.saveWanted()
        }
        guard isNew else { return }
        queue.async { self.store() }
    }

    func flushLedger() async {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume() }
        }
    }

    /// Stores the records the ledger says to; a failure is reported by the store, and the records
    /// are stored again at their next change.
    private func store() {
        let (store, records) = state.withLock { state in
            state.ledger.scheduledSaveStarts()
            return (state.store, state.ledger.recordsToStore())
        }
        guard let store, let records else { return }
        do {
            try store.write(records)
            state.withLock { $0.ledger.recordsStored(records) }
        } catch {
            store.reportWriteFailure(error)
        }
    }
}
