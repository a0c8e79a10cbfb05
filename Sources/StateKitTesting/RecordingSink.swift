import Foundation
import StateKit

/// A ``StateKit/StateSink`` that keeps every batch and change it receives, in order, for tests.
///
/// Hand it to a container that syncs to sinks, write, then read what arrived or wait for it.
/// It can also be told to fail its next sends, to exercise a pipeline's retries.
///
/// ```swift
/// let sink = RecordingSink<Int>()
/// // ... give `sink` to a synced container and write 1, 2, 3 ...
/// let changes = try await sink.next(3)
/// #expect(changes.map(\.newValue) == [1, 2, 3])
/// ```
///
/// - Note: All operations on `RecordingSink` are thread-safe.
public final class RecordingSink<Value: Sendable>: StateSink, Sendable {
    private struct Sends {
        var batches: [[StateChange<Value>]] = []
        var failuresLeft = 0
        var failure: any Error = RecordingSinkFailure()
        var attempts = 0
    }

    private let sends = LockedBox(Sends())
    private let log = RecordLog<StateChange<Value>>()

    /// How the container feeds this sink: batching, buffer, overflow, retries.
    public let policy: SinkPolicy

    /// Creates an empty sink that accepts every batch.
    ///
    /// - Parameter policy: How the container feeds the sink; ``StateKit/SinkPolicy/latestValue``
    ///   to test what a remote-sync sink receives, a tiny ``StateKit/RetryPolicy/initialDelay`` to
    ///   make retries after ``failNextSends(_:with:)`` cost no time.
    public init(policy: SinkPolicy = .default) {
        self.policy = policy
    }

    /// Records `changes` as one batch, or throws if told to fail this send.
    ///
    /// A failed send records nothing, as a real destination that refused the batch would.
    public func send(_ changes: [StateChange<Value>]) async throws {
        let error: (any Error)? = sends.withLock { sends in
            sends.attempts += 1
            if sends.failuresLeft > 0 {
                sends.failuresLeft -= 1
                return sends.failure
            }
            sends.batches.append(changes)
            log.append(contentsOf: changes)
            return nil
        }
        if let error { throw error }
    }

    /// Makes the next `count` sends throw `error` (recording nothing), to exercise retries.
    public func failNextSends(_ count: Int, with error: any Error = RecordingSinkFailure()) {
        sends.withLock { sends in
            sends.failuresLeft = count
            sends.failure = error
        }
    }

    /// Every batch accepted so far, in the order received.
    public var batches: [[StateChange<Value>]] {
        sends.withLock { $0.batches }
    }

    /// Every change accepted so far, in the order received.
    public var changes: [StateChange<Value>] {
        log.all
    }

    /// The new value of every change accepted so far, in order.
    public var values: [Value] {
        log.all.map(\.newValue)
    }

    /// How many times ``send(_:)`` was called, failed sends included.
    public var sendCount: Int {
        sends.withLock { $0.attempts }
    }

    /// Waits for the next `count` accepted changes, in order, and returns them.
    ///
    /// Each call continues where the previous one stopped; the first starts with the first change
    /// accepted. Returns at once if they have already arrived.
    ///
    /// - Throws: ``RecordingTimeoutError`` naming the key and what did arrive if the changes have
    ///   not all arrived within `timeout`; `CancellationError` if the task is cancelled.
    public func next(_ count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [StateChange<Value>] {
        try await log.next(count, timeout: timeout) { unread, all in
            var keys: [String] = []
            for change in all where !keys.contains(change.key) { keys.append(change.key) }
            return RecordingTimeoutError(
                key: keys.isEmpty ? "(no change received yet)" : keys.joined(separator: ", "),
                expectedCount: count,
                timeout: timeout,
                received: unread.map { describe($0.newValue) },
                recorded: all.map { describe($0.newValue) },
                elementName: "changes"
            )
        }
    }
}

/// The error a ``RecordingSink`` throws from a send it was told to fail.
public struct RecordingSinkFailure: Error, Equatable, Sendable {
    /// Creates the error.
    public init() {}
}
