extension SyncedState {
    /// Where the container's changes stand with its sinks, kept up to date as they deliver, fail,
    /// pause and resume.
    ///
    /// Read ``Observed/value``, subscribe, project a part (`cart.syncStatus.pending`), or read it
    /// in SwiftUI or `withObservationTracking`, as with any projection; it notifies only when the
    /// status changed.
    ///
    /// ```swift
    /// let status = cart.syncStatus.value
    /// print(status.isSynced ? "Synced" : "\(status.pending) changes waiting")
    /// let subscription = cart.syncStatus.isPaused.subscribe { isPaused in
    ///     print(isPaused ? "offline" : "online")
    /// }
    /// ```
    ///
    /// The status is made the first time it is read: until then, writes pay nothing for it.
    public var syncStatus: Observed<SyncStatus> {
        (statusMonitor.current ?? startStatusMonitor()).observed
    }

    /// Makes the status monitor and connects every pipeline to it; of two threads racing here,
    /// the first to install its monitor wins.
    private func startStatusMonitor() -> SyncStatusMonitor<Value> {
        let candidate = SyncStatusMonitor(key: key, pipelines: pipelines, persistence: persistence)
        let monitor = statusMonitor.install(candidate)
        guard monitor === candidate else { return monitor }
        // Held weakly: the monitor holds the pipelines, which outlive their container while they drain.
        let observer = StatisticsObserver { [weak monitor] in monitor?.refresh() }
        persistence?.status.onSaveErrorChange { [weak monitor] in monitor?.refresh() }
        for pipeline in pipelines {
            // A pipeline shared with the key's other containers may have another's observer.
            let installed = pipeline.statisticsObserver.install(observer)
            if installed !== observer { installed.add(observer) }
        }
        // What changed between the monitor's first reading and the links' installation.
        monitor.refresh()
        return monitor
    }

    /// The status now, read as the monitor reads it.
    var currentSyncStatus: SyncStatus {
        SyncStatus(pipelines.map(\.statusSnapshot), saveError: persistence?.saveError)
    }
}
