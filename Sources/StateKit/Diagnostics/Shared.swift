import Foundation

// swift-sharing's `@Shared` and its keys, declared unavailable with a message that names
// StateKit's property wrappers, so `@Shared(.appStorage("count"))` teaches instead of failing with
// "unknown attribute 'Shared'". The compiler ignores an unavailable declaration where an
// available one of the same name is imported, so an app that imports Sharing as well keeps its
// `@Shared` (measured with two modules declaring `Shared`, one of them unavailable).

/// swift-sharing's `@Shared`; StateKit's persisted property is `@Persisted`.
@available(
    *, unavailable,
    message: """
        StateKit has no @Shared: a persisted property is @Persisted(key: "count") var count = 0 (in \
        UserDefaults.standard; storage: .file(directory) or .inMemory for others), or @Persisted(.count) with a \
        key declared once as a StateKey; `$count` is its container (subscribe, modify { $0 += 1 })
        """
)
@propertyWrapper
public struct Shared<Value> {
    /// swift-sharing's `@Shared(key) var value = initial`.
    public init(wrappedValue: Value, _ key: SharedKey) { fatalError("unavailable") }

    /// swift-sharing's `@Shared(key) var value: Type`.
    public init(_ key: SharedKey) { fatalError("unavailable") }

    /// The shared value.
    public var wrappedValue: Value { fatalError("unavailable") }
}

/// swift-sharing's persistence strategies; StateKit's are storages (``StateStorage``).
@available(*, unavailable, message: "StateKit's storages are .userDefaults(), .file(directory) and .inMemory")
public struct SharedKey {
    /// swift-sharing's `.appStorage(key)`.
    @available(
        *, unavailable,
        message: """
            use @Persisted(key: "count") var count = 0, which keeps the value in UserDefaults.standard \
            (storage: .userDefaults(suite) for another suite)
            """
    )
    public static func appStorage(_ key: String, store: UserDefaults? = nil) -> Self { fatalError("unavailable") }

    /// swift-sharing's `.fileStorage(url)`.
    @available(
        *, unavailable,
        message: """
            use @Persisted(key: "items", storage: .file(directory)) var items: [Item] = [], which keeps one \
            JSON file per key in the directory
            """
    )
    public static func fileStorage(_ url: URL) -> Self { fatalError("unavailable") }

    /// swift-sharing's `.inMemory(key)`.
    @available(
        *, unavailable,
        message: """
            use @Persisted(key: "draft", storage: .inMemory) var draft = "", or @Stateful(key: "draft") for a \
            value that is not persisted
            """
    )
    public static func inMemory(_ key: String) -> Self { fatalError("unavailable") }
}
