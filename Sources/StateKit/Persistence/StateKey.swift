/// Where an app declares its keys, once, as static members: every container and wrapper that
/// takes a ``StateKey`` then finds them with a leading dot.
///
/// ```swift
/// struct Habit: Codable, Equatable, Sendable { var name: String }
///
/// extension StateKeys {
///     static let sharedHabits = StateKey("habits", default: [Habit](), storage: .file(appGroupDirectory))
/// }
///
/// let habits = PersistedState(.sharedHabits)    // the app, the widget and the intent alike
/// ```
///
/// - Note: It has no members of its own; all operations on it are thread-safe. It is
///   `@unchecked Sendable` because it has no state, and ``StateKey``, its one subclass, only
///   immutable `Sendable` properties.
public class StateKeys: @unchecked Sendable {
    init() {}
}

/// A persisted key declared once: its name, default value, storage and previous keys.
///
/// An app, its widget and its intents each spelling `"tracker"` with its default and its storage
/// can disagree; a `StateKey` is the one place that says them. Declare it as a static member of
/// ``StateKeys`` and hand it to a ``PersistedState``, a ``SyncedState``, `@Persisted` or
/// `@Synced`:
///
/// ```swift
/// extension StateKeys {
///     static let appTheme = StateKey("app-theme", default: "light")   // in UserDefaults.standard
///     static let accountName = StateKey("account-name", default: "", previousKeys: ["displayName"])
/// }
///
/// final class SettingsModel {
///     @Persisted(.appTheme) var theme: String
/// }
/// let accountName = SyncedState(.accountName, sinks: [LoggingSink()])
/// ```
///
/// Containers made from one key share one cell, as any persisted containers of one key in one
/// storage do. Two declarations of one name with different value types or different storages are
/// reported as two containers of one key with different types are
/// (``StateDiagnostic/Kind/keyConflict``), when the second is made: they would store one key two
/// ways. ``withStateStorage(_:operation:)-(_,()->Result)`` replaces a key's storage for the
/// containers made inside it, without changing the declaration.
///
/// - Note: All operations on `StateKey` are thread-safe.
public final class StateKey<Value: Codable & Sendable>: StateKeys, @unchecked Sendable {
    /// The key the value is stored under.
    public let name: String

    /// The value when storage holds none, or none that decodes.
    public let defaultValue: Value

    /// Where the value is kept.
    public let storage: any StateStorage

    /// Keys earlier releases stored the value under, newest first; see
    /// ``PersistedState/init(_:key:storage:previousKeys:)``.
    public let previousKeys: [String]

    /// Declares a key.
    ///
    /// - Parameters:
    ///   - name: The key the value is stored under; unique in its storage.
    ///   - defaultValue: The value when storage holds none, or none that decodes.
    ///   - storage: Where the value is kept; `UserDefaults.standard` unless you say otherwise.
    ///   - previousKeys: Keys earlier releases stored the value under, newest first: the value
    ///     moves from them to `name` once.
    public init(
        _ name: String,
        default defaultValue: Value,
        storage: any StateStorage = .userDefaults(),
        previousKeys: [String] = []
    ) {
        self.name = name
        self.defaultValue = defaultValue
        self.storage = storage
        self.previousKeys = previousKeys
        super.init()
        StateKeyDeclarations.shared.declare(name, type: Value.self, location: storage.location)
    }
}

extension PersistedState {
    /// Creates the container of a declared key: the value stored for it, or its default.
    ///
    /// ```swift
    /// let habits = PersistedState(.habitList)
    /// ```
    public convenience init(_ key: StateKey<Value>) {
        self.init(key.defaultValue, key: key.name, storage: key.storage, previousKeys: key.previousKeys)
    }
}

extension SyncedState where Value: Codable {
    /// Creates the container of a declared key, which saves every change in the key's storage
    /// and forwards it to `sinks`; see
    /// ``init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``.
    ///
    /// ```swift
    /// let habits = SyncedState(.habitList, sinks: [LoggingSink()])
    /// ```
    public convenience init(_ key: StateKey<Value>, sinks: [any StateSink<Value>]) {
        self.init(
            key.defaultValue, key: key.name, storage: key.storage, previousKeys: key.previousKeys, sinks: sinks)
    }

    /// Creates the container of a declared key whose sinks are listed in a block.
    ///
    /// ```swift
    /// let habits = SyncedState(.habitList) {
    ///     LoggingSink()
    /// }
    /// ```
    public convenience init(_ key: StateKey<Value>, @SinkBuilder<Value> sinks: () -> [any StateSink<Value>]) {
        self.init(key, sinks: sinks())
    }
}

extension Persisted {
    /// A property stored under a declared key: `@Persisted(.appTheme) var theme: String`.
    public init(_ key: StateKey<Value>) {
        self.init(PersistedState(key))
    }
}

extension Synced where Value: Codable {
    /// A property stored under a declared key, whose changes are saved and sent to `sinks`:
    /// `@Synced(.habitList, sinks: [LoggingSink()]) var habits: [Habit]`.
    public init(_ key: StateKey<Value>, sinks: [any StateSink<Value>]) {
        self.init(SyncedState(key, sinks: sinks))
    }
}

/// Every name declared as a ``StateKey`` in this process, with its value type and storage, so
/// that a second declaration that disagrees is reported.
final class StateKeyDeclarations: Sendable {
    static let shared = StateKeyDeclarations()

    private let declared = LockedBox<[String: (type: ObjectIdentifier, typeName: String, location: String)]>([:])

    /// Records `name`'s first declaration; reports a later one with another type or storage.
    func declare<Value>(_ name: String, type: Value.Type, location: String) {
        let earlier = declared.withLock { declared -> (type: ObjectIdentifier, typeName: String, location: String)? in
            if let earlier = declared[name] { return earlier }
            declared[name] = (ObjectIdentifier(type), "\(type)", location)
            return nil
        }
        guard let earlier, earlier.type != ObjectIdentifier(type) || earlier.location != location else { return }
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .keyConflict, keys: [name],
                message: "the key is declared as a StateKey<\(Value.self)> in \(location), and was declared as a "
                    + "StateKey<\(earlier.typeName)> in \(earlier.location): declare each key once"))
    }
}
