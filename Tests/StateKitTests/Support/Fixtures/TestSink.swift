import Foundation
import StateKit
import Testing

/// A door async code can wait at until a test opens it; tells the test when someone arrived.
final class Gate: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var arrivals = 0
    private var arrivalWaiters: [(count: Int, resumer: OnceResumer)] = []

    func wait() async {
        await withCheckedContinuation { continuation in
            lock.lock()
            arrivals += 1
            let ready = arrivalWaiters.filter { $0.count <= arrivals }
            arrivalWaiters.removeAll { $0.count <= arrivals }
            if isOpen {
                lock.unlock()
                continuation.resume()
            } else {
                waiters.append(continuation)
                lock.unlock()
            }
            for waiter in ready { waiter.resumer.resume() }
        }
    }

    /// Returns once `count` tasks have arrived at the gate.
    func arrived(_ count: Int = 1, sourceLocation: SourceLocation = #_sourceLocation) async {
        await bounded("\(count) arrivals at the gate", sourceLocation: sourceLocation) { resumer in
            lock.lock()
            if arrivals >= count {
                lock.unlock()
                resumer.resume()
            } else {
                arrivalWaiters.append((count, resumer))
                lock.unlock()
            }
        }
    }

    func open() {
        lock.lock()
        isOpen = true
        let waiting = waiters
        waiters = []
        lock.unlock()
        for waiter in waiting { waiter.resume() }
    }
}

struct ScriptedFailure: Error, CustomStringConvertible {
    var attempt: Int
    var description: String { "scripted failure of attempt \(attempt)" }
}

/// A sink for tests: records what it accepted, can wait at a gate, and can fail on cue.
final class TestSink<Value: Sendable>: StateSink, @unchecked Sendable {
    let policy: SinkPolicy
    private let gate: Gate?
    private let lock = NSLock()
    private var accepted: [StateChange<Value>] = []
    private var batchSizes: [Int] = []
    private var attempts = 0
    private var failures: (Int) -> (any Error)?
    private var countWaiters: [(count: Int, resumer: OnceResumer)] = []

    /// - Parameter failures: Given the attempt number (1-based, across all batches), the error to
    ///   throw, or `nil` to accept.
    init(policy: SinkPolicy = .default, gate: Gate? = nil, failures: @escaping (Int) -> (any Error)? = { _ in nil }) {
        self.policy = policy
        self.gate = gate
        self.failures = failures
    }

    func send(_ changes: [StateChange<Value>]) async throws {
        if let gate { await gate.wait() }
        try accept(changes)
    }

    private func accept(_ changes: [StateChange<Value>]) throws {
        lock.lock()
        attempts += 1
        if let error = failures(attempts) {
            lock.unlock()
            throw error
        }
        accepted += changes
        batchSizes.append(changes.count)
        let ready = countWaiters.filter { $0.count <= accepted.count }
        countWaiters.removeAll { $0.count <= accepted.count }
        lock.unlock()
        for waiter in ready { waiter.resumer.resume() }
    }

    func setFailures(_ failures: @escaping (Int) -> (any Error)?) {
        lock.withLock { self.failures = failures }
    }

    var changes: [StateChange<Value>] { lock.withLock { accepted } }
    var versions: [UInt64] { changes.map(\.version) }
    var attemptCount: Int { lock.withLock { attempts } }
    var batches: [Int] { lock.withLock { batchSizes } }

    /// Returns once the sink has accepted at least `count` changes, or fails the test after a
    /// minute.
    func received(_ count: Int, sourceLocation: SourceLocation = #_sourceLocation) async {
        await bounded("\(count) changes at the sink", sourceLocation: sourceLocation) { resumer in
            lock.lock()
            if accepted.count >= count {
                lock.unlock()
                resumer.resume()
            } else {
                countWaiters.append((count, resumer))
                lock.unlock()
            }
        }
    }
}

/// Retries that cost no time, so tests never wait on the clock.
func instantRetries(
    maximumAttempts: Int = 5,
    after failure: SinkPolicy.Failure = .giveUpAndReport,
    bufferLimit: Int = 10_000,
    overflow: SinkPolicy.Overflow = .dropOldest,
    maximumBatchSize: Int = 100
) -> SinkPolicy {
    SinkPolicy(
        maximumBatchSize: maximumBatchSize,
        bufferLimit: bufferLimit,
        overflow: overflow,
        retry: RetryPolicy(
            initialDelay: .microseconds(1), maximumDelay: .microseconds(10), maximumAttempts: maximumAttempts),
        afterRepeatedFailures: failure
    )
}
