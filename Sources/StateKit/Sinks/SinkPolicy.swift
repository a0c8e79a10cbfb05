import Foundation

/// How ``SyncedState`` feeds one sink: batching, buffering, retries, and what happens after
/// repeated failures.
///
/// Each sink gets its own buffer and delivery task, run by its policy, so a slow or failing sink
/// never holds back writers or other sinks. The default suits analytics-style sinks that want
/// every change:
///
/// ```swift
/// let policy = SinkPolicy(
///     maximumBatchSize: 50,
///     bufferLimit: 5_000,
///     overflow: .dropOldest,
///     retry: RetryPolicy(initialDelay: .milliseconds(200), maximumAttempts: 8),
///     afterRepeatedFailures: .pauseAndKeep(retryEvery: .seconds(60))
/// )
/// ```
///
/// - Note: `SinkPolicy` is a value type; it is `Sendable`.
public struct SinkPolicy: Sendable, Equatable {
    /// What to do with a change that arrives when a sink's buffer is full.
    public enum Overflow: Sendable, Equatable {
        /// Drop the oldest buffered change to make room; counted in ``SinkStatistics/dropped``
        /// and reported as ``StateDiagnostic/Kind/sinkDroppedChanges``.
        case dropOldest
        /// Drop the arriving change; counted and reported as for ``dropOldest``.
        case dropNewest
        /// Replace everything buffered with the arriving change, for sinks that only need the
        /// latest value (remote sync); counted in ``SinkStatistics/coalesced``, not reported.
        case coalesceToLatest
    }

    /// What to do once a batch has failed ``RetryPolicy/maximumAttempts`` times in a row.
    public enum Failure: Sendable, Equatable {
        /// Keep the batch, report ``StateDiagnostic/Kind/sinkPaused``, and try it again every
        /// `retryEvery` until it goes through. Nothing is lost; meanwhile new changes buffer up
        /// to ``SinkPolicy/bufferLimit``, then the overflow policy applies.
        case pauseAndKeep(retryEvery: Duration)
        /// Give the batch up, count it in ``SinkStatistics/failed``, report
        /// ``StateDiagnostic/Kind/sinkGaveUp`` with the changes' versions, and go on with the next.
        case giveUpAndReport
    }

    /// The most changes handed to one ``StateSink/send(_:)`` call.
    public var maximumBatchSize: Int
    /// How long a change may wait for more to join its batch; `.zero` (the default) sends as soon
    /// as the sink is idle, so what accumulates while a send is in flight is the next batch.
    public var flushInterval: Duration
    /// How many changes may wait for the sink in memory (not counting the batch being sent).
    /// Behind a ``DurableOutbox`` the log holds the rest, so nothing logged is dropped.
    public var bufferLimit: Int
    /// What a full buffer does with one more change.
    public var overflow: Overflow
    /// How thrown errors are retried.
    public var retry: RetryPolicy
    /// What happens once retries are exhausted.
    public var afterRepeatedFailures: Failure
    /// How long a released container's sink may go on delivering what it buffered before it is
    /// stopped (its task cancelled, what is left counted in a ``StateDiagnostic/Kind/sinkStopped``
    /// diagnostic). Behind a ``DurableOutbox`` what it did not deliver stays in the log for the
    /// next launch. Default 5 seconds, so a sink that keeps failing does not outlive its
    /// container for long; what the container made for the sink is freed within this timeout and
    /// a second.
    public var drainTimeout: Duration

    /// Creates a policy; every parameter has the default documented on its property.
    ///
    /// - Parameters:
    ///   - maximumBatchSize: At least 1; default 100.
    ///   - flushInterval: Default `.zero`.
    ///   - bufferLimit: At least 1; default 10,000.
    ///   - overflow: Default ``Overflow/dropOldest``.
    ///   - retry: Default ``RetryPolicy/init(initialDelay:multiplier:maximumDelay:jitter:maximumAttempts:)``
    ///     with its defaults (100 ms, doubling, 5 attempts).
    ///   - afterRepeatedFailures: Default ``Failure/pauseAndKeep(retryEvery:)`` every 30 seconds.
    ///   - drainTimeout: Default 5 seconds.
    public init(
        maximumBatchSize: Int = 100,
        flushInterval: Duration = .zero,
        bufferLimit: Int = 10_000,
        overflow: Overflow = .dropOldest,
        retry: RetryPolicy = RetryPolicy(),
        afterRepeatedFailures: Failure = .pauseAndKeep(retryEvery: .seconds(30)),
        drainTimeout: Duration = .seconds(5)
    ) {
        precondition(maximumBatchSize >= 1, "SinkPolicy.maximumBatchSize must be at least 1")
        precondition(bufferLimit >= 1, "SinkPolicy.bufferLimit must be at least 1")
        self.maximumBatchSize = maximumBatchSize
        self.flushInterval = flushInterval
        self.bufferLimit = bufferLimit
        self.overflow = overflow
        self.retry = retry
        self.afterRepeatedFailures = afterRepeatedFailures
        self.drainTimeout = drainTimeout
    }

