/// A property stored in a ``PersistedState``: it starts from the stored value, every change is
/// saved, and `$property` is the container itself.
///
/// ```swift
/// final class SettingsModel {
///     @Persisted(key: "theme", storage: .file(settingsDirectory)) var theme = Theme.light
///     @Persisted(key: "fontSize") var fontSize = 14.0     // in UserDefaults.standard
/// }
///
/// let model = SettingsModel()
/// model.theme = .dark                          // saved off this thread
/// let subscription = model.$theme.subscribe { print("theme: \($0)") }
/// model.$theme.flush()                         // wait until it is on disk
/// ```
///
/// It is the persisted member of the ``Stateful`` family: same shape, same operators on `$theme`.
///
/// > Tip: `model.fontSize += 1` reads, then writes: two threads doing it at once can lose an
/// > update. Use `model.$fontSize.modify { $0 += 1 }`.
///
/// - Note: All operations on `Persisted` are thread-safe.
@propertyWrapper
public struct Persisted<Value: Codable & Sendable>: Sendable {
    /// The container behind the property.
    public let projectedValue: PersistedState<Value>

    /// Stores the property under `key` in `storage`, starting from the stored value if there is one.
    ///
    /// - Parameters:
    ///   - wrappedValue: The value when storage holds none (the declaration's initial value).
    ///   - key: The key the value is stored under.
    ///   - storage: Where to keep it; `UserDefaults.standard` unless you say otherwise.
    ///   - previousKeys: Keys earlier releases stored the property under, newest first: the value
    ///     moves from them to `key` once (see ``PersistedState/init(_:key:storage:previousKeys:)``).
    ///     `@Persisted(key: "username", previousKeys: ["displayName"]) var name = ""`.
    public init(
        wrappedValue: Value,
        key: String,
        storage: any StateStorage = .userDefaults(),
        previousKeys: [String] = []
    ) {
        projectedValue = PersistedState(wrappedValue, key: key, storage: storage, previousKeys: previousKeys)
    }

    /// Stores the property under `key` in `storage`, with writes guarded by `validator` (see
    /// ``PersistedState/init(_:key:storage:previousKeys:validator:)``). A setter cannot throw: a refused write
    /// leaves the value as it was and is reported as ``StateDiagnostic/Kind/rejectedWrite``; use
    /// `$property.set(_:)` to get the error.
    public init(
        wrappedValue: Value,
        key: String,
        storage: any StateStorage = .userDefaults(),
        previousKeys: [String] = [],
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        projectedValue = PersistedState(
            wrappedValue, key: key, storage: storage, previousKeys: previousKeys, validator: validator)
    }

    /// Stores the property in an existing container, to share it between models.
    public init(_ container: PersistedState<Value>) {
        projectedValue = container
    }

    /// The container's current value; setting it is ``State/modify(_:)-5lmnc``.
    public var wrappedValue: Value {
        get { projectedValue.value }
        nonmutating set { projectedValue.modify(newValue) }
    }
}
