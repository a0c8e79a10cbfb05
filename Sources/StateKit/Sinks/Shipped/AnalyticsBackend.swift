/// Where ``AnalyticsSink`` hands its events: adapt your analytics SDK to this protocol.
///
/// ```swift
/// struct MyVendorBackend: AnalyticsBackend {
///     func track(_ events: [AnalyticsEvent]) async throws {
///         for event in events { MyVendor.track(event.name, properties: event.properties) }
///     }
/// }
/// ```
///
/// # Implementation requirements
/// - ``track(_:)`` receives events in the order their changes were made; throw to have the batch
///   retried as the sink's policy says.
/// - Delivery is at-least-once: use ``AnalyticsEvent/idempotencyKey`` (the vendor's "insert id"
///   or "message id") to deduplicate.
public protocol AnalyticsBackend: Sendable {
    /// Records an ordered, non-empty batch of events.
    func track(_ events: [AnalyticsEvent]) async throws
}
