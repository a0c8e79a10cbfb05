import Foundation

/// What a storage holds for one key, as read or about to be written: the payload (bytes for a
/// ``StateStorage``, a property-list object for `UserDefaults`) and a fingerprint that tells two
/// representations apart, so a container recognises its own writes when a watcher reports them.
struct StoredRepresentation: @unchecked Sendable {
    /// `Data` for byte storages; a property-list object for `UserDefaults`.
    let payload: Any
    /// Equal for equal payloads.
    let fingerprint: Data
}

/// How a ``StoredValue`` reads, writes and watches its key in one storage.
///
/// There are two: ``bytes(key:storage:defaultValue:)`` for any ``StateStorage`` (JSON, with
/// missing properties taken from the default value), and `UserDefaults`'s one format (see
/// `DefaultsValueCoding`), used by ``UserDefaultsState`` and by a ``PersistedState`` over
/// ``UserDefaultsStateStorage`` alike, so each reads what the other wrote.
struct StoredValueCodec<Value>: Sendable {
    /// What storage holds, or `nil` when it holds nothing. Throws when it cannot be read.
    var load: @Sendable () throws -> StoredRepresentation?
    /// The value in a representation; throws when it does not decode.
    var decode: @Sendable (StoredRepresentation) throws -> Value
    /// The representation of a value, or `nil` when storing it means removing the key (an
    /// `Optional` that is `nil`, for `UserDefaults`).
    var encode: @Sendable (Value) throws -> StoredRepresentation?
    /// Writes a representation (`nil` removes the key).
    var store: @Sendable (StoredRepresentation?) throws -> Void
    /// Moves what the key holds aside, under a key no other value uses; returns that key.
    var moveAside: @Sendable () throws -> String
    /// Copies a representation aside, leaving the key as it is; returns the key it went to.
    var copyAside: @Sendable (StoredRepresentation) throws -> String
    /// Calls the handler when the key may have changed outside this process's containers; the
    /// watch lasts as long as the returned token. `nil` when the storage cannot be watched.
    var watch: @Sendable (_ onChange: @escaping @Sendable () -> Void) -> AnyObject?
    /// Where the key lives, for diagnostics.
    var location: String
    /// Forces what the key holds to disk, so that it survives a power loss, and says whether it
    /// does (``WriteReceipt/saved(timeout:)``): `false` for storage in memory. Blocks: call it
    /// off the writer's thread and the cooperative pool.
    var makeDurable: @Sendable () -> Bool
    /// The key's lock file (``SharedKeyLock``), when its storage is shared across processes.
    var sharedLockPath: String? = nil
}

extension StoredValueCodec where Value: Codable & Sendable {
    /// JSON bytes in `storage`, read with the missing properties taken from `defaultValue`.
    static func bytes(key: String, storage: any StateStorage, defaultValue: Value) -> Self {
        let fill = UncheckedSendable(defaultValue)
        return .bytes(
            key: key, storage: storage,
            decode: { try PersistenceCoder.decode(from: $0, filling: fill.value) },
            encode: { try PersistenceCoder.encode($0) })
    }
}

extension StoredValueCodec {
    /// `UserDefaults`' one format (see ``DefaultsValueCoding``) as a binary property list in a
    /// byte storage: where a ``UserDefaultsState`` keeps its value under
    /// ``withStateStorage(_:operation:)-(_,()->Result)``, so that values `UserDefaults` takes but
    /// JSON does not are kept too.
    static func propertyList(key: String, storage: any StateStorage, defaultValue: Value) -> Self {
        let fill = UncheckedSendable(defaultValue)
        return .bytes(
            key: key, storage: storage,
            decode: { data in
                let list = try PropertyListSerialization.propertyList(from: data, format: nil)
                guard let object = (list as? [String: Any])?["value"] else {
                    throw DecodingError.dataCorrupted(
                        .init(codingPath: [], debugDescription: "not a property list of StateKit's"))
                }
                return try DefaultsValueCoding.value(from: object, filling: fill.value)
            },
            encode: { value in
                guard let object = try DefaultsValueCoding.object(for: value) else { return nil }
                return try PropertyListSerialization.data(
                    fromPropertyList: ["value": object], format: .binary, options: 0)
            })
    }

    /// Bytes in `storage`, made and read by `encode` and `decode` (`encode` returns `nil` to
    /// remove the key).
    private static func bytes(
        key: String,
        storage: any StateStorage,
        decode: @escaping @Sendable (Data) throws -> Value,
        encode: @escaping @Sendable (Value) throws -> Data?
    ) -> Self {
        let watcher = storage as? any WatchableStateStorage
        return StoredValueCodec(
            load: {
                guard let data = try storage.load(forKey: key) else { return nil }
                return StoredRepresentation(payload: data, fingerprint: data)
            },
            decode: { representation in try decode(representation.payload as! Data) },
            encode: { value in try encode(value).map { StoredRepresentation(payload: $0, fingerprint: $0) } },
            store: { representation in
                if let representation {
                    try storage.save(representation.payload as! Data, forKey: key)
                } else {
                    try storage.remove(forKey: key)
                }
            },
            moveAside: {
                let asideKey = try StoredValueRecovery.unusedAsideKey(for: key) { try storage.load(forKey: $0) != nil }
                try storage.moveValue(forKey: key, toKey: asideKey)
                return asideKey
            },
            copyAside: { representation in
                let asideKey = try StoredValueRecovery.unusedAsideKey(for: key) { try storage.load(forKey: $0) != nil }
                try storage.save(representation.payload as! Data, forKey: asideKey)
                return asideKey
            },
            watch: { onChange in watcher?.watch(key: key, onChange: onChange) },
            location: storage.location,
            makeDurable: { Self.makeDurable(key, in: storage) },
            sharedLockPath: (storage as? FileStateStorage).flatMap {
                $0.isSharedAcrossProcesses ? $0.lockFileURL(forKey: key).path : nil
            }
        )
    }
}

extension StoredValueCodec {
    /// Forces `key` to disk in `storage`: a file shared across processes is written without it;
    /// other files are forced as they are saved; memory holds nothing on disk. A storage StateKit
    /// does not know is taken at its word: what it saved, it keeps.
    fileprivate static func makeDurable(_ key: String, in storage: any StateStorage) -> Bool {
        switch storage {
        case is InMemoryStateStorage:
            return false
        case let files as FileStateStorage:
            if files.isSharedAcrossProcesses { files.synchronize(forKey: key) }
            return true
        default:
            return true
        }
    }
}

/// A storage that can tell when a key changes outside this process's containers: another
/// process, a sync tool replacing a file, other code writing `UserDefaults`.
protocol WatchableStateStorage: StateStorage {
    /// Calls `onChange`, on any thread, soon after what `key` holds may have changed (it may also
    /// call it when nothing changed); watching lasts as long as the returned token.
    func watch(key: String, onChange: @escaping @Sendable () -> Void) -> AnyObject?
}
