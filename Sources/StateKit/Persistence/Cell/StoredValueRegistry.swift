/// The live ``StoredValue`` of each key in each storage, so that every persisted container of a
/// key in a storage shares one value, and two containers claiming it with different value types
/// are reported.
final class StoredValueRegistry: Sendable {
    private struct Entry {
        weak var storedValue: (any LiveStoredValue)?
        let type: Any.Type
    }

    static let shared = StoredValueRegistry()

    private let entries = LockedBox<[String: Entry]>([:])
    /// How many values the registry has taken in, ever. Its lock is taken last of all (under the
    /// registry's, or under a value's `ioLock`), so that a key move may read it with its locks held.
    private let registrationCount = LockedBox<UInt64>(0)

    /// The live stored value of `key` at `location`, made by `make` and loaded if there is none.
    ///
    /// - Returns: `nil`, after reporting a ``StateDiagnostic/Kind/keyConflict``, when a live
    ///   stored value holds the key with another value type: the new container then keeps its
    ///   value in memory only, so neither corrupts the other.
    func storedValue<Value>(
        key: String,
        location: String,
        make: () -> StoredValue<Value>
    ) -> StoredValue<Value>? {
        let name = location + "\u{0}" + key
        let found: StoredValue<Value>?
        let conflictingType: Any.Type?
        (found, conflictingType) = entries.withLock { entries in
            if let entry = entries[name], let live = entry.storedValue {
                if let shared = live as? StoredValue<Value> { return (shared, nil) }
                // No container holds the other type any more; only a save in flight kept it.
                guard live.retire() else { return (nil, entry.type) }
            }
            if entries.count > 64 && entries.count.isMultiple(of: 64) {
                entries = entries.filter { $0.value.storedValue != nil }
            }
            let made = make()
            entries[name] = Entry(storedValue: made, type: Value.self)
            registrationCount.withLock { $0 &+= 1 }
            return (made, nil)
        }
        if let conflictingType {
            StoredValueRecovery.reportConflict(key: key, in: location, type: Value.self, claimedBy: conflictingType)
            return nil
        }
        // Outside the lock: preparing takes `ioLock`s, and may look up other keys' live values.
        found?.prepare()
        return found
    }

    /// How many values the registry has taken in so far: a key move that looked up live values
    /// when it was `n` knows, if it is still `n`, that no value has been added since.
    var registrations: UInt64 {
        registrationCount.withLock { $0 }
    }

    /// The live stored value of `key` at `location`, of whatever value type, or `nil` when none
    /// is alive: one a container holds, or that only a save in flight keeps.
    func liveStoredValue(key: String, location: String) -> (any LiveStoredValue)? {
        entries.withLock { $0[location + "\u{0}" + key]?.storedValue }
    }
}

extension StoredValue {
    /// The live cell of `key` at `location`, made (reading `key`'s stored value, or moving it from
    /// the newest of `previousKeys` that holds one) if no container holds it; `nil` after a key
    /// conflict. Every persisted container joins its key this way.
    ///
    /// - Parameter codec: How the storage holds a value under a key.
    static func shared(
        key: String,
        location: String,
        previousKeys: [String],
        defaultValue: Value,
        savesInline: Bool,
        codec: (String) -> StoredValueCodec<Value>
    ) -> StoredValue? {
        StoredValueRegistry.shared.storedValue(key: key, location: location) {
            StoredValue(
                key: key, location: location, codec: codec(key),
                previousCodecs: previousKeys.map { ($0, codec($0)) }, defaultValue: defaultValue,
                savesInline: savesInline)
        }
    }
}

extension StoredValue where Value: Codable & Sendable {
    /// The live cell of `key` in `storage`, as ``shared(key:location:previousKeys:defaultValue:savesInline:codec:)``
    /// gives it: in `UserDefaults`' one format over ``UserDefaultsStateStorage``, as JSON elsewhere.
    static func shared(key: String, storage: any StateStorage, previousKeys: [String], defaultValue: Value)
        -> StoredValue?
    {
        if let defaults = exactly(UserDefaultsStateStorage.self, storage) {
            return shared(
                key: key, location: storage.location, previousKeys: previousKeys, defaultValue: defaultValue,
                savesInline: true
            ) { .defaults(key: $0, storage: defaults, defaultValue: defaultValue) }
        }
        let value = shared(
            key: key, location: storage.location, previousKeys: previousKeys, defaultValue: defaultValue,
            savesInline: false
        ) { .bytes(key: $0, storage: storage, defaultValue: defaultValue) }
        if let file = exactly(FileStateStorage.self, storage), file.isSharedAcrossProcesses {
            value?.shareAcrossProcesses(in: file)
        }
        return value
    }
}

/// `storage as? Storage`, for a storage type that is a struct (so `as?` succeeds only for that
/// exact type), checked by comparing the types first: a failing `as?` from the existential costs
/// 1,500 instructions or more (the runtime looks for bridged and boxed values), and every
/// persisted container asks twice when it joins its key.
private func exactly<Storage: StateStorage>(_: Storage.Type, _ storage: any StateStorage) -> Storage? {
    guard ObjectIdentifier(type(of: storage)) == ObjectIdentifier(Storage.self) else { return nil }
    return storage as? Storage
}

/// A live stored value of any type, as the registry sees one it may have to replace, and as a
/// key move sees the value of an earlier key that it must go through (see
/// ``StoredValue/prepare()`` for the order its locks are taken in).
protocol LiveStoredValue: AnyObject, Sendable {
    /// Serialises the value's saves and reads of its storage.
    var ioLock: Lock { get }

    /// If no container holds the value any more: finishes its pending save and stops it from
    /// saving or watching again, and returns `true`; otherwise returns `false`.
    func retire() -> Bool

    /// Saves the newest value now if it is not saved, for a key move about to copy what storage
    /// holds; called with ``ioLock`` held. Returns whether storage holds the newest value, and
    /// what to run once the locks are released.
    func flushForMoveLocked() -> (isSaved: Bool, publish: () -> Void)

    /// Reads the key again at once, after a key move emptied it; called with ``ioLock`` held.
    /// Returns what to run once the locks are released: writing what the key now holds into the
    /// cell, as one outside change.
    func storageChangedLocked() -> () -> Void

    /// The lock of its key that its writes take, when its storage is shared across processes and
    /// it is installed.
    var installedKeyLock: SharedKeyLock? { get }

    /// Reads the key now (not after the watcher's delay), and writes what it holds into the cell
    /// if that is a change made outside it; called with no lock held.
    func storageMayHaveChangedNow()
}