    /// Every change, batches of up to 100 sent as soon as the sink is idle, retries from 100 ms,
    /// pause and keep after 5 failed attempts.
    public static let `default` = SinkPolicy()

    /// The latest value only: one change per send, the buffer coalesced to the newest change;
    /// the policy of remote-sync sinks.
    public static let latestValue = SinkPolicy(maximumBatchSize: 1, bufferLimit: 1, overflow: .coalesceToLatest)
}

/// How a sink's failed batch is retried: exponential backoff with jitter.
///
/// The n-th retry waits `initialDelay × multiplierⁿ⁻¹`, at most `maximumDelay`, minus a random
/// fraction up to `jitter` of it (so many clients failing together do not retry together), and
/// never less than a `Retry-After` the sink asked for (see ``StateSinkError/retryAfter``), but
/// never more than `maximumDelay` either: no wait that comes from outside (a server's
/// `Retry-After`, however large) exceeds it. A sink asked to wait longer is paused at once, with
/// a ``StateDiagnostic/Kind/sinkPaused`` diagnostic, so ``SyncedState/flush()`` does not block on
/// it. Tests pass a tiny `initialDelay` so retries cost no time.
public struct RetryPolicy: Sendable, Equatable {
    /// The wait before the first retry.
    public var initialDelay: Duration
    /// How much each wait grows over the previous one.
    public var multiplier: Double
    /// The longest wait between two attempts.
    public var maximumDelay: Duration
    /// The largest fraction (0...1) of a wait that is randomly taken off it.
    public var jitter: Double
    /// How many attempts a batch gets before ``SinkPolicy/afterRepeatedFailures`` applies.
    public var maximumAttempts: Int

    /// Creates a retry policy.
    ///
    /// - Parameters:
    ///   - initialDelay: Default 100 ms.
    ///   - multiplier: At least 1; default 2.
    ///   - maximumDelay: Default 30 seconds.
    ///   - jitter: In 0...1; default 0.2.
    ///   - maximumAttempts: At least 1; default 5.
    public init(
        initialDelay: Duration = .milliseconds(100),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30),
        jitter: Double = 0.2,
        maximumAttempts: Int = 5
    ) {
        precondition(multiplier >= 1, "RetryPolicy.multiplier must be at least 1")
        precondition((0...1).contains(jitter), "RetryPolicy.jitter must be in 0...1")
        precondition(maximumAttempts >= 1, "RetryPolicy.maximumAttempts must be at least 1")
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
        self.maximumAttempts = maximumAttempts
    }

    /// The wait before retry number `retry` (1 for the first), at least `retryAfter` when given,
    /// at most ``maximumDelay``, whatever the numbers.
    public func delay(beforeRetry retry: Int, retryAfter: Duration? = nil) -> Duration {
        // The growth is computed in floating-point seconds and capped before it becomes a
        // Duration: 2^72 x 100 ms does not fit one.
        let exponent = retry > 1 ? Double(retry) - 1 : 0
        let grown = initialDelay.inSeconds * Foundation.pow(multiplier, exponent)
        var delay: Duration =
            initialDelay <= .zero ? .zero : grown >= maximumDelay.inSeconds ? maximumDelay : .seconds(grown)
        if jitter > 0 {
            delay = delay * (1 - Double.random(in: 0...jitter))
        }
        if let retryAfter, retryAfter > delay {
            delay = min(retryAfter, maximumDelay)
        }
        return delay
    }
}

extension Duration {
    /// The duration in seconds, as a `Double` (no overflow, whatever its size).
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}
