/// Lists a ``SyncedState``'s sinks in a block, one per line, with `if`, `switch` and `for`.
///
/// ```swift
/// let state = SyncedState(0, key: "k") {
///     AnalyticsSink(backend: backend) { AnalyticsEvent(name: "k_changed", properties: ["v": "\($0.newValue)"]) }
///     HTTPSyncSink(endpoint: url)
/// }
/// ```
@resultBuilder
public enum SinkBuilder<Value: Sendable> {
    /// One sink.
    public static func buildExpression(_ sink: some StateSink<Value>) -> [any StateSink<Value>] {
        [sink]
    }

    /// Sinks already in an array.
    public static func buildExpression(_ sinks: [any StateSink<Value>]) -> [any StateSink<Value>] {
        sinks
    }

    /// The sinks of every line, in order.
    public static func buildBlock(_ parts: [any StateSink<Value>]...) -> [any StateSink<Value>] {
        parts.flatMap { $0 }
    }

    /// The sinks of an `if` without `else`, when its condition holds.
    public static func buildOptional(_ part: [any StateSink<Value>]?) -> [any StateSink<Value>] {
        part ?? []
    }

    /// The sinks of an `if` branch.
    public static func buildEither(first part: [any StateSink<Value>]) -> [any StateSink<Value>] {
        part
    }

    /// The sinks of an `else` branch.
    public static func buildEither(second part: [any StateSink<Value>]) -> [any StateSink<Value>] {
        part
    }

    /// The sinks of every iteration of a `for` loop.
    public static func buildArray(_ parts: [[any StateSink<Value>]]) -> [any StateSink<Value>] {
        parts.flatMap { $0 }
    }
}
