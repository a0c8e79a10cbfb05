import Foundation

/// The states of one sink's pipeline, and what each event makes it do.
///
/// A value type, as swift-async-algorithms' `<X>StateMachine`s are: ``SinkPipeline`` calls an
/// event under its lock, the event updates the state and returns an action, and the pipeline
/// performs the action (resuming continuations, sleeping, sending, reporting) after unlocking.
///
/// States (``Phase``, plus ``isDraining`` once the container is released):
///
/// | phase        | meaning                                                   |
/// | ------------ | --------------------------------------------------------- |
/// | `idle`       | nothing buffered; the task waits for a change             |
/// | `sending`    | a batch is in flight                                      |
/// | `backingOff` | the batch failed; the task waits before retrying it        |
/// | `paused`     | the batch failed for good or was told to wait too long; it is kept and retried slowly |
/// | `stopped`    | the task ended; nothing more is sent                      |
///
/// Transitions:
///
/// | phase                   | event                     | next        | action                                |
/// | ----------------------- | ------------------------- | ----------- | ------------------------------------- |
/// | any but stopped         | ``enqueue(_:)``           | same        | buffer, or (log-backed, buffer full) leave it in the log, or drop/coalesce (noted in the books); wake the task |
/// | idle                    | ``nextBatch(hasWaitedForInterval:)`` with a buffer | sending | ``Next/send(_:)``     |
/// | idle                    | ``nextBatch(hasWaitedForInterval:)``, changes in the log only | idle | ``Next/readLog(from:maximumCount:)`` |
/// | idle                    | ``nextBatch(hasWaitedForInterval:)``, nothing, draining | stopped | ``Next/finish``     |
/// | idle                    | ``nextBatch(hasWaitedForInterval:)``, nothing | idle | ``Next/wait``                    |
/// | sending, backingOff, paused | ``sendSucceeded()``   | idle        | release the flushes it completes; say whether it was paused |
/// | sending, backingOff     | ``sendFailed(_:retryAfter:isRetryable:attempt:)`` | backingOff, paused or idle | ``Failure`` |
/// | backingOff, paused      | ``retryStarted()``        | sending     | none (the batch goes again)           |
/// | any                     | ``close()``               | same, draining | wake the task                      |
/// | any                     | ``loadStarted()``         | same        | flushes wait for the load             |
/// | any                     | ``loadFinished(error:willRetry:at:)`` | same | contact or error; the last one releases the flushes waiting for loads (those waiting through failures, once no retry is due) |
/// | any                     | ``stop()``                | stopped     | release every flush; what is left is counted |
///
/// Flushes wait by version: a flush made when the pipeline knew of version `v` is released once
/// every change up to `v` is settled (sent, failed, dropped, coalesced), or the pipeline is
/// stopped, or, unless it waits through pauses (``FlushWaiter/waitsThroughPause``), the sink is
/// paused.
///
/// What came of the changes (counters, errors, the pause, what was settled undelivered) is not
/// kept here but in the sink's ``SinkBooks``, in the cell's ledger: the events that settle or
/// fail changes take them, and the pipeline calls those under the ledger's lock as well.
struct SinkPipelineStateMachine<Value: Sendable> {
    enum Phase: Equatable {
        case idle, sending, backingOff, paused, stopped
    }

