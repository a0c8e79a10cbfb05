import Foundation
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The lock of one key of a ``FileStateStorage`` shared across processes: an advisory `flock` on
/// a lock file beside the key's file (`.<file>.lock`), which the kernel releases when the process
/// holding it dies, even by `kill -9`; and, in the same file, the key's write generation.
///
/// `flock` locks an open file description, so threads of one process would share it: an
/// in-process lock is taken first, and only its holder takes the file lock. A thread holds both
/// from ``lock()`` to ``unlock()``.
///
/// The generation is a counter in the lock file's first 8 bytes, which every writer increases,
/// holding the lock, before it renames a new value into place: a process that knows the
/// generation it last read or wrote knows whether the key changed since, even when a reused inode,
/// an equal size and a coarse modification time make a `stat` look the same. (A writer killed
/// between the two steps costs the others one needless read.)
///
/// The next 8 bytes name the transaction whose commit is replacing the key's file, 0 when none
/// is (see ``SharedTransactionRecord``): a holder that finds one there found the commit of a
/// process that died, and completes it before it reads the key. The 16 after them are the end of
/// the key's ``SharedKeyJournal``.
///
/// When the lock file cannot be opened (a read-only directory), the key is locked within the
/// process only, and ``lock()`` says so.
///
/// - Note: All operations on `SharedKeyLock` are thread-safe.
final class SharedKeyLock: @unchecked Sendable {
    /// The lock file's path.
    let path: String
    private let threads = Lock()
    /// The lock file, opened on first use; guarded by `threads`. -1 until then.
    private var descriptor: Int32 = -1
    private let held = Atomic<Bool>(false)

    /// Whether ``lock()`` completes the commit of a transaction it finds marked on the key; `false`
    /// for the locks that completion itself takes.
    private let completesTransactions: Bool

    init(path: String, completesTransactions: Bool = true) {
        self.path = path
        self.completesTransactions = completesTransactions
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Waits for the key, then holds it (within the process, then across processes).
    ///
    /// A key marked with a transaction's commit (its process died in the middle) is let go, the
    /// commit completed (``SharedTransactionRecord/complete(id:directory:lockPath:)``), and the key
    /// taken again: so the holder never reads a key of a half-committed transaction.
    ///
    /// - Returns: Whether other processes are locked out too: `false` when the lock file could not
    ///   be opened.
    @discardableResult
    func lock() -> Bool {
        var mayComplete = completesTransactions
        while true {
            threads.lock()
            held.store(true, ordering: .relaxed)
            if descriptor < 0 { descriptor = Self.openLockFile(path) }
            guard descriptor >= 0 else { return false }
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else { return false }
            }
            let pending = mayComplete ? pendingTransaction : 0
            guard pending != 0 else { return true }
            unlock()
            // A commit that cannot be completed (a full disk) is tried again by the next holder.
            mayComplete = SharedTransactionRecord.complete(
                id: pending, directory: (path as NSString).deletingLastPathComponent, lockPath: path)
        }
    }

    /// Lets the key go; called by the thread that holds it.
    func unlock() {
        if descriptor >= 0 { flock(descriptor, LOCK_UN) }
        held.store(false, ordering: .relaxed)
        threads.unlock()
    }

    /// Whether a thread of this process holds the key, or waits for the file lock, now: a hint
    /// that may be stale when it returns.
    var isHeld: Bool {
        held.load(ordering: .relaxed)
    }

    /// The key's write generation; 0 before the first write. Called holding the key.
    var generation: UInt64 {
        guard descriptor >= 0 else { return 0 }
        var value: UInt64 = 0
        let count = withUnsafeMutableBytes(of: &value) { pread(descriptor, $0.baseAddress, 8, 0) }
        return count == 8 ? UInt64(littleEndian: value) : 0
    }

    /// Increases the generation, before a new value replaces the key's file, and returns it.
    /// Called holding the key.
    func advanceGeneration() -> UInt64 {
        let next = generation &+ 1
        guard descriptor >= 0 else { return next }
        var value = next.littleEndian
        _ = withUnsafeBytes(of: &value) { pwrite(descriptor, $0.baseAddress, 8, 0) }
        return next
    }

    /// The transaction whose commit holds the key, or 0; set, forced to disk, before the commit
    /// replaces the key's file, and cleared after. Called holding the key.
    var pendingTransaction: UInt64 {
        guard descriptor >= 0 else { return 0 }
        var value: UInt64 = 0
        let count = withUnsafeMutableBytes(of: &value) { pread(descriptor, $0.baseAddress, 8, 8) }
        return count == 8 ? UInt64(littleEndian: value) : 0
    }

    /// The transaction whose commit holds the key at `path`, read without the key: a hint, except
    /// that a mark once cleared is never set again for the same transaction.
    static func peekPendingTransaction(path: String) -> UInt64 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var value: UInt64 = 0
        let count = withUnsafeMutableBytes(of: &value) { pread(descriptor, $0.baseAddress, 8, 8) }
        return count == 8 ? UInt64(littleEndian: value) : 0
    }

    /// Marks the key as being replaced by the transaction `id` (0 clears it), forcing the mark to
    /// disk when `durably`. Called holding the key.
    func markPendingTransaction(_ id: UInt64, durably: Bool) throws {
        guard descriptor >= 0 else { return }
        var value = id.littleEndian
        let count = withUnsafeBytes(of: &value) { pwrite(descriptor, $0.baseAddress, 8, 8) }
        guard count == 8, !durably || fsync(descriptor) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// The sequence number of the last entry of the key's journal and the length of what is whole
    /// of it; zeros before the first. Called holding the key.
    var journalEnd: (lastSequence: UInt64, length: UInt64) {
        guard descriptor >= 0 else { return (0, 0) }
        var values: (UInt64, UInt64) = (0, 0)
        let count = withUnsafeMutableBytes(of: &values) { pread(descriptor, $0.baseAddress, 16, 16) }
        guard count == 16 else { return (0, 0) }
        return (UInt64(littleEndian: values.0), UInt64(littleEndian: values.1))
    }

    /// Records the end of the key's journal after an append. Called holding the key.
    func setJournalEnd(lastSequence: UInt64, length: UInt64) {
        guard descriptor >= 0 else { return }
        var values = (lastSequence.littleEndian, length.littleEndian)
        _ = withUnsafeBytes(of: &values) { pwrite(descriptor, $0.baseAddress, 16, 16) }
    }

    /// Opens (creating) the lock file and its directory, close-on-exec.
    private static func openLockFile(_ path: String) -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
}
