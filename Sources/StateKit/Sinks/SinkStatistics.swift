import Foundation

/// What one sink of a ``SyncedState`` has done so far.
///
/// Read it with ``SyncedState/statistics``; every change the container handed to the sink is
/// accounted for in exactly one of ``sent``, ``failed``, ``dropped``, ``coalesced`` or
/// ``pending``, so nothing is ever lost silently.
public struct SinkStatistics: Sendable, Equatable, CustomStringConvertible {
    /// Changes the sink accepted (``StateSink/send(_:)`` returned).
    public var sent = 0
    /// Changes given up after repeated failures or refused for good by the sink.
    public var failed = 0
    /// Retry attempts made (one per failed attempt that was tried again).
    public var retried = 0
    /// Changes dropped because the buffer was full.
    public var dropped = 0
    /// Changes replaced by a newer one under ``SinkPolicy/Overflow/coalesceToLatest``.
    public var coalesced = 0
    /// Changes waiting in the buffer or being sent.
    public var pending = 0
    /// Whether the sink is paused after repeated failures (see ``SinkPolicy/Failure/pauseAndKeep(retryEvery:)``).
    public var isPaused = false
    /// A one-line message (at most 120 characters) of the last error the sink threw, such as
    /// `"HTTP 503 (retryable)"`; `nil` before any failure and again once the sink delivers a batch.
    public var lastError: String?
    /// When the sink last delivered a batch, or `nil` before its first.
    public var lastDeliveredAt: Date?
    /// When the sink will next try a batch that failed (backing off or paused), or `nil` when it
    /// is not waiting to retry.
    public var retryAt: Date?
    /// Whether the sink's destination has not answered yet: a remote-sync sink (see
    /// ``RemoteSyncSink``) before its first successful load or send. Until then nobody knows
    /// whether the destination holds the container's value, so ``SyncStatus/isSynced`` is
    /// `false`. Always `false` for other sinks (analytics, logs): they only send, so what they
    /// have not sent is ``pending`` and nothing else.
    public var isAwaitingFirstContact = false
    /// The sink's ``StateSink/name``: its type's name unless given with ``StateSink/named(_:)``.
    public var sinkName = ""

    /// Creates empty statistics.
    public init() {}

    /// One line with every counter.
    public var description: String {
        (sinkName.isEmpty ? "" : "\(sinkName): ")
            + "sent \(sent), failed \(failed), retried \(retried), dropped \(dropped), coalesced \(coalesced), "
            + "pending \(pending)\(isAwaitingFirstContact ? ", not contacted yet" : "")\(isPaused ? ", paused" : "")\(lastError.map { ", last error: \($0)" } ?? "")"
    }
}
