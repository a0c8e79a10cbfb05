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
/// The lock itself; ``CellRemotes`` decides when to take it and what taking it over involves
/// (adopting the records the previous sender left). Held for as long as this object lives; the
/// kernel releases it when the process dies.
///
/// When the lock file cannot be opened (a read-only directory), every process sends, as without
/// sharing.
///
/// - Note: All operations on `RemoteSenderLock` are thread-safe.
final class RemoteSenderLock: Sendable {
    /// Where a process that takes the lock reads the previous sender's records: off the writers'
    /// threads.
    static let takeOverQueue = DispatchQueue(label: "StateKit.sender-takeover", qos: .utility)

    private let path: String
    /// The lock file, opened on first use; whether this process holds its lock; whether it sends
    /// (it holds the lock and adopted what the previous sender left).
    private let state = LockedBox<(descriptor: Int32, isHeld: Bool, isSending: Bool)>((-1, false, false))

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

    /// Whether this process holds the lock; takes nothing.
    var isHeld: Bool {
        state.withLock { $0.isHeld }
    }

    /// Whether this process sends: it holds the lock, and adopted the records the previous sender
    /// left. Only then does it write the key's sync record.
    var isSending: Bool {
        state.withLock { $0.isSending }
    }

    /// The records the previous sender left are adopted: this process sends from now on.
    func startSending() {
        state.withLock { $0.isSending = true }
    }

    /// Takes the lock without waiting, unless this process holds it; returns whether it holds it
    /// now.
    func tryLock() -> Bool {
        state.withLock { state in
            if state.isHeld { return true }
            if state.descriptor < 0 {
                try? FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                state.descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
                guard state.descriptor >= 0 else {
                    state.isHeld = true
                    return true
                }
            }
            state.isHeld = flock(state.descriptor, LOCK_EX | LOCK_NB) == 0
            return state.isHeld
        }
    }
}
