import Dispatch

/// The ledger of a synced container without storage: its value lives in memory or in its
/// outbox's log (so every version counts as saved), its records beside the log, and its sinks'
/// books in memory.
///
/// What the ledger says to store is stored on a serial queue of its own, made once it keeps
/// records (a container without remote sinks stores nothing), never on the writer's thread;
/// ``flushLedger()`` awaits that queue.
final class StandaloneLedger: LedgerHost {
    private struct State {
        var ledger = CellLedger(savesValue: false)
        /// Held weakly: the store holds this ledger.
        weak var store: SyncRecordStore?
        /// Where the records are stored, once there are records to store.
        var queue: DispatchQueue?
    }

    private let key: String
    private let state = LockedBox(State())

    init(key: String) {
        self.key = key
    }

    func withLedger<Result>(_ body: (inout CellLedger) -> Result) -> Result {
        state.withLock { body(&$0.ledger) }
    }

    func noteLocalChange(_ version: UInt64) -> Bool {
        state.withLock { $0.ledger.localChange(version) }
    }

    func noteOverflow(_ slot: Int, _ overflow: SinkBooks.Overflow) {
        state.withLock { $0.ledger.overflowed(slot, overflow) }
    }

    func keepRecords(in store: SyncRecordStore) {
        state.withLock { state in
            state.store = store
            if state.queue == nil { state.queue = DispatchQueue(label: "StateKit.ledger.\(key)", qos: .utility) }
        }
    }

    func storeLedgerSoon() {
        let queue = state.withLock { state in
            state.store != nil && state.ledger.saveWanted() ? state.queue : nil
        }
        queue?.async { self.store() }
    }

    func flushLedger() async {
        guard let queue = state.withLock({ $0.queue }) else { return }
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
