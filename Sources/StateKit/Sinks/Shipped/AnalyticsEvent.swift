import Foundation

/// One analytics event: a name and string properties, stamped with when and which change made it.
///
/// ``AnalyticsSink`` builds one per change through your closure and fills in ``timestamp`` and
/// ``idempotencyKey`` from the change, so a backend can drop the duplicates an at-least-once
/// pipeline may produce.
public struct AnalyticsEvent: Sendable, Equatable, Codable {
    /// The event's name, such as `"cart_changed"`.
    public var name: String
    /// The event's properties.
    public var properties: [String: String]
    /// When the change that made the event happened.
    public var timestamp: Date
    /// The ``StateChange/idempotencyKey`` of the change that made the event.
    public var idempotencyKey: String

    /// Creates an event; ``AnalyticsSink`` replaces `timestamp` and `idempotencyKey` with the change's.
    public init(name: String, properties: [String: String] = [:], timestamp: Date = Date(), idempotencyKey: String = "")
    {
        self.name = name
        self.properties = properties
        self.timestamp = timestamp
        self.idempotencyKey = idempotencyKey
    }
}
