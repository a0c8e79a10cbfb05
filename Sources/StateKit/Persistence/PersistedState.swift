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

    /// The shared stored value; `nil` after a key conflict (the container lives in memory only).
    let link: StoredValueLink<Value>?

    /// Creates a container holding the value stored for `key` in `storage`, or `defaultValue`.
    ///
    /// When another live container already holds `key` in the same storage, this one starts
    /// from, and shares, that container's current value.
    ///
    /// - Parameters:
    ///   - defaultValue: The value when storage has none, or none that decodes; also where
    ///     properties missing from the stored value are taken from.
    ///   - key: The key the value is stored under; unique in the storage.
    ///   - storage: Where to keep the value: `.file(directory)`, `.userDefaults()`, `.inMemory`,
    ///     or your own ``StateStorage``.
    public init(_ defaultValue: Value, key: String, storage: any StateStorage) {
        let shared = StoredValue<Value>.shared(key: key, storage: storage, defaultValue: defaultValue)
        let link = shared?.link
        self.storage = storage
        self.link = link
        super.init(shared?.value ?? defaultValue, key: key)
        if let link { join(link, as: self) }
    }

    /// Creates a container as ``init(_:key:storage:)`` does, whose writes must pass `validator`
    /// (see ``MonitoredState/init(_:key:validator:)``).
    ///
    /// ```swift
    /// struct OutOfRange: Error {}
    /// let volume = PersistedState(5, key: "volume", storage: .inMemory) { _, proposed in
    ///     guard (0...10).contains(proposed) else { throw OutOfRange() }
    /// }
    /// ```
    ///
    /// The stored value it starts from is not validated. Values that arrive from the key's other
    /// containers or from outside the process are writes like any other: one the validator
    /// refuses is reported (``StateDiagnostic/Kind/rejectedWrite``) and this container keeps its value.
    public convenience init(
        _ defaultValue: Value,
        key: String,
        storage: any StateStorage,
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        self.init(defaultValue, key: key, storage: storage)
        installValidator(validator)
    }

    /// Shares the change with the key's other containers and schedules its save, then announces it.
    ///
    /// StateKit calls it after every change; call it yourself after changing a reference-type
    /// value in place.
    open override func didModify() {
        super.didModify()
        if let link { shareNewestChange(link: link) }
    }

    /// Whether the container saves its changes: `false` after a key conflict, or when the stored
    /// data could be neither read nor moved aside (so it is not overwritten; see ``saveError``).
    public var isPersisting: Bool {
        link?.storedValue.isPersisting ?? false
    }

    /// Why the stored value could not be used, or `nil`: the storage could not be read, or held
    /// bytes that do not decode (on creation, or written outside the container later).
    ///
    /// The container then holds its default (or, for a later outside write, the value it had);
    /// the bytes were moved or copied aside and a diagnostic names where. It is observable, and
    /// becomes `nil` once a stored value is read again.
    public var loadError: (any Error)? {
        link?.storedValue.status.loadError
    }

    /// Why the newest value is not in storage, or `nil`: the last save failed (a full disk, a
    /// permission), or saving stopped (``SavingStopped``). Observable; `nil` again after a save
    /// succeeds. A failed save is retried in the background, and by ``flush()``.
    public var saveError: (any Error)? {
        link?.storedValue.status.saveError
    }

    /// Saves the newest value now if it is not saved yet, and returns once it is in storage.
    ///
    /// Call it before the process exits (or in tests) to be sure the last change is stored. A
    /// failed save is retried a few times (over about a second) before `flush()` returns; the
    /// error is then in ``saveError`` and reported as ``StateDiagnostic/Kind/storageFailed``, and
    /// the save is retried later in the background.
    public func flush() {
        if let link { flushStoredValue(link: link) }
    }
}

extension PersistedState: @unchecked Sendable {}

extension PersistedState: StoredValueMember {
    func receiveStoredValue(_ value: Value, sequence: UInt64) {
        guard let link else { return }
        applyStoredValue(value, sequence: sequence, link: link)
    }
}

extension StoredValue where Value: Codable & Sendable {
    /// A new container's link to the stored value of `key` in `storage`; `nil` after a key conflict.
    static func shared(
        key: String,
        storage: any StateStorage,
        defaultValue: Value
    ) -> (link: StoredValueLink<Value>, value: Value)? {
        let storedValue = StoredValueRegistry.shared.storedValue(key: key, location: storage.location) {
            if let defaults = storage as? UserDefaultsStateStorage {
                return StoredValue(
                    key: key, codec: .defaults(key: key, storage: defaults, defaultValue: defaultValue),
                    defaultValue: defaultValue, savesInline: true)
            }
            return StoredValue(
                key: key, codec: .bytes(key: key, storage: storage, defaultValue: defaultValue),
                defaultValue: defaultValue, savesInline: false)
        }
        guard let storedValue else { return nil }
        let (value, sequence) = storedValue.snapshot()
        return (StoredValueLink(storedValue, sequence: sequence), value)
    }
}
