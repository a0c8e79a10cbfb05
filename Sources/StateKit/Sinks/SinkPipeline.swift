import Foundation

/// One sink's ordered, bounded buffer and the task that delivers it.
///
/// Writers call ``enqueue(_:)`` from a container's change subscriber, synchronously on the
/// delivering thread: it only appends under a short lock and wakes the task, so a writer never
/// waits for the sink. The task takes batches in order, sends them, retries failures with backoff,
/// and applies the policy's overflow and failure rules, counting everything in ``statistics``.
///
/// Flushing: every enqueued change gets a sequence number; a flush waits until no change below the
/// sequence current at the call is still buffered or in flight (or the sink is paused).
final class SinkPipeline<Value: Sendable>: @unchecked Sendable {
    private struct Entry {
        var sequence: UInt64
        var change: StateChange<Value>
    }

    private struct FlushWaiter {
        var id: UInt64
        var target: UInt64
        var continuation: CheckedContinuation<Void, Never>
    }

    let sink: any StateSink<Value>
    let policy: SinkPolicy
    let key: String
    private let lock = Lock()
    private var buffer: [Entry] = []
    private var head = 0
    private var inFlight: [Entry] = []
    private var nextSequence: UInt64 = 0
    private var counters = SinkStatistics()
    private var unreportedDrops = 0
    private var isDropReported = false
    private var wakeUp: CheckedContinuation<Void, Never>?
    private var flushWaiters: [FlushWaiter] = []
    private var nextFlushID: UInt64 = 0
    private var isClosed = false

    init(sink: any StateSink<Value>, key: String) {
        self.sink = sink
        self.policy = sink.policy
        self.key = key
        Task { await self.run() }
    }

    private var bufferedCount: Int { buffer.count - head }

    /// The lowest sequence number not yet delivered, dropped or given up.
    private var firstUnsettled: UInt64 {
        inFlight.first?.sequence ?? (head < buffer.count ? buffer[head].sequence : nextSequence)
    }

    var statistics: SinkStatistics {
        lock.withLock {
            var statistics = counters
            statistics.sinkName = sink.name
            statistics.pending = bufferedCount + inFlight.count
            return statistics
        }
    }

    // MARK: Writer side

    /// Buffers `change` for the sink. Never blocks beyond a short lock.
    func enqueue(_ change: StateChange<Value>) {
        lock.lock()
        guard !isClosed else {
            lock.unlock()
            return
        }
        let entry = Entry(sequence: nextSequence, change: change)
        nextSequence += 1
        var isFirstDrop = false
        if bufferedCount >= policy.bufferLimit {
            switch policy.overflow {
            case .dropOldest:
                removeFirst(1)
                buffer.append(entry)
                isFirstDrop = noteDropLocked()
            case .dropNewest:
                isFirstDrop = noteDropLocked()
            case .coalesceToLatest:
                counters.coalesced += bufferedCount
                buffer.removeAll(keepingCapacity: true)
                head = 0
                buffer.append(entry)
            }
        } else {
            buffer.append(entry)
        }
        let wake = wakeUp
        wakeUp = nil
        let satisfied = takeSatisfiedWaitersLocked()
        lock.unlock()
        wake?.resume()
        for waiter in satisfied { waiter.continuation.resume() }
        if isFirstDrop {
            report(
                .sinkDroppedChanges,
                "buffer full (\(policy.bufferLimit) changes): dropping changes per \(policy.overflow)")
        }
    }

