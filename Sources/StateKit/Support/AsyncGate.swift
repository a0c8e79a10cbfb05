/// An asynchronous mutual-exclusion gate: one task at a time runs its body, in the order the
/// tasks arrived, and a task cancelled while it waits leaves the line at once.
///
/// Async code cannot hold a ``Lock`` across an `await`, and an actor lets another call in at every
/// suspension point; work that must not overlap itself across awaits (the sends of one outbox
/// log, the pushes and pulls of one HTTP sync engine) takes turns through a gate instead. Waiting
/// tasks are suspended, not blocked: no thread waits.
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// let gate = AsyncGate()
/// // Called from any number of tasks: the bodies never overlap, and run in arrival order.
/// func append(_ record: Data) async throws {
///     try await gate.run { try await file.append(record) }
/// }
/// ```
///
/// ## Cancellation
/// A task cancelled before its body starts (on arrival, while it waits, or as its turn is handed
/// to it) does not run its body: ``run(_:)`` throws `CancellationError`, the task's place in the
/// line goes to the next waiter, and the order of the others is kept. Once its body has started,
/// cancellation is the body's business: the gate waits for the body to return or throw, then
/// passes the turn on.
///
/// ## Invariant
/// At most one body runs at a time; when the turn is released it goes to the oldest waiter still
/// waiting, or the gate becomes free when none is. A cancelled waiter and a hand-over decide,
/// under the gate's lock, which came first: the waiter either leaves the line before the hand-over
/// (and is skipped) or receives the turn (and passes it on, unused, when it sees its
/// cancellation), so a turn is never lost and never kept by a task that does not run its body.
///
/// - Note: All operations on `AsyncGate` are thread-safe.
package final class AsyncGate: @unchecked Sendable {
    private let lock = Lock()
    private var state = State()

    /// Makes a free gate.
    package init() {}

    /// Runs `body` once every earlier arrival's body has returned or thrown, and before any later
    /// arrival's.
    ///
    /// - Parameter body: The work to run alone; it runs on the calling task.
    /// - Returns: What `body` returns.
    /// - Throws: `CancellationError` when the task is cancelled before its turn came, without
    ///   running `body`; otherwise what `body` throws.
    package func run<T>(_ body: () async throws -> T) async throws -> T {
        try await takeTurn()
        defer { passTurn() }
        return try await body()
    }

    /// How many tasks wait for their turn; lets tests line waiters up in a known order.
    var waiterCount: Int {
        lock.withLock { state.waiterCount }
    }

    /// Returns holding the turn, or throws `CancellationError` holding nothing.
    private func takeTurn() async throws {
        try Task.checkCancellation()
        let id: UInt64? = lock.withLock { state.takeIfFree() }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                lock.lock()
                // Checked under the lock: a cancellation before this point is seen here, one
                // after it finds the waiter in line.
                if Task.isCancelled {
                    lock.unlock()
                    continuation.resume(throwing: CancellationError())
                } else if state.wait(id: id, continuation) {
                    lock.unlock()
                } else {
                    lock.unlock()
                    continuation.resume()
                }
            }
        } onCancel: {
            lock.withLock { state.leaveLine(id: id) }?.resume(throwing: CancellationError())
        }
        // The turn was handed over as the task was cancelled: pass it on, unused.
        if Task.isCancelled {
            passTurn()
            throw CancellationError()
        }
    }

    /// Hands the turn to the oldest waiter, or frees the gate.
    private func passTurn() {
        lock.withLock { state.handOver() }?.resume()
    }
}

extension AsyncGate {
    /// The line of an ``AsyncGate``: whether the turn is taken, and who waits for it. Guarded by
    /// the gate's lock; its methods decide, the gate resumes continuations after unlocking.
    ///
    /// | Event | Free | Taken |
    /// |---|---|---|
    /// | `takeIfFree` | taken; `nil` | a new waiter id |
    /// | `wait` (gate freed since) | taken; `false` | in line; `true` |
    /// | `leaveLine` | — | out of line; its continuation, if it still waited |
    /// | `handOver` | — | oldest waiter's continuation (stays taken), or free; `nil` |
    private struct State {
        private var isTaken = false
        /// Waiter ids in arrival order. A waiter that left the line keeps its id here until it
        /// reaches the front (taking it out of the middle would cost O(n)); `handOver` skips it.
        private var line = FIFOQueue<UInt64>()
        /// The continuations of the waiters still in line, by id.
        private var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        private var lastID: UInt64 = 0

        var waiterCount: Int { waiters.count }

        /// Takes the turn when the gate is free (returns `nil`); otherwise returns an id for the
        /// caller to wait with.
        mutating func takeIfFree() -> UInt64? {
            defer { checkInvariants() }
            guard isTaken else {
                isTaken = true
                return nil
            }
            lastID += 1
            return lastID
        }

        /// Puts waiter `id` in line (returns `true`), or, when the gate was freed since
        /// `takeIfFree`, gives it the turn (returns `false`).
        mutating func wait(id: UInt64, _ continuation: CheckedContinuation<Void, any Error>) -> Bool {
            defer { checkInvariants() }
            guard isTaken else {
                isTaken = true
                return false
            }
            line.append(id)
            waiters[id] = continuation
            return true
        }

        /// Takes cancelled waiter `id` out of line; returns its continuation, or `nil` when it was
        /// not in line (not yet, or handed the turn already).
        mutating func leaveLine(id: UInt64) -> CheckedContinuation<Void, any Error>? {
            defer { checkInvariants() }
            let continuation = waiters.removeValue(forKey: id)
            // The ids left behind belong to waiters that left: drop them all at once.
            if waiters.isEmpty { line.removeAll() }
            return continuation
        }

        /// Releases the turn: returns the oldest waiter's continuation, the turn now theirs, or
        /// frees the gate and returns `nil`.
        mutating func handOver() -> CheckedContinuation<Void, any Error>? {
            defer { checkInvariants() }
            precondition(isTaken, "AsyncGate: turn released while the gate was free")
            while let id = line.popFirst() {
                if let next = waiters.removeValue(forKey: id) { return next }
            }
            isTaken = false
            return nil
        }

        private func checkInvariants() {
            #if DEBUG
            assert(isTaken || waiters.isEmpty, "AsyncGate: tasks wait while the gate is free")
            assert(waiters.count <= line.count, "AsyncGate: a waiter is missing from the line")
            #endif
        }
    }
}
