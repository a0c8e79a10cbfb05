/// A destination for a container's changes: an analytics SDK, a remote server, a log.
///
/// `SyncedState` hands each of its sinks ordered batches of changes from a delivery task of
/// the sink's own, so a slow or failing sink never holds back writers or other sinks.
///
/// # Implementation requirements
/// - ``send(_:)`` receives batches in ``StateChange/version`` order; throw to have the batch
///   retried (same changes, same order) as the sink's policy says.
/// - Delivery is at-least-once: a retried batch may repeat changes the destination already
///   accepted. Send ``StateChange/idempotencyKey`` along so the destination can drop duplicates.
public protocol StateSink<Value>: Sendable {
    /// The type of the values whose changes the sink receives.
    associatedtype Value: Sendable

    /// Delivers an ordered, non-empty batch of changes.
    func send(_ changes: [StateChange<Value>]) async throws
}
