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

    init(path: String) {
        self.path = path
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Waits for the key, then holds it (within the process, then across processes).
    ///
    /// - Returns: Whether other processes are locked out too: `false` when the lock file could not
    ///   be opened.
    @discardableResult
    func lock() -> Bool {
        threads.lock()
        held.store(true, ordering: .relaxed)
        if descriptor < 0 { descriptor = Self.openLockFile(path) }
        guard descriptor >= 0 else { return false }
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
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

    /// Opens (creating) the lock file and its directory, close-on-exec.
    private static func openLockFile(_ path: String) -> Int32 {
        let directory = (path as NSString).deletingLastPathComponent
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
    }
}