    /// Returns once every change enqueued before the call is delivered, dropped or given up, or
    /// the sink is paused, or the calling task is cancelled.
    func flush() async {
        let id = lock.withLock {
            nextFlushID += 1
            return nextFlushID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                lock.lock()
                // Checked under the lock: a cancellation before this point is seen here, one after
                // it finds the waiter below.
                if Task.isCancelled || counters.isPaused || firstUnsettled >= nextSequence {
                    lock.unlock()
                    continuation.resume()
                    return
                }
                flushWaiters.append(FlushWaiter(id: id, target: nextSequence, continuation: continuation))
                lock.unlock()
            }
        } onCancel: {
            let cancelled = lock.withLock {
                let index = flushWaiters.firstIndex { $0.id == id }
                return index.map { flushWaiters.remove(at: $0) }
            }
            cancelled?.continuation.resume()
        }
    }

    /// Stops accepting changes; the task delivers what is buffered, then ends.
    func close() {
        lock.lock()
        isClosed = true
        let wake = wakeUp
        wakeUp = nil
        lock.unlock()
        wake?.resume()
    }

    // MARK: Delivery task

    private func run() async {
        while let batch = await nextBatch() {
            await deliver(batch)
        }
    }

    private func nextBatch() async -> [Entry]? {
        var waitedForInterval = false
        while true {
            lock.lock()
            let drops = unreportedDrops
            unreportedDrops = 0
            isDropReported = false
            let count = bufferedCount
            let closed = isClosed
            lock.unlock()
            if drops > 0 {
                report(.sinkDroppedChanges, "\(drops) more changes dropped because the buffer was full")
            }
            if count == 0 && closed { return nil }
            if count > 0 && count < policy.maximumBatchSize && policy.flushInterval > .zero && !waitedForInterval {
                waitedForInterval = true
                try? await Task.sleep(for: policy.flushInterval)
                continue
            }
            if count > 0 {
                return lock.withLock {
                    let batch = Array(buffer[head..<min(buffer.count, head + policy.maximumBatchSize)])
                    removeFirst(batch.count)
                    inFlight = batch
                    return batch
                }
            }
            await withCheckedContinuation { continuation in
                lock.lock()
                if bufferedCount > 0 || isClosed {
                    lock.unlock()
                    continuation.resume()
                } else {
                    wakeUp = continuation
                    lock.unlock()
                }
            }
        }
    }

    private func deliver(_ batch: [Entry]) async {
        let changes = batch.map(\.change)
        var attempt = 0
        while true {
            attempt += 1
            do {
                try await sink.send(changes)
                settle { counters in
                    counters.sent += changes.count
                    counters.isPaused = false
                }
                return
            } catch {
                lock.withLock { counters.lastError = String(describing: error) }
                let advice = error as? any StateSinkError
                if let advice, !advice.isRetryable {
                    settle { $0.failed += changes.count }
                    report(.sinkRejected, "the sink refused \(describe(changes)) for good; dropped", error: error)
                    return
                }
                let maximumWait = policy.retry.maximumDelay
                if let asked = advice?.retryAfter, asked > maximumWait {
                    // Honouring it would hold every flush for as long as the server likes.
                    if pause() {
                        report(
                            .sinkPaused,
                            "asked to wait \(asked), more than the policy's maximum delay (\(maximumWait)); "
                                + "paused, keeping \(describe(changes)) and retrying in \(maximumWait)",
                            error: error
                        )
                    }
                    try? await Task.sleep(for: maximumWait)
                    lock.withLock { counters.retried += 1 }
                    continue
                }
                if attempt >= policy.retry.maximumAttempts {
                    switch policy.afterRepeatedFailures {
                    case .giveUpAndReport:
                        settle { $0.failed += changes.count }
                        report(
                            .sinkGaveUp,
                            "gave up \(describe(changes)) after \(attempt) failed attempts",
                            error: error
                        )
                        return
                    case .pauseAndKeep(let retryEvery):
                        if pause() {
                            report(
                                .sinkPaused,
                                "paused after \(attempt) failed attempts; keeping \(describe(changes)) and "
                                    + "retrying every \(retryEvery)",
                                error: error
                            )
                        }
                        try? await Task.sleep(for: max(retryEvery, advice?.retryAfter ?? .zero))
                        lock.withLock { counters.retried += 1 }
                        continue
                    }
                }
                lock.withLock { counters.retried += 1 }
                try? await Task.sleep(for: policy.retry.delay(beforeRetry: attempt, retryAfter: advice?.retryAfter))
            }
        }
    }

    /// Marks the sink paused and releases flush waiters; returns whether it was not paused before.
    private func pause() -> Bool {
        lock.lock()
        let wasPaused = counters.isPaused
        counters.isPaused = true
        let waiters = flushWaiters
        flushWaiters = []
        lock.unlock()
        for waiter in waiters { waiter.continuation.resume() }
        return !wasPaused
    }

    /// Ends the in-flight batch, updating the counters, and releases the flushes it completes.
    private func settle(_ update: (inout SinkStatistics) -> Void) {
        lock.lock()
        inFlight = []
        update(&counters)
        let satisfied = takeSatisfiedWaitersLocked()
        lock.unlock()
        for waiter in satisfied { waiter.continuation.resume() }
    }

    // MARK: Helpers

    private func removeFirst(_ count: Int) {
        head += count
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.count <= 1024)
            head = 0
        } else if head >= 64 && head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }

    /// Counts a drop; returns whether it is the first since the task last reported drops, which
    /// the writer reports at once (later ones are summed up by the task, so a flood of drops makes
    /// at most two diagnostics per batch).
    private func noteDropLocked() -> Bool {
        counters.dropped += 1
        guard isDropReported else {
            isDropReported = true
            return true
        }
        unreportedDrops += 1
        return false
    }

    private func takeSatisfiedWaitersLocked() -> [FlushWaiter] {
        guard !flushWaiters.isEmpty else { return [] }
        let settled = firstUnsettled
        var satisfied: [FlushWaiter] = []
        flushWaiters.removeAll { waiter in
            guard waiter.target <= settled else { return false }
            satisfied.append(waiter)
            return true
        }
        return satisfied
    }

    private func describe(_ changes: [StateChange<Value>]) -> String {
        guard let first = changes.first, let last = changes.last else { return "no changes" }
        return changes.count == 1
            ? "1 change (version \(first.version))"
            : "\(changes.count) changes (versions \(first.version)...\(last.version))"
    }

    private func report(_ kind: StateDiagnostic.Kind, _ message: String, error: (any Error)? = nil) {
        StateDiagnostics.report(
            StateDiagnostic(kind: kind, keys: [key], message: "sink \(type(of: sink)): \(message)", error: error)
        )
    }
}
