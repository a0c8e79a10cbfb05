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
    /// A sink reported ``sinkPaused`` delivered a batch again; reported once per pause, so a
    /// log shows when an outage ended.
    public static let sinkResumed = StateDiagnostic.Kind("sink-resumed")
    /// A sink refused a batch for good (a ``StateSinkError`` that is not retryable); the batch is dropped.
    public static let sinkRejected = StateDiagnostic.Kind("sink-rejected")
    /// A durable outbox found a record it cannot trust in its log (damaged, torn, absurd, of
    /// another key), copied it to a set-aside file named in the message, and skipped it.
    public static let outboxCorruptRecord = StateDiagnostic.Kind("outbox-corrupt-record")
    /// A durable outbox's file is held by another live container (in this process or another);
    /// the new container's changes go to its sink without being logged.
    public static let outboxInUse = StateDiagnostic.Kind("outbox-in-use")
    /// A durable outbox's file exists but cannot be read; it is left untouched and the
    /// container's changes go to its sink without being logged.
    public static let outboxUnreadable = StateDiagnostic.Kind("outbox-unreadable")
    /// A released container's sink did not deliver everything within ``SinkPolicy/drainTimeout``
    /// and was stopped; the message says how many changes it left (in the log, behind a
    /// ``DurableOutbox``).
    public static let sinkStopped = StateDiagnostic.Kind("sink-stopped")
    /// A durable outbox could not write its log (disk full, permissions); the changes are still
    /// delivered, but would not survive a crash.
    public static let outboxWriteFailed = StateDiagnostic.Kind("outbox-write-failed")
}
