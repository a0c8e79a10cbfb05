// The sinks that wrap another stay remote-sync sinks when it is one: declared here, with the
// protocol, so that the wrappers' own files need not know it. (Sinks/ still names it twice:
// DurableOutbox does not send remote changes back to a remote-sync sink, and SinkStatistics
// documents its first contact.)

/// A named remote-sync sink is one too: its container connects the base sink.
extension NamedSink: RemoteSyncSink where Base: RemoteSyncSink {
    /// Hands the channel to the base sink.
    public func connect(_ channel: RemoteChannel<Base.Value>) {
        base.connect(channel)
    }

    /// Pulls through the base sink.
    public func refresh() async throws {
        try await base.refresh()
    }

    /// The base sink's destination.
    public var destination: String? { base.destination }
}

/// An outbox around a remote-sync sink is one too: its container connects the wrapped sink.
extension DurableOutbox: RemoteSyncSink where Wrapped: RemoteSyncSink {
    /// Hands the channel to the wrapped sink.
    public func connect(_ channel: RemoteChannel<Wrapped.Value>) {
        wrapped.connect(channel)
    }

    /// Pulls through the wrapped sink.
    public func refresh() async throws {
        try await wrapped.refresh()
    }

    /// The wrapped sink's destination.
    public var destination: String? { wrapped.destination }
}
