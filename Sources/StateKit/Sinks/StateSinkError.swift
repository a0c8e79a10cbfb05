/// An error a sink throws to tell its delivery task how to treat the failure.
///
/// Any other error thrown by ``StateSink/send(_:)`` is retried as the sink's ``RetryPolicy``
/// says. Conform an error to this protocol to refuse a batch for good (a 400 answer: retrying
/// cannot help) or to ask for a minimum wait (a `Retry-After` header).
public protocol StateSinkError: Error {
    /// Whether sending the same batch again can succeed. When `false`, the batch is dropped,
    /// counted in ``SinkStatistics/failed`` and reported as ``StateDiagnostic/Kind/sinkRejected``.
    var isRetryable: Bool { get }
    /// The least time to wait before the next attempt, when the destination said so.
    var retryAfter: Duration? { get }
}

extension StateSinkError {
    /// No minimum wait.
    public var retryAfter: Duration? { nil }
}
