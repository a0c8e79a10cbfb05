import Foundation
import Testing

@testable import StateKit

/// Waits for `semaphore`, failing the test (instead of hanging) if it is not signalled in time.
func waitFor(
    _ semaphore: DispatchSemaphore,
    _ what: String,
    seconds: Double = 300,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let result = semaphore.wait(timeout: .now() + seconds)
    #expect(result == .success, "timed out waiting for \(what)", sourceLocation: sourceLocation)
}

/// Waits for `process` to exit, polling, `seconds` at most; returns whether it exited.
///
/// Never `Process.waitUntilExit()`: with dozens of children started and ended around it, it once
/// missed a killed child's exit and waited for ever, and the whole run with it.
func hasExited(_ process: Process, within seconds: Double) -> Bool {
    let deadline = Date() + seconds
    while process.isRunning && Date() < deadline { usleep(10_000) }
    return !process.isRunning
}

/// Runs `body` on `count` real threads at once and returns when all have finished.
func onThreads(_ count: Int, stackSize: Int? = nil, _ body: @escaping @Sendable (Int) -> Void) {
    let done = DispatchSemaphore(value: 0)
    for index in 0..<count {
        let thread = Thread {
            body(index)
            done.signal()
        }
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }
    for _ in 0..<count { waitFor(done, "thread to finish") }
}

/// Starts `token.cancel()` on a thread of its own and waits (30 s at most) until it has taken the
/// subscriber out of `state`: all a cancel does before it waits for `isActive` calls still reading
/// the subscriber.
/// - Returns: A semaphore signalled when the cancel returns.
func startCancelling(
    _ token: Subscription,
    of state: MonitoredState<Int>,
    sourceLocation: SourceLocation = #_sourceLocation
) -> DispatchSemaphore {
    let cancelled = DispatchSemaphore(value: 0)
    Thread {
        token.cancel()
        cancelled.signal()
    }.start()
    let deadline = Date() + 30
    while state.subscriberCount != 0 && Date() < deadline { usleep(1_000) }
    #expect(state.subscriberCount == 0, sourceLocation: sourceLocation)
    return cancelled
}

/// Runs `body` on a thread of its own and returns its result, for async tests that block or spin.
///
/// Swift Testing runs every test, synchronous ones too, on Swift concurrency's shared pool: two
/// threads on a 2-core machine. A test that holds one for seconds (waiting for its writer threads,
/// say) stalls every other test's timers meanwhile, and bounds such as `flush(timeout:)`'s then
/// measure the stall rather than the code.
func awayFromThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// Runs `body`, which may throw, as ``awayFromThePool(_:)`` does: for a test that blocks on
/// child processes, which would otherwise hold one of the pool's two threads meanwhile.
func offThePool(_ body: @escaping @Sendable () throws -> Void) async throws {
    try await awayFromThePool { Result { try body() } }.get()
}

/// Runs `body` as ``awayFromThePool(_:)`` does, one such run at a time in the test process.
///
/// For tests that start threads contending for a container: run together, a dozen of them
/// oversubscribe a 2-core machine (more so under the thread sanitizer) until each takes minutes.
/// The wait for the turn counts toward the caller's time limit: give such a test (and one that
/// calls the async ``onThreads(_:stackSize:_:)``, which runs here) the time limit
/// ``Testing/Trait/contendingTimeLimit``, and its suite no shorter one, since the shortest applies.
func contending<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await ContentionTurn.shared.take()
    let result = await awayFromThePool(body)
    await ContentionTurn.shared.pass()
    return result
}

/// Runs `body`, an async test's heavy part (real servers and child processes that contend for a
/// key), in the turn ``contending(_:)`` takes: one such run at a time in the test process, with
/// the same time limit.
func contending(_ body: () async throws -> Void) async throws {
    await ContentionTurn.shared.take()
    do {
        try await body()
    } catch {
        await ContentionTurn.shared.pass()
        throw error
    }
    await ContentionTurn.shared.pass()
}

