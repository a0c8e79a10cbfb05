import Foundation

/// Lets code that only knows `Any` ask whether a value is an empty `Optional`, and unwrap it.
protocol OptionalValue {
    /// The wrapped type.
    static var wrappedType: Any.Type { get }
    /// The wrapped value, or `nil`.
    var wrappedValue: Any? { get }
}

extension Optional: OptionalValue {
    static var wrappedType: Any.Type { Wrapped.self }

    var wrappedValue: Any? {
        guard case .some(let wrapped) = self else { return nil }
        return (wrapped as? any OptionalValue)?.wrappedValue ?? wrapped
    }
}

/// Whether `value` is a property-list value `UserDefaults` stores natively: `Bool`, `Int`,
/// `Double`, `Float`, `String`, `Data`, `Date`, or arrays and string-keyed dictionaries of them.
func isPropertyList(_ value: Any) -> Bool {
    switch value {
    case is Bool, is Int, is Double, is Float, is String, is Data, is Date:
        return true
    case let array as [Any]:
        return array.allSatisfy(isPropertyList)
    case let dictionary as [String: Any]:
        return dictionary.values.allSatisfy(isPropertyList)
    default:
        return false
    }
}
