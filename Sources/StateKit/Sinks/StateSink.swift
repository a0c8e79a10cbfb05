/// A destination for a container's changes: an analytics SDK, a remote server, a log.
///
/// ``SyncedState`` hands each of its sinks ordered batches of changes from a delivery task of
/// the sink's own, so a slow or failing sink never holds back writers or other sinks.
///
/// ```swift
/// struct PrintSink: StateSink {
///     func send(_ changes: [StateChange<Int>]) async throws {
///         for change in changes { print(change.idempotencyKey, change.newValue) }
///     }
/// }
/// ```
///
/// # Implementation requirements
/// - ``send(_:)`` receives batches in ``StateChange/version`` order; throw to have the batch
///   retried (same changes, same order) as the sink's policy says. Throw a ``StateSinkError``
///   to refuse a batch for good or to ask for a minimum wait before the retry.
/// - Delivery is at-least-once: a retried batch may repeat changes the destination already
///   accepted. Send ``StateChange/idempotencyKey`` along so the destination can drop duplicates.
/// - ``send(_:)`` may take as long as it needs (it only delays this sink), but should honour task
///   cancellation.
/// - ``policy`` is read once, when the sink is handed to a ``SyncedState``.
public protocol StateSink<Value>: Sendable {
    /// The type of the values whose changes the sink receives.
    associatedtype Value: Sendable

    /// Delivers an ordered, non-empty batch of changes.
    func send(_ changes: [StateChange<Value>]) async throws

    /// How the sink is fed: batching, buffer, overflow, retries. Defaults to ``SinkPolicy/default``.
    var policy: SinkPolicy { get }
}

extension StateSink {
    /// ``SinkPolicy/default``: every change, batches of up to 100, retries from 100 ms.
    public var policy: SinkPolicy { .default }
}
