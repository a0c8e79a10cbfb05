import Foundation

/// One sink's ordered, bounded buffer and the task that delivers it.
///
/// Writers call ``enqueue(_:)`` from a container's change subscriber, synchronously on the
/// delivering thread: it only updates the state machine under a short lock and wakes the task, so a
/// writer never waits for the sink. The task takes batches in order, sends them, retries failures
/// with backoff, and applies the policy's overflow and failure rules. The states and their
/// transitions are ``SinkPipelineStateMachine``'s; what came of the changes (``statistics``,
/// receipts' outcomes) is kept in the sink's books in the cell's ledger (``SinkBooks``), which
/// the events that settle or fail changes update under the pipeline's lock.
///
/// Behind a ``DurableOutbox`` (`log`), a full buffer never drops: changes stay in the log and the
/// task reads them back in order. Once its container is released (``close()``), the pipeline
/// delivers what is left for at most ``SinkPolicy/drainTimeout``, then stops.
///
/// Once someone asked for the container's ``SyncedState/syncStatus``, every change of the
/// statistics (a change buffered, a batch sent or failed, a retry starting, a pause, a stop)
/// refreshes it, after the pipeline's lock is released; until then the writer's side pays one
/// atomic load for it.
final class SinkPipeline<Value: Sendable>: @unchecked Sendable {
    let sink: any StateSink<Value>
    let policy: SinkPolicy
    let key: String
    /// The sink's log, when its changes are logged (a ``DurableOutbox``).
    let log: (any LogBackedSink<Value>)?
    /// The holder of the ledger that keeps the sink's books: its cell's, shared by the key's
    /// containers, or a synced container's own. Its lock is taken under the pipeline's.
    let ledger: any LedgerHost
    /// Where the sink's books are in its ledger.
    let booksID: Int
    private let lock = Lock()
    private var machine: SinkPipelineStateMachine<Value>
    private var nextFlushID: UInt64 = 0
    private var task: Task<Void, Never>?
    /// Whether ``finish()`` ran: by the task, or by the drain timer for a task stuck in a send.
    private var isFinished = false
    /// Counts the calls of ``retryNow()``: a wait for a retry decided before the latest call does
    /// not begin.
    private var retryRequests: UInt64 = 0
    /// The waits for a retry under way (a backoff, a pause, a failed load's), which ``retryNow()``
    /// and ``finish()`` end.
    private var retryWaits: [CancellableSleep] = []
    /// The load of the destination's value that failed last, and how many times in a row, until
    /// it is tried again.
    private var failedLoad: (load: @Sendable () async throws -> Void, failures: Int)?
    /// Who hears of every change of the statistics (a synced container's status, installed the
    /// first time someone reads it).
    let statisticsObserver = OnceInstalledReference<StatisticsObserver>()

    /// Tells `observer` of every change of the statistics from now on: installed, or, on a
    /// pipeline the key's other containers share, following the observer installed first, which
    /// holds it weakly (the caller keeps it).
    func observeStatistics(_ observer: StatisticsObserver) {
        let installed = statisticsObserver.install(observer)
        if installed !== observer { installed.add(observer) }
    }

    /// Makes the pipeline, and opens its books in `ledger`; it delivers nothing before ``start()``.
    ///
    /// - Parameters:
    ///   - startVersion: The container's version before its first change.
    ///   - log: The sink's opened log, whose pending changes are delivered first.
    ///   - firstPending: The first logged version still to deliver.
    ///   - outcomes: What the log settled undelivered in earlier launches.
    init(
        sink: any StateSink<Value>,
        key: String,
        ledger: any LedgerHost,
        startVersion: UInt64,
        log: (any LogBackedSink<Value>)? = nil,
        firstPending: UInt64? = nil,
        outcomes: SinkOutcomes = SinkOutcomes()
    ) {
        self.sink = sink
        self.policy = sink.policy
        self.key = key
        self.log = log
        self.ledger = ledger
        // A receipt's reason names the sink, and a remote sink's destination.
        let destination = (sink as? any RemoteSyncSink<Value>)?.destination
        self.machine = SinkPipelineStateMachine(
            policy: sink.policy, sinkName: destination.map { "\(sink.name) (\($0))" } ?? sink.name,
            isLogBacked: log != nil, startVersion: startVersion, firstPending: firstPending)
        let books = SinkBooks(sinkName: sink.name, outcomes: outcomes)
        self.booksID = ledger.withLedger { $0.openBooks(books) }
    }

