import Foundation

/// A ``StateStorage`` that keeps bytes in memory, for tests and previews.
///
/// Every `.inMemory` (`InMemoryStateStorage.inMemory` outside a storage parameter) is a new,
/// empty storage, as is every `InMemoryStateStorage()`; keep one in a constant to share it between
/// containers, or to create a container again and see it load what the last one saved.
///
/// ```swift
/// let storage = InMemoryStateStorage()
/// PersistedState(1, key: "count", storage: storage).modify(2)
/// ```
///
/// - Note: All operations on `InMemoryStateStorage` are thread-safe.
public final class InMemoryStateStorage: StateStorage, Sendable {
    private let contents = LockedBox<[String: Data]>([:])

    /// `memory://<UUID>`, unique to this instance (made once: every container of a key looks
    /// it up when it joins).
    public let location = "memory://\(UUID().uuidString)"

    /// Creates an empty storage.
    public init() {}

    /// The keys that hold bytes.
    public var keys: [String] {
        contents.withLock { Array($0.keys) }
    }

    /// The bytes saved for `key`, or `nil`.
    public func load(forKey key: String) throws -> Data? {
        contents.withLock { $0[key] }
    }

    /// Keeps `data` under `key`.
    public func save(_ data: Data, forKey key: String) throws {
        contents.withLock { $0[key] = data }
    }

    /// Forgets `key`.
    public func remove(forKey key: String) throws {
        contents.withLock { $0[key] = nil }
    }
}

extension StateStorage where Self == InMemoryStateStorage {
    /// A new, empty in-memory storage; see ``InMemoryStateStorage``.
    public static var inMemory: InMemoryStateStorage {
        InMemoryStateStorage()
    }
}
