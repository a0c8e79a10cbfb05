extension MonitoredState where Value: Sendable {
    /// Lets a tool that shows this container read its storage and sync status (see
    /// ``InspectionHandle/details()``). Called once, by a persisted or synced container's
    /// initialiser.
    ///
    /// The reader captures the stored value and the pipelines unretained, and retains them under
    /// the container's lock while the container is alive, so the handle never keeps them alive.
    /// The storage's description (`"FileStateStorage file:///…"`) is made when a tool reads it:
    /// printing a type's name costs more than making the container.
    func showDetails(
        persistence: StoredValue<Value>?, storage: (any StateStorage)?, pipelines: [SinkPipeline<Value>] = []
    ) {
        guard let handle = inspectionHandle, persistence != nil || !pipelines.isEmpty else { return }
        let stored = persistence.map(Unmanaged.passUnretained)
        let unretainedPipelines = pipelines.map(Unmanaged.passUnretained)
        lock.withLock {
            handle.detailsReader = {
                let persistence = stored?.takeUnretainedValue()
                let pipelines = unretainedPipelines.map { $0.takeUnretainedValue() }
                return {
                    InspectionDetails(
                        storageLocation: persistence == nil ? nil : storage.map { "\(type(of: $0)) \($0.location)" },
                        isPersisting: persistence?.isPersisting ?? false,
                        loadError: persistence?.loadError,
                        saveError: persistence?.saveError,
                        syncStatus: pipelines.first.map { SyncStatusMonitor.status(of: pipelines, in: $0.ledger) })
                }
            }
        }
    }
}
