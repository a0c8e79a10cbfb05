/// A ``MonitoredState`` that forwards every change to sinks: analytics, remote sync, logs.
///
/// Each sink gets its own ordered, bounded buffer and delivery task, run by the sink's
/// ``StateSink/policy``: writers never wait for a sink (a sink that takes 200 ms per batch does not
/// slow ``State/modify(_:)-5lmnc``), and one sink failing or hanging does not delay another.
/// Every change the container makes is handed to every sink, in ``State/version`` order, and is
/// accounted for in that sink's ``statistics``: sent, failed, dropped, coalesced or pending.
///
/// ```swift
/// let cart = SyncedState([String](), key: "cart") {
///     AnalyticsSink(backend: JSONLinesAnalyticsBackend(fileURL: eventsURL)) { change in
///         AnalyticsEvent(name: "cart_changed", properties: ["count": "\(change.newValue.count)"])
///     }
///     LoggingSink()
/// }
/// cart.modify { $0.append("Book") }
/// await cart.flush()   // every sink has the change, or gave it up as its policy says
/// ```
///
/// ## Where and when sinks run
/// Sinks run on their own tasks, never on the writer's thread; subscribers and listeners behave
/// as in ``MonitoredState``. A container's sinks stop receiving changes when it is deallocated;
/// each sink's task then delivers what it already buffered for at most its policy's
/// ``SinkPolicy/drainTimeout``, and stops.
///
/// - Note: All operations on `SyncedState` are thread-safe. A subclass must restate
///   `@unchecked Sendable`.
open class SyncedState<Value: Sendable>: MonitoredState<Value> {
    /// One per sink, in order; those of a persisted key's remote sinks with a destination are
    /// shared with the key's other containers (``CellRemotes``).
    let pipelines: [SinkPipeline<Value>]
    private var sinkSubscription: Subscription?
    /// The cell's remote channels and records, when the container persists and has remote sinks.
    private let cellRemotes: CellRemotes<Value>?
    /// The pipelines of this container alone, which it closes when it goes.
    private let ownPipelines: [SinkPipeline<Value>]
    /// The destinations whose shared pipelines this container uses (made or joined): it is one
    /// user of each.
    private let sharedDestinations: [String]
    /// The record names this container claimed for remote sinks it does not share.
    private let ownRecordNames: [String]
    /// Where the container's sinks keep their books: its cell's ledger when it persists, its own
    /// otherwise (the ledger of its remote sinks' records too).
    let ledger: any LedgerHost
    /// The shared stored value when the container persists (``init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``).
    let persistence: StoredValue<Value>?
    /// Where its remote sinks' sync records are kept, when it has remote sinks.
    private let recordStore: SyncRecordStore?
    /// Behind ``syncStatus``, made the first time it is read.
    let statusMonitor = OnceInstalledReference<SyncStatusMonitor<Value>>()
    /// What became of each write at the sinks (``write(_:)``, ``receipt(for:)``).
    let receipts: ReceiptBook<Value>

    /// Creates a container holding `defaultValue` whose changes go to `sinks`.
    ///
    /// When a sink is a ``DurableOutbox`` holding changes from an earlier run, they are delivered
    /// first, the container starts from the newest value the outbox logged (not `defaultValue`),
    /// and its ``State/version`` continues after the last version the outbox recorded, so
    /// idempotency keys stay unique across restarts. Without one, versions start at 0
    /// and the changes handed to sinks carry a random ``StateChange/instance`` instead, so their
    /// ``StateChange/idempotencyKey``s never repeat either.
    ///
    /// - Parameters:
    ///   - defaultValue: The initial value.
    ///   - key: A key unique across the application; sinks receive it in every ``StateChange``.
    ///   - sinks: Where changes go, each with its own buffer and delivery task.
    public convenience init(_ defaultValue: Value, key: String, sinks: [any StateSink<Value>]) {
        self.init(defaultValue, key: key, sinks: sinks, persistence: nil, storage: nil)
    }

