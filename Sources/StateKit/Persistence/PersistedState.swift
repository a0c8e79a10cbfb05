import Foundation

/// A ``MonitoredState`` whose value is saved to a ``StateStorage`` after every change and loaded
/// from it on creation.
///
/// ```swift
/// let settings = PersistedState(Settings(), key: "settings", storage: .file(directory))
/// settings.modify { $0.theme = .dark }   // saved shortly after, off this thread
/// settings.flush()                       // returns once the newest value is in storage
/// ```
///
/// The value is encoded as JSON (see ``VersionedValue`` to migrate older stored shapes). Saves
/// run off the writer's thread, on a serial queue of the container's own, and coalesce: while a
/// save runs, newer changes replace the pending one, so 10,000 rapid changes cost far fewer
/// writes, and the last write is always the newest value. ``flush()`` waits for it.
///
/// Nothing stored is lost to bad data. If the stored bytes do not decode (a corrupt file, a type
/// changed between releases), the container starts from `defaultValue`, moves the bytes aside to
/// `"<key>.corrupt-<timestamp>"` and reports ``StateDiagnostic/Kind/decodingFailed``. If another
/// live container already holds `key` in the same storage with a different value type, it reports
/// ``StateDiagnostic/Kind/keyConflict`` and keeps its value in memory only.
///
/// Handlers run as on any ``MonitoredState``; saving happens in ``didModify()``, which a subclass
/// may override (call `super.didModify()`).
///
/// - Note: All operations on `PersistedState` are thread-safe. A subclass must restate its
///   `Sendable` conformance (`extension MyState: @unchecked Sendable {}`).
open class PersistedState<Value: Codable & Sendable>: MonitoredState<Value> {
    /// Where the value is saved.
    public let storage: any StateStorage
    /// Whether the container saves its changes: `false` after a key conflict, or when undecodable
    /// stored bytes could not be moved aside (so they are not overwritten).
    public let isPersisting: Bool

    private let writer: PersistenceWriter
    private let claim: StorageClaims.Token

    /// Creates a container holding the value stored for `key` in `storage`, or `defaultValue`.
    ///
    /// - Parameters:
    ///   - defaultValue: The value when storage has none, or none that decodes.
    ///   - key: The key the value is stored under; unique in the storage.
    ///   - storage: Where to keep the value: `.file(directory)`, `.userDefaults()`, `.inMemory`,
    ///     or your own ``StateStorage``.
    public init(_ defaultValue: Value, key: String, storage: any StateStorage) {
        let (claim, isGranted) = StorageClaims.shared.claim(key: key, location: storage.location, type: Value.self)
        var initialValue = defaultValue
        var isPersisting = isGranted
        if isGranted {
            (initialValue, isPersisting) = loadStoredValue(key: key, storage: storage, defaultValue: defaultValue)
        }
        self.storage = storage
        self.isPersisting = isPersisting
        self.claim = claim
        self.writer = PersistenceWriter(label: key, writtenVersion: 0)
        super.init(initialValue, key: key)
    }

    /// Schedules a save of the current value, then announces the change.
    ///
    /// StateKit calls it after every change; call it yourself after changing a reference-type
    /// value in place.
    open override func didModify() {
        super.didModify()
        scheduleSave()
    }

    /// Saves the newest value now if it is not saved yet, and returns once it is in storage.
    ///
    /// Call it before the process exits (or in tests) to be sure the last change is stored. A
    /// failed save is reported as ``StateDiagnostic/Kind/storageFailed``; the next change or
    /// flush tries again.
    public func flush() {
        guard isPersisting else { return }
        scheduleSave()
        writer.waitUntilIdle()
    }

    private func scheduleSave() {
        guard isPersisting else { return }
        let (value, version) = lock.withLock { (storedValue, storedVersion) }
        writer.schedule(version: version) { [key, storage] in
            save(value, key: key, storage: storage)
        }
    }
}

extension PersistedState: @unchecked Sendable {}

/// The stored value for `key`, or `defaultValue` when there is none or it does not decode; and
/// whether the container may save (not when bad bytes could not be moved aside).
private func loadStoredValue<Value: Decodable>(
    key: String,
    storage: any StateStorage,
    defaultValue: Value
) -> (Value, isPersisting: Bool) {
    let data: Data
    do {
        guard let stored = try storage.load(forKey: key) else { return (defaultValue, true) }
        data = stored
    } catch let error as StoredValueMismatch {
        return (defaultValue, StoredValueRecovery.setAside(key: key, in: storage, expected: Value.self, error: error))
    } catch {
        StoredValueRecovery.reportFailure("loading", key: key, in: storage.location, error: error)
        return (defaultValue, false)
    }
    do {
        return (try PersistenceCoder.decode(Value.self, from: data), true)
    } catch {
        return (defaultValue, StoredValueRecovery.setAside(key: key, in: storage, expected: Value.self, error: error))
    }
}

private func save<Value: Encodable>(_ value: Value, key: String, storage: any StateStorage) {
    let data: Data
    do {
        data = try PersistenceCoder.encode(value)
    } catch {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .encodingFailed, keys: [key],
                message: "could not encode \(Value.self) for \(storage.location): \(error)", error: error))
        return
    }
    do {
        try storage.save(data, forKey: key)
    } catch {
        StoredValueRecovery.reportFailure("saving", key: key, in: storage.location, error: error)
    }
}
