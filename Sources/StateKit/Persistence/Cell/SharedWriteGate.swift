import Dispatch
import Foundation

/// The ``WriteGate`` of a key in a ``FileStateStorage`` shared across processes: it makes every
/// write of the key's cell atomic against every process using the directory.
///
/// A write of the cell (any of its containers' `modify`, `~>`, `set`, a remote or outside value,
/// a `didModify()`) goes:
/// 1. ``enter()``: take the key's ``SharedKeyLock`` (the process's writers queue on its in-process
///    half; the file lock then waits for other processes). The cell's lock is not held, so reads
///    go on.
/// 2. If the key's generation or its file's ``FileStamp`` differ from what this process last
///    read or wrote, read the file; if it holds another value than the cell's, that value becomes
///    the cell's before the body runs.
/// 3. The body runs under the cell's lock, as for any container.
/// 4. ``save(_:version:)``: encode, advance the generation, write a temporary file and rename it
///    into place, without the cell's lock. Forcing it to disk is left to a coalesced `fsync` on a
///    queue of the gate's own, as the cell's own saves are coalesced (a `kill -9` loses nothing:
///    the kernel has the file).
/// 5. ``leave(storing:)``, with the cell's lock held: mark the version saved (the cell's own
///    save then has nothing to do) and release the key. The change is published after that, so
///    no handler runs while the key is held, and a handler may write to it again.
///
/// Lock order: the key lock, then the value's `ioLock`, then the cell's lock (the value's own
/// saves take the key lock before `ioLock` too). The key lock is never awaited with another lock
/// held, and while it is held only file I/O and the cell's lock are waited for: so no two
/// processes, and no two threads, wait for each other.
///
/// A process killed while it holds the key (inside a body, or between the write and the rename)
/// loses its change: the file holds the value before it, and the kernel releases the lock.
///
/// - Note: All operations on `SharedWriteGate` are thread-safe: its state is guarded by the key
///   lock, which a thread holds from ``enter()`` to ``leave(storing:)``.
final class SharedWriteGate<Value>: WriteGate<Value>, @unchecked Sendable {
    /// Weak: the value holds the cell, which holds the gate. Once it is gone, writes pass.
    private weak var value: StoredValue<Value>?
    private let keyLock: SharedKeyLock
    private let storage: FileStateStorage
    private let key: String
    private let fileName: String
    private let path: String
    private let syncQueue: DispatchQueue
    private let isSyncScheduled = LockedBox(false)
    // Guarded by `keyLock`.
    /// The generation and stamp of the file when this process last read or wrote it; `nil`
    /// before the first write, which reads the file.
    private var known: (generation: UInt64, stamp: FileStamp)?
    /// The fingerprint of what the cell holds, as the file held it.
    private var knownFingerprint: Data?
    /// Whether storage holds the cell's value at the version ``leave(storing:)`` is given.
    private var holdsLeavingVersion = false
    /// Whether the last save through the gate failed, so that the next success clears the error.
    private var hasFailed = false

    init(value: StoredValue<Value>, keyLock: SharedKeyLock, storage: FileStateStorage) {
        self.value = value
        self.keyLock = keyLock
        self.storage = storage
        self.key = value.key
        self.fileName = FileStateStorage.fileName(forKey: value.key)
        self.path = storage.fileURL(forKey: value.key).path
        self.knownFingerprint = value.knownFingerprintNow
        self.syncQueue = DispatchQueue(label: "StateKit.shared.\(value.key)", qos: .utility)
    }

    override func enter() -> Value? {
        keyLock.lock()
        holdsLeavingVersion = false
        guard let value else { return nil }
        let generation = keyLock.generation
        let stamp = FileStamp(path: path)
        if let known, known.generation == generation, known.stamp == stamp { return nil }
        known = (generation, stamp)
        guard let found = value.readChanged(unless: knownFingerprint) else { return nil }
        knownFingerprint = found.fingerprint
        holdsLeavingVersion = true
        return found.value
    }

    override func save(_ newValue: Value, version: UInt64) {
        holdsLeavingVersion = false
        guard let value, value.isPersisting else { return }
        do {
            guard let representation = try value.codec.encode(newValue), let data = representation.payload as? Data
            else { return }
            if representation.fingerprint != knownFingerprint {
                let generation = keyLock.advanceGeneration()
                try value.store(representation) { try storage.replace(data, fileName: fileName) }
                known = (generation, FileStamp(path: path))
                knownFingerprint = representation.fingerprint
                scheduleSync()
            }
            holdsLeavingVersion = true
            if hasFailed {
                hasFailed = false
                value.publishSave(error: nil)
            }
        } catch {
            // The cell's own save retries it (taking the key lock), and reports the error.
            hasFailed = true
            value.publishSave(error: error)
        }
    }

    override func leave(storing version: UInt64) {
        if holdsLeavingVersion { value?.noteSaved(version: version) }
        keyLock.unlock()
    }

    /// How long after a write its file is forced to disk, so that a burst of writes costs one
    /// `fsync` (back to back, they made every rename wait for the journal: 2,344 for 3,000 writes,
    /// and the rename about 170 µs).
    private static var syncDelay: Double { 0.05 }

    /// Forces the key's file to disk soon, once for a burst of writes.
    private func scheduleSync() {
        let isNew = isSyncScheduled.withLock { isScheduled in
            defer { isScheduled = true }
            return !isScheduled
        }
        guard isNew else { return }
        syncQueue.asyncAfter(deadline: .now() + Self.syncDelay) { [storage, key, isSyncScheduled] in
            isSyncScheduled.withLock { $0 = false }
            storage.synchronize(forKey: key)
        }
    }
}

extension StoredValue {
    /// Makes every write of the cell atomic against other processes using `storage`, once: the
    /// key's lock for every save, and a ``SharedWriteGate`` for every write.
    func shareAcrossProcesses(in storage: FileStateStorage) {
        guard sharedKeyLock.current == nil else { return }
        let keyLock = sharedKeyLock.install(SharedKeyLock(path: storage.lockFileURL(forKey: key).path))
        let gate = SharedWriteGate(value: self, keyLock: keyLock, storage: storage)
        cell.lock.withLock {
            if cell.writeGate == nil { cell.writeGate = gate }
        }
    }
}
