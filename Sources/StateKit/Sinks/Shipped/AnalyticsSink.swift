/// A sink that turns every change into an ``AnalyticsEvent`` and hands it to an ``AnalyticsBackend``.
///
/// Every change is an event: the sink never coalesces (its default policy keeps up to 10,000
/// pending changes and drops the oldest, reported, beyond that).
///
/// ```swift
/// let plan = SyncedState("free", key: "plan") {
///     AnalyticsSink(backend: JSONLinesAnalyticsBackend(fileURL: eventsURL)) { change in
///         AnalyticsEvent(name: "plan_changed", properties: ["from": change.oldValue, "to": change.newValue])
///     }
/// }
/// ```
///
/// - Note: All operations on `AnalyticsSink` are thread-safe.
public struct AnalyticsSink<Value: Sendable, Backend: AnalyticsBackend>: StateSink {
    /// How the sink is fed; ``SinkPolicy/default`` unless given.
    public let policy: SinkPolicy
    /// Where the events go.
    public let backend: Backend
    private let event: @Sendable (StateChange<Value>) -> AnalyticsEvent

    /// Creates a sink that maps each change to an event with `event` and tracks it with `backend`.
    ///
    /// - Parameters:
    ///   - backend: Receives the events in order.
    ///   - policy: Batching, buffering and retries; it should not coalesce (every change is an event).
    ///   - event: Builds the event for a change; its timestamp and idempotency key are the change's.
    public init(
        backend: Backend,
        policy: SinkPolicy = .default,
        event: @escaping @Sendable (StateChange<Value>) -> AnalyticsEvent
    ) {
        self.backend = backend
        self.policy = policy
        self.event = event
    }

    /// Maps `changes` to events and tracks them.
    public func send(_ changes: [StateChange<Value>]) async throws {
        try await backend.track(
            changes.map { change in
                var event = event(change)
                event.timestamp = change.timestamp
                event.idempotencyKey = change.idempotencyKey
                return event
            }
        )
    }
}
