import Dispatch

/// A sleep that ends as soon as its task is cancelled or someone wakes it, and frees its timer then.
///
/// `Task.sleep` keeps what it allocated (a job and a one-shot Dispatch timer, about 750 bytes)
/// until its deadline, even once its task is cancelled and has moved on. This one sleeps on a
/// Dispatch timer source, which cancelling takes out of Dispatch's timers at once: a task cancelled
/// in a 30 s sleep holds nothing for the rest of the 30 s.
///
/// - Note: All operations on `CancellableSleep` are thread-safe.
final class CancellableSleep: @unchecked Sendable {
    private let lock = Lock()
    /// The sleeping task, until the sleep ends.
    private var continuation: CheckedContinuation<Void, Never>?
    private var timer: DispatchSourceTimer?
    /// Whether the sleep ended: the timer fired or the task was cancelled, perhaps before it began.
    private var hasEnded = false

    /// The queue the timers fire on: a serial queue of StateKit's own, so that a sleep ends on
    /// time even while the app's global queues are busy (threads blocked there delayed a sink's
    /// batching interval by a minute in a loaded test run). Its handlers only resume a task.
    private static let timers = DispatchQueue(label: "StateKit.CancellableSleep")

    private init() {}

    /// Returns after `duration`, or as soon as the calling task is cancelled or the sleep, handed
    /// to `register` before it begins, is woken (``wake()``).
    static func sleep(for duration: Duration, registering register: (CancellableSleep) -> Void = { _ in }) async {
        let sleep = CancellableSleep()
        register(sleep)
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                sleep.begin(duration, continuation)
            }
        } onCancel: {
            sleep.wake()
        }
    }

    private func begin(_ duration: Duration, _ continuation: CheckedContinuation<Void, Never>) {
        lock.lock()
        guard !hasEnded else {
            lock.unlock()
            continuation.resume()
            return
        }
        self.continuation = continuation
        // Made under the lock, and only when it will be resumed: Dispatch traps when a source
        // that was never resumed is released.
        let timer = DispatchSource.makeTimerSource(queue: Self.timers)
        timer.schedule(deadline: .now() + duration.inSeconds)
        timer.setEventHandler { [weak self] in self?.wake() }
        self.timer = timer
        timer.resume()
        lock.unlock()
    }

    /// Ends the sleep now, or makes it end as it begins; once is enough.
    func wake() {
        let (continuation, timer) = lock.withLock {
            hasEnded = true
            defer {
                self.continuation = nil
                self.timer = nil
            }
            return (self.continuation, self.timer)
        }
        timer?.cancel()
        continuation?.resume()
    }
}