    /// Creates the container; with `persistence`, it holds and persists the key's shared stored
    /// value, and keeps its remote sinks' sync records in `storage`.
    init(
        _ defaultValue: Value,
        key: String,
        sinks: [any StateSink<Value>],
        persistence: StoredValue<Value>?,
        storage: (any StateStorage)?
    ) {
        // The remote sinks of a persisted key are the cell's: one channel per destination, one
        // record store. Set up one container at a time, so two made at once open one channel.
        let remotes = persistence.flatMap { persistence in
            storage.map { storage in
                sinks.contains { $0 is any RemoteSyncSink<Value> }
                    ? persistence.attachment { CellRemotes<Value>(key: key, storage: storage, cell: persistence) } : nil
            } ?? nil
        }
        remotes?.creation.lock()
        defer { remotes?.creation.unlock() }
        // A destination named twice in one container is shared once; its second sink is its own.
        var named: Set<String> = []
        let destinations = sinks.map { sink -> String? in
            guard remotes != nil, let destination = (sink as? any RemoteSyncSink<Value>)?.destination else {
                return nil
            }
            return named.insert(destination).inserted ? destination : nil
        }
        // A destination the cell already serves for a live container: its pipeline, one more user.
        let joined = destinations.map { destination in destination.flatMap { remotes?.join($0) } }
        var openings: [(log: any LogBackedSink<Value>, opening: OutboxOpening)?] = []
        for (sink, joined) in zip(sinks, joined) {
            guard joined == nil, let log = sink as? any LogBackedSink<Value> else {
                openings.append(nil)
                continue
            }
            openings.append(log.open(key: key).map { (log, $0) })
        }
        let lastVersion = openings.map { $0?.opening.lastVersion ?? 0 }.max() ?? 0
        // Versions continue only behind a log (storage keeps the value, not the version);
        // otherwise keys carry this instance's random part.
        let logSinks = zip(sinks, joined).filter { $0.0 is any LogBackedSink<Value> && $0.1 == nil }.count
        let continuesVersions = logSinks > 0 && openings.compactMap { $0 }.count == logSinks
        let instance = continuesVersions ? nil : Self.makeInstanceID()
        let ledger: any LedgerHost = persistence ?? StandaloneLedger(key: key)
        let pipelines = zip(zip(sinks, openings), joined).map { made, joined in
            joined
                ?? SinkPipeline(
                    sink: made.0, key: key, ledger: ledger, startVersion: lastVersion, log: made.1?.log,
                    firstPending: made.1?.opening.firstPending, outcomes: made.1?.opening.outcomes ?? SinkOutcomes())
        }
        self.pipelines = pipelines
        self.ledger = ledger
        self.persistence = persistence
        self.receipts = ReceiptBook(pipelines: pipelines, persistence: persistence, remotes: remotes)
        var recordNames = Self.recordNames(of: sinks)
        for index in recordNames.indices where joined[index] != nil { recordNames[index] = nil }
        let records: SyncRecordStore?
        let startsRecords: Bool
        if let remotes {
            let claimed = remotes.claimRecords(recordNames)
            (recordNames, records, startsRecords) = claimed
        } else {
            // Without storage, the records of remote sinks behind an outbox are kept beside its
            // log: what it replays at the next launch must go out on the ETag it was made against.
            let outbox = sinks.lazy.compactMap { $0 as? any LogBackedSink<Value> }.first {
                $0 is any RemoteSyncSink<Value>
            }
            let recordStorage =
                storage ?? outbox.map { FileStateStorage(directory: $0.logFileURL.deletingLastPathComponent()) }
            records =
                recordNames.isEmpty
                ? nil
                : SyncRecordStore(
                    key: key, storage: recordStorage, names: recordNames.compactMap { $0 }, cell: ledger)
            startsRecords = true
        }
        self.cellRemotes = remotes
        self.recordStore = records
        self.sharedDestinations = destinations.compactMap { $0 }
        let own = zip(pipelines, destinations).filter { $1 == nil }.map(\.0)
        self.ownPipelines = own
        self.ownRecordNames = zip(recordNames, destinations).compactMap { $1 == nil ? $0 : nil }
        super.init(defaultValue, key: key, joining: persistence?.cell)
        persistence?.add(self)
        let logs = openings.compactMap { $0?.log }
        // The outbox logged every change before its writer returned: a launch starts from the
        // newest. Without storage the log is where the value lives (the default would be sent as an
        // edit); with storage, a kill may have come before the newest value was saved, while the
        // outbox still delivers it.
        let restored = logs.compactMap { $0.newestChange }.max { $0.version < $1.version }
        if let restored, let persistence {
            _ = persistence.adoptAtLaunch(restored.newValue, version: lastVersion, by: self)
        }
        // The key's one record store is marked by the container that made it, for all.
        let notedRecords = startsRecords ? records : nil
        lock.withLock {
            storedVersion = max(storedVersion, lastVersion)
            receipts.start(firstVersion: storedVersion &+ 1, loggedThrough: lastVersion)
            if let restored, persistence == nil { storedValue = restored.newValue }
            notedRecords?.start(atVersion: storedVersion)
            if !logs.isEmpty || notedRecords != nil {
                // The key's other synced containers, sharing its cell, may log their own outboxes.
                // The store holds the cell: held weakly here, as the cell holds the observer.
                let earlier = writeObserver
                // Decided here: in the observer, asking the array of logs costs its generic metadata.
                let hasLogs = !logs.isEmpty
                writeObserver = { [weak notedRecords] change in
                    earlier?(change)
                    notedRecords?.noteChange(change.version, origin: change.origin)
                    // Without a log, nothing here needs the change marked (a copy of it, per write).
                    guard hasLogs else { return }
                    let change = instance == nil ? change : change.made(by: instance)
                    for log in logs { log.record(change) }
                }
            }
        }
        // This container feeds its own pipelines; the cell feeds those it shares. A remote sink is
        // not handed the values it (or another remote sink) took from a remote copy: there is
        // nothing to send, and nothing to count as sent.
        let takingRemote = own.filter { $0.log != nil || !($0.sink is any RemoteSyncSink<Value>) }
        let notTakingRemote = own.filter { $0.log == nil && $0.sink is any RemoteSyncSink<Value> }
        sinkSubscription = addSubscriber(
            queue: nil,
            handler: .change { change in
                let change = instance == nil ? change : change.made(by: instance)
                guard change.origin == .remote else {
                    for pipeline in own { pipeline.enqueue(change) }
                    return
                }
                for pipeline in takingRemote { pipeline.enqueue(change) }
                // Nothing for them to deliver: the receipt of the change does not wait for them.
                for pipeline in notTakingRemote { pipeline.skip(change.version) }
            },
            sendsCurrentValue: false
        )
        if let records {
            connectRemoteSinks(
                records: records, names: recordNames, instance: instance, sharedBy: remotes,
                destinations: zip(destinations, joined).map { $1 == nil ? $0 : nil })
        }
        for (pipeline, joined) in zip(pipelines, joined) where joined == nil { pipeline.start() }
        showDetails(persistence: persistence, storage: storage, pipelines: pipelines)
    }