    /// A flush waiting for the loads of the destination's value (``addLoadWaiter(id:waitsThroughFailures:_:)``).
    struct LoadWaiter {
        var id: UInt64
        var waitsThroughFailures: Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    struct FlushWaiter {
        var id: UInt64
        var target: UInt64
        /// Whether a pause leaves the flush waiting (``SyncedState/flush(timeout:)``) instead of
        /// releasing it (``SyncedState/flush()``).
        var waitsThroughPause: Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    /// What the delivery task does next.
    enum Next {
        /// Send this batch.
        case send([StateChange<Value>])
        /// Wait ``SinkPolicy/flushInterval`` for more changes to join, then ask again.
        case waitForInterval
        /// Read these changes back from the log, then report them with ``logRead(_:isComplete:recordedBefore:recordedNow:)``.
        case readLog(from: UInt64, maximumCount: Int)
        /// Nothing to do: park until woken.
        case wait
        /// Drained: end the task.
        case finish
    }

    /// What to do after a failed send.
    enum Failure {
        /// Wait, then send the same batch again.
        case retry(after: Duration)
        /// The sink is paused: release `waiters`, report if `isFirst`, wait, then send again.
        case pause(isFirst: Bool, wait: Duration, waiters: [FlushWaiter])
        /// The batch is given up (the policy) or refused (the sink), as `fate` says: release
        /// `waiters` and report.
        case drop(isRefused: Bool, fate: SinkOutcomes.Fate, waiters: [FlushWaiter])
    }

    let policy: SinkPolicy
    /// The sink's name (and a remote sink's destination), for the reasons of its outcomes.
    let sinkName: String
    /// Why a full buffer drops a change, made once: a sink that overflows drops one a write.
    private let dropReason: String
    /// Whether the sink's changes are also in a log the task can read back (a ``DurableOutbox``).
    let isLogBacked: Bool
    private(set) var phase = Phase.idle
    /// Whether the container was released: the task sends what is left, then stops.
    private(set) var isDraining = false
    private var buffer = FIFOQueue<StateChange<Value>>()
    private var inFlight: [StateChange<Value>] = []
    /// Changes from this version on are in the log only (log-backed pipelines).
    private var spilledFrom: UInt64?
    /// The highest version handed to the pipeline or read from its log.
    private var lastVersion: UInt64
    private var unreportedDrops = 0
    private var isDropReported = false
    private var wakeUp: CheckedContinuation<Void, Never>?
    private var flushWaiters: [FlushWaiter] = []
    /// Loads of the destination's value under way (a remote sink's load at start), which a
    /// container's flush waits for.
    private var loadsInFlight = 0
    /// Whether a load failed and is to be tried again: flushes that wait through failures wait for it.
    private var isLoadRetryDue = false
    private var loadWaiters: [LoadWaiter] = []
    /// How many times the batch in flight has been tried.
    private var attempts = 0
    /// Every version up to this one is settled or in flight; those after it and before the
    /// buffer's first change were coalesced into that change (or are not for this sink). Kept by
    /// the delivery task: a writer that coalesces records nothing.
    private var lastTaken: UInt64

    /// - Parameters:
    ///   - startVersion: The container's version when the pipeline starts (its log's last version).
    ///   - firstPending: For a log-backed pipeline, the first logged version still to deliver.
    init(
        policy: SinkPolicy, sinkName: String = "", isLogBacked: Bool, startVersion: UInt64, firstPending: UInt64?
    ) {
        self.policy = policy
        self.sinkName = sinkName
        self.dropReason = "\(policy.overflow) at sink \(sinkName): its buffer of \(policy.bufferLimit) changes was full"
        self.isLogBacked = isLogBacked
        self.lastVersion = startVersion
        self.spilledFrom = isLogBacked ? firstPending : nil
        self.lastTaken = isLogBacked ? (firstPending.map { $0 - 1 } ?? startVersion) : startVersion
    }

    /// The lowest version not yet settled.
    private var firstUnsettled: UInt64 {
        inFlight.first?.version ?? buffer.first?.version ?? spilledFrom ?? lastVersion &+ 1
    }

    /// The changes waiting: in memory and, behind a log, on disk up to `lastRecorded`
    /// (``SinkStatistics/pending``).
    func pending(lastRecorded: UInt64) -> Int {
        let spilled = spilledFrom.map { lastRecorded >= $0 ? Int(clamping: lastRecorded - $0 + 1) : 0 } ?? 0
        return buffer.count + inFlight.count + spilled
    }

    // MARK: Writer side

    /// A change arrives. Returns the task to wake; what a full buffer without a log did, for the
    /// caller to note in the sink's books (``SinkBooks/overflowed(_:)``); and whether it is the
    /// first drop of an overflow (reported at once by the caller).
    @inline(__always)
    mutating func enqueue(
        _ change: StateChange<Value>
    ) -> (wake: CheckedContinuation<Void, Never>?, overflow: SinkBooks.Overflow?, isFirstDrop: Bool) {
        guard phase != .stopped, change.version > lastVersion else {
            return (nil, nil, false)
        }
        lastVersion = change.version
        var overflow: SinkBooks.Overflow?
        if spilledFrom != nil {
            // Behind newer changes already left in the log: it stays there too, to keep the order.
        } else if buffer.count >= policy.bufferLimit {
            if isLogBacked {
                spilledFrom = change.version
            } else {
                switch policy.overflow {
                case .dropOldest:
                    overflow = .dropped(version: buffer.popFirst()?.version, reason: dropReason)
                    buffer.append(change)
                case .dropNewest:
                    overflow = .dropped(version: change.version, reason: dropReason)
                case .coalesceToLatest:
                    overflow = .coalesced(count: buffer.count)
                    buffer.replaceAll(with: change)
                }
            }
        } else {
            buffer.append(change)
        }
        checkInvariants()
        let isFirstDrop = policy.overflow != .coalesceToLatest && overflow != nil && noteDrop()
        return (takeWakeUp(), overflow, isFirstDrop)
    }

    /// Buffers `change`, of the value the container started with, when nothing came before it:
    /// a remote sink's value left unsent by an earlier launch. A change already enqueued carries
    /// a newer value, so it is not buffered then.
    mutating func enqueueAtStart(_ change: StateChange<Value>) -> CheckedContinuation<Void, Never>? {
        guard phase != .stopped, buffer.isEmpty, inFlight.isEmpty, spilledFrom == nil, change.version >= lastVersion
        else { return nil }
        lastVersion = change.version
        buffer.append(change)
        checkInvariants()
        return takeWakeUp()
    }

    /// The container was released: deliver what is left, then stop.
    mutating func close() -> CheckedContinuation<Void, Never>? {
        isDraining = true
        return takeWakeUp()
    }

    /// What stopping returns: every flush waiter, how many changes were left undelivered, the
    /// parked task to wake, and the flushes waiting for loads.
    typealias Stopped = (
        waiters: [FlushWaiter], left: Int, wake: CheckedContinuation<Void, Never>?,
        loadWaiters: [CheckedContinuation<Void, Never>]
    )

    /// Stops the pipeline now. Returns every flush waiter and how many changes were left undelivered.
    mutating func stop(lastRecorded: UInt64, books: inout SinkBooks) -> Stopped {
        let left = pending(lastRecorded: lastRecorded)
        // Behind a log, what is left is delivered by the next launch.
        books.stopped(undeliveredFrom: !isLogBacked && phase != .stopped ? firstUnsettled : nil)
        phase = .stopped
        buffer.removeAll()
        inFlight = []
        spilledFrom = nil
        let waiters = flushWaiters
        flushWaiters = []
        let loadWaiters = self.loadWaiters.map(\.continuation)
        self.loadWaiters = []
        return (waiters, left, takeWakeUp(), loadWaiters)
    }

    // MARK: Delivery task

    /// What the task does next.
    mutating func nextBatch(hasWaitedForInterval: Bool, books: inout SinkBooks) -> Next {
        if phase == .stopped { return .finish }
        if !buffer.isEmpty {
            if buffer.count < policy.maximumBatchSize && policy.flushInterval > .zero && !hasWaitedForInterval
                && spilledFrom == nil && !isDraining
            {
                return .waitForInterval
            }
            inFlight = buffer.popFirst(upTo: policy.maximumBatchSize)
            if policy.overflow == .coalesceToLatest, let first = inFlight.first?.version, first > lastTaken &+ 1 {
                books.coalesced((lastTaken &+ 1)...(first &- 1))
            }
            lastTaken = inFlight.last?.version ?? lastTaken
            attempts = 1
            phase = .sending
            return .send(inFlight)
        }
        if let spilledFrom {
            return .readLog(from: spilledFrom, maximumCount: max(policy.bufferLimit, policy.maximumBatchSize))
        }
        if isDraining {
            phase = .stopped
            return .finish
        }
        phase = .idle
        return .wait
    }

    /// Parks the task until a change arrives; returns `false` if there is work already (resume at once).
    mutating func park(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard buffer.isEmpty && spilledFrom == nil && !isDraining && phase != .stopped else { return false }
        wakeUp = continuation
        return true
    }

    /// Changes read back from the log, in order.
    ///
    /// - Parameters:
    ///   - isComplete: Whether the read returned fewer than asked: every change logged when it
    ///     started (`recordedBefore`) was read.
    ///   - recordedNow: The log's last version now, read under the pipeline's lock: a change
    ///     logged after it is still to be enqueued, so the pipeline can go back to its buffer.
    mutating func logRead(
        _ changes: [StateChange<Value>],
        isComplete: Bool,
        recordedBefore: UInt64,
        recordedNow: UInt64,
        books: inout SinkBooks
    ) -> [FlushWaiter] {
        guard phase != .stopped, var next = spilledFrom else { return [] }
        for change in changes where change.version >= next {
            if policy.overflow == .coalesceToLatest && buffer.count >= policy.bufferLimit {
                books.coalesced(count: buffer.count)
                buffer.removeAll()
            }
            buffer.append(change)
            next = change.version &+ 1
        }
        if isComplete { next = max(next, recordedBefore &+ 1) }
        lastVersion = max(lastVersion, next &- 1)
        spilledFrom = next > recordedNow ? nil : next
        checkInvariants()
        return takeSatisfiedWaiters()
    }

    /// The batch in flight was accepted at `now`. Returns the flushes it completes and whether
    /// the sink was paused until now (then reported resumed).
    ///
    /// - Parameter reason: The sink delivered nothing: a remote value replaced the batch
    ///   (``SupersededByRemoteValue``), so it is counted as coalesced, not sent, and its changes
    ///   are discarded for this reason.
    mutating func sendSucceeded(
        at now: Date, supersededBecause reason: String? = nil, books: inout SinkBooks
    ) -> (waiters: [FlushWaiter], wasPaused: Bool) {
        // A send that returns after the drain timeout stopped the pipeline: its batch was counted
        // as undelivered then, and nothing is left to deliver.
        guard phase != .stopped else { return ([], false) }
        attempts = 0
        let wasPaused =
            if let reason {
                books.superseded(inFlightVersions, count: inFlight.count, because: reason, at: now)
            } else {
                books.delivered(inFlightVersions, count: inFlight.count, at: now)
            }
        inFlight = []
        settledInFlight()
        phase = .idle
        return (takeSatisfiedWaiters(), wasPaused)
    }

    /// The wait after a failure is over: the batch in flight is sent again.
    ///
    /// ``SinkStatistics/retryAt`` keeps the moment of this attempt while it is in flight: the
    /// attempt's outcome replaces it (cleared by a success, the next retry's moment after a
    /// failure), so an outage changes the statistics once per attempt, not twice.
    mutating func retryStarted() {
        guard phase == .backingOff || phase == .paused else { return }
        attempts += 1
        phase = .sending
    }

    /// The batch in flight failed on its `attempt`-th try, at `now`.
    mutating func sendFailed(
        _ error: any Error,
        retryAfter: Duration?,
        isRetryable: Bool,
        attempt: Int,
        at now: (date: Date, instant: ContinuousClock.Instant),
        books: inout SinkBooks
    ) -> Failure {
        let message = shortErrorMessage(error)
        books.failed(message, at: now.instant)
        if !isRetryable {
            return drop(isRefused: true, .rejected(reason: "sink \(sinkName) refused it: \(message)"), books: &books)
        }
        let maximumWait = policy.retry.maximumDelay
        let failure: Failure
        if let retryAfter, retryAfter > maximumWait {
            // Honouring it would hold every flush for as long as the destination likes.
            failure = pause(wait: maximumWait, books: &books)
        } else if attempt >= policy.retry.maximumAttempts {
            switch policy.afterRepeatedFailures {
            case .giveUpAndReport:
                return drop(
                    isRefused: false,
                    .discarded(
                        reason: "giveUpAndReport at sink \(sinkName): gave up after \(attempt) failed attempts ("
                            + "\(message))"),
                    books: &books)
            case .pauseAndKeep(let retryEvery):
                failure = pause(wait: max(retryEvery, retryAfter ?? .zero), books: &books)
            }
        } else {
            phase = .backingOff
            failure = .retry(after: policy.retry.delay(beforeRetry: attempt, retryAfter: retryAfter))
        }
        switch failure {
        case .retry(let wait), .pause(_, let wait, _):
            books.retryDue(at: now.date.addingTimeInterval(wait.inSeconds))
        case .drop:
            break
        }
        return failure
    }

    private mutating func drop(isRefused: Bool, _ fate: SinkOutcomes.Fate, books: inout SinkBooks) -> Failure {
        attempts = 0
        books.gaveUp(inFlightVersions, count: inFlight.count, as: fate)
        inFlight = []
        settledInFlight()
        phase = .idle
        return .drop(isRefused: isRefused, fate: fate, waiters: takeSatisfiedWaiters())
    }

    private mutating func pause(wait: Duration, books: inout SinkBooks) -> Failure {
        let isFirst = books.paused()
        phase = .paused
        var released: [FlushWaiter] = []
        flushWaiters.removeAll { waiter in
            guard !waiter.waitsThroughPause else { return false }
            released.append(waiter)
            return true
        }
        return .pause(isFirst: isFirst, wait: wait, waiters: released)
    }

    // MARK: The destination

    /// The destination answered outside a send (a load or pull that succeeded): a first contact,
    /// and the end of an error an earlier load left. Returns the flushes that waited for a failed
    /// load's retry.
    mutating func destinationAnswered(books: inout SinkBooks) -> [CheckedContinuation<Void, Never>] {
        books.destinationAnswered()
        isLoadRetryDue = false
        return takeLoadWaiters()
    }

    /// A load of the destination's value started; flushes wait for it (``addLoadWaiter(id:waitsThroughFailures:_:)``).
    mutating func loadStarted() {
        loadsInFlight += 1
        isLoadRetryDue = false
    }

    /// A load finished: with `error`, it failed at `now`, and is tried again if `willRetry`.
    /// Returns the flushes waiting for loads once none is left (those that wait through failures,
    /// once none is due either).
    ///
    /// A success is a first contact and clears an error an earlier load left; a failure is the
    /// sink's ``SinkStatistics/lastError`` unless a send's failure already is (the send is the
    /// one the retry is about).
    mutating func loadFinished(
        error: (any Error)?,
        willRetry: Bool,
        at now: ContinuousClock.Instant,
        books: inout SinkBooks
    ) -> [CheckedContinuation<Void, Never>] {
        loadsInFlight = max(0, loadsInFlight - 1)
        guard let error else { return destinationAnswered(books: &books) }
        books.loadFailed(shortErrorMessage(error), at: now)
        isLoadRetryDue = isLoadRetryDue || willRetry
        return takeLoadWaiters()
    }

    /// The flushes waiting for loads that may go now.
    private mutating func takeLoadWaiters() -> [CheckedContinuation<Void, Never>] {
        guard loadsInFlight == 0 else { return [] }
        var going: [CheckedContinuation<Void, Never>] = []
        loadWaiters.removeAll { waiter in
            guard !(waiter.waitsThroughFailures && isLoadRetryDue) else { return false }
            going.append(waiter.continuation)
            return true
        }
        return going
    }

    /// Registers a flush waiting for the loads under way; returns `false` when none is (resume it
    /// at once).
    ///
    /// - Parameter waitsThroughFailures: Also wait while a failed load is due to be tried again,
    ///   until one succeeds (a flush with a deadline).
    mutating func addLoadWaiter(
        id: UInt64, waitsThroughFailures: Bool, _ continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        guard loadsInFlight > 0 || (waitsThroughFailures && isLoadRetryDue), phase != .stopped else { return false }
        loadWaiters.append(LoadWaiter(id: id, waitsThroughFailures: waitsThroughFailures, continuation: continuation))
        return true
    }

    /// Removes a cancelled flush waiting for loads and returns its continuation, if it still waited.
    mutating func cancelLoadWaiter(id: UInt64) -> CheckedContinuation<Void, Never>? {
        guard let index = loadWaiters.firstIndex(where: { $0.id == id }) else { return nil }
        return loadWaiters.remove(at: index).continuation
    }

    /// Drops counted since the task last reported them (then reported by the task).
    mutating func takeUnreportedDrops() -> Int {
        defer {
            unreportedDrops = 0
            isDropReported = false
        }
        return unreportedDrops
    }

    // MARK: Receipts

    /// A change of `version` is not for this sink (a remote sink does not take back what came
    /// from a remote copy): the versions before it are all the sink waits for.
    /// Returns the flushes it completes.
    mutating func skip(_ version: UInt64) -> [FlushWaiter] {
        guard phase != .stopped, version > lastVersion else { return [] }
        lastVersion = version
        if buffer.isEmpty && inFlight.isEmpty && spilledFrom == nil { lastTaken = version }
        return takeSatisfiedWaiters()
    }

    /// What became of the change of `version` at this sink, as `books` and the buffer tell:
    /// `nil` while it is not settled (or has not reached the pipeline yet).
    func outcome(of version: UInt64, books: SinkBooks) -> WriteOutcome? {
        var version = version
        while true {
            let entry = books.outcomes.entry(of: version)
            switch entry?.fate {
            case .discarded(let reason)?: return .discarded(reason: reason)
            case .rejected(let reason)?: return .rejected(reason: reason)
            case .coalesced?: version = (entry?.versions.upperBound ?? version) &+ 1
            case nil:
                // Coalesced into the buffer's first change, not yet taken to send.
                if policy.overflow == .coalesceToLatest, version > lastTaken, let first = buffer.first?.version,
                    version < first
                {
                    version = first
                    continue
                }
                if let undeliveredFrom = books.undeliveredFrom, version >= undeliveredFrom {
                    return .discarded(
                        reason: "sink \(sinkName) stopped before delivering it: its container was released and the "
                            + "drain timeout (\(policy.drainTimeout)) passed")
                }
                return version < firstUnsettled ? .delivered : nil
            }
        }
    }

    /// The changes waiting in memory, oldest first, each with the times it was tried; and the
    /// first version waiting in the log only, if any.
    var waiting: (changes: [(change: StateChange<Value>, attempts: Int)], spilledFrom: UInt64?) {
        (inFlight.map { ($0, attempts) } + buffer.elements.map { ($0, 0) }, spilledFrom)
    }

    // MARK: Flushes

    /// Registers a flush; returns `false` when it is already satisfied (resume it at once).
    ///
    /// - Parameter waitsThroughPause: Whether the flush waits for a paused sink to deliver
    ///   instead of being satisfied by the pause.
    mutating func addFlushWaiter(
        id: UInt64,
        waitsThroughPause: Bool,
        isPaused: Bool,
        _ continuation: CheckedContinuation<Void, Never>
    ) -> Bool {
        if phase == .stopped || (isPaused && !waitsThroughPause) || firstUnsettled > lastVersion {
            return false
        }
        flushWaiters.append(
            FlushWaiter(
                id: id, target: lastVersion, waitsThroughPause: waitsThroughPause, continuation: continuation))
        return true
    }

    /// Removes a cancelled flush and returns its continuation, if it still waited.
    mutating func cancelFlush(id: UInt64) -> CheckedContinuation<Void, Never>? {
        guard let index = flushWaiters.firstIndex(where: { $0.id == id }) else { return nil }
        return flushWaiters.remove(at: index).continuation
    }

    // MARK: Helpers

    @inline(__always)
    private mutating func takeWakeUp() -> CheckedContinuation<Void, Never>? {
        let wake = wakeUp
        wakeUp = nil
        return wake
    }

    /// Counts a drop; returns whether it is the first since the task last reported drops (the
    /// writer reports it at once; later ones are summed up by the task, so a flood of drops makes
    /// at most two diagnostics per batch).
    private mutating func noteDrop() -> Bool {
        guard isDropReported else {
            isDropReported = true
            return true
        }
        unreportedDrops += 1
        return false
    }

    /// The batch in flight is settled: with nothing buffered, so is every version handed so far.
    private mutating func settledInFlight() {
        if buffer.isEmpty && spilledFrom == nil { lastTaken = lastVersion }
    }

    /// The versions of the batch in flight.
    private var inFlightVersions: ClosedRange<UInt64>? {
        guard let first = inFlight.first?.version, let last = inFlight.last?.version else { return nil }
        return first...last
    }

    private mutating func takeSatisfiedWaiters() -> [FlushWaiter] {
        guard !flushWaiters.isEmpty else { return [] }
        let settled = firstUnsettled
        var satisfied: [FlushWaiter] = []
        flushWaiters.removeAll { waiter in
            guard waiter.target < settled else { return false }
            satisfied.append(waiter)
            return true
        }
        return satisfied
    }

    /// Debug builds check (in O(1)) that the buffer's newest changes are in version order, that it
    /// is within its bound unless read back from a log, and that it is behind what is in the log only.
    private func checkInvariants() {
        #if DEBUG
        let count = buffer.count
        if count >= 2 {
            assert(buffer[offset: count - 2].version < buffer[offset: count - 1].version, "buffer out of order")
        }
        assert(isLogBacked || count <= policy.bufferLimit, "buffer beyond its limit")
        if let spilledFrom, count > 0 {
            assert(buffer[offset: count - 1].version < spilledFrom, "buffer ahead of the log")
        }
        #endif
    }
}