    deinit {
        ledger.withLedger { [booksID] in $0.closeBooks(booksID) }
    }

    /// Runs `event` on the state machine and the sink's books: under the pipeline's lock, then
    /// the ledger's, so the books follow the machine's decisions in order.
    private func withBooks<Result>(_ event: (inout Machine, inout SinkBooks) -> Result) -> Result {
        lock.withLock {
            ledger.withLedger { ledger in ledger.books(booksID) { event(&machine, &$0) } }
        }
    }

    /// Starts delivering: once the container is whole, so that a remote sink is connected (and
    /// knows its sync record) before it sends what an outbox kept from an earlier launch.
    func start() {
        let task = Task { await self.run() }
        lock.withLock {
            // The task may have ended already; its handle would keep the finished task alive.
            if !isFinished { self.task = task }
        }
    }

    /// Whether the pipeline stopped: its task ended, or the drain timeout stopped it (a released
    /// container's pipeline must, within that timeout, and its tests check it).
    var hasStopped: Bool {
        lock.withLock { isFinished }
    }

    /// The sink's statistics, from its books, with what waits in the pipeline.
    var statistics: SinkStatistics {
        let pending = self.pending
        return ledger.withLedger { [id = booksID] in $0.statistics(of: id, pending: pending) }
    }

    /// The changes waiting for the sink: in memory and, behind a log, on disk.
    var pending: Int {
        let lastRecorded = log?.lastRecordedVersion ?? 0
        return lock.withLock { machine.pending(lastRecorded: lastRecorded) }
    }

    // MARK: Writer side

    /// Buffers `change` for the sink. Never blocks beyond a short lock.
    func enqueue(_ change: StateChange<Value>) {
        // Locked by hand, and the machine's step inlined: this code is not specialised for
        // `Value`, and every function it passes through looks up the change's generic metadata again.
        lock.lock()
        let (wake, overflow, isFirstDrop) = machine.enqueue(change)
        if let overflow { ledger.noteOverflow(booksID, overflow) }
        lock.unlock()
        wake?.resume()
        statisticsChanged()
        if isFirstDrop {
            report(
                .sinkDroppedChanges,
                "buffer full (\(policy.bufferLimit) changes): dropping changes per \(policy.overflow)")
        }
    }

    /// Buffers `change`, the container's starting value, unless a change came first; see
    /// ``SinkPipelineStateMachine/enqueueAtStart(_:)``.
    func enqueueAtStart(_ change: StateChange<Value>) {
        let wake = lock.withLock { machine.enqueueAtStart(change) }
        wake?.resume()
        statisticsChanged()
    }

    /// Returns once every change enqueued before the call is delivered, dropped or given up, or
    /// the sink is stopped, or the calling task is cancelled; or, unless `waitsThroughPause`,
    /// the sink is paused.
    func flush(waitsThroughPause: Bool) async {
        let (ledger, booksID) = (self.ledger, self.booksID)
        await wait(
            adding: { machine, id, continuation in
                let isPaused = ledger.withLedger { $0.isPaused(booksID) }
                return machine.addFlushWaiter(
                    id: id, waitsThroughPause: waitsThroughPause, isPaused: isPaused, continuation)
            },
            cancelling: { $0.cancelFlush(id: $1) })
    }

    private typealias Machine = SinkPipelineStateMachine<Value>
    private typealias Waiter = CheckedContinuation<Void, Never>

