/// The hidden container behind ``SyncedState/syncStatus``, kept up to date by the sinks' pipelines.
///
/// A ``SyncedState`` makes it the first time someone reads its status, so writes to a container
/// whose status nobody reads pay nothing for it. Each pipeline calls ``refresh()`` after its
/// statistics changed, and storage after its save error changed. Pipelines race, so a refresh reads every pipeline's statistics and writes
/// the status under the status container's lock, in one step: whichever refresh writes last read
/// the statistics last, and the status never goes back to an older one. A status equal to the
/// current one is not written, so subscribers hear only of real changes.
///
/// - Note: All operations on `SyncStatusMonitor` are thread-safe.
final class SyncStatusMonitor<Value: Sendable>: Sendable {
    let state: MonitoredState<SyncStatus>
    /// The read-only view handed out, one for all readers.
    let observed: Observed<SyncStatus>
    private let pipelines: [SinkPipeline<Value>]
    /// The stored value of a persisted container, whose save error is part of the status.
    private let persistence: StoredValue<Value>?
    /// What the pipelines and the save error tell, once ``connect()`` made it: held here, as a
    /// pipeline the key's other containers share may hold it only weakly.
    private let observer = LockedBox<StatisticsObserver?>(nil)

    init(key: String, pipelines: [SinkPipeline<Value>], persistence: StoredValue<Value>?) {
        self.pipelines = pipelines
        self.persistence = persistence
        state = MonitoredState(
            SyncStatus(pipelines.map(\.statusSnapshot), saveError: persistence?.saveError), key: "\(key).syncStatus")
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

    /// Recomputes the status from every pipeline's statistics and publishes it if it changed.
    func refresh() {
        var newest: SyncStatus?
        _ = state.write(
            unlessAlready: { current in
                // Runs under the status container's lock, right before the write (again after
                // Observation's willSet, when observed): the last status read is the one written.
                let status = SyncStatus(pipelines.map(\.statusSnapshot), saveError: persistence?.saveError)
                newest = status
                return current == status
            },
            { status in
                if let newest { status = newest }
            }
        )
    }
}
