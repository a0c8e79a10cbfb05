import Foundation

extension SyncedState {
    /// The name of each remote sink's sync record (`nil` for other sinks): its name, with a `'`
    /// added for each remote sink before it of the same name.
    static func recordNames(of sinks: [any StateSink<Value>]) -> [String?] {
        var taken: Set<String> = []
        return sinks.map { sink in
            guard sink is any RemoteSyncSink<Value> else { return nil }
            var name = sink.name
            while taken.contains(name) { name += "'" }
            taken.insert(name)
            return name
        }
    }

    /// Hands each ``RemoteSyncSink`` among the sinks a channel into this container, with its
    /// sync record; a record that says local changes are unsent (a launch after an offline edit
    /// or a kill) has the container's value sent again, conditionally on what the server held.
    ///
    /// A sink whose pipeline this container just made for its cell to share (`destinations`
    /// names it) gets a channel into the cell instead, which outlives this container while
    /// another of its key uses the pipeline; `remotes` feeds it from then on. Sinks without a
    /// record name (not remote, or joined to a pipeline the cell already had) are skipped.
    func connectRemoteSinks(
        records: SyncRecordStore, names: [String?], instance: String?, sharedBy remotes: CellRemotes<Value>?,
        destinations: [String?]
    ) {
        for ((pipeline, name), destination) in zip(zip(pipelines, names), destinations) {
            guard let name, let sink = pipeline.sink as? any RemoteSyncSink<Value> else { continue }
            let (value, version) = lock.withLock { (storedValue, storedVersion) }
            // What the outbox logged and did not deliver is unsent, even if the record's mark
            // never reached the disk: sent now, not acknowledged as if the server had it.
            if let log = pipeline.log, pipeline.statistics.pending > 0 {
                records.loggedUndelivered(name, throughVersion: log.lastRecordedVersion)
            }
            let record = records.record(name)
            let channel: RemoteChannel<Value>
            if let destination, let remotes, let persistence {
                channel = RemoteChannel(cell: persistence, recordName: name, records: records, pipeline: pipeline)
                remotes.serve(
                    destination, pipeline: pipeline, channel: channel, cell: persistence.cell, instance: instance)
            } else {
                channel = RemoteChannel(state: self, recordName: name, records: records)
            }
            // Behind an outbox, the changes it logged and did not deliver are sent first. Across
            // processes, only the key's sender sends (``RemoteSenderLock``).
            guard record.hasUnsentChanges, pipeline.log == nil || pipeline.statistics.pending == 0,
                remotes?.takeOverNow() ?? true
            else {
                sink.connect(channel)
                continue
            }
            guard persistence != nil || pipeline.log == nil else {
                // A container without storage starts at its default value, so with nothing left
                // in its outbox the mark is stale (a kill between marking it and logging the
                // change, whose write never returned): there is no edit to send, and none to
                // hold against the server's value. Recorded before the sink is connected: its
                // load at start reads the record once the server answers, and took the default
                // value for an unsent edit when this thread was slower than the server.
                records.agree(name, base: record.base, validator: record.validator, atVersion: version)
                sink.connect(channel)
                continue
            }
            sink.connect(channel)
            pipeline.enqueueAtStart(
                StateChange(
                    key: key, oldValue: value, newValue: value, version: version, timestamp: Date(),
                    instance: instance, origin: .local))
        }
    }

    /// Loads the remote value of every ``RemoteSyncSink`` into the container.
    ///
    /// A remote value the container did not have becomes one change that is not sent back to the
    /// server; local changes not yet sent are never overwritten silently, they go through the
    /// sink's conflict rules. Sinks that are not remote-sync sinks are not involved. A sink whose
    /// destination answers sends what waits at once, paused or not.
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
                pipeline.destinationAnswered()
                // The destination is back: what waits for a retry goes now.
                pipeline.retryNow()
            } catch {
                firstError = firstError ?? error
            }
        }
        if let firstError { throw firstError }
    }
}
