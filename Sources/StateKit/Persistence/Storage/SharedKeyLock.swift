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
    /// The lock file's words (see ``readHeader()``); guarded by holding the key.
    private var words: (generation: UInt64, pending: UInt64, journalLast: UInt64, journalLength: UInt64) = (0, 0, 0, 0)
    /// The thread that holds the key, or waits for the file lock, or 0.
    private let holder = Atomic<UInt>(0)

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
            holder.store(currentThreadID(), ordering: .relaxed)
            if descriptor < 0 { descriptor = Self.openLockFile(path) }
            guard descriptor >= 0 else { return false }
            while flock(descriptor, LOCK_EX) != 0 {
                guard errno == EINTR else {
                    readHeader()
                    return false
                }
            }
            readHeader()
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
        holder.store(0, ordering: .relaxed)
        threads.unlock()
    }

    /// Whether the calling thread holds the key (or waits for the file lock): it must not wait
    /// for the key again.
    var isHeldByCurrentThread: Bool {
        holder.load(ordering: .relaxed) == currentThreadID()
    }

    /// Reads the lock file's four words (generation, pending transaction, journal's last sequence
    /// number and length) in one call, when the key is taken; its holder keeps them up to date.
    private func readHeader() {
        var read: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        let count = descriptor < 0 ? 0 : withUnsafeMutableBytes(of: &read) { pread(descriptor, $0.baseAddress, 32, 0) }
        // A shorter file (written before the later words existed) holds zeros there.
        func word(_ index: Int, _ value: UInt64) -> UInt64 {
            count >= (index + 1) * 8 ? UInt64(littleEndian: value) : 0
        }
        words = (word(0, read.0), word(1, read.1), word(2, read.2), word(3, read.3))
    }

    /// Writes `value` to the lock file's word at `index`.
    private func write(_ value: UInt64, at index: Int) -> Bool {
        guard descriptor >= 0 else { return true }
        var little = value.littleEndian
        return withUnsafeBytes(of: &little) { pwrite(descriptor, $0.baseAddress, 8, off_t(8 * index)) } == 8
    }

    /// The key's write generation; 0 before the first write. Called holding the key.
    var generation: UInt64 {
        words.generation
    }

    /// Increases the generation, before a new value replaces the key's file, and returns it.
    /// Called holding the key.
    func advanceGeneration() -> UInt64 {
        words.generation &+= 1
        _ = write(words.generation, at: 0)
        return words.generation
    }

    /// The transaction whose commit holds the key, or 0; set, forced to disk, before the commit
    /// replaces the key's file, and cleared after. Called holding the key.
    var pendingTransaction: UInt64 {
        words.pending
    }

    /// The transaction whose commit holds the key at `path`, read without the key: a hint, except
    /// that a mark once cleared is never set again for the same transaction.
    static func peekPendingTransaction(path: String) -> UInt64 {
        peekWord(1, path: path)
    }

    /// The sequence number of the last entry of the key's journal whose lock file is at `path`,
    /// read without the key: it only grows, so a reader that finds it below a number finds that
    /// no entry has that number yet (0 when there is no lock file).
    static func peekJournalLast(path: String) -> UInt64 {
        peekWord(2, path: path)
    }

    /// The word at `index` of the lock file at `path`, read without the key; 0 when there is none.
    private static func peekWord(_ index: Int, path: String) -> UInt64 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var value: UInt64 = 0
        let count = withUnsafeMutableBytes(of: &value) { pread(descriptor, $0.baseAddress, 8, off_t(8 * index)) }
        return count == 8 ? UInt64(littleEndian: value) : 0
    }

    /// Marks the key as being replaced by the transaction `id` (0 clears it), forcing the mark to
    /// disk when `durably`. Called holding the key.
    func markPendingTransaction(_ id: UInt64, durably: Bool) throws {
        words.pending = id
        guard write(id, at: 1), descriptor < 0 || !durably || fsync(descriptor) == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// The sequence number of the last entry of the key's journal and the length of what is whole
    /// of it; zeros before the first. Called holding the key.
    var journalEnd: (lastSequence: UInt64, length: UInt64) {
        (words.journalLast, words.journalLength)
    }

    /// Records the end of the key's journal after an append. Called holding the key.
    func setJournalEnd(lastSequence: UInt64, length: UInt64) {
        words.journalLast = lastSequence
        words.journalLength = length
        guard descriptor >= 0 else { return }
        var little = (lastSequence.littleEndian, length.littleEndian)
        _ = withUnsafeBytes(of: &little) { pwrite(descriptor, $0.baseAddress, 16, 16) }
    }

    /// Opens (creating) the lock file and its directory, close-on-exec.
    private static func openLockFile(_ path: String) -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
}
