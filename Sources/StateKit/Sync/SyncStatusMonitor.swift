/// The hidden container behind ``SyncedState/syncStatus``, kept up to date from the ledger.
///
/// A ``SyncedState`` makes it the first time someone reads its status, so writes to a container
/// whose status nobody reads pay nothing for it. The status is derived from the ledger that
/// keeps the container's sinks' books and its save error (``CellLedger/syncStatus(of:)``), in
/// one reading, with what waits in each pipeline. Each pipeline calls ``refresh()`` after its
/// books or its buffer changed, and storage after its save error changed. They race, so a
/// refresh reads the ledger and writes the status under the status container's lock, in one
/// step: whichever refresh writes last read last, and the status never goes back to an older
/// one. A status equal to the current one is not written, so subscribers hear only of real
/// changes.
///
/// - Note: All operations on `SyncStatusMonitor` are thread-safe.
final class SyncStatusMonitor<Value: Sendable>: Sendable {
    let state: MonitoredState<SyncStatus>
    /// The read-only view handed out, one for all readers.
    let observed: Observed<SyncStatus>
    private let pipelines: [SinkPipeline<Value>]
    /// Where the pipelines' books are, with the save error of a persisted container.
    private let ledger: any LedgerHost
    /// The stored value of a persisted container, which tells when its save error changes.
    private let persistence: StoredValue<Value>?
    /// What the pipelines and the save error tell, once ``connect()`` made it: held here, as a
    /// pipeline the key's other containers share may hold it only weakly.
    private let observer = LockedBox<StatisticsObserver?>(nil)

    init(key: String, pipelines: [SinkPipeline<Value>], ledger: any LedgerHost, persistence: StoredValue<Value>?) {
        self.pipelines = pipelines
        self.ledger = ledger
        self.persistence = persistence
        state = MonitoredState(Self.status(of: pipelines, in: ledger), key: "\(key).syncStatus")
        InspectionRegistry.shared.remove(state)
        observed = state.readOnly
    }

    /// Has every pipeline, and the stored value's save error, refresh the status from now on.
    func connect() {
        // Weak: the monitor holds the pipelines, which outlive their container while they drain.
        let observer = StatisticsObserver { [weak self] in self?.refresh() }
        self.observer.withLock { $0 = observer }
        persistence?.status.onSaveErrorChange(observer)
        for pipeline in pipelines { pipeline.observeStatistics(observer) }
        // What changed between the monitor's first reading and the links' installation.
        refresh()
    }

    /// The status of a container with `pipelines`, whose books are in `ledger`: what waits in each
    /// pipeline, then the books and the save error in one reading of the ledger.
    static func status(of pipelines: [SinkPipeline<Value>], in ledger: any LedgerHost) -> SyncStatus {
        let sinks = pipelines.map { (books: $0.booksID, pending: $0.pending) }
        return ledger.withLedger { $0.syncStatus(of: sinks) }
    }

    /// Recomputes the status from the ledger and publishes it if it changed.
    func refresh() {
        var newest: SyncStatus?
        _ = state.write(
            unlessAlready: { current in
                // Runs under the status container's lock, right before the write (again after
                // Observation's willSet, when observed): the last status read is the one written.
                let status = Self.status(of: pipelines, in: ledger)
                newest = status
                return current == status
            },
            { status in
                if let newest { status = newest }
            }
        )
    }
}
