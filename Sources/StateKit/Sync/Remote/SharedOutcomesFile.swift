import Foundation

/// The file a key's sender publishes its ``SharedOutcomes`` in, beside the key's: written whole,
/// atomically, by the sender; read by the other processes, again only once it changed.
///
/// - Note: All operations on `SharedOutcomesFile` are thread-safe.
final class SharedOutcomesFile: Sendable {
    private let url: URL
    /// What the file held when last read, by its stamp.
    private let cache = LockedBox<(stamp: FileStamp, outcomes: SharedOutcomes)?>(nil)

    /// The file of `key` in `storage`, or `nil` unless that is file storage shared across processes.
    init?(key: String, storage: any StateStorage) {
        guard let file = storage as? FileStateStorage, file.isSharedAcrossProcesses else { return nil }
        let name = ".\(FileStateStorage.fileName(forKey: key)).outcomes"
        url = file.directory.appendingPathComponent(name, isDirectory: false)
    }

    /// What the file holds now: nothing settled when it is missing or cannot be read (its sender
    /// writes it whole again at its next settlement).
    func read() -> SharedOutcomes {
        let stamp = FileStamp(path: url.path)
        if let cached = cache.withLock({ $0 }), cached.stamp == stamp { return cached.outcomes }
        let outcomes = (try? Data(contentsOf: url)).flatMap { try? JSONDecoder().decode(SharedOutcomes.self, from: $0) }
        cache.withLock { $0 = (stamp, outcomes ?? SharedOutcomes()) }
        return outcomes ?? SharedOutcomes()
    }

    /// Replaces the file with `outcomes`, atomically: a reader finds the old one or the new one.
    func write(_ outcomes: SharedOutcomes) throws {
        try JSONEncoder().encode(outcomes).write(to: url, options: .atomic)
    }
}
