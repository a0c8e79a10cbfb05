/// Runs `operation` with every persisted container created inside it keeping its value in
/// `storage` instead of its own: for previews and tests that create an app's models.
///
/// ```swift
/// let preview = withStateStorage(.inMemory) {
///     PersistedState(0, key: "count", storage: .file(appGroupDirectory))   // kept in memory
/// }
/// ```
///
/// The storage replaces the one a ``PersistedState``, a persisted ``SyncedState``, `@Persisted`,
/// `@Synced` or a ``StateKey`` names, and a ``UserDefaultsState``'s `UserDefaults`; the key, its
/// previous keys and everything else stay as declared. A container keeps the storage it was
/// created with after `operation` returns. Containers made on other threads, or in detached
/// tasks, during the call do not see the override: it follows the calling thread and the tasks
/// it starts, as a task-local value does. Overrides nest: the innermost wins.
///
/// StateKitTesting's `.inMemoryStateStorage` trait runs a whole test or suite this way.
///
/// - Parameters:
///   - storage: Where containers created inside `operation` keep their values.
///   - operation: Creates the containers (a model, a preview's state).
/// - Returns: What `operation` returns.
/// - Throws: What `operation` throws.
public func withStateStorage<Result>(_ storage: any StateStorage, operation: () throws -> Result) rethrows -> Result {
    try StateStorageOverride.$current.withValue(storage, operation: operation)
}

/// Runs the asynchronous `operation` with every persisted container created inside it, and in
/// the tasks it starts, keeping its value in `storage` instead of its own; see
/// ``withStateStorage(_:operation:)-(_,()->Result)``.
///
/// ```swift
/// try await withStateStorage(.inMemory) {
///     let model = PersistedState([String](), key: "habits", storage: .file(appGroupDirectory))
///     try await Task.sleep(for: .milliseconds(1))
///     model.modify { $0.append("water") }
/// }
/// ```
public func withStateStorage<Result>(
    _ storage: any StateStorage,
    isolation: isolated (any Actor)? = #isolation,
    operation: () async throws -> Result
) async rethrows -> Result {
    try await StateStorageOverride.$current.withValue(storage, operation: operation)
}

/// The storage ``withStateStorage(_:operation:)-(_,()->Result)`` put in place of every container's own.
enum StateStorageOverride {
    /// The override in force for the current task or thread, or `nil`.
    @TaskLocal static var current: (any StateStorage)?

    /// `storage`, unless an override is in force.
    static func resolve(_ storage: any StateStorage) -> any StateStorage {
        current ?? storage
    }
}
