import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Which process sends a key's changes to its remote destinations when the key's storage is
/// shared across processes (``FileStateStorage/isSharedAcrossProcesses``): the one holding an
/// exclusive `flock` on `.<file>.sender.lock` beside the key's file.
///
/// Each process's ``CellRemotes`` asks ``isSender`` before it hands a change to a shared
/// destination's pipeline (and before a launch sends unsent changes). The first to ask takes the
/// lock without waiting and keeps it for as long as its cell lives; the others hand nothing on,
/// so no two processes ever send conditional writes that conflict with each other. Their changes
/// reach the server through the file: the sender's watcher sees them as changes made outside,
/// which it sends like its own. When the sender's cell goes or its process dies, the lock is
/// released, and the next process to see a change (its own, or another's through the file) takes
/// it over. That process's sink still holds the validator it last knew, so its first write may be
/// refused once (a conflict its policy resolves): the agreement the previous sender recorded is
/// not handed over.
///
/// When the lock file cannot be opened (a read-only directory), every process sends, as without
/// sharing.
///
/// - Note: All operations on `RemoteSenderLock` are thread-safe.
final class RemoteSenderLock: Sendable {
    private let path: String
    /// The lock file, opened on first use, and whether this process holds its lock.
    private let state = LockedBox<(descriptor: Int32, isHeld: Bool)>((-1, false))

    /// The sender lock of `key`, or `nil` unless `storage` is file storage shared across processes.
    init?(key: String, storage: any StateStorage) {
        guard let file = storage as? FileStateStorage, file.isSharedAcrossProcesses else { return nil }
        let name = ".\(FileStateStorage.fileName(forKey: key)).sender.lock"
        path = file.directory.appendingPathComponent(name, isDirectory: false).path
    }

    deinit {
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
        }
    }

    /// Whether this process sends the key's changes: it holds the lock, or takes it now, without
    /// waiting.
    var isSender: Bool {
        state.withLock { state in
            if state.isHeld { return true }
            if state.descriptor < 0 {
                try? FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                state.descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                guard state.descriptor >= 0 else { return true }
            }
            state.isHeld = flock(state.descriptor, LOCK_EX | LOCK_NB) == 0
            return state.isHeld
        }
    }
}
