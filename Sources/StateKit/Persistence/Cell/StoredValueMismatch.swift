/// The error reported when storage holds a value of another type than the container's.
///
/// For example, `UserDefaults` holds the string `"yes"` under a key that a
/// `UserDefaultsState<Bool>` reads. It arrives as the ``StateDiagnostic/error`` of a
/// ``StateDiagnostic/Kind/decodingFailed`` diagnostic.
public struct StoredValueMismatch: Error, Sendable, CustomStringConvertible {
    /// The type the container expected, such as `"Bool"`.
    public let expected: String
    /// The type of what was stored, such as `"String"`.
    public let found: String

    /// Creates the error for a stored `object` that is not of the type named `expected`.
    public init(expected: String, found object: Any) {
        self.expected = expected
        self.found = String(describing: type(of: object))
    }

    /// `"expected Bool, found String"`.
    public var description: String {
        "expected \(expected), found \(found)"
    }
}
