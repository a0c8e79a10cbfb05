import Foundation

/// The file a key's sender publishes its ``SharedOutcomes`` in, beside the key's: written whole,
/// atomically, by the sender; read by the other processes, again only once it changed.
///
/// A file that claims an entry the key's journal does not have yet is not this journal's (the
/// journal was removed and started again, or the file was damaged into another number): it is
/// read as nothing settled, and the sender publishes afresh over it.
///
/// - Note: All operations on `SharedOutcomesFile` are thread-safe.
final class SharedOutcomesFile: Sendable {
    private let url: URL
    /// The key's lock file, whose words say the journal's last entry.
    private let lockPath: String
    /// What the file held when last read, by its stamp.
    private let cache = LockedBox<(stamp: FileStamp, outcomes: SharedOutcomes)?>(nil)

    /// The file of `key` in `storage`, or `nil` unless that is file storage shared across processes.
    init?(key: String, storage: any StateStorage) {
        guard let file = storage as? FileStateStorage, file.isSharedAcrossProcesses else { return nil }
        let name = ".\(FileStateStorage.fileName(forKey: key)).outcomes"
        url = file.directory.appendingPathComponent(name, isDirectory: false)
        lockPath = file.lockFileURL(forKey: key).path
    }

    /// What the file holds now: nothing settled when it is missing, cannot be read, or claims
    /// entries the journal does not have (its sender writes it whole again at its next
    /// settlement).
    func read() -> SharedOutcomes {
        let stamp = FileStamp(path: url.path)
        var outcomes = cache.withLock { $0 }.flatMap { $0.stamp == stamp ? $0.outcomes : nil }
        if outcomes == nil {
            let read = (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(SharedOutcomes.self, from: $0) }
            cache.withLock { $0 = (stamp, read ?? SharedOutcomes()) }
            outcomes = read
        }
        guard let outcomes, outcomes.settledThrough <= SharedKeyLock.peekJournalLast(path: lockPath) else {
            return SharedOutcomes()
        }
        return outcomes
    }

    /// Replaces the file with `outcomes`, atomically: a reader finds the old one or the new one.
    func write(_ outcomes: SharedOutcomes) throws {
        try JSONEncoder().encode(outcomes).write(to: url, options: .atomic)
    }
}
