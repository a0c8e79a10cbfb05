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
/// The value is encoded as JSON (see ``VersionedValue`` to migrate older stored shapes, and
/// `previousKeys` to move it from an earlier key). Saves run off the writer's thread, on a serial
/// queue of the key's own, and coalesce: a save writes the newest value, so 10,000 rapid changes
/// cost far fewer writes, and the last write is always the newest value. ``flush()`` waits for it.
///
/// Every persisted container of one key in one storage (this one, `@Persisted`, a
/// ``UserDefaultsState`` or a persisted ``SyncedState`` of the same key) is a view of one cell:
/// one value, one version, one lock, one list of subscribers. `modify` through any of them is
/// atomic against all of them, a container made while another lives starts from the live value,
/// and every subscriber of every one of them hears each change once, in one order.
///
/// Nothing stored is lost to bad data. If the stored bytes do not decode (a corrupt file, a type
/// changed between releases), the container starts from `defaultValue`, moves the bytes aside to
/// `"<key>.corrupt-<timestamp>"` and reports ``StateDiagnostic/Kind/decodingFailed``. If another
/// live container already holds `key` in the same storage with a different value type, it reports
/// ``StateDiagnostic/Kind/keyConflict`` and keeps its value in memory only.
///
/// Handlers run as on any ``MonitoredState``. A subclass may override ``State/didModify()`` (calling
/// `super.didModify()`): it runs after every change of the key, whichever container made it.
///
/// - Note: All operations on `PersistedState` are thread-safe. A subclass must restate its
///   `Sendable` conformance (`extension MyState: @unchecked Sendable {}`).
open class PersistedState<Value: Codable & Sendable>: MonitoredState<Value> {
    /// Where the value is saved: the storage it was created with, or the one
    /// ``withStateStorage(_:operation:)-(_,()->Result)`` put in its place.
    public let storage: any StateStorage

    /// The key's cell and what saves it; `nil` after a key conflict (the container lives in
    /// memory only).
    let persistence: StoredValue<Value>?

    /// Creates a container holding the value stored for `key` in `storage`, or `defaultValue`.
    ///
    /// When another live container already holds `key` in the same storage, this one shares that
    /// container's cell and starts from its current value.
    ///
    /// ```swift
    /// // Release 2 renamed the key "displayName" to "username": the stored name moves over once.
    /// let name = PersistedState("", key: "username", storage: .inMemory, previousKeys: ["displayName"])
    /// ```
    ///
    /// - Parameters:
    ///   - defaultValue: The value when storage has none, or none that decodes; also where
    ///     properties missing from the stored value are taken from.
    ///   - key: The key the value is stored under; unique in the storage.
    ///   - storage: Where to keep the value: `.file(directory)`, `.userDefaults()`, `.inMemory`,
    ///     or your own ``StateStorage``.
    ///   - previousKeys: Keys the value was stored under by earlier releases, newest first. At the
    ///     first load, if `key` holds nothing, the value of the first of them that holds one is
    ///     stored under `key`, and every one of them is removed; a value under `key` wins. A
    ///     kill -9 at any moment loses nothing: the move is finished at the next launch. A live
    ///     container of an earlier key has its newest value moved, then holds its default (one
    ///     ``ChangeOrigin/external`` change).
    public init(_ defaultValue: Value, key: String, storage: any StateStorage, previousKeys: [String] = []) {
        let storage = StateStorageOverride.resolve(storage)
        let persistence = StoredValue.shared(
            key: key, storage: storage, previousKeys: previousKeys, defaultValue: defaultValue)
        self.storage = storage
        self.persistence = persistence
        super.init(defaultValue, key: key, joining: persistence?.cell)
        persistence?.add(self)
        showDetails(persistence: persistence, storage: storage)
    }

    /// Creates a container as ``init(_:key:storage:previousKeys:)`` does, whose writes must pass
    /// `validator` (see ``MonitoredState/init(_:key:validator:)``).
    ///
    /// ```swift
    /// struct OutOfRange: Error {}
    /// let volume = PersistedState(5, key: "volume", storage: .inMemory) { _, proposed in
    ///     guard (0...10).contains(proposed) else { throw OutOfRange() }
    /// }
    /// ```
    ///
    /// The stored value it starts from is not validated. The validator guards writes through
    /// every container of the key, and values that arrive from outside the process, like any
    /// other write: one it refuses is reported (``StateDiagnostic/Kind/rejectedWrite``) and the
    /// value stays as it was.
    public convenience init(
        _ defaultValue: Value,
        key: String,
        storage: any StateStorage,
        previousKeys: [String] = [],
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        self.init(defaultValue, key: key, storage: storage, previousKeys: previousKeys)
        installValidator(validator)
    }

    override func isStateKitType(_ type: AnyClass) -> Bool {
        type == PersistedState<Value>.self || super.isStateKitType(type)
    }

    /// Whether the container saves its changes: `false` after a key conflict, or when the stored
    /// data could be neither read nor moved aside (so it is not overwritten; see ``saveError``).
    public var isPersisting: Bool {
        persistence?.isPersisting ?? false
    }

    /// Why the stored value could not be used, or `nil`: the storage could not be read, or held
    /// bytes that do not decode (on creation, or written outside the container later).
    ///
    /// The container then holds its default (or, for a later outside write, the value it had);
    /// the bytes were moved or copied aside and a diagnostic names where. It is observable, and
    /// becomes `nil` once a stored value is read again.
    public var loadError: (any Error)? {
        persistence?.loadError
    }

    /// Why the newest value is not in storage, or `nil`: the last save failed (a full disk, a
    /// permission), or saving stopped (``SavingStopped``). Observable; `nil` again after a save
    /// succeeds. A failed save is retried in the background, and by ``flush()``; until one
    /// succeeds, the newest value stays in memory, and bytes that the failed save may have left
    /// in storage are never taken for a change made outside the process.
    public var saveError: (any Error)? {
        persistence?.saveError
    }

    /// Saves the newest value now if it is not saved yet, and returns once it is in storage.
    ///
    /// Call it before the process exits (or in tests) to be sure the last change is stored. A
    /// failed save is retried a few times (over about a second) before `flush()` returns; the
    /// error is then in ``saveError``, reported as ``StateDiagnostic/Kind/storageFailed`` (once
    /// for a failure that persists, not once per attempt), and the save is retried later in the
    /// background.
    public func flush() {
        persistence?.flush()
    }
}

extension PersistedState: @unchecked Sendable {}
