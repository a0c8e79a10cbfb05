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
        let candidate = SyncStatusMonitor(key: key, pipelines: pipelines, ledger: ledger, persistence: persistence)
        let monitor = statusMonitor.install(candidate)
        guard monitor === candidate else { return monitor }
        monitor.connect()
        return monitor
    }

    /// The status now, read as the monitor reads it.
    var currentSyncStatus: SyncStatus {
        SyncStatusMonitor.status(of: pipelines, in: ledger)
    }
}