    /// Waits on a continuation that `add` gives the state machine under the lock (`false`: do
    /// not wait), which `cancel` takes back when the calling task is cancelled.
    private func wait(
        adding add: (inout Machine, UInt64, Waiter) -> Bool,
        cancelling cancel: @escaping @Sendable (inout Machine, UInt64) -> Waiter?
    ) async {
        let id = lock.withLock {
            nextFlushID += 1
            return nextFlushID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                lock.lock()
                // Checked under the lock: a cancellation before this point is seen here, one after
                // it finds the waiter.
                if Task.isCancelled || !add(&machine, id, continuation) {
                    lock.unlock()
                    continuation.resume()
                    return
                }
                lock.unlock()
            }
        } onCancel: {
            lock.withLock { cancel(&self.machine, id) }?.resume()
        }
    }

    // MARK: Receipts

    /// A change of `version` is not for this sink (see ``SinkPipelineStateMachine/skip(_:)``).
    func skip(_ version: UInt64) {
        let satisfied = lock.withLock { machine.skip(version) }
        statisticsChanged()
        for waiter in satisfied { waiter.continuation.resume() }
    }

    /// What became of each of `versions` at this sink (`nil`: not settled yet), in one reading.
    func outcomes(of versions: [UInt64]) -> [WriteOutcome?] {
        withBooks { machine, books in versions.map { machine.outcome(of: $0, books: books) } }
    }

    /// What waits for this sink, oldest first: in memory, then in its log.
    func waitingChanges() -> [(change: StateChange<Value>, attempts: Int)] {
        let (waiting, spilledFrom) = lock.withLock { machine.waiting }
        guard let log, let spilledFrom else { return waiting }
        let inMemory = Set(waiting.map(\.change.version))
        let logged = log.changes(from: spilledFrom, maximumCount: .max).filter { !inMemory.contains($0.version) }
        return waiting + logged.map { ($0, 0) }
    }

    // MARK: The destination

    /// The sink's destination has yet to answer (a remote sink was connected): the statistics say
    /// so until it does. Called before the pipeline starts.
    func awaitFirstContact() {
        ledger.withLedger { [id = booksID] in $0.books(id) { $0.awaitFirstContact() } }
        statisticsChanged()
    }

    /// The destination answered outside a send (a pull succeeded).
    func destinationAnswered() {
        let waiters = lock.withLock {
            failedLoad = nil
            return ledger.withLedger { ledger in
                ledger.books(booksID) { machine.destinationAnswered(books: &$0) }
            }
        }
        statisticsChanged()
        for waiter in waiters { waiter.resume() }
    }

    /// Runs `load`, a load of the destination's value, on a task of its own; ``waitForLoads()``
    /// waits for it, and its outcome is a first contact or the sink's last error.
    ///
    /// A load that fails is tried again, as a send is: after the policy's backoff, then at the
    /// pause's interval (``SinkPolicy/Failure/pauseAndKeep(retryEvery:)``, or the retry's
    /// maximum delay), until one succeeds or the pipeline stops; and at once on ``retryNow()``.
    func load(_ load: @escaping @Sendable () async throws -> Void) {
        lock.withLock { machine.loadStarted() }
        run(load, failuresBefore: 0)
    }

    private func run(_ load: @escaping @Sendable () async throws -> Void, failuresBefore: Int) {
        Task {
            var failure: (any Error)?
            do { try await load() } catch { failure = error }
            let failures = failure == nil ? 0 : failuresBefore + 1
            let (waiters, requests) = lock.withLock {
                failedLoad = failure == nil || isFinished ? nil : (load, failures)
                let willRetry = failedLoad != nil
                let waiters = ledger.withLedger { ledger in
                    ledger.books(booksID) {
                        machine.loadFinished(error: failure, willRetry: willRetry, at: .now, books: &$0)
                    }
                }
                return (waiters, retryRequests)
            }
            statisticsChanged()
            for waiter in waiters { waiter.resume() }
            guard failures > 0 else { return }
            await waitForRetry(loadRetryDelay(afterFailures: failures), decidedAt: requests)
            if let retry = takeFailedLoad(failures: failures) { run(retry.load, failuresBefore: retry.failures) }
        }
    }

    /// The failed load, marked as under way, if it is still the one that failed `failures` times
    /// (`nil`: any number); `nil` if it succeeded, was taken already, or the pipeline stopped.
    private func takeFailedLoad(failures: Int? = nil) -> (load: @Sendable () async throws -> Void, failures: Int)? {
        lock.withLock {
            guard let failedLoad, failures == nil || failedLoad.failures == failures, !isFinished else { return nil }
            self.failedLoad = nil
            machine.loadStarted()
            return failedLoad
        }
    }

    /// How long a load that failed `failures` times in a row waits before the next try.
    private func loadRetryDelay(afterFailures failures: Int) -> Duration {
        guard failures >= policy.retry.maximumAttempts else { return policy.retry.delay(beforeRetry: failures) }
        switch policy.afterRepeatedFailures {
        case .pauseAndKeep(let retryEvery): return retryEvery
        case .giveUpAndReport: return policy.retry.maximumDelay
        }
    }

    /// Retries at once what waits for a retry: a send backing off or paused after failures, and a
    /// load of the destination's value that failed. For ``SyncedState/flush(timeout:)`` and
    /// ``SyncedState/refresh()``: asked, the sink does not wait out its pause.
    func retryNow() {
        let (waits, load) = lock.withLock {
            retryRequests &+= 1
            defer { retryWaits = [] }
            return (retryWaits, failedLoad)
        }
        for wait in waits { wait.wake() }
        if load != nil, let retry = takeFailedLoad() { run(retry.load, failuresBefore: retry.failures) }
    }

    /// Waits `duration` for a retry that was decided when ``retryRequests`` was `decidedAt`; a
    /// ``retryNow()`` since then, or during the wait, ends it at once.
    private func waitForRetry(_ duration: Duration, decidedAt requests: UInt64) async {
        var registered: CancellableSleep?
        await CancellableSleep.sleep(for: duration) { sleep in
            let isCurrent = lock.withLock {
                guard retryRequests == requests, !isFinished else { return false }
                retryWaits.append(sleep)
                return true
            }
            if isCurrent { registered = sleep } else { sleep.wake() }
        }
        if let registered { lock.withLock { retryWaits.removeAll { $0 === registered } } }
    }

    /// Returns once no load of the destination's value is under way (see ``load(_:)``), the
    /// pipeline stopped, or the calling task is cancelled; if `waitsThroughFailures`, once a load
    /// succeeded or none is due to be tried again.
    func waitForLoads(waitsThroughFailures: Bool = false) async {
        await wait(
            adding: { $0.addLoadWaiter(id: $1, waitsThroughFailures: waitsThroughFailures, $2) },
            cancelling: { $0.cancelLoadWaiter(id: $1) })
    }

    /// The container was released: deliver what is buffered for at most the policy's drain
    /// timeout, then stop.
    func close() {
        let wake = lock.withLock { machine.close() }
        wake?.resume()
        log?.release()
        // A Dispatch timer, not a task: 10,000 released containers must not flood Swift
        // concurrency's shared pool with sleeping tasks. It stops the pipeline itself, without
        // waiting for the task: a send that ignores cancellation may never return, and what it
        // held must still be counted and reported. It holds the pipeline weakly: the task holds it
        // while it runs, and a finished pipeline is not kept for the timer's sake.
        let isRunning = lock.withLock { !isFinished }
        if isRunning {
            DispatchQueue.global().asyncAfter(deadline: .now() + policy.drainTimeout.inSeconds) { [weak self] in
                self?.drainTimedOut()
            }
        }
    }

    /// The drain timeout passed: cancels the task and stops the pipeline, unless it stopped already.
    private func drainTimedOut() {
        let task = lock.withLock { self.task }
        task?.cancel()
        finish()
    }

    // MARK: Delivery task

    private func run() async {
        var hasWaitedForInterval = false
        while !Task.isCancelled {
            let (next, drops) = withBooks { machine, books in
                (
                    machine.nextBatch(hasWaitedForInterval: hasWaitedForInterval, books: &books),
                    machine.takeUnreportedDrops()
                )
            }
            if drops > 0 {
                report(.sinkDroppedChanges, "\(drops) more changes dropped because the buffer was full")
            }
            switch next {
            case .send(let batch):
                hasWaitedForInterval = false
                await deliver(batch)
            case .waitForInterval:
                hasWaitedForInterval = true
                await CancellableSleep.sleep(for: policy.flushInterval)
            case .readLog(let version, let maximumCount):
                readBack(from: version, maximumCount: maximumCount)
            case .wait:
                await withCheckedContinuation { continuation in
                    let isParked = lock.withLock { machine.park(continuation) }
                    if !isParked { continuation.resume() }
                }
            case .finish:
                finish()
                return
            }
        }
        finish()
    }

    private func readBack(from version: UInt64, maximumCount: Int) {
        guard let log else { return }
        let recordedBefore = log.lastRecordedVersion
        let changes = log.changes(from: version, maximumCount: maximumCount)
        let satisfied = withBooks { machine, books in
            machine.logRead(
                changes,
                isComplete: changes.count < maximumCount,
                recordedBefore: recordedBefore,
                recordedNow: log.lastRecordedVersion,
                books: &books
            )
        }
        statisticsChanged()
        for waiter in satisfied { waiter.continuation.resume() }
    }

    private func deliver(_ batch: [StateChange<Value>]) async {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            if attempt > 1 {
                lock.withLock { machine.retryStarted() }
                statisticsChanged()
            }
            do {
                var supersededBecause: String?
                do {
                    try await sink.send(batch)
                } catch let superseded as SupersededByRemoteValue {
                    supersededBecause = superseded.reason
                }
                let now = Date()
                let (satisfied, wasPaused) = withBooks { machine, books in
                    machine.sendSucceeded(at: now, supersededBecause: supersededBecause, books: &books)
                }
                if wasPaused { report(.sinkResumed, "delivered \(describe(batch)) after being paused") }
                statisticsChanged()
                for waiter in satisfied { waiter.continuation.resume() }
                return
            } catch {
                if Task.isCancelled { return }
                let advice = error as? any StateSinkError
                let now = (date: Date(), instant: ContinuousClock.now)
                let (failure, requests) = withBooks { machine, books in
                    (
                        machine.sendFailed(
                            error, retryAfter: advice?.retryAfter, isRetryable: advice?.isRetryable ?? true,
                            attempt: attempt, at: now, books: &books),
                        retryRequests
                    )
                }
                statisticsChanged()
                switch failure {
                case .retry(let delay):
                    await waitForRetry(delay, decidedAt: requests)
                case .pause(let isFirst, let wait, let waiters):
                    for waiter in waiters { waiter.continuation.resume() }
                    if isFirst {
                        let reason =
                            (advice?.retryAfter).map { $0 > policy.retry.maximumDelay } == true
                            ? "asked to wait \(advice?.retryAfter ?? .zero), more than the policy's maximum delay "
                                + "(\(policy.retry.maximumDelay))"
                            : "failed \(attempt) attempts"
                        report(
                            .sinkPaused, "\(reason); paused, keeping \(describe(batch)) and retrying in \(wait)",
                            error: error)
                    }
                    await waitForRetry(wait, decidedAt: requests)
                case .drop(let isRefused, let fate, let waiters):
                    // Behind a log, they are settled there too: not sent again by the next launch.
                    if let log, let first = batch.first?.version, let last = batch.last?.version {
                        log.settle(first...last, as: fate)
                    }
                    for waiter in waiters { waiter.continuation.resume() }
                    if isRefused {
                        report(.sinkRejected, "the sink refused \(describe(batch)) for good; dropped", error: error)
                    } else {
                        report(.sinkGaveUp, "gave up \(describe(batch)) after \(attempt) failed attempts", error: error)
                    }
                    return
                }
            }
        }
    }

    /// Stops the pipeline, once (the task or the drain timer, whichever comes first): releases
    /// every flush and reports what a drain timeout left behind.
    private func finish() {
        let lastRecorded = log?.lastRecordedVersion ?? 0
        let (stopped, waits): (SinkPipelineStateMachine<Value>.Stopped?, [CancellableSleep]) = withBooks {
            machine, books in
            guard !isFinished else { return (nil, []) }
            isFinished = true
            // The task holds the pipeline until it ends: its handle must not hold the task back.
            task = nil
            failedLoad = nil
            defer { retryWaits = [] }
            return (machine.stop(lastRecorded: lastRecorded, books: &books), retryWaits)
        }
        // A failed load's retry holds the pipeline while it waits.
        for wait in waits { wait.wake() }
        guard let stopped else { return }
        statisticsChanged()
        stopped.wake?.resume()
        for waiter in stopped.waiters { waiter.continuation.resume() }
        for waiter in stopped.loadWaiters { waiter.resume() }
        if stopped.left > 0 {
            report(
                .sinkStopped,
                "released container: stopped after the drain timeout (\(policy.drainTimeout)) with \(stopped.left) "
                    + (log == nil
                        ? "changes undelivered" : "changes undelivered, kept in the outbox for the next launch"))
        }
    }

    // MARK: Helpers

    /// Tells the statistics' observer, once one is installed; called after every change of the
    /// statistics, with the pipeline's lock released.
    private func statisticsChanged() {
        statisticsObserver.unretained?._withUnsafeGuaranteedRef { $0.statisticsChanged() }
    }

    private func describe(_ changes: [StateChange<Value>]) -> String {
        guard let first = changes.first, let last = changes.last else { return "no changes" }
        return changes.count == 1
            ? "1 change (version \(first.version))"
            : "\(changes.count) changes (versions \(first.version)...\(last.version))"
    }

    private func report(_ kind: StateDiagnostic.Kind, _ message: String, error: (any Error)? = nil) {
        StateDiagnostics.report(
            StateDiagnostic(kind: kind, keys: [key], message: "sink \(sink.name): \(message)", error: error)
        )
    }
}
