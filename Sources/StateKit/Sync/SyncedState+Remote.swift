extension SyncedState {
    /// Hands each ``RemoteSyncSink`` among `sinks` a channel into this container.
    func connectRemoteSinks(_ sinks: [any StateSink<Value>]) {
        let remoteSinks = sinks.compactMap { $0 as? any RemoteSyncSink<Value> }
        guard !remoteSinks.isEmpty else { return }
        let channel = RemoteChannel(state: self)
        for sink in remoteSinks { sink.connect(channel) }
    }

    /// Loads the remote value of every ``RemoteSyncSink`` into the container.
    ///
    /// A remote value the container did not have becomes one change that is not sent back to the
    /// server; local changes not yet sent are never overwritten silently, they go through the
    /// sink's conflict rules. Sinks that are not remote-sync sinks are not involved.
    ///
    /// ```swift
    /// try await profile.refresh()
    /// print(profile.value)   // what the server holds, merged with unsent local edits
    /// ```
    ///
    /// - Throws: The first error a sink's pull threw (each sink is asked once either way).
    public func refresh() async throws {
        var firstError: (any Error)?
        for pipeline in pipelines {
            guard let sink = pipeline.sink as? any RemoteSyncSink<Value> else { continue }
            do {
                try await sink.refresh()
            } catch {
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }
}