    /// Creates a container whose sinks are listed in a block.
    ///
    /// ```swift
    /// let score = SyncedState(0, key: "score") {
    ///     ClosureSink { changes in print(changes.map(\.newValue)) }
    ///     if verbose { LoggingSink() }
    /// }
    /// ```
    public convenience init(
        _ defaultValue: Value,
        key: String,
        @SinkBuilder<Value> sinks: () -> [any StateSink<Value>]
    ) {
        self.init(defaultValue, key: key, sinks: sinks())
    }

    /// Creates a container as ``init(_:key:sinks:)-(_,_,[StateSink<Value>])`` does, whose writes must pass `validator`
    /// (see ``MonitoredState/init(_:key:validator:)``); refused writes reach no sink.
    ///
    /// ```swift
    /// struct NotPositive: Error {}
    /// let quantity = SyncedState(1, key: "quantity", sinks: [LoggingSink()]) { _, proposed in
    ///     guard proposed > 0 else { throw NotPositive() }
    /// }
    /// ```
    public convenience init(
        _ defaultValue: Value,
        key: String,
        sinks: [any StateSink<Value>],
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        self.init(defaultValue, key: key, sinks: sinks)
        installValidator(validator)
    }

    override func isStateKitType(_ type: AnyClass) -> Bool {
        type == SyncedState<Value>.self || super.isStateKitType(type)
    }

    deinit {
        sinkSubscription?.cancel()
        for pipeline in ownPipelines { pipeline.close() }
        // A shared pipeline is closed by its last user.
        cellRemotes?.releaseNames(ownRecordNames)
        for destination in sharedDestinations { cellRemotes?.leave(destination) }
    }

    /// Returns once every sink has received every change made before the call, or given it up
    /// (or dropped it, or paused) as its policy says, or when the calling task is cancelled; a
    /// persisted container (``init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``) first saves its newest value.
    ///
    /// Use it in tests instead of sleeping, and before the app suspends. A sink paused by
    /// ``SinkPolicy/Failure/pauseAndKeep(retryEvery:)``, or asked by its destination to wait longer
    /// than its ``RetryPolicy/maximumDelay``, does not hold this flush: it returns with that
    /// sink's changes still pending (see ``syncStatus``). ``flush(timeout:)`` waits for a paused
    /// sink instead, for a bounded time, and says whether everything was delivered.
    public func flush() async {
        await flush(waitsThroughPauses: false)
    }

