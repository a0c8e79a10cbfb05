import Foundation

/// A sink wrapper that logs every change to disk before its writer returns and forgets it once
/// the wrapped sink accepted it, so changes survive a crash or a `kill -9`.
///
/// ```swift
/// let order = SyncedState(Order(), key: "order") {
///     DurableOutbox(fileURL: supportDirectory.appending(path: "order.outbox"), wrapping: HTTPSyncSink(...))
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
///   idempotency key, so the destination can drop them. A crash before delivery delivers every
///   logged change exactly once.
/// - **Crashes, not power loss**, unless `synchronizesEachRecord` is `true` (an `fsync` per change).
/// - **Damage is skipped, not fatal.** A record that does not decode (a torn last line after a
///   crash, a corrupted byte) is skipped with a ``StateDiagnostic/Kind/outboxCorruptRecord``
///   diagnostic; the log is then rewritten without it.
///
/// The outbox does not restore the container's value (that is persistence's job), only its version.
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
    private var handle: FileHandle?
    private var lastRecorded: UInt64 = 0
    private var lastAcknowledged: UInt64 = 0
    private var recordsSinceCompaction = 0
    private var key = ""

    /// Wraps `sink`, logging changes to `fileURL` (created with its directory when missing).
    ///
    /// - Parameters:
    ///   - fileURL: The log; use one file per container, never shared between two live containers.
    ///   - sink: Where the changes go.
    ///   - synchronizesEachRecord: `fsync` each record, to survive power loss too. Default `false`.
    public init(fileURL: URL, wrapping sink: Wrapped, synchronizesEachRecord: Bool = false) {
        self.wrapped = sink
        self.fileURL = fileURL
        self.synchronizesEachRecord = synchronizesEachRecord
    }

    deinit {
        try? handle?.close()
    }
}

extension DurableOutbox: StateSink {
    /// The wrapped sink's policy.
    public var policy: SinkPolicy { wrapped.policy }

    /// Sends `changes` through the wrapped sink, then records them as acknowledged.
    public func send(_ changes: [StateChange<Wrapped.Value>]) async throws {
        try await wrapped.send(changes)
        guard let last = changes.last else { return }
        lock.withLock {
            lastAcknowledged = max(lastAcknowledged, last.version)
            if lastAcknowledged >= lastRecorded && recordsSinceCompaction >= 256 {
                compactLocked(pending: [])
            } else {
                appendLocked(LogRecord(acknowledged: last.version))
            }
        }
    }
}

extension DurableOutbox: WriterThreadSink {
    func record(_ change: StateChange<Wrapped.Value>) {
        lock.withLock {
            lastRecorded = change.version
            appendLocked(LogRecord(change: change))
        }
    }

    func recover(key: String) -> (pending: [StateChange<Wrapped.Value>], lastVersion: UInt64) {
        lock.withLock {
            self.key = key
            var changes: [StateChange<Wrapped.Value>] = []
            var acknowledged: UInt64 = 0
            let data = (try? Data(contentsOf: fileURL)) ?? Data()
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() where !line.isEmpty {
                let isTornTail = index == lines.count - 1
                guard !isTornTail, let record = try? decoder.decode(LogRecord<Wrapped.Value>.self, from: Data(line))
                else {
                    reportCorruptRecord(
                        line: index + 1, bytes: line.count, isTail: isTornTail || index == lines.count - 2)
                    continue
                }
                if let change = record.change { changes.append(change) }
                if let version = record.acknowledged { acknowledged = max(acknowledged, version) }
            }
            var seen = Set<UInt64>()
            let pending = changes.filter { $0.version > acknowledged && seen.insert($0.version).inserted }
            let lastVersion = max(acknowledged, changes.map(\.version).max() ?? 0)
            lastRecorded = lastVersion
            lastAcknowledged = pending.isEmpty ? lastVersion : acknowledged
            compactLocked(pending: pending)
            return (pending, lastVersion)
        }
    }

    private func reportCorruptRecord(line: Int, bytes: Int, isTail: Bool) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .outboxCorruptRecord,
                keys: [key],
                message: "durable outbox \(fileURL.path): skipped \(isTail ? "the damaged last" : "a damaged") "
                    + "record (line \(line), \(bytes) bytes) that does not decode"
            )
        )
    }

    /// Rewrites the log as `pending` plus the acknowledged mark, atomically, and reopens it.
    private func compactLocked(pending: [StateChange<Wrapped.Value>]) {
        try? handle?.close()
        handle = nil
        var data = encode(LogRecord(acknowledged: lastAcknowledged)) ?? Data()
        for change in pending { data.append(encode(LogRecord(change: change)) ?? Data()) }
        do {
            try FileManager.default.createDirectory(
                at: fileURL.deletingLastPathComponent(),
                withIntermediateDirectories: true
            )
            try data.write(to: fileURL, options: .atomic)
            let handle = try FileHandle(forWritingTo: fileURL)
            try handle.seekToEnd()
            self.handle = handle
            recordsSinceCompaction = 0
        } catch {
            reportWriteFailure(error)
        }
    }

    private func appendLocked(_ record: LogRecord<Wrapped.Value>) {
        guard let handle, let line = encode(record) else { return }
        do {
            try handle.write(contentsOf: line)
            if synchronizesEachRecord { try handle.synchronize() }
            recordsSinceCompaction += 1
        } catch {
            reportWriteFailure(error)
        }
    }

    private func encode(_ record: LogRecord<Wrapped.Value>) -> Data? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        do {
            var data = try encoder.encode(record)
            data.append(0x0A)
            return data
        } catch {
            reportWriteFailure(error)
            return nil
        }
    }

    private func reportWriteFailure(_ error: any Error) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .outboxWriteFailed,
                keys: [key],
                message: "durable outbox \(fileURL.path): could not write the log; changes are delivered but would "
                    + "not survive a crash",
                error: error
            )
        )
    }
}

/// One line of an outbox log: a change to deliver, or the version up to which everything was delivered.
private struct LogRecord<Value: Codable>: Codable {
    var change: StateChange<Value>?
    var acknowledged: UInt64?
}
