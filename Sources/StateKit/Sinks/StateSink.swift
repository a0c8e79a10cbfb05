import Foundation

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
/// - ``policy`` and ``name`` are read once, when the sink is handed to a ``SyncedState``.
///
/// `StateKitTesting`'s `checkStateSinkContract(_:sampleValues:received:)` checks these
/// requirements; run it in your sink's tests.
public protocol StateSink<Value>: Sendable {
    /// The type of the values whose changes the sink receives.
    associatedtype Value: Sendable

    /// Delivers an ordered, non-empty batch of changes.
    func send(_ changes: [StateChange<Value>]) async throws

    /// How the sink is fed: batching, buffer, overflow, retries. Defaults to ``SinkPolicy/default``.
    var policy: SinkPolicy { get }

    /// What ``SyncedState/statistics`` and diagnostics call the sink. Defaults to its type's name;
    /// give one when adding the sink with ``named(_:)``.
    var name: String { get }
}

extension StateSink {
    /// ``SinkPolicy/default``: every change, batches of up to 100, retries from 100 ms.
    public var policy: SinkPolicy { .default }

    /// The sink's type name, such as `"LoggingSink<Int>"`.
    public var name: String { String(describing: type(of: self)) }

    /// The same sink under another name, so that its ``SyncedState/statistics`` entry and its
    /// diagnostics say which one it is.
    ///
    /// ```swift
    /// let cart = SyncedState([String](), key: "cart") {
    ///     LoggingSink().named("log")
    /// }
    /// print(cart.statistics(for: "log")?.sent ?? 0)
    /// ```
    public func named(_ name: String) -> NamedSink<Self> {
        NamedSink(base: self, name: name)
    }
}

/// A sink under a name of your choosing; see ``StateSink/named(_:)``.
///
/// It sends through its base sink with the base's policy; a ``DurableOutbox`` keeps logging
/// changes on the writer's thread when named.
public struct NamedSink<Base: StateSink>: StateSink {
    /// The sink that does the sending.
    public let base: Base
    /// The name given.
    public let name: String

    /// The base sink's policy.
    public var policy: SinkPolicy { base.policy }

    /// Sends through the base sink.
    public func send(_ changes: [StateChange<Base.Value>]) async throws {
        try await base.send(changes)
    }
}

extension NamedSink: LogBackedSink where Base: LogBackedSink {
    func open(key: String) -> OutboxOpening? {
        base.open(key: key)
    }

    func record(_ change: StateChange<Base.Value>) {
        base.record(change)
    }

    func changes(from version: UInt64, maximumCount: Int) -> [StateChange<Base.Value>] {
        base.changes(from: version, maximumCount: maximumCount)
    }

    var lastRecordedVersion: UInt64 { base.lastRecordedVersion }

    var newestChange: StateChange<Base.Value>? { base.newestChange }

    func settle(_ versions: ClosedRange<UInt64>, as fate: SinkOutcomes.Fate) {
        base.settle(versions, as: fate)
    }

    func synchronize(through version: UInt64) async -> Bool {
        await base.synchronize(through: version)
    }

    var logFileURL: URL { base.logFileURL }

    func release() {
        base.release()
    }
}