extension Trait where Self == TimeLimitTrait {
    /// The time limit of a test that takes its turn in ``contending(_:)``: it covers the wait for
    /// the turn, that is every contending run queued before it.
    ///
    /// Measured on a 2-core machine: the 52 runs take 71 s in all, and 212 s under the thread
    /// sanitizer with the other core busy; CI's machines took twice as long as this one for the
    /// whole suite, and a three-minute limit failed the last tests in the queue. So the limit is
    /// the queue's length on CI with twice that to spare. A run that hangs still fails: its own
    /// waits are bounded (``waitFor(_:_:seconds:sourceLocation:)``), and so is this.
    static var contendingTimeLimit: Self { .timeLimit(.minutes(15)) }
}

/// The turn ``contending(_:)`` hands from one test to the next, first come first served.
private actor ContentionTurn {
    static let shared = ContentionTurn()
    private var isTaken = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func take() async {
        guard isTaken else {
            isTaken = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func pass() {
        if waiting.isEmpty {
            isTaken = false
        } else {
            waiting.removeFirst().resume()
        }
    }
}

/// ``onThreads(_:stackSize:_:)`` for async tests: waits without holding a thread of the shared
/// pool, and takes its turn with other ``contending(_:)`` runs.
func onThreads(_ count: Int, stackSize: Int? = nil, _ body: @escaping @Sendable (Int) -> Void) async {
    await contending { onThreads(count, stackSize: stackSize, body) }
}

/// ``waitUntilDelivered(_:sourceLocation:)`` for async tests: waits without holding a thread of
/// the shared pool.
func waitUntilDelivered<Value: Sendable>(
    _ state: State<Value>,
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let delivered = await awayFromThePool {
        let arrived = DispatchSemaphore(value: 0)
        let barrier = state.addSubscriber(
            queue: nil, handler: .value { _ in arrived.signal() }, sendsCurrentValue: true)
        defer { barrier.cancel() }
        return arrived.wait(timeout: .now() + 300) == .success
    }
    #expect(delivered, "timed out waiting for the deliveries queued before the barrier", sourceLocation: sourceLocation)
}

/// Waits until every change made to `state` before the call has been delivered.
///
/// A change queued behind another thread's delivery may still be on its way when its writer
/// returns (the overflow deliverer takes the backlog). A new subscriber's first call is queued
/// behind all of it, so its arrival is the barrier.
func waitUntilDelivered<Value>(_ state: State<Value>, sourceLocation: SourceLocation = #_sourceLocation) {
    let arrived = DispatchSemaphore(value: 0)
    let barrier = state.addSubscriber(queue: nil, handler: .value { _ in arrived.signal() }, sendsCurrentValue: true)
    waitFor(arrived, "the deliveries queued before the barrier", sourceLocation: sourceLocation)
    barrier.cancel()
}

/// A continuation resumed once: by the event a test waits for, or by ``bounded(_:seconds:sourceLocation:_:)``'s
/// timer, whichever comes first.
final class OnceResumer: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Bool, Never>?

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = continuation
    }

    /// Resumes the waiter, unless it was resumed already; `inTime: false` means it timed out.
    func resume(inTime: Bool = true) {
        let continuation = lock.withLock {
            defer { self.continuation = nil }
            return self.continuation
        }
        continuation?.resume(returning: inTime)
    }
}

/// Waits until what `register` hands the resumer to resumes it, for at most `seconds`: a wait
/// that overruns records a failure and returns, so a test that never sees its event fails and
/// the run goes on, instead of waiting on a continuation nobody will resume.
func bounded(
    _ what: String,
    seconds: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ register: (OnceResumer) -> Void
) async {
    let inTime = await withCheckedContinuation { continuation in
        let resumer = OnceResumer(continuation)
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { resumer.resume(inTime: false) }
        register(resumer)
    }
    #expect(inTime, "timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
}

/// Polls `condition` every 10 ms, sleeping without blocking a pool thread, until it holds or
/// `seconds` pass; a condition that never holds records a failure naming `what`. The bound is
/// far above normal: beside the whole suite on a 2-core CI machine, tasks on the cooperative pool
/// can wait seconds for a thread.
func eventually(
    _ what: String, seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() && ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(10))
    }
    #expect(condition(), "timed out after \(seconds) s waiting for \(what)", sourceLocation: sourceLocation)
}

/// Returns once `condition`, which may wait and throw (a request to a real server), holds,
/// checking every 20 ms; records an issue naming `what` if it still does not after 60 s.
func waitUntil(
    _ what: String, sourceLocation: SourceLocation = #_sourceLocation, _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(60)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what)", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}
