extension StateDiagnostic.Kind {
    /// A sink's buffer was full and changes were dropped (``SinkPolicy/Overflow``); the message
    /// says how many. Reported at the first drop of an overflow, then with the running count each
    /// time the sink's delivery task takes a batch.
    public static let sinkDroppedChanges = StateDiagnostic.Kind("sink-dropped-changes")
    /// A sink failed a batch ``RetryPolicy/maximumAttempts`` times and the policy gave it up; the
    /// message names the versions lost and ``StateDiagnostic/error`` is the last error.
    public static let sinkGaveUp = StateDiagnostic.Kind("sink-gave-up")
    /// A sink failed a batch ``RetryPolicy/maximumAttempts`` times and is paused, keeping it.
    public static let sinkPaused = StateDiagnostic.Kind("sink-paused")
    /// A sink refused a batch for good (a ``StateSinkError`` that is not retryable); the batch is dropped.
    public static let sinkRejected = StateDiagnostic.Kind("sink-rejected")
    /// A durable outbox found a damaged record in its log and skipped it.
    public static let outboxCorruptRecord = StateDiagnostic.Kind("outbox-corrupt-record")
    /// A durable outbox could not write its log (disk full, permissions); the changes are still
    /// delivered, but would not survive a crash.
    public static let outboxWriteFailed = StateDiagnostic.Kind("outbox-write-failed")
}
