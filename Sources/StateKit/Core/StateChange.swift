import Foundation

/// One change of a container: which key, what it was, what it became, and when.
///
/// Versions start at 0 for the initial value and grow by one with each change, so a change is
/// identified by ``key`` and ``version`` together (see ``idempotencyKey``): a server receiving
/// the same change twice from an at-least-once pipeline can drop the duplicate.
public struct StateChange<Value> {
    /// The key of the container that changed.
    public let key: String
    /// The value before the change. Equal to ``newValue`` for a change announced with
    /// ``State/didModify()`` after mutating a reference type in place.
    public let oldValue: Value
    /// The value the change wrote.
    public let newValue: Value
    /// The container's version after the change.
    public let version: UInt64
    /// When the change was made.
    public let timestamp: Date

    /// Creates a change record.
    public init(key: String, oldValue: Value, newValue: Value, version: UInt64, timestamp: Date) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.version = version
        self.timestamp = timestamp
    }

    /// `"<key>#<version>"`: unique per change of a container, stable across retries.
    public var idempotencyKey: String {
        "\(key)#\(version)"
    }
}

extension StateChange: Sendable where Value: Sendable {}
extension StateChange: Equatable where Value: Equatable {}
extension StateChange: Hashable where Value: Hashable {}
extension StateChange: Codable where Value: Codable {}
