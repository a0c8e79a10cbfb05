import Foundation

/// What one sink of a cell has settled, and how its destination stands: the sink's part of the
/// cell's ledger (``CellLedger/books(_:_:)``).
///
/// The sink's pipeline decides what to send and when (``SinkPipelineStateMachine``: its buffer,
/// the batch in flight, the flushes waiting); what came of it is kept here, so that a container's
/// ``SyncedState/syncStatus``, its ``SyncedState/statistics`` and its receipts read one ledger.
/// The pipeline reports each event under its own lock, nesting the ledger's, so the books follow
/// its decisions in order.
///
/// | event                         | books                                                    |
/// | ----------------------------- | -------------------------------------------------------- |
/// | ``delivered(_:count:at:)``    | sent; no error, not paused, contacted, no retry due       |
/// | ``superseded(_:count:because:at:)`` | coalesced, discarded for the destination's value; as a delivery otherwise |
/// | ``failed(_:at:)``             | the send's error, the newest failure                      |
/// | ``retryDue(at:)``             | one more retry, at that moment                            |
/// | ``paused()``                  | paused (returns whether it was not yet)                   |
/// | ``gaveUp(_:count:as:)``       | failed, with their fate; no retry due                     |
/// | ``overflowed(_:)``            | dropped from a full buffer, or coalesced in it            |
/// | ``coalesced(count:)``, ``coalesced(_:)`` | replaced in a full buffer by a newer change    |
/// | ``awaitFirstContact()``       | the destination has not answered yet                      |
/// | ``destinationAnswered()``     | contacted; a load's error cleared                         |
/// | ``loadFailed(_:at:)``         | the load's error, unless a send's stands                  |
/// | ``stopped(undeliveredFrom:)`` | no retry due; what a pipeline without a log never delivered |
struct SinkBooks {
    /// What a full buffer without a log did with a change (``SinkPipelineStateMachine/enqueue(_:)``).
    enum Overflow {
        /// It replaced `count` buffered changes.
        case coalesced(count: Int)
        /// The change of `version` was dropped for `reason` (`nil`: one whose version is unknown).
        case dropped(version: UInt64?, reason: String)
    }

    /// The counters, errors and moments of ``SinkStatistics`` (its ``SinkStatistics/pending`` is
    /// the pipeline's: what waits in its buffer and log).
    private var counters = SinkStatistics()
    /// When the sink last failed, to tell which of a container's sinks failed most recently.
    private(set) var lastFailedAt: ContinuousClock.Instant?
    /// Whether the error came from a failed load, not from a send: the next load that succeeds
    /// clears it, as a send that succeeds clears any.
    private var isLoadError = false
    /// The changes settled without being delivered, for receipts.
    private(set) var outcomes: SinkOutcomes
    /// For a pipeline without a log, stopped: the first version it never delivered.
    private(set) var undeliveredFrom: UInt64?

    /// - Parameter outcomes: What an earlier launch's log settled undelivered.
    init(sinkName: String, outcomes: SinkOutcomes = SinkOutcomes()) {
        counters.sinkName = sinkName
        self.outcomes = outcomes
    }

    /// The sink's statistics, with `pending` changes waiting in its pipeline.
    func statistics(pending: Int) -> SinkStatistics {
        var statistics = counters
        statistics.pending = pending
        return statistics
    }

    var isPaused: Bool { counters.isPaused }

    /// The sink's one-line error, if it has one.
    var lastError: String? { counters.lastError }

    // MARK: Sends

    /// `count` changes, `versions`, were delivered at `now`; returns whether the sink was paused
    /// until now.
    mutating func delivered(_ versions: ClosedRange<UInt64>?, count: Int, at now: Date) -> Bool {
        if let versions { outcomes.delivered(versions) }
        counters.sent += count
        return answered(at: now)
    }

    /// The sink took `count` changes, `versions`, and delivered nothing: the destination's value
    /// replaced them (``SupersededByRemoteValue``), so they are coalesced and discarded for
    /// `reason`. Returns whether the sink was paused until now.
    mutating func superseded(
        _ versions: ClosedRange<UInt64>?, count: Int, because reason: String, at now: Date
    ) -> Bool {
        counters.coalesced += count
        if let versions { outcomes.note(versions, .discarded(reason: reason)) }
        return answered(at: now)
    }

    private mutating func answered(at now: Date) -> Bool {
        let wasPaused = counters.isPaused
        counters.isPaused = false
        counters.lastError = nil
        counters.isAwaitingFirstContact = false
        isLoadError = false
        counters.lastDeliveredAt = now
        counters.retryAt = nil
        lastFailedAt = nil
        return wasPaused
    }

    /// A send failed with `message` at `now`.
    mutating func failed(_ message: String, at now: ContinuousClock.Instant) {
        counters.lastError = message
        isLoadError = false
        lastFailedAt = now
    }

    /// The failed batch is tried again at `date`.
    mutating func retryDue(at date: Date) {
        counters.retried += 1
        counters.retryAt = date
    }

    /// The sink is paused; returns whether it was not already.
    mutating func paused() -> Bool {
        defer { counters.isPaused = true }
        return !counters.isPaused
    }

    /// `count` changes, `versions`, were given up or refused: they met `fate`.
    mutating func gaveUp(_ versions: ClosedRange<UInt64>?, count: Int, as fate: SinkOutcomes.Fate) {
        if let versions { outcomes.note(versions, fate) }
        counters.failed += count
        counters.retryAt = nil
    }

    /// A full buffer dropped or coalesced a change: on a writer's path.
    @inline(__always)
    mutating func overflowed(_ overflow: Overflow) {
        switch overflow {
        case .coalesced(let count):
            counters.coalesced += count
        case .dropped(let version, let reason):
            counters.dropped += 1
            if let version { outcomes.note(version...version, .discarded(reason: reason)) }
        }
    }

    /// A full buffer replaced `count` changes by a newer one.
    mutating func coalesced(count: Int) {
        counters.coalesced += count
    }

    /// `versions` were coalesced into the change after them, which carries their value.
    mutating func coalesced(_ versions: ClosedRange<UInt64>) {
        outcomes.note(versions, .coalesced)
    }

    // MARK: The destination

    /// The sink's destination has not answered yet (a remote sink, connected to its container).
    mutating func awaitFirstContact() {
        counters.isAwaitingFirstContact = true
    }

    /// The destination answered outside a send (a load or pull that succeeded): a first contact,
    /// and the end of an error an earlier load left.
    mutating func destinationAnswered() {
        counters.isAwaitingFirstContact = false
        guard isLoadError else { return }
        counters.lastError = nil
        lastFailedAt = nil
        isLoadError = false
    }

    /// A load failed with `message` at `now`: the sink's error, unless a send's failure is (the
    /// send is the one a retry is about).
    mutating func loadFailed(_ message: String, at now: ContinuousClock.Instant) {
        guard counters.lastError == nil || isLoadError else { return }
        counters.lastError = message
        lastFailedAt = now
        isLoadError = true
    }

    // MARK: Stopping

    /// The pipeline stopped; one without a log never delivered the versions from
    /// `undeliveredFrom` on.
    mutating func stopped(undeliveredFrom version: UInt64?) {
        counters.retryAt = nil
        if let version { undeliveredFrom = version }
    }
}
