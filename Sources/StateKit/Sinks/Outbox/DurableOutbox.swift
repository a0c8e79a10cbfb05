import Foundation

/// A sink wrapper that logs every change to disk before its writer returns and forgets it once
/// the wrapped sink accepted it, so changes survive a crash or a `kill -9`.
///
/// ```swift
/// let order = SyncedState(Order(), key: "order") {
///     DurableOutbox(fileURL: supportDirectory.appending(path: "order.outbox"), wrapping: LoggingSink())
/// }
/// ```
///
/// On the next launch, a ``SyncedState`` given an outbox over the same file first delivers the
/// changes that were logged and not acknowledged, in order, and continues its
/// ``State/version`` after the last logged one, so ``StateChange/idempotencyKey``s never repeat.
///
/// ## Guarantees
/// - **At-least-once, in order.** A change is acknowledged (an `acknowledged` record appended)
///   after the wrapped sink's ``StateSink/send(_:)`` returns. A crash between the two delivers
///   that batch again after the restart: duplicates carry the same ``StateChange/version`` and
///   idempotency key, so the destination can drop them. No change reaches the sink after a newer one.
/// - **Nothing logged is dropped.** When the sink lags and its buffer
///   (``SinkPolicy/bufferLimit``) is full, the log is the buffer: later changes stay on disk only
///   and are read back in order as the sink catches up. The overflow policy never drops them.
/// - **One file, one owner.** A second live container on the same file, in this process or another
///   (an advisory lock on `<file>.lock`), is refused with a ``StateDiagnostic/Kind/outboxInUse``
///   diagnostic: its changes still go to the sink, but are not logged. A container created again
///   after the first was released takes the log over, with the version where the first left it;
///   the released container's sink stops sending.
/// - **Damage is kept aside, not fatal.** A record that cannot be trusted (one that does not
///   decode, a torn last line after a crash or a full disk, a version above 2⁵³, an
///   acknowledgement of a version never logged, a change of another key) is copied to
///   `<file>.set-aside-<time>`, reported as ``StateDiagnostic/Kind/outboxCorruptRecord``, and
///   skipped; the records after it are delivered. A file that cannot be read is never written
///   (``StateDiagnostic/Kind/outboxUnreadable``).
/// - **Crashes, not power loss**, unless `synchronizesEachRecord` is `true` (an `fsync` per change).
///
/// For a container without storage, the log is where its value lives: it keeps the newest change
/// even once delivered, and the next launch starts from that value and version, never from the
/// default (which it would otherwise hand to a remote sink as a local edit). A persisted container
/// starts from the log's newest value too, and saves it, when it is the first container of its
/// key in the process: a kill may have come after the change was logged and before it was saved,
/// and the outbox delivers it all the same. Around a remote-sync sink in a container without storage, it keeps the sink's ``SyncRecord``
/// beside its log (`<key>.sync-record.json`), so a replayed change goes out on the `ETag` it was
/// made against.
/// It logs each change on the writer's thread, under the container's lock: writes to an outboxed
/// container cost a file append.
///
/// - Note: All operations on `DurableOutbox` are thread-safe.
public final class DurableOutbox<Wrapped: StateSink>: @unchecked Sendable where Wrapped.Value: Codable {
    /// The sink that receives the changes.
    public let wrapped: Wrapped
    /// The log file.
    public let fileURL: URL
    /// Whether each record is forced to stable storage (`fsync`) before the writer returns.
    public let synchronizesEachRecord: Bool
    private let lock = Lock()
    private var attachment: (log: OutboxLog<Wrapped.Value>, owner: UInt64)?
    private var isOpened = false

    /// Wraps `sink`, logging changes to `fileURL` (created with its directory when missing).
    ///
    /// - Parameters:
    ///   - fileURL: The log; one file per container.
    ///   - sink: Where the changes go.
    ///   - synchronizesEachRecord: `fsync` each record, to survive power loss too. Default `false`.
    public init(fileURL: URL, wrapping sink: Wrapped, synchronizesEachRecord: Bool = false) {
        self.wrapped = sink
        self.fileURL = fileURL
        self.synchronizesEachRecord = synchronizesEachRecord
    }
}

extension DurableOutbox: StateSink {
    /// The wrapped sink's policy.
    public var policy: SinkPolicy { wrapped.policy }

