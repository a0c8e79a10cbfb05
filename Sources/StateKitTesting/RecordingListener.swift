import Dispatch
import Foundation
import StateKit

/// A ``StateKit/StateListener`` that records every call it gets, for tests.
///
/// It runs on a serial queue of its own (not the main queue, which a command-line test runner may
/// not service), so a test can wait for it with ``StateKit/StateListener/stateListenerQueue``'s
/// `flush()`, or with ``next(_:timeout:)``:
///
/// ```swift
/// let location = MonitoredState<String?>(nil, key: "location")
/// let listener = RecordingListener()
/// location.attach(listener: listener)
/// location ~> "Atlanta"
/// await listener.stateListenerQueue.flush()
/// #expect(listener.keys == ["location"])
/// ```
///
/// Containers hold listeners weakly: keep the listener for as long as the test needs its calls.
///
/// - Note: All operations on `RecordingListener` are thread-safe.
public final class RecordingListener: StateListener, Sendable {
    /// The serial queue the listener is called on.
    public let stateListenerQueue: DispatchQueue
    private let log = RecordLog<String>()

    /// Creates a listener called on a new serial queue.
    ///
    /// - Parameter label: The queue's label, shown in debuggers and crash reports.
    public init(label: String = "StateKitTesting.RecordingListener") {
        stateListenerQueue = DispatchQueue(label: label)
    }

    /// Records the key of `state`.
    public func stateModified<T>(_ state: State<T>) {
        log.append(state.key)
    }

    /// The key of the container of every call so far, in order.
    public var keys: [String] {
        log.all
    }

    /// How many calls the listener has had.
    public var callCount: Int {
        log.all.count
    }

    /// Waits for the next `count` calls, in order, and returns the keys of their containers.
    ///
    /// Each call continues where the previous one stopped; the first starts with the first call.
    ///
    /// - Throws: ``RecordingTimeoutError`` naming the keys that did arrive if the calls have not
    ///   all arrived within `timeout`; `CancellationError` if the task is cancelled.
    public func next(_ count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [String] {
        try await log.next(count, timeout: timeout) { unread, all in
            RecordingTimeoutError(
                key: all.isEmpty ? "(no call yet)" : Array(Set(all)).sorted().joined(separator: ", "),
                expectedCount: count,
                timeout: timeout,
                received: unread,
                recorded: all,
                elementName: "listener calls"
            )
        }
    }
}
