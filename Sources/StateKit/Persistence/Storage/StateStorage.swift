import Foundation

/// A place where persisted containers keep their values: a directory, `UserDefaults`, memory,
/// or one of your own (a keychain, a database).
///
/// A ``PersistedState`` encodes its value to bytes and hands them to its storage under its key;
/// the storage only keeps bytes. StateKit ships three storages, reached with leading-dot
/// factories wherever a storage is expected: `.file(directory)` (a ``FileStateStorage``: one JSON
/// file per key, written atomically), `.userDefaults()` (a ``UserDefaultsStateStorage``) and
/// `.inMemory` (an ``InMemoryStateStorage``, for tests and previews).
///
/// ```swift
/// let theme = PersistedState(Theme.light, key: "theme", storage: .file(settingsDirectory))
/// let draft = PersistedState("", key: "draft", storage: .inMemory)
/// let shared = InMemoryStateStorage.inMemory   // outside a parameter, name the type
/// ```
///
/// The factories are static members of protocol extensions constrained to one storage type, so
/// the leading dot works where the type is known (a parameter typed `some StateStorage` or
/// `any StateStorage`), but `StateStorage.inMemory` does not compile ("static member 'inMemory'
/// cannot be used on protocol metatype"): write `InMemoryStateStorage.inMemory`,
/// `FileStateStorage.file(directory)` or the storage's initializer.
///
/// # Implementation requirements
/// - All requirements may be called from any thread, concurrently: make them thread-safe.
///   StateKit calls ``save(_:forKey:)`` off the writer's thread (from a serial queue per
///   container), and ``load(forKey:)`` on the thread that creates a container.
/// - ``save(_:forKey:)`` must be atomic: after a crash at any moment, ``load(forKey:)`` returns
///   either the previous bytes or the new ones, never a mix.
/// - ``load(forKey:)`` returns exactly the bytes last saved for the key (in this or an earlier
///   process), or `nil` when there are none. Throw only for failures to read, not for absence.
/// - ``location`` identifies the place: two storages with the same location share their keys, so
///   StateKit can report two containers claiming one key with different types.
/// - Keys are arbitrary strings (they may contain `/`, `:` or spaces); map them to whatever your
///   backend accepts, injectively.
public protocol StateStorage: Sendable {
    /// Where the storage keeps its data, for diagnostics and to tell storages apart, such as
    /// `file:///Users/me/Library/Settings/` or `UserDefaults(standard)`.
    var location: String { get }

    /// The bytes saved for `key`, or `nil` if there are none.
    ///
    /// - Throws: When the bytes exist but cannot be read.
    func load(forKey key: String) throws -> Data?

    /// Replaces the bytes saved for `key`, atomically.
    func save(_ data: Data, forKey key: String) throws

    /// Deletes what is saved for `key`; does nothing if there is nothing.
    func remove(forKey key: String) throws

    /// Moves what is saved under `key` to `destinationKey`, leaving `key` empty.
    ///
    /// StateKit uses it to keep bytes it cannot decode aside (under `"<key>.corrupt-<timestamp>"`)
    /// instead of overwriting them. The default implementation loads, saves and removes; storages
    /// that can rename in one step, or whose data is not bytes, should implement it.
    func moveValue(forKey key: String, toKey destinationKey: String) throws
}

extension StateStorage {
    /// Loads the bytes for `key`, saves them under `destinationKey`, then removes `key`.
    public func moveValue(forKey key: String, toKey destinationKey: String) throws {
        guard let data = try load(forKey: key) else { return }
        try save(data, forKey: destinationKey)
        try remove(forKey: key)
    }
}