    /// Sends the changes not yet acknowledged through the wrapped sink, then records them as
    /// acknowledged; sends nothing once another container took the log over.
    ///
    /// Sends through one log take turns, so a container that took the log over sends only after
    /// the released one's last send returned. A task cancelled while it waits for its turn (a
    /// released container's pipeline stopped by its drain timeout) sends nothing and throws
    /// `CancellationError`: the changes stay in the log, unacknowledged, for the next owner.
    public func send(_ changes: [StateChange<Wrapped.Value>]) async throws {
        guard let (log, owner) = lock.withLock({ attachment }) else {
            try await wrapped.send(changes)
            return
        }
        try await log.sendTurn.run {
            guard log.isCurrent(owner) else { return }
            let acknowledged = log.lastAcknowledgedVersion
            let fresh = changes.filter { $0.version > acknowledged }
            guard let last = fresh.last else { return }
            // A remote sink is not sent back what came from its remote copy (logged all the same,
            // so that versions continue).
            let sent = wrapped is any RemoteSyncSink<Wrapped.Value> ? fresh.filter { $0.origin != .remote } : fresh
            do {
                if !sent.isEmpty { try await wrapped.send(sent) }
            } catch let superseded as SupersededByRemoteValue {
                // Never sent again: the destination's value replaced them.
                log.settle(fresh[0].version...last.version, as: .discarded(reason: superseded.reason))
                throw superseded
            }
            log.acknowledge(last.version)
        }
    }
}

extension DurableOutbox: LogBackedSink {
    func open(key: String) -> OutboxOpening? {
        let isFirst = lock.withLock {
            defer { isOpened = true }
            return !isOpened
        }
        guard isFirst else {
            OutboxLog<Wrapped.Value>.report(
                .outboxInUse, key: key,
                "this DurableOutbox (\(fileURL.path)) already serves another container; give each container its own")
            return nil
        }
        guard let (log, owner) = OutboxLogRegistry.open(fileURL: fileURL, key: key, as: Wrapped.Value.self) else {
            return nil
        }
        log.synchronizesEachRecord = log.synchronizesEachRecord || synchronizesEachRecord
        lock.withLock { attachment = (log, owner) }
        let state = log.state
        return OutboxOpening(
            lastVersion: state.lastRecorded, firstPending: state.firstPending, outcomes: state.outcomes)
    }

    func record(_ change: StateChange<Wrapped.Value>) {
        lock.withLock { attachment }?.log.record(change)
    }

    func changes(from version: UInt64, maximumCount: Int) -> [StateChange<Wrapped.Value>] {
        lock.withLock { attachment }?.log.changes(from: version, maximumCount: maximumCount) ?? []
    }

    var lastRecordedVersion: UInt64 {
        lock.withLock { attachment }?.log.lastRecordedVersion ?? 0
    }

    var newestChange: StateChange<Wrapped.Value>? {
        lock.withLock { attachment }?.log.newestChange
    }

    func settle(_ versions: ClosedRange<UInt64>, as fate: SinkOutcomes.Fate) {
        lock.withLock { attachment }?.log.settle(versions, as: fate)
    }

    func synchronize(through version: UInt64) async -> Bool {
        guard let log = lock.withLock({ attachment })?.log else { return false }
        return await log.synchronize(through: version)
    }

    var logFileURL: URL { fileURL }

    func release() {
        guard let (log, owner) = lock.withLock({ attachment }) else { return }
        log.release(owner)
    }
}

/// What a log-backed sink found when its container opened it.
struct OutboxOpening {
    /// The last version logged; the container continues after it.
    var lastVersion: UInt64
    /// The first logged version not yet acknowledged, if any: delivery starts there.
    var firstPending: UInt64?
    /// What became of the changes the sink settled without delivering them, in earlier launches.
    var outcomes: SinkOutcomes
}

/// A sink that logs each change on the writer's thread, before the write returns (the durable
/// outbox), and can give changes back from its log, so its pipeline never has to drop one.
protocol LogBackedSink<Value>: StateSink {
    /// Opens the log for the container `key`; `nil` (reported) when it cannot be used, and then
    /// changes are not logged.
    func open(key: String) -> OutboxOpening?
    /// Logs `change`; called under the container's lock, in version order. Must not touch the container.
    func record(_ change: StateChange<Value>)
    /// Up to `maximumCount` logged changes from `version` on, in order.
    func changes(from version: UInt64, maximumCount: Int) -> [StateChange<Value>]
    /// The last version logged.
    var lastRecordedVersion: UInt64 { get }
    /// The newest change logged, delivered or not; see ``OutboxLog/newestChange``.
    var newestChange: StateChange<Value>? { get }
    /// Records that the sink settled `versions` without delivering them; they are not sent again.
    func settle(_ versions: ClosedRange<UInt64>, as fate: SinkOutcomes.Fate)
    /// Forces the log to disk; whether it holds the change of `version` (or a newer one) there.
    func synchronize(through version: UInt64) async -> Bool
    /// The log's file: a container without storage keeps its sync records beside it.
    var logFileURL: URL { get }
    /// Tells the log its container was released, so another may take it over.
    func release()
}
