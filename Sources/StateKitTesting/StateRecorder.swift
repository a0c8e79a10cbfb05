import StateKit

/// Records every value a container or projection delivers, for tests to read and wait on.
///
/// Make one with `record()` on a ``StateKit/MonitoredState`` or an ``StateKit/Observed``
/// projection. The recorder subscribes at once, so its first value is the value at that moment;
/// after that it records each change, in order, synchronously on the delivering thread (StateKit's
/// default), so a value written on the test's own thread is in ``values`` as soon as the write
/// returns.
///
/// ```swift
/// let names = app.user.name.record()
/// app.user.name ~> "Tim"
/// #expect(names.values == ["Ann", "Tim"])
///
/// // Values written by another thread or task: wait for them, with a deadline.
/// Task.detached { app.user.name ~> "Eve" }
/// #expect(try await names.next(3) == ["Ann", "Tim", "Eve"])
/// ```
///
/// ``next(_:timeout:)`` hands out values in order, each once, starting with the first recorded
/// value, whatever ``values`` already shows. The recording lasts until ``cancel()`` or until the
/// recorder is released.
///
/// - Note: All operations on `StateRecorder` are thread-safe.
public final class StateRecorder<Element: Sendable>: Sendable {
    /// The key of what is recorded: a container's key, or a projection's (`"app.user.name"`).
    public let key: String
    private let log: RecordLog<Element>
    private let subscription: Subscription
    private let elementName: String

    init(key: String, elementName: String, subscribe: (@escaping @Sendable (Element) -> Void) -> Subscription) {
        let log = RecordLog<Element>()
        self.key = key
        self.log = log
        self.elementName = elementName
        self.subscription = subscribe { log.append($0) }
    }

    /// Every element recorded so far, in order.
    public var values: [Element] {
        log.all
    }

    /// The newest element recorded, or `nil` if none has been.
    public var latest: Element? {
        log.all.last
    }

    /// Waits for the next `count` elements, in order, and returns them.
    ///
    /// Each call continues where the previous one stopped: the first call's elements start with
    /// the first one recorded. Returns at once if they have already arrived.
    ///
    /// - Parameters:
    ///   - count: How many elements to wait for; at least 1.
    ///   - timeout: How long to wait before giving up.
    /// - Returns: The next `count` elements.
    /// - Throws: ``RecordingTimeoutError`` naming ``key`` and what did arrive if the elements have
    ///   not all arrived within `timeout`; `CancellationError` if the task is cancelled.
    public func next(_ count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [Element] {
        let key = self.key
        let elementName = self.elementName
        return try await log.next(count, timeout: timeout) { unread, all in
            RecordingTimeoutError(
                key: key,
                expectedCount: count,
                timeout: timeout,
                received: unread.map(describe),
                recorded: all.map(describe),
                elementName: elementName
            )
        }
    }

    /// Stops recording; the elements recorded so far stay readable.
    public func cancel() {
        subscription.cancel()
    }
}
