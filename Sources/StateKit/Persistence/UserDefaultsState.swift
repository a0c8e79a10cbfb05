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
/// Property-list values (`Bool`, `Int`, `Double`, `Float`, `String`, `Data`, `Date`, and
/// arrays and dictionaries of them) are stored natively, so other code reading `UserDefaults`
/// sees them as they are. `NSSecureCoding` objects are stored as keyed archives, and any other
/// `Codable` value as JSON `Data` (see ``VersionedValue`` for migrations). When an `Optional`
/// value becomes `nil`, the key is removed. Changes are stored synchronously, on the thread
/// delivering the change, in ``didModify()``; on Linux, call ``flush()`` before the process exits
/// to have them written to disk.
///
/// A stored value of another type (`"yes"` where a `Bool` is expected, bytes that do not decode)
/// is never a crash: the container starts from `defaultValue`, moves the stored object aside to
/// `"<key>.corrupt-<timestamp>"` and reports ``StateDiagnostic/Kind/decodingFailed``.
///
/// - Note: All operations on `UserDefaultsState` are thread-safe. A subclass must restate its
///   `Sendable` conformance (`extension MyState: @unchecked Sendable {}`).
open class UserDefaultsState<Value>: MonitoredState<Value> {
    /// The defaults the value is stored in.
    public let defaults: UserDefaults
    /// Whether the container stores its changes: `false` after a key conflict, or when a stored
    /// object of another type could not be moved aside (so it is not overwritten).
    public let isPersisting: Bool

    private let storage: UserDefaultsStateStorage
    private let claim: StorageClaims.Token
    private let saveLock = Lock()

    /// Creates a container holding the value stored in `defaults` for `key`, or `defaultValue`.
    ///
    /// - Parameters:
    ///   - defaultValue: The value when `defaults` holds none, or none of type `Value`.
    ///   - key: The defaults key.
    ///   - defaults: Where to store the value; tests should pass their own suite.
    public init(_ defaultValue: Value, key: String, defaults: UserDefaults = .standard) {
        let storage = UserDefaultsStateStorage(defaults)
        let (claim, isGranted) = StorageClaims.shared.claim(key: key, location: storage.location, type: Value.self)
        var initialValue = defaultValue
        var isPersisting = isGranted
        if isGranted, let object = defaults.object(forKey: key) {
            do {
                initialValue = try decodeDefaultsObject(object, as: Value.self)
            } catch {
                isPersisting = StoredValueRecovery.setAside(
                    key: key, in: storage, expected: Value.self, error: error)
            }
        }
        self.defaults = defaults
        self.storage = storage
        self.claim = claim
        self.isPersisting = isPersisting
        super.init(initialValue, key: key)
    }

    /// Announces the change, then stores the current value in ``defaults`` (or removes the key
    /// when the value is `nil`).
    open override func didModify() {
        super.didModify()
        guard isPersisting else { return }
        saveLock.withLock { store(value) }
    }

    /// Asks ``defaults`` to write its changes to disk now.
    ///
    /// On Apple platforms `UserDefaults` saves by itself; on Linux, swift-corelibs-foundation
    /// writes a suite's file only when it is synchronized, so call this before the process exits.
    public func flush() {
        defaults.synchronize()
    }

    private func store(_ value: Value) {
        var object: Any = value
        if let optional = value as? any OptionalValue {
            guard let wrapped = optional.wrappedValue else {
                defaults.removeObject(forKey: key)
                return
            }
            object = wrapped
        }
        if isPropertyList(object) {
            defaults.set(object, forKey: key)
            return
        }
        do {
            if let archive = try archiveIfSecureCoding(object) {
                defaults.set(archive, forKey: key)
            } else if let data = try PersistenceCoder.encodeIfEncodable(object) {
                defaults.set(data, forKey: key)
            } else {
                throw StoredValueMismatch(expected: "a property-list, NSSecureCoding or Encodable value", found: object)
            }
        } catch {
            StateDiagnostics.report(
                StateDiagnostic(
                    kind: .encodingFailed, keys: [key],
                    message: "could not store \(Value.self) in \(storage.location): \(error)", error: error))
        }
    }
}

extension UserDefaultsState: @unchecked Sendable where Value: Sendable {}

/// Reads a defaults object as `Value`: as it is, a keyed archive, or JSON.
private func decodeDefaultsObject<Value>(_ object: Any, as type: Value.Type) throws -> Value {
    if let value = object as? Value { return value }
    if let data = object as? Data {
        let unwrappedType = (type as? any OptionalValue.Type)?.wrappedType ?? type
        if let object = try unarchiveIfSecureCoding(data, as: unwrappedType), let value = object as? Value {
            return value
        }
        if let object = try PersistenceCoder.decodeIfDecodable(type, from: data), let value = object as? Value {
            return value
        }
    }
    throw StoredValueMismatch(expected: "\(type)", found: object)
}

/// A keyed archive of `object` if it is an `NSSecureCoding` object; `nil` otherwise.
private func archiveIfSecureCoding(_ object: Any) throws -> Data? {
    guard let object = object as? any NSObject & NSSecureCoding else { return nil }
    return try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
}

/// The object archived in `data` if `type` is an `NSSecureCoding` class; `nil` otherwise.
private func unarchiveIfSecureCoding(_ data: Data, as type: Any.Type) throws -> Any? {
    guard let secureClass = type as? any (NSObject & NSSecureCoding).Type else { return nil }
    return try NSKeyedUnarchiver.unarchivedObject(ofClasses: [secureClass], from: data)
}
