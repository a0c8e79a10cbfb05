import Foundation

/// The outbox logs open in this process, one per file however its path is spelled.
///
/// A container asking for a file that a live container holds is refused; one asking for a file
/// that only a released container's pipeline still holds takes it over, so a view model created
/// again on the same outbox continues its log instead of erasing it.
///
/// A log whose last reference is gone reads `nil` here before its `deinit` has closed its lock
/// file. A container made on the file in that moment waits for the close, which takes
/// microseconds, instead of finding the file locked and running without a log: that lost the
/// offline edit a relaunched container was to deliver (a container without storage then sent
/// its default value in its place).
enum OutboxLogRegistry {
    final class WeakLog: Sendable {
        weak let log: (any AnyObject & Sendable)?
        let lockFileState: LockFileState

        init(_ log: any AnyObject & Sendable, lockFileState: LockFileState) {
            self.log = log
            self.lockFileState = lockFileState
        }

        /// Whether the entry can go: its log released and its lock file closed.
        var isGone: Bool { log == nil && lockFileState.isClosed }
    }

    static let logs = LockedBox<[String: WeakLog]>([:])

    /// The log of `fileURL`, owned by a new container `key` from now on, and the owner number;
    /// `nil` (reported) when it cannot be owned.
    static func open<Value>(fileURL: URL, key: String, as: Value.Type) -> (OutboxLog<Value>, UInt64)? {
        let path = canonicalPath(fileURL)
        return logs.withLock { logs in
            logs = logs.filter { !$0.value.isGone }
            if let released = logs[path], released.log == nil {
                released.lockFileState.waitUntilClosed()
                logs[path] = nil
            }
            if let existing = logs[path]?.log {
                guard let log = existing as? OutboxLog<Value>, log.key == key, !log.hasLiveOwner else {
                    let holder = (existing as? any KeyedLog)?.key ?? "?"
                    OutboxLog<Value>.report(
                        .outboxInUse, key: key,
                        "the outbox \(fileURL.path) is in use by a live container (key '\(holder)') in this process; "
                            + "one file has one owner, so this container's changes are not logged")
                    return nil
                }
                return (log, log.takeOwnership())
            }
            guard let log = OutboxLog<Value>.open(fileURL: URL(fileURLWithPath: path), key: key) else { return nil }
            logs[path] = WeakLog(log, lockFileState: log.lockFileState)
            return (log, log.takeOwnership())
        }
    }

    /// The path with `.`, `..` and symbolic links of its directory resolved.
    static func canonicalPath(_ fileURL: URL) -> String {
        let directory = fileURL.deletingLastPathComponent()
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.standardizedFileURL.resolvingSymlinksInPath()
            .appendingPathComponent(fileURL.lastPathComponent).path
    }
}

/// A log's key, whatever its value type.
protocol KeyedLog: AnyObject {
    var key: String { get }
}

extension OutboxLog: KeyedLog {}
