/// A sink that mirrors its container to a remote copy both ways: it sends local changes and
/// takes in the remote value (a pull, or a conflict the server won).
///
/// When a ``SyncedState`` starts, it hands each such sink a ``RemoteChannel`` through
/// ``connect(_:)``. The sink writes remote values into the container with
/// ``RemoteChannel/applyRemote(_:ifVersion:)``: they become changes like any other (subscribers
/// and other sinks see them) that the sink recognises with ``RemoteChannel/isRemote(_:)`` and does
/// not send back. ``SyncedState/refresh()`` asks every remote sink to pull.
///
/// ```swift
/// let profile = SyncedState(Profile(), key: "profile") {
///     HTTPSyncSink(endpoint: profileURL, conflictPolicy: .serverWins)
/// }
/// try await profile.refresh()   // the server's value, or a 304 when unchanged
/// ```
public protocol RemoteSyncSink<Value>: StateSink {
    /// Called once, when a ``SyncedState`` starts with this sink, before any change is sent.
    func connect(_ channel: RemoteChannel<Value>)

    /// Loads the remote value into the container now, as the sink's conflict rules say.
    func refresh() async throws
}
