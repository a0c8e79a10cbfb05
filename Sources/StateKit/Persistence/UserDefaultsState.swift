import Foundation

/// A ``MonitoredState`` backed by `UserDefaults`: it loads the value stored for its key on
/// creation and stores every change, as in the seed article.
///
/// ```swift
/// UserDefaults.standard.set(true, forKey: "isTouchIDEnabled")
///
/// let isTouchIDEnabled = UserDefaultsState(false, key: "isTouchIDEnabled")
/// print(isTouchIDEnabled.value)                                  // "true"
///
/// isTouchIDEnabled ~> false
/// print(UserDefaults.standard.bool(forKey: "isTouchIDEnabled"))  // "false"
/// ```
///
/// Values are stored in StateKit's one `UserDefaults` format, the same as a ``PersistedState``
/// over ``UserDefaultsStateStorage``: property-list values (`Bool`, numbers, `String`, `Data`,
/// `Date`, and arrays and dictionaries of them) natively, so other code reading `UserDefaults`
/// sees them as they are; a `URL` and a `RawRepresentable` as Foundation and `@AppStorage` store
/// them; `NSSecureCoding` objects as keyed archives, and any other `Codable` value as JSON `Data`
/// (see ``VersionedValue`` for migrations). A number other code stored reads into any numeric
/// type it fits (an `Int` `3` into a `Double`). When an `Optional` value becomes `nil`, the key is
/// removed. Changes are stored synchronously, before the write returns (or, when another thread
/// is delivering the container, on that thread); on Linux, call ``flush()`` before the process
/// exits to have them written to disk.
///
/// Every container of one key in one suite (a `UserDefaultsState`, a ``PersistedState`` over
/// ``UserDefaultsStateStorage``, `@Persisted`) is a view of one cell: one value, one version, one
/// lock, one list of subscribers, so `modify` through any of them is atomic against all. A
/// container made while another lives starts from the live value (and from what other code just
/// stored for the key). A change to the key made outside them (other code, another process)
/// reaches them within a second, as one change.
///
/// A stored value that truly cannot be read as `Value` (`"yes"` where a `Bool` is expected, bytes
/// that do not decode) is never a crash: the container starts from `defaultValue`, moves the
/// stored object aside to `"<key>.corrupt-<timestamp>-<random>"` and reports
/// ``StateDiagnostic/Kind/decodingFailed``.
///
/// - Note: All operations on `UserDefaultsState` are thread-safe. A subclass must restate its
///   `Sendable` conformance (`extension MyState: @unchecked Sendable {}`).
open class UserDefaultsState<Value>: MonitoredState<Value> {
    /// The defaults the value is stored in: the ones it was created with, or those of a
    /// ``UserDefaultsStateStorage`` that ``withStateStorage(_:operation:)-(_,()->Result)`` put in
    /// their place. Under an override of another storage, the value is kept there (as a property
    /// list) and these defaults are not written.
    public let defaults: UserDefaults

    /// The key's cell and what stores it; `nil` after a key conflict (the container lives in
    /// memory only).
    let persistence: StoredValue<Value>?

    /// Creates a container holding the value stored in `defaults` for `key`, or `defaultValue`.
    ///
    /// ```swift
    /// // An earlier release stored the flag as "touchID"; it moves to the new key once.
    /// let isTouchIDEnabled = UserDefaultsState(false, key: "isTouchIDEnabled", previousKeys: ["touchID"])
    /// ```
    ///
    /// - Parameters:
    ///   - defaultValue: The value when `defaults` holds none, or none that reads as `Value`.
    ///   - key: The defaults key.
    ///   - defaults: Where to store the value; tests should pass their own suite.
    ///   - previousKeys: Keys earlier releases stored the value under, newest first; see
    ///     ``PersistedState/init(_:key:storage:previousKeys:)``.
    public init(_ defaultValue: Value, key: String, defaults: UserDefaults = .standard, previousKeys: [String] = []) {
        let storage = StateStorageOverride.resolve(UserDefaultsStateStorage(defaults))
        let persistence: StoredValue<Value>?
        if let suite = storage as? UserDefaultsStateStorage {
            persistence = StoredValue.shared(
                key: key, location: suite.location, previousKeys: previousKeys, defaultValue: defaultValue,
                savesInline: true
            ) { .defaults(key: $0, storage: suite, defaultValue: defaultValue) }
            self.defaults = suite.defaults
        } else {
            persistence = StoredValue.shared(
                key: key, location: storage.location, previousKeys: previousKeys, defaultValue: defaultValue,
                savesInline: false
            ) { .propertyList(key: $0, storage: storage, defaultValue: defaultValue) }
            self.defaults = defaults
        }
        self.persistence = persistence
        super.init(defaultValue, key: key, joining: persistence?.cell)
        persistence?.add(self)
    }

    override func isStateKitType(_ type: AnyClass) -> Bool {
        type == UserDefaultsState<Value>.self || super.isStateKitType(type)
    }

    /// Whether the container stores its changes: `false` after a key conflict, or when a stored
    /// object that cannot be read could not be moved aside (so it is not overwritten).
    public var isPersisting: Bool {
        persistence?.isPersisting ?? false
    }

    /// Why the stored object could not be read as `Value`, or `nil`; see
    /// ``PersistedState/loadError``. Observable.
    public var loadError: (any Error)? {
        persistence?.loadError
    }

    /// Why the newest value is not stored, or `nil`; see ``PersistedState/saveError``. Observable.
    public var saveError: (any Error)? {
        persistence?.saveError
    }

    /// Asks ``defaults`` to write its changes to disk now.
    ///
    /// On Apple platforms `UserDefaults` saves by itself; on Linux, swift-corelibs-foundation
    /// writes a suite's file only when it is synchronized, so call this before the process exits.
    public func flush() {
        persistence?.flush()
        defaults.synchronize()
    }
}

extension UserDefaultsState: @unchecked Sendable where Value: Sendable {}
