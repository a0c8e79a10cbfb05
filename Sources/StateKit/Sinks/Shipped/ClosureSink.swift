/// A sink that hands each batch of changes to a closure.
///
/// The quickest way to forward changes somewhere without writing a type:
///
/// ```swift
/// let score = SyncedState(0, key: "score") {
///     ClosureSink { changes in
///         try await api.record(changes.map(\.newValue))
///     }
/// }
/// ```
///
/// The closure runs on the sink's own task, one batch at a time, in order; throwing retries the
/// batch as `policy` says.
///
/// - Note: All operations on `ClosureSink` are thread-safe.
public struct ClosureSink<Value: Sendable>: StateSink {
    /// How the sink is fed; ``SinkPolicy/default`` unless given.
    public let policy: SinkPolicy
    private let body: @Sendable ([StateChange<Value>]) async throws -> Void

    /// Creates a sink that calls `body` with each ordered batch.
    ///
    /// - Parameters:
    ///   - policy: Batching, buffering and retries.
    ///   - body: Receives each batch; throw to have it retried.
    public init(
        policy: SinkPolicy = .default,
        _ body: @escaping @Sendable ([StateChange<Value>]) async throws -> Void
    ) {
        self.policy = policy
        self.body = body
    }

    /// Calls the closure with `changes`.
    public func send(_ changes: [StateChange<Value>]) async throws {
        try await body(changes)
    }
}
