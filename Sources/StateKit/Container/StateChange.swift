import Foundation

/// One change of a container: which key, what it was, what it became, and when.
///
/// Versions start at 0 for the initial value (or the value loaded from storage) and grow by one
/// with each change. A container's versions start again at 0 when it is created again (a new
/// launch, a view model created again), unless it continues them from disk (a ``SyncedState`` with
/// a ``DurableOutbox``) or joins a persisted container of its key that still lives (they share one
/// version); storage keeps the value, not the version. ``instance`` tells such runs apart, so
/// ``idempotencyKey`` identifies one change for good: a server receiving the same change twice
/// from an at-least-once pipeline can drop the duplicate.
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
    /// Which container instance made the change, when its ``version``s do not continue across
    /// launches: 16 random hexadecimal digits drawn when a ``SyncedState`` starts without a
    /// ``DurableOutbox`` (or with one it cannot use), set on the changes it hands its sinks.
    /// `nil` when versions continue, and on the changes subscribers receive.
    public let instance: String?
    /// Where the change came from: ``ChangeOrigin/local`` for this process's own writes,
    /// ``ChangeOrigin/remote`` for values a remote-sync sink took from its server, and so on.
    public let origin: ChangeOrigin

    /// Creates a record of a local change.
    public init(
        key: String,
        oldValue: Value,
        newValue: Value,
        version: UInt64,
        timestamp: Date,
        instance: String? = nil
    ) {
        self.init(
            key: key, oldValue: oldValue, newValue: newValue, version: version, timestamp: timestamp,
            instance: instance, origin: .local)
    }

    /// Creates a change record with its origin.
    public init(
        key: String,
        oldValue: Value,
        newValue: Value,
        version: UInt64,
        timestamp: Date,
        instance: String? = nil,
        origin: ChangeOrigin
    ) {
        self.key = key
        self.oldValue = oldValue
        self.newValue = newValue
        self.version = version
        self.timestamp = timestamp
        self.instance = instance
        self.origin = origin
    }

    /// A string that identifies this change and no other change of any container with its key,
    /// stable across retries and relaunches.
    ///
    /// `"<key>#<version>"` when the container's versions continue across launches (behind a
    /// ``DurableOutbox``), `"<key>#<instance>:<version>"` otherwise, such as `"cart#1f0e9a3c5b7d2e48:3"`.
    /// Servers should treat it as opaque and compare it whole (see the Sinks article).
    public var idempotencyKey: String {
        idempotencyKey(atVersion: version)
    }

    /// The idempotency key of this change's container at `version`: what a remote-sync sink sending
    /// the container's latest value (not this change's) puts on the request.
    package func idempotencyKey(atVersion version: UInt64) -> String {
        instance.map { "\(key)#\($0):\(version)" } ?? "\(key)#\(version)"
    }

    /// The same change, marked as made by the container instance `instance`.
    func made(by instance: String?) -> StateChange {
        StateChange(
            key: key, oldValue: oldValue, newValue: newValue, version: version, timestamp: timestamp,
            instance: instance, origin: origin)
    }
}

extension StateChange: Sendable where Value: Sendable {}
extension StateChange: Equatable where Value: Equatable {}
extension StateChange: Hashable where Value: Hashable {}

extension StateChange: Codable where Value: Codable {
    private enum CodingKeys: String, CodingKey {
        case key, oldValue, newValue, version, timestamp, instance, origin
    }

    /// Decodes a change; one recorded before changes had an origin (an older outbox) is local.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            key: try container.decode(String.self, forKey: .key),
            oldValue: try container.decode(Value.self, forKey: .oldValue),
            newValue: try container.decode(Value.self, forKey: .newValue),
            version: try container.decode(UInt64.self, forKey: .version),
            timestamp: try container.decode(Date.self, forKey: .timestamp),
            instance: try container.decodeIfPresent(String.self, forKey: .instance),
            origin: try container.decodeIfPresent(ChangeOrigin.self, forKey: .origin) ?? .local)
    }

    /// Encodes every field; ``origin`` only when it is not ``ChangeOrigin/local``.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(key, forKey: .key)
        try container.encode(oldValue, forKey: .oldValue)
        try container.encode(newValue, forKey: .newValue)
        try container.encode(version, forKey: .version)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encodeIfPresent(instance, forKey: .instance)
        if origin != .local { try container.encode(origin, forKey: .origin) }
    }
}
