import Foundation

/// A ``StateStorage`` that keeps each key's bytes as a `Data` value in `UserDefaults`.
///
/// Use it for small values that belong with the app's preferences. To store property-list
/// values natively, so other code reading `UserDefaults` sees a `Bool` rather than bytes, use
/// ``UserDefaultsState`` instead.
///
/// ```swift
/// let onboarding = PersistedState(Onboarding(), key: "onboarding", storage: .userDefaults())
/// ```
///
/// - Note: All operations on `UserDefaultsStateStorage` are thread-safe.
public struct UserDefaultsStateStorage: StateStorage {
    private let box: UncheckedSendable<UserDefaults>
    private let name: String

    /// The defaults the storage reads and writes.
    public var defaults: UserDefaults { box.value }

    /// Creates a storage over `defaults`.
    ///
    /// - Parameters:
    ///   - defaults: The defaults to use; tests should pass their own suite.
    ///   - suiteName: The suite's name, to tell storages apart in diagnostics; `nil` for
    ///     `.standard`.
    public init(_ defaults: UserDefaults = .standard, suiteName: String? = nil) {
        box = UncheckedSendable(defaults)
        name = suiteName ?? (defaults === UserDefaults.standard ? "standard" : "\(ObjectIdentifier(defaults))")
    }

    /// `UserDefaults(<suite>)`.
    public var location: String { "UserDefaults(\(name))" }

    /// The `Data` stored for `key`, or `nil`.
    ///
    /// - Throws: ``StoredValueMismatch`` when the key holds something other than `Data`.
    public func load(forKey key: String) throws -> Data? {
        guard let object = defaults.object(forKey: key) else { return nil }
        guard let data = object as? Data else {
            throw StoredValueMismatch(expected: "Data", found: object)
        }
        return data
    }

    /// Stores `data` under `key`.
    public func save(_ data: Data, forKey key: String) throws {
        defaults.set(data, forKey: key)
    }

    /// Removes `key`.
    public func remove(forKey key: String) throws {
        defaults.removeObject(forKey: key)
    }

    /// Moves whatever object `key` holds, `Data` or not, to `destinationKey`.
    public func moveValue(forKey key: String, toKey destinationKey: String) throws {
        guard let object = defaults.object(forKey: key) else { return }
        defaults.set(object, forKey: destinationKey)
        defaults.removeObject(forKey: key)
    }
}

extension StateStorage where Self == UserDefaultsStateStorage {
    /// A storage keeping each key's bytes in `defaults`; see ``UserDefaultsStateStorage``.
    public static func userDefaults(_ defaults: UserDefaults = .standard, suiteName: String? = nil) -> Self {
        UserDefaultsStateStorage(defaults, suiteName: suiteName)
    }
}
