/// What holds a cell's ``CellLedger`` and runs its I/O: ``StoredValue`` for a persisted cell,
/// ``StandaloneLedger`` for a synced container without storage.
///
/// Events go through ``withLedger(_:)``, under the holder's lock (never I/O); what an event says
/// to store is stored by ``storeLedgerSoon()`` on the cell's own queue, and awaited by
/// ``flushLedger()``.
protocol LedgerHost: AnyObject, Sendable {
    /// Runs `body` on the ledger, under the holder's lock.
    func withLedger<Result>(_ body: (inout CellLedger) -> Result) -> Result
    /// ``CellLedger/localChange(_:)`` under the holder's lock: the one event on a writer's path,
    /// so without a generic closure.
    func noteLocalChange(_ version: UInt64) -> Bool
    /// ``CellLedger/overflowed(_:_:)`` under the holder's lock: the sinks' one event on a writer's
    /// path (a change to a full buffer), so without a generic closure either.
    func noteOverflow(_ slot: Int, _ overflow: SinkBooks.Overflow)
    /// Stores what the ledger says to store, soon, on the cell's queue.
    func storeLedgerSoon()
    /// Returns once everything the ledger said to store before the call is stored (or failed).
    func flushLedger() async
    /// Keeps the records of the cell's remote destinations in `store` from now on.
    func keepRecords(in store: SyncRecordStore)
}
