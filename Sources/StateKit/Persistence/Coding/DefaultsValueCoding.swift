import Foundation

#if canImport(CoreFoundation) && canImport(Darwin)
import CoreFoundation
#endif

/// StateKit's one `UserDefaults` format, used by ``UserDefaultsState``, by a ``PersistedState``
/// over ``UserDefaultsStateStorage`` and by `@Persisted`'s default storage, so each reads what
/// the others (and other code, and `@AppStorage`) wrote.
///
/// Writing:
/// - property-list values (`Bool`, `Int`, `Double`, `Float`, `String`, `Data`, `Date`, arrays
///   and string-keyed dictionaries of them) are stored as they are, and so are other integers
///   that fit in an `Int`;
/// - a `URL` as Foundation's `set(_:forKey:)` and `@AppStorage` store it: a file URL as its path,
///   any other as a keyed archive, so `url(forKey:)` reads it;
/// - a `RawRepresentable` whose raw value is a property-list value as its raw value (as
///   `@AppStorage` does);
/// - an `NSSecureCoding` object as a keyed archive, anything else `Encodable` as JSON `Data`;
/// - an `Optional` that is `nil` as no value (the key is removed).
///
/// Reading accepts all of these, and a number into any numeric type it fits exactly (an `Int`
/// `3` into a `Double`, a `Double` `2.0` into an `Int`), so a value is only called unreadable when
/// it truly is.
enum DefaultsValueCoding {
    /// The object to store for `value`; `nil` when the key should be removed.
    static func object(for value: Any) throws -> Any? {
        var value = value
        if let optional = value as? any OptionalValue {
            guard let wrapped = optional.wrappedValue else { return nil }
            value = wrapped
        }
        if let url = value as? URL {
            if url.isFileURL { return url.path }
            return try NSKeyedArchiver.archivedData(withRootObject: url as NSURL, requiringSecureCoding: true)
        }
        if isPropertyList(value) { return value }
        if let integer = value as? any BinaryInteger, let int = Int(exactly: integer) { return int }
        if let raw = (value as? any RawRepresentable)?.rawValue, isPropertyList(raw) { return raw }
        if let object = value as? any NSObject & NSSecureCoding {
            return try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: true)
        }
        if let data = try PersistenceCoder.encodeIfEncodable(value) { return data }
        throw StoredValueMismatch(expected: "a property-list, NSSecureCoding or Encodable value", found: value)
    }

    /// Reads `object` as `type`, taking properties missing from stored JSON from `defaultValue`.
    static func value<Value>(from object: Any, filling defaultValue: Value) throws -> Value {
        let type = Value.self
        if let optionalType = type as? any OptionalValue.Type {
            let wrapped = (defaultValue as? any OptionalValue)?.wrappedValue
            return try read(object, as: optionalType.wrappedType, filling: wrapped) as! Value
        }
        return try read(object, as: type, filling: defaultValue) as! Value
    }

    /// The fingerprint of a stored object: its binary property list.
    static func fingerprint(of object: Any) -> Data {
        (try? PropertyListSerialization.data(fromPropertyList: [object], format: .binary, options: 0))
            ?? Data(String(describing: object).utf8)
    }

    private static func read(_ object: Any, as type: Any.Type, filling defaultValue: Any?) throws -> Any {
        if type == URL.self, let url = url(from: object) { return url }
        if let number = StoredNumber(object) {
            if let converted = number.converted(to: type) { return converted }
        } else if let value = exactly(object, as: type) {
            return value
        }
        if let rawType = type as? any RawRepresentable.Type, let value = rawValue(object, as: rawType) {
            return value
        }
        if let data = object as? Data {
            if let secureClass = type as? any (NSObject & NSSecureCoding).Type,
                let archived = try? NSKeyedUnarchiver.unarchivedObject(ofClasses: [secureClass], from: data)
            {
                return archived
            }
            if let decoded = try PersistenceCoder.decodeIfDecodable(type, from: data, filling: defaultValue) {
                return decoded
            }
        } else if type is any Decodable.Type, JSONSerialization.isValidJSONObject([object]),
            let data = try? JSONSerialization.data(withJSONObject: [object]),
            let decoded = try? PersistenceCoder.decodeIfDecodable(type, fromArrayOfOne: data)
        {
            return decoded
        }
        throw StoredValueMismatch(expected: "\(type)", found: object)
    }

    /// `object` as `type` when it already is one (numbers aside, which must fit exactly).
    private static func exactly(_ object: Any, as type: Any.Type) -> Any? {
        func cast<T>(_: T.Type) -> Any? { object as? T }
        return _openExistential(type, do: cast)
    }

    private static func url(from object: Any) -> URL? {
        switch object {
        case let url as URL:
            return url
        case let string as String:
            if let url = URL(string: string), url.scheme != nil { return url }
            return URL(fileURLWithPath: NSString(string: string).expandingTildeInPath)
        case let data as Data:
            if let url = try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: data) {
                return url as URL
            }
            return try? JSONDecoder().decode(URL.self, from: data)
        default:
            return nil
        }
    }

    private static func rawValue(_ object: Any, as type: any RawRepresentable.Type) -> Any? {
        func make<R: RawRepresentable>(_: R.Type) -> Any? {
            guard let raw = try? read(object, as: R.RawValue.self, filling: nil) as? R.RawValue else { return nil }
            return R(rawValue: raw)
        }
        return make(type)
    }
}

/// A number stored in `UserDefaults`, to be read into whichever numeric type it fits exactly.
private enum StoredNumber {
    case integer(Int)
    case unsigned(UInt)
    case floating(Double)

    init?(_ object: Any) {
        #if canImport(Darwin)
        if CFGetTypeID(object as CFTypeRef) == CFBooleanGetTypeID() { return nil }
        #endif
        switch object {
        case is Bool: return nil
        case let value as Int: self = .integer(value)
        case let value as UInt: self = .unsigned(value)
        case let value as Double: self = .floating(value)
        case let value as Float: self = .floating(Double(value))
        case let value as any BinaryInteger:
            guard let int = Int(exactly: value) else { return nil }
            self = .integer(int)
        default: return nil
        }
    }

    func converted(to type: Any.Type) -> Any? {
        if let integer = type as? any BinaryInteger.Type {
            return convert(to: integer)
        }
        if let floating = type as? any BinaryFloatingPoint.Type {
            return convert(to: floating)
        }
        return nil
    }

    private func convert<T: BinaryInteger>(to _: T.Type) -> Any? {
        switch self {
        case .integer(let value): T(exactly: value)
        case .unsigned(let value): T(exactly: value)
        case .floating(let value): T(exactly: value)
        }
    }

    private func convert<T: BinaryFloatingPoint>(to _: T.Type) -> Any? {
        switch self {
        case .integer(let value): T(exactly: value)
        case .unsigned(let value): T(exactly: value)
        case .floating(let value): T(value)
        }
    }
}
