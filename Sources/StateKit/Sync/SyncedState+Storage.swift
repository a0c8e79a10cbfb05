/// Persisted and synced in one container: the stored value is loaded on creation, every change is
/// saved as ``PersistedState`` saves it and handed to the sinks.
extension SyncedState where Value: Codable {
    /// Creates a container holding the value stored for `key` in `storage` (or `defaultValue`),
    /// which saves every change there and forwards it to `sinks`.
    ///
    /// ```swift
    /// let cart = SyncedState([String](), key: "cart", storage: .file(directory), sinks: [LoggingSink()])
    /// cart.modify { $0.append("Book") }   // survives a relaunch, and is logged
    /// ```
    ///
    /// It shares one cell with every other persisted container of `key` in `storage`, as
    /// ``PersistedState`` does, and takes changes written to the storage outside the process.
    /// `previousKeys` moves the value from keys earlier releases used, as
    /// ``PersistedState/init(_:key:storage:previousKeys:)`` does.
    public convenience init(
        _ defaultValue: Value,
        key: String,
        storage: any StateStorage,
        previousKeys: [String] = [],
        sinks: [any StateSink<Value>]
    ) {
        let storage = StateStorageOverride.resolve(storage)
        let persistence = StoredValue.shared(
            key: key, storage: storage, previousKeys: previousKeys, defaultValue: defaultValue)
        self.init(defaultValue, key: key, sinks: sinks, persistence: persistence, storage: storage)
    }

    /// Creates a persisted container whose sinks are listed in a block; see
    /// ``init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``.
    ///
    /// ```swift
    /// let score = SyncedState(0, key: "score", storage: .file(directory)) {
    ///     LoggingSink()
    /// }
    /// ```
    public convenience init(
        _ defaultValue: Value,
        key: String,
        storage: any StateStorage,
        previousKeys: [String] = [],
        @SinkBuilder<Value> sinks: () -> [any StateSink<Value>]
    ) {
        self.init(defaultValue, key: key, storage: storage, previousKeys: previousKeys, sinks: sinks())
    }

    /// Creates a persisted container as ``init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``
    /// does, whose writes must pass `validator`; see
    /// ``PersistedState/init(_:key:storage:previousKeys:validator:)`` for what it means for shared and outside values.
    public convenience init(
        _ defaultValue: Value,
        key: String,
        storage: any StateStorage,
        previousKeys: [String] = [],
        sinks: [any StateSink<Value>],
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        self.init(defaultValue, key: key, storage: storage, previousKeys: previousKeys, sinks: sinks)
        installValidator(validator)
    }

    /// Whether the container saves its changes; `false` when it was created without storage, or
    /// as for ``PersistedState/isPersisting``.
    public var isPersisting: Bool {
        persistence?.isPersisting ?? false
    }

    /// Why the stored value could not be used, or `nil`; see ``PersistedState/loadError``.
    public var loadError: (any Error)? {
        persistence?.loadError
    }

    /// Why the newest value is not in storage, or `nil`; see ``PersistedState/saveError``.
    public var saveError: (any Error)? {
        persistence?.saveError
    }
}
