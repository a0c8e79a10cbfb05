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

    /// Where the sink's remote copy lives (a URL, say), or `nil` (the default) for a sink that
    /// shares nothing with another.
    ///
    /// Persisted containers of one key in one storage share one cell; those whose remote sinks
    /// name the same destination also share one channel to it: the first such container's sink
    /// (its pipeline, its connection and its ``SyncRecord``) serves them all, for as long as any
    /// of them lives, and the later containers' sinks of that destination are not used. Their
    /// writes then never conflict with each other at the server. Two sinks that return the same
    /// destination must therefore be interchangeable.
    ///
    /// ```swift
    /// // HTTPSyncSink's destination is its endpoint: one channel to profileURL serves both.
    /// let editor = SyncedState(Profile(), key: "profile", storage: .file(directory)) {
    ///     HTTPSyncSink(endpoint: profileURL)
    /// }
    /// let badge = SyncedState(Profile(), key: "profile", storage: .file(directory)) {
    ///     HTTPSyncSink(endpoint: profileURL)
    /// }
    /// ```
    var destination: String? { get }
}

extension RemoteSyncSink {
    /// `nil`: the sink serves only the container it was given to.
    public var destination: String? { nil }
}