    /// Waits, for at most `timeout`, until a remote sink's load at start finished and every sink
    /// has received every change made before the call or given it up as its policy says, and says
    /// whether the container is synced.
    ///
    /// Unlike ``flush()``, it does not stop at a paused sink: it tries a sink paused by
    /// ``SinkPolicy/Failure/pauseAndKeep(retryEvery:)`` (or backing off) again at once, and a load
    /// at start that failed, then waits; it returns `true` as soon as every sink delivered, or
    /// `false` at the deadline with the changes still pending.
    ///
    /// `true` means a ``syncStatus`` read right after (with no write in between) is
    /// ``SyncStatus/isSynced``: so it is `false`, once everything settled, when a sink gave changes
    /// up or is failing (``SyncStatus/lastError``), or when a remote destination has not answered
    /// yet (``SyncStatus/hasContactedEveryDestination``; a failed load at start, or a sink that
    /// does not load at start and has sent nothing), or when storage does not hold the newest value
    /// (``saveError``).
    ///
    /// ```swift
    /// if await cart.flush(timeout: .seconds(2)) == false {
    ///     print("some changes are still on their way:", cart.syncStatus.value.pending)
    /// }
    /// ```
    ///
    /// - Returns: `true` if everything settled in time and the status says synced; `false` if the
    ///   deadline passed first (or the calling task was cancelled), or the status says otherwise.
    public func flush(timeout: Duration) async -> Bool {
        // Asked, a sink does not wait out its pause or backoff, nor a failed load its next try.
        for pipeline in pipelines { pipeline.retryNow() }
        let finished = await withDeadline(timeout, else: false) {
            await self.flush(waitsThroughPauses: true)
            return !Task.isCancelled
        }
        // What the status says now, read as the monitor reads it (its last refresh, made by the
        // flush, read the same statistics or older ones).
        return finished && currentSyncStatus.isSynced
    }

    private func flush(waitsThroughPauses: Bool) async {
        // A remote sink's load at start first: what it takes in or merges is a change of its own,
        // which the rest of the flush then waits for.
        for pipeline in pipelines {
            if Task.isCancelled { return }
            await pipeline.waitForLoads(waitsThroughFailures: waitsThroughPauses)
        }
        await deliveredBarrier()
        // Across processes, changes that wait for this process to take over sending go first.
        await cellRemotes?.takeoverFinished()
        await persistence?.flushOffThePool()
        for pipeline in pipelines {
            if Task.isCancelled { return }
            await pipeline.flush(waitsThroughPause: waitsThroughPauses)
        }
        // What the sends agreed on is stored on the ledger's queue, after the value.
        await recordStore?.flush()
        // A pipeline's last refresh may still be on its way when its flush returns: once flushed,
        // the status says so.
        statusMonitor.current?.refresh()
    }

    /// What each sink has done so far, in the order the sinks were given; each entry names its
    /// sink (``SinkStatistics/sinkName``).
    public var statistics: [SinkStatistics] {
        pipelines.map(\.statistics)
    }

    /// What the sink called `name` has done so far (the first, if several share it), or `nil`.
    public func statistics(for name: String) -> SinkStatistics? {
        pipelines.first { $0.sink.name == name }?.statistics
    }

    /// 16 random hexadecimal digits (64 bits): the ``StateChange/instance`` of a container whose
    /// versions do not continue across launches.
    static func makeInstanceID() -> String {
        let digits = String(UInt64.random(in: .min ... .max), radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// Waits until every change made before the call has been handed to the sinks' buffers: a
    /// change may still be queued behind another thread's delivery when its writer returns.
    private func deliveredBarrier() async {
        let signal = BarrierSignal()
        var subscription: Subscription?
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                signal.arm(continuation)
                subscription = addSubscriber(
                    queue: nil,
                    handler: .value { _ in signal.fire() },
                    sendsCurrentValue: true
                )
            }
        } onCancel: {
            signal.fire()
        }
        subscription?.cancel()
    }
}

extension SyncedState: @unchecked Sendable {}

/// Resumes a continuation once, however often it fires, whether it fires before or after it is armed.
private final class BarrierSignal: @unchecked Sendable {
    private let lock = Lock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var hasFired = false

    func arm(_ continuation: CheckedContinuation<Void, Never>) {
        let firedAlready = lock.withLock {
            if hasFired { return true }
            self.continuation = continuation
            return false
        }
        if firedAlready { continuation.resume() }
    }

    func fire() {
        let continuation = lock.withLock {
            hasFired = true
            let continuation = self.continuation
            self.continuation = nil
            return continuation
        }
        continuation?.resume()
    }
}
