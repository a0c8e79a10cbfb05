import Foundation

/// Where a ``SyncedState``'s changes stand with its sinks, all sinks together: what waits, whether
/// a sink is paused, and why it is failing.
///
/// Read it from ``SyncedState/syncStatus``, which updates it whenever a sink's statistics
/// change, so a settings screen can show one line for it:
///
/// ```swift
/// func syncLine(_ status: SyncStatus) -> String {
///     if status.isSynced { return "Synced" }
///     if !status.hasContactedEveryDestination && status.lastError == nil { return "Connecting…" }
///     if let reason = status.lastError {
///         let retry = status.retryAt.map { ", retrying at \($0.formatted(date: .omitted, time: .shortened))" }
///         return "Offline: \(reason)" + (retry ?? "")
///     }
///     return "\(status.pending) changes waiting"
/// }
/// ```
///
/// - Note: `SyncStatus` is a value type; it is `Sendable`.
public struct SyncStatus: Sendable, Equatable {
    /// Local changes not yet on a destination: the most any one sink has still to deliver (see
    /// ``SinkStatistics/pending``).
    ///
    /// One edit made offline is one change waiting, however many sinks wait for it: a container
    /// with an outbox to a server and an analytics sink, both offline, says `1`, not `2`. With two
    /// remote destinations, one that lacks three changes and one that lacks one, it says `3`;
    /// ``sinks`` has each sink's count.
    public let pending: Int
    /// Whether some sink is paused after repeated failures (see
    /// ``SinkPolicy/Failure/pauseAndKeep(retryEvery:)``).
    public let isPaused: Bool
    /// A one-line message of the most recent failure of a sink that has not delivered since,
    /// such as `"HTTP 503 (retryable)"`; `nil` once every sink that failed delivered again.
    public let lastError: String?
    /// When a sink last delivered a batch, or `nil` before the first delivery.
    public let lastDeliveredAt: Date?
    /// When the first sink waiting to retry (backing off or paused) will try again, or `nil`
    /// when none is waiting.
    public let retryAt: Date?
    /// Each sink's statistics, in the order the sinks were given, as ``SyncedState/statistics``
    /// gives them.
    public let sinks: [SinkStatistics]
    /// Why storage does not hold the container's newest value (a persisted container's
    /// ``SyncedState/saveError``, one line), or `nil`: the sinks may have it, the device does not.
    public let saveError: String?

    /// Whether every remote destination has answered at least once since the container started
    /// (a load or a send that succeeded): `false` while any remote-sync sink is
    /// ``SinkStatistics/isAwaitingFirstContact``.
    ///
    /// Until then the status is unknown, not synced: the server may hold a value the container
    /// has not seen. Sinks that only send (analytics, logs) have no contact to wait for, so a
    /// container without remote-sync sinks has always contacted every destination.
    ///
    /// ```swift
    /// let status = profile.syncStatus.value
    /// if !status.hasContactedEveryDestination {
    ///     print(status.lastError.map { "Can't reach the server: \($0)" } ?? "Connecting…")
    /// }
    /// ```
    public var hasContactedEveryDestination: Bool {
        !sinks.contains { $0.isAwaitingFirstContact }
    }

    /// Whether every destination is known to hold the container's value: each remote one has
    /// answered (``hasContactedEveryDestination``), nothing is pending, no sink is paused and none
    /// is failing, and storage holds it too (no ``saveError``).
    public var isSynced: Bool {
        pending == 0 && !isPaused && lastError == nil && saveError == nil && hasContactedEveryDestination
    }

    /// Creates a status, for previews and tests of code that shows one.
    ///
    /// ```swift
    /// let offline = SyncStatus(pending: 3, isPaused: true, lastError: "HTTP 503 (retryable)")
    /// ```
    public init(
        pending: Int = 0,
        isPaused: Bool = false,
        lastError: String? = nil,
        lastDeliveredAt: Date? = nil,
        retryAt: Date? = nil,
        sinks: [SinkStatistics] = [],
        saveError: String? = nil
    ) {
        self.pending = pending
        self.isPaused = isPaused
        self.lastError = lastError
        self.lastDeliveredAt = lastDeliveredAt
        self.retryAt = retryAt
        self.sinks = sinks
        self.saveError = saveError
    }

    /// The status of sinks with these statistics, each with the moment it last failed, and of
    /// storage with `saveError`.
    init(_ snapshots: [(statistics: SinkStatistics, lastFailedAt: ContinuousClock.Instant?)], saveError: (any Error)?) {
        let sinks = snapshots.map(\.statistics)
        self.sinks = sinks
        self.saveError = saveError.map(shortErrorMessage)
        pending = sinks.map(\.pending).max() ?? 0
        isPaused = sinks.contains { $0.isPaused }
        let failures = snapshots.compactMap { snapshot in
            snapshot.lastFailedAt.flatMap { at in snapshot.statistics.lastError.map { (at: at, message: $0) } }
        }
        lastError = failures.max { $0.at < $1.at }?.message
        lastDeliveredAt = sinks.compactMap(\.lastDeliveredAt).max()
        retryAt = sinks.compactMap(\.retryAt).min()
    }
}
