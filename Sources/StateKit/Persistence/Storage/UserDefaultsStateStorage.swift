import Foundation

/// A ``StateStorage`` that keeps each key in `UserDefaults`, in StateKit's one `UserDefaults`
/// format.
///
/// A ``PersistedState`` (or `@Persisted`) over this storage stores its value exactly as a
/// ``UserDefaultsState`` does: property-list values (`Bool`, numbers, `String`, `Date`, arrays
/// and dictionaries of them) natively, so `UserDefaults.bool(forKey:)`, `@AppStorage` and other
/// code see them as they are; a `URL` and a `RawRepresentable` as Foundation and `@AppStorage`
/// store them; any other `Codable` value as JSON `Data`. Each reads what the others wrote.
///
/// ```swift
/// let onboarding = PersistedState(Onboarding(), key: "onboarding", storage: .userDefaults())
/// ```
///
/// Containers on one key in one suite share one value, and see changes other code or another
/// process makes to the key (checked a few times a second). On Linux the suite is told from the
/// `UserDefaults` instance; on Apple platforms pass `suiteName` when you create more than one
/// instance for a suite.
///
/// > Important: A suite shared with extensions (an App Group suite) cannot make a key's writes
/// > atomic across processes: `cfprefsd` owns its file and merges each process's writes, so two
/// > processes that `modify { $0 += 1 }` one key lose increments. Keep state that several
/// > processes change in ``StateStorage/file(_:sharedAcrossProcesses:)`` instead.
///
/// Used directly through the byte-level requirements, `save(_:forKey:)` stores a JSON scalar
/// (`true`, `3`, `"dark"`) natively and anything else as `Data`, and `load(forKey:)` returns a
/// native value as JSON.
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
    ///   - suiteName: The suite's name, which tells storages (and containers) on one suite apart
    ///     from others; `nil` to have StateKit find it (`standard` for `.standard`).
    public init(_ defaults: UserDefaults = .standard, suiteName: String? = nil) {
        box = UncheckedSendable(defaults)
        name = suiteName ?? Self.suiteName(of: defaults)
    }

    /// `UserDefaults(<suite>)`.
    public var location: String { "UserDefaults(\(name))" }

    /// The bytes stored for `key`, or `nil`: `Data` as it is, a native value as JSON.
    ///
    /// - Throws: ``StoredValueMismatch`` when the key holds a value JSON cannot express (a `Date`).
    public func load(forKey key: String) throws -> Data? {
        guard let object = defaults.object(forKey: key) else { return nil }
        if let data = object as? Data { return data }
        guard JSONSerialization.isValidJSONObject([object]),
            let array = try? JSONSerialization.data(withJSONObject: [object], options: [.sortedKeys])
        else {
            throw StoredValueMismatch(expected: "Data", found: object)
        }
        return array.dropFirst().dropLast()
    }

    /// Stores `data` under `key`: a JSON scalar natively, anything else as `Data`.
    public func save(_ data: Data, forKey key: String) throws {
        defaults.set(Self.scalar(fromJSON: data) ?? data, forKey: key)
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

    /// The `Bool`, `Int`, `Double` or `String` that JSON `data` is, if it is one of those.
    private static func scalar(fromJSON data: Data) -> Any? {
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        switch text.first {
        case "t", "f":
            return text == "true" ? true : text == "false" ? false : nil
        case "\"":
            return try? JSONDecoder().decode(String.self, from: data)
        case "-", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9":
            if let int = Int(text) { return int }
            return (try? JSONDecoder().decode(Double.self, from: data))
        default:
            return nil
        }
    }

    /// `standard`, the suite's name where Foundation keeps it (Linux), or the instance's identity.
    private static func suiteName(of defaults: UserDefaults) -> String {
        if defaults === UserDefaults.standard { return "standard" }
        #if !canImport(Darwin)
        for child in Mirror(reflecting: defaults).children where child.label == "suite" {
            if let suite = child.value as? String { return suite }
        }
        #endif
        return "\(ObjectIdentifier(defaults))"
    }
}

extension UserDefaultsStateStorage: WatchableStateStorage {
    func watch(key: String, onChange: @escaping @Sendable () -> Void) -> AnyObject? {
        DefaultsWatcher.shared.watch(defaults, suite: name, key: key, onChange: onChange)
    }
}

extension StateStorage where Self == UserDefaultsStateStorage {
    /// A storage keeping each key in `defaults`; see ``UserDefaultsStateStorage``.
    public static func userDefaults(_ defaults: UserDefaults = .standard, suiteName: String? = nil) -> Self {
        UserDefaultsStateStorage(defaults, suiteName: suiteName)
    }
}

extension StoredValueCodec {
    /// StateKit's one `UserDefaults` format (see ``DefaultsValueCoding``) for `key` in `storage`.
    static func defaults(key: String, storage: UserDefaultsStateStorage, defaultValue: Value) -> Self {
        let defaults = UncheckedSendable(storage.defaults)
        let fill = UncheckedSendable(defaultValue)
        return StoredValueCodec(
            load: {
                guard let object = defaults.value.object(forKey: key) else { return nil }
                return StoredRepresentation(payload: object, fingerprint: DefaultsValueCoding.fingerprint(of: object))
            },
            decode: { representation in
                try DefaultsValueCoding.value(from: representation.payload, filling: fill.value)
            },
            encode: { value in
                guard let object = try DefaultsValueCoding.object(for: value) else { return nil }
                return StoredRepresentation(payload: object, fingerprint: DefaultsValueCoding.fingerprint(of: object))
            },
            store: { representation in
                if let representation {
                    defaults.value.set(representation.payload, forKey: key)
                } else {
                    defaults.value.removeObject(forKey: key)
                }
            },
            moveAside: {
                let asideKey = StoredValueRecovery.unusedAsideKey(for: key) { defaults.value.object(forKey: $0) != nil }
                try storage.moveValue(forKey: key, toKey: asideKey)
                return asideKey
            },
            copyAside: { representation in
                let asideKey = StoredValueRecovery.unusedAsideKey(for: key) { defaults.value.object(forKey: $0) != nil }
                defaults.value.set(representation.payload, forKey: asideKey)
                return asideKey
            },
            watch: { onChange in storage.watch(key: key, onChange: onChange) },
            location: storage.location,
            // Writes the defaults' file now rather than at the system's moment.
            makeDurable: { defaults.value.synchronize() }
        )
    }
}
