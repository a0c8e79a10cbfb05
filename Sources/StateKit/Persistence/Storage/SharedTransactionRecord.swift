import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The intent record of a transaction's commit over keys of a ``FileStateStorage`` shared across
/// processes: every key's file, lock file and new bytes, so that a commit a process did not
/// finish (`kill -9`, a power loss) is completed by the next process that takes one of its keys.
///
/// A commit, holding every key's ``SharedKeyLock``:
/// 1. writes the record (`.<id>.transaction`, in the directory of each key) and forces it, and
///    its directory, to disk;
/// 2. marks each key's lock file with the record's id (``SharedKeyLock/markPendingTransaction(_:durably:)``),
///    forced to disk;
/// 3. replaces each key's file (a temporary file renamed into place, as every save), and forces
///    the new files to disk;
/// 4. clears the marks, then removes the record.
///
/// A process that takes a key and finds a mark (``SharedKeyLock/lock()``) lets it go and calls
/// ``complete(id:directory:lockPath:)``: with every key of the record still marked locked, in the
/// commit's order, it writes the record's bytes to each key still marked with its id, clears the
/// marks and removes the record. A key whose mark was cleared is never written again: its commit finished, and a
/// later write may have replaced it. So no process that holds a key reads it half-committed.
struct SharedTransactionRecord: Codable {
    /// One key's part of the commit.
    struct Write: Codable {
        /// The key's file.
        let file: String
        /// The key's lock file.
        let lock: String
        /// What the commit writes to `file`.
        let bytes: Data
    }

    /// Unique among the commits of every process (random, never 0).
    let id: UInt64
    /// In the order the commit holds the keys' locks (by lock file).
    let writes: [Write]

    init(writes: [Write]) {
        self.id = UInt64.random(in: 1...UInt64.max)
        self.writes = writes.sorted { $0.lock < $1.lock }
    }

    /// The record's file name.
    static func fileName(id: UInt64) -> String {
        ".\(String(id, radix: 16)).transaction"
    }

    /// The directories that hold a copy of the record: each key's.
    private var directories: [String] {
        Array(Set(writes.map { ($0.file as NSString).deletingLastPathComponent })).sorted()
    }

    /// Runs the commit (steps 1 to 4 above) holding `locks`, the keys' locks by lock file path.
    ///
    /// - Parameter afterFirstReplace: Called once the first file is replaced (a test hook).
    /// - Throws: An error writing the record or a mark, before any file is replaced (nothing
    ///   changed), or an error replacing a file (the record then stays, and the next holder of one
    ///   of the keys completes the commit).
    func commit(holding locks: [String: SharedKeyLock], afterFirstReplace: (() -> Void)? = nil) throws {
        let data = try JSONEncoder().encode(self)
        for directory in directories {
            try FileReplacement.writeWhole(
                data, toPath: directory + "/" + Self.fileName(id: id), exclusive: false, durably: true)
            FileReplacement.synchronize(directory)
        }
        for write in writes { try locks[write.lock]?.markPendingTransaction(id, durably: true) }
        for (index, write) in writes.enumerated() {
            _ = locks[write.lock]?.advanceGeneration()
            try FileReplacement.replace(write.file, with: write.bytes, durably: false)
            if index == 0 { afterFirstReplace?() }
        }
        for write in writes { FileReplacement.synchronize(write.file) }
        finish(holding: writes.compactMap { locks[$0.lock] })
    }

    /// Clears the marks of `locks` (held) and removes the record.
    private func finish(holding locks: [SharedKeyLock]) {
        Self.clearMarks(of: id, on: locks)
        for directory in directories { unlink(directory + "/" + Self.fileName(id: id)) }
    }

    /// Completes the commit `id`, found marked on a key of `directory` by a process that let the
    /// key go to call this: writes the new bytes of every key still marked with `id`, holding the
    /// locks of all the record's keys, taken in the commit's order. A record that cannot be read
    /// (it was removed, or never finished) leaves nothing to complete: the marks found are cleared.
    ///
    /// - Parameter lockPath: The lock file of the key that was found marked.
    /// - Returns: Whether the commit is complete; `false` when a file could not be written (its
    ///   mark stays, for the next holder to try again).
    static func complete(id: UInt64, directory: String, lockPath: String) -> Bool {
        let path = directory + "/" + fileName(id: id)
        let record = FileManager.default.contents(atPath: path).flatMap {
            try? JSONDecoder().decode(SharedTransactionRecord.self, from: $0)
        }
        // Only the keys still marked: a key whose mark was cleared is complete, and may be held by
        // this very thread (its lock() found no mark), so taking it again would wait forever.
        let lockPaths = (record.map { Array(Set($0.writes.map(\.lock) + [lockPath])).sorted() } ?? [lockPath])
            .filter { $0 == lockPath || SharedKeyLock.peekPendingTransaction(path: $0) == id }
        let locks = lockPaths.map { SharedKeyLock(path: $0, completesTransactions: false) }
        for lock in locks { lock.lock() }
        defer { for lock in locks.reversed() { lock.unlock() } }
        guard let record else {
            clearMarks(of: id, on: locks)
            return true
        }
        let byPath = Dictionary(uniqueKeysWithValues: zip(lockPaths, locks))
        for write in record.writes {
            guard let lock = byPath[write.lock], lock.pendingTransaction == id else { continue }
            _ = lock.advanceGeneration()
            // A failure leaves the mark: the next holder tries again.
            guard (try? FileReplacement.replace(write.file, with: write.bytes, durably: false)) != nil else {
                return false
            }
        }
        record.finish(holding: locks)
        return true
    }

    /// Clears the marks of the commit `id` on `locks`, held.
    private static func clearMarks(of id: UInt64, on locks: [SharedKeyLock]) {
        for lock in locks where lock.pendingTransaction == id { try? lock.markPendingTransaction(0, durably: false) }
    }
}
