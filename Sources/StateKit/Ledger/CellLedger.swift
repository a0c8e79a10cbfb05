import Foundation

/// What one key's cell has saved and what it has sent, and what each event makes the cell do.
///
/// A value type, as ``SinkPipelineStateMachine`` is: its holder (``StoredValue`` for a persisted
/// cell, ``StandaloneLedger`` for a synced container without storage) calls an event under its
/// lock, the event updates the ledger and returns what to do, and the holder does that I/O after
/// unlocking, on the cell's own queue: never under a container's lock, never on the writer's
/// thread, never on a thread of the cooperative pool (``SyncedState/flush()`` awaits the queue).
///
/// It keeps, for the cell:
/// - **storage**: the newest version storage holds (``savedVersion``), the version that came
///   from storage (not saved again), the fingerprint of what storage holds (so the cell's own
///   writes, and the bytes of a write that failed, are never taken for outside changes; a key
///   shared across processes compares its journal's entries with it too, and keeps the key's
///   generation and file stamp beside it, so it reads the file only once either moved), and a
///   failed save with its error, kept until a save
///   succeeds (an encode failure is not retried: encoding again would fail again), or saving
///   stopped for good (``SavingStopped``). ``saveError`` is the one copy of the save error: a
///   container's `saveError` and a synced container's status read it here; and why what storage
///   holds could not be used (``loadError``, a container's `loadError`);
/// - **each remote destination**: its ``SyncRecord`` (base, validator, unsent changes) as the
///   ledger knows it now, the version its last agreement was made at, and the record that storage
///   holds for it;
/// - **each sink of its containers**: what the sink sent, failed, dropped and coalesced, its
///   error, pause and retry, and what it settled undelivered (``SinkBooks``). A synced
///   container's status and receipts are read here, with the save error, in one reading
///   (``syncStatus(of:)``).
///
/// States of a destination's record, as storage holds it:
///
/// | state    | stored record                  | means at the next launch                           |
/// | -------- | ------------------------------ | -------------------------------------------------- |
/// | agreed   | base, validator, nothing unsent | storage holds the base (or a value with an unsent mark); load conditionally |
/// | unsent   | base, validator, unsent        | send the stored value conditionally on the validator; a conflict goes to the policy with the base |
/// | unknown  | none, or unreadable            | everything stored is taken as unsent               |
///
/// Transitions:
///
/// | event                               | ledger                                | action                                   |
/// | ----------------------------------- | ------------------------------------- | ---------------------------------------- |
/// | ``localChange(_:)``                 | every record unsent                   | a cell that saves its value: none (the value's save stores the mark first); otherwise store the records |
/// | ``loadStarts()``                    | storage is read (once)                | none                                     |
/// | ``outsideValueApplied(_:)``         | that version needs no save            | none                                     |
/// | ``storageHolds(fingerprint:)``      | storage holds those bytes (read, or written) | none                              |
/// | ``writeFailed(fingerprint:)``       | storage may hold those bytes          | none                                     |
/// | ``storageSeen(at:)``                | the shared key's generation and stamp known | read the file, if either moved     |
/// | ``storageRead(error:)``             | why what storage holds cannot be used, or that it can | tell the load error's observers, if it changed |
/// | ``journaled(_:sequence:)``          | a shared key's version stands for that journal entry | none                          |
/// | ``handedToSender(_:)``              | the change went to another process's sender | none (its receipt reads what that sender publishes) |
/// | ``saveWanted()``                    | a save is scheduled                   | schedule one, unless one is (a burst of changes costs one save) or the cell saves nothing |
/// | ``scheduledSaveStarts()``           | no save is scheduled                  | none                                     |
/// | ``syncWanted()``                    | forcing a shared key's file to disk is scheduled | schedule it, unless it is (a burst of writes costs one `fsync`) |
/// | ``scheduledSyncStarts()``           | no forcing is scheduled               | none                                     |
/// | ``beginSave(version:)``             | —                                     | ``SavePlan``: nothing to do, the standing encode error, or write (the records first, when a mark must precede the value) |
/// | ``encodeFailed(version:error:)``    | failure kept, not retried             | tell the error's observers               |
/// | ``saveSucceeded(version:)``         | saved version; failure cleared        | store the records an agreement now covers; tell the error's observers if it cleared one |
/// | ``saveFailed(_:)``                  | failure kept; one more failed attempt | tell the error's observers; report each distinct error once until a save succeeds; retry later |
/// | ``stopSaving(_:)``                  | nothing is saved again                | tell the error's observers               |
/// | ``agreed(_:base:validator:atVersion:)`` | the record agreed, unsent if a local change came after | store the records (after the value, for a cell that saves it) |
/// | ``based(_:base:validator:from:)``   | the destination's value and validator, local changes still unsent | store the records once the local value that includes the base is saved |
/// | ``recordsStored(_:)``               | storage holds those records           | none                                     |
/// | ``discarded(_:through:)``           | the destination's value replaced local changes up to it (memory only) | none              |
/// | ``tookOverSending(_:)``             | the previous sender's records, unsent | none                                     |
/// | ``sending(_:data:)``                | the record notes the value being sent | store the records, before the send        |
/// | ``loggedUndelivered(_:throughVersion:)`` | the record unsent (its outbox logged what it did not deliver) | store the records |
///
/// The rule that keeps a kill -9 at any moment safe: storage never holds a record that says
/// "agreed" on a value storage does not hold. ``recordsToStore()`` gives a destination's agreed
/// record only once its agreement's version is saved; until then it gives the record storage held
/// before, marked unsent, so the next launch sends the stored value conditionally on the old
/// validator and a real conflict goes to the policy with the true base. A local change's unsent
/// mark is stored before the value it marks (``SavePlan/write(recordsFirst:)``). Likewise a base
/// taken with local changes unsent (``based(_:base:validator:from:)``, a conflict the policy
/// resolved for the local side, or a merge) is stored only once storage holds a value that
/// includes it: before, a kill would leave a record whose base the stored value never saw, and the
/// next launch would send that value over the server's changes.
struct CellLedger {
    /// What a save of the newest value must do.
    enum SavePlan {
        /// Storage holds the newest value: no save error, whichever save put it there.
        case upToDate
        /// The newest value cannot be encoded; its error stands.
        case unencodable(any Error)
        /// Write the value, after storing these records, when they must precede it.
        case write(recordsFirst: [String: SyncRecord]?)
    }

    /// A save that failed, kept until a save succeeds.
    struct SaveFailure {
        var error: any Error
        /// The version that could not be encoded, when encoding failed: saving it is not tried
        /// again. `nil` for a failed write, which is retried.
        var unencodableVersion: UInt64?
    }

    /// Whether the cell saves its value (a persisted container); `false` for a container whose
    /// value lives in memory or in its outbox's log, where every version counts as saved.
    let savesValue: Bool

    /// The newest version storage holds (or that needs no save).
    private(set) var savedVersion: UInt64 = 0
    /// The version of the change that wrote a value read from storage into the cell.
    private var outsideVersion: UInt64?
    /// The failed save, until a save succeeds.
    private(set) var failure: SaveFailure?
    /// Why what storage holds could not be used, as the last read found: unreadable, or bytes
    /// that do not decode (at launch, or written outside later); `nil` once a value is read.
    private(set) var loadError: (any Error)?
    /// Whether the cell saves nothing any more: its last container is gone, or its stored data
    /// could be neither read nor moved aside (then with ``SavingStopped``, its save error).
    private var isStopped = false
    private var stopReason: SavingStopped?
    /// Whether a save (of the value and records, or of the records alone for a cell that does not
    /// save its value) is scheduled and has not started.
    private var isSaveScheduled = false
    /// Whether forcing a shared key's file to disk is scheduled and has not started (its writes,
    /// under the key's lock, leave that for later).
    private var isSyncScheduled = false
    /// Failed attempts in a row, which set the retry delay.
    private(set) var failedSaves = 0
    /// The failures reported since the last save that succeeded, each by its short message (an
    /// `NSError`'s description lists its user info in no fixed order), so that a failure that
    /// persists, or two that alternate, are reported once each.
    private var reportedFailures: Set<String> = []
    /// Whether the cell read its value from storage (once, when its first container was made):
    /// until then it knows nothing of what storage holds.
    private(set) var isLoaded = false
    /// Counts the writes that may have reached storage, so that a value read from storage is not
    /// written into the cell after a save replaced it.
    private(set) var storeGeneration: UInt64 = 0
    /// The fingerprint of what storage holds, as the cell last read or wrote it.
    private(set) var storedFingerprint: Data?
    /// What the last failed write tried to store: storage may hold it, and it is not an outside
    /// change.
    private var attemptedFingerprint: Data?
    /// For a key shared across processes, its generation and its file's stamp when the cell last
    /// read or wrote it (``SharedKeyLock``, ``FileStamp``); `nil` before the first write, and after
    /// a commit that failed (the file may hold either value).
    private var storedStamp: (generation: UInt64, stamp: FileStamp)?

    /// Each destination's record as the ledger knows it now, by record name.
    private(set) var records: [String: SyncRecord] = [:]
    /// The version each record's last agreement was made at.
    private var agreedVersions: [String: UInt64] = [:]
    /// For each destination, the newest version whose local changes its conflict policy discarded
    /// for the destination's value (``SyncConflictPolicy/serverWins``): a change up to it was
    /// never delivered there. Memory only: a relaunch's changes are sent again.
    private var discardedVersions: [String: UInt64] = [:]
    /// For a record whose base was taken with local changes unsent, the local version that
    /// includes that base (`nil`: none yet); the base is stored once that version is saved.
    private var basedVersions: [String: UInt64?] = [:]
    /// The records storage holds.
    private var storedRecords: [String: SyncRecord] = [:]
    /// The version of the newest local change, or of the unsent value found at launch.
    private var newestLocalVersion: UInt64 = 0
    /// Whether every record already says unsent: a local change then changes nothing.
    private var isAllUnsent = false
    /// Whether the stored records could not be read: every record starts unsent.
    private var isDamaged = false
    /// Whether the records were read from storage: a record store made again for the cell (its
    /// earlier one was released with the last channel) finds the ledger as it was.
    private var hasLoadedRecords = false
    /// The books of each sink of the cell's containers while its pipeline lives, by the slot
    /// ``openBooks(_:)`` gave it (an index, not a hash: a write to a full buffer notes its
    /// overflow here, in place). A slot whose pipeline is gone holds empty books until it is
    /// used again.
    private var sinkBooks: [SinkBooks] = []
    /// Slots of pipelines that are gone, to use again.
    private var freeBookSlots: [Int] = []
    /// For a key shared across processes, the journal entry each recent version of the cell
    /// stands for (``journaled(_:sequence:)``), oldest first: what ties this process's versions to
    /// another's, whose receipts the key's sender answers (``SharedOutcomes``).
    private var journalSequences: [(version: UInt64, sequence: UInt64)] = []
    /// The newest version this process handed to another process's sender instead of its own
    /// pipelines (``handedToSender(_:)``).
    private var handedToSenderThrough: UInt64 = 0

    init(savesValue: Bool) {
        self.savesValue = savesValue
    }

    // MARK: Destinations

    /// The records found in storage at launch (`nil` when they could not be read: every record
    /// then starts unsent); read once, the first time.
    mutating func loaded(_ found: [String: SyncRecord]?) {
        guard !hasLoadedRecords else { return }
        hasLoadedRecords = true
        isDamaged = found == nil
        records = found ?? [:]
        storedRecords = records
        isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        checkInvariants()
    }

    /// Adds the records `names` it does not hold yet (a destination new to the cell).
    mutating func include(_ names: [String]) {
        for name in names where records[name] == nil { records[name] = SyncRecord(hasUnsentChanges: isDamaged) }
        isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        checkInvariants()
    }

    /// The cell starts at `version`: an unsent value it holds is the local change at it.
    mutating func start(atVersion version: UInt64) {
        if records.values.contains(where: \.hasUnsentChanges) { newestLocalVersion = version }
    }

    /// A change that is not remote, made at `version`, under the container's lock before its
    /// writer returns: every record is unsent. Returns whether the records must be stored now (a
    /// cell that does not save its value; one that does stores the mark before the value).
    mutating func localChange(_ version: UInt64) -> Bool {
        newestLocalVersion = version
        guard !isAllUnsent else { return false }
        for name in records.keys { records[name]?.hasUnsentChanges = true }
        isAllUnsent = true
        return !savesValue
    }

    /// The outbox of the destination `name` logged changes up to `version` that it did not
    /// deliver: they are unsent, whatever the stored record says (a kill -9 after the log's append
    /// reached the disk and before the record's mark did). Returns whether the records must be
    /// stored.
    mutating func loggedUndelivered(_ name: String, throughVersion version: UInt64) -> Bool {
        newestLocalVersion = max(newestLocalVersion, version)
        guard records[name]?.hasUnsentChanges == false else { return false }
        records[name]?.hasUnsentChanges = true
        isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        checkInvariants()
        return true
    }

    /// The destination `name` holds `base` under `validator`, as of the cell's `version`: local
    /// changes after it stay unsent. Returns whether the records must be stored.
    mutating func agreed(_ name: String, base: Data?, validator: String?, atVersion version: UInt64) -> Bool {
        let record = SyncRecord(base: base, validator: validator, hasUnsentChanges: newestLocalVersion > version)
        agreedVersions[name] = max(agreedVersions[name] ?? 0, version)
        basedVersions[name] = nil
        guard records[name] != record else { return false }
        records[name] = record
        isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        checkInvariants()
        return true
    }

    /// The version the destination `name` last agreed on (0: none this launch).
    func agreedVersion(of name: String) -> UInt64 {
        agreedVersions[name] ?? 0
    }

    /// The destination `name`'s value replaced the local changes up to `version`, which were
    /// never delivered there.
    mutating func discarded(_ name: String, through version: UInt64) {
        discardedVersions[name] = max(discardedVersions[name] ?? 0, version)
    }

    /// Whether the destination `name`'s value replaced the local change of `version`
    /// (``discarded(_:through:)``).
    func isDiscarded(_ name: String, version: UInt64) -> Bool {
        discardedVersions[name].map { version <= $0 } ?? false
    }

    /// The destination `name` holds `base` under `validator` while local changes stay unsent: read
    /// from it (its validator moved, or its value was cut short), or taken as the base of a local
    /// value (a conflict resolved for the local side, a merge) made at `version`, which includes
    /// it; `nil` when that value is not made yet. Returns whether the records must be stored.
    mutating func based(_ name: String, base: Data?, validator: String?, from version: UInt64?) -> Bool {
        guard var record = records[name], record.base != base || record.validator != validator else { return false }
        record.base = base
        record.validator = validator
        records[name] = record
        basedVersions[name] = version
        return true
    }

    /// This process takes over sending a key shared across processes: `found`, the records the
    /// previous sender stored (`nil` when unreadable), hold the newest agreements. Every record is
    /// unsent, as the stored value may hold changes no sender has sent.
    mutating func tookOverSending(_ found: [String: SyncRecord]?) {
        for (name, record) in found ?? [:] where records[name] != nil {
            records[name] = record
            agreedVersions[name] = nil
        }
        for name in records.keys { records[name]?.hasUnsentChanges = true }
        basedVersions = [:]
        storedRecords = found ?? [:]
        isAllUnsent = true
        checkInvariants()
    }

    /// The destination `name` is about to be sent `data`: the record notes it until the answer's
    /// agreement replaces it. Returns whether the records must be stored.
    mutating func sending(_ name: String, data: Data) -> Bool {
        guard records[name] != nil, records[name]?.sending != data else { return false }
        records[name]?.sending = data
        return true
    }

    /// The records to store now, safe against a kill right after (see the type's rule), or `nil`
    /// when storage holds them already.
    func recordsToStore() -> [String: SyncRecord]? {
        var safe = records
        for (name, record) in records where !record.hasUnsentChanges && !isSaved(agreedVersions[name] ?? 0) {
            var previous = storedRecords[name] ?? SyncRecord()
            previous.hasUnsentChanges = true
            previous.sending = record.sending
            safe[name] = previous
        }
        for (name, version) in basedVersions where records[name]?.hasUnsentChanges == true {
            guard version.map({ !isSaved($0) }) ?? true, var kept = safe[name] else { continue }
            let previous = storedRecords[name] ?? SyncRecord()
            kept.base = previous.base
            kept.validator = previous.validator
            safe[name] = kept
        }
        return safe == storedRecords ? nil : safe
    }

    /// Storage now holds `stored`.
    mutating func recordsStored(_ stored: [String: SyncRecord]) {
        storedRecords = stored
        checkInvariants()
    }

    // MARK: Storage

    /// The cell's one load from storage starts (a second container of the key finds it done).
    mutating func loadStarts() {
        isLoaded = true
    }

    /// The change at `version` wrote a value read from storage: it is there already.
    mutating func outsideValueApplied(_ version: UInt64?) {
        outsideVersion = version
    }

    /// Storage holds the bytes of `fingerprint` (`nil`: nothing): the cell read them, or wrote them.
    mutating func storageHolds(fingerprint: Data?) {
        storedFingerprint = fingerprint
        attemptedFingerprint = nil
    }

    /// A write of the bytes of `fingerprint` failed: storage may hold them all the same.
    mutating func writeFailed(fingerprint: Data?) {
        attemptedFingerprint = fingerprint
    }

    /// The shared key's file is at `stamp` (`nil`: unknown, read it at the next write). Returns
    /// whether that moved since the cell last read or wrote it: the file must be read.
    @discardableResult
    mutating func storageSeen(at stamp: (generation: UInt64, stamp: FileStamp)?) -> Bool {
        defer { storedStamp = stamp }
        guard let stamp, let storedStamp else { return true }
        return stamp.generation != storedStamp.generation || stamp.stamp != storedStamp.stamp
    }

    /// Whether bytes read from storage, of `fingerprint`, are a change made outside the cell:
    /// neither what it last read or wrote, nor what a failed write of its own tried to store.
    func isOutsideChange(_ fingerprint: Data?) -> Bool {
        fingerprint != storedFingerprint && (fingerprint == nil || fingerprint != attemptedFingerprint)
    }

    /// Whether storage holds the cell's value at `version`: saved, or read from there.
    func storageHolds(version: UInt64) -> Bool {
        version <= savedVersion || version == outsideVersion
    }

    /// A change wants saving. Returns whether to schedule a save: none is scheduled yet, and the
    /// cell saves.
    mutating func saveWanted() -> Bool {
        guard !isStopped, !isSaveScheduled else { return false }
        isSaveScheduled = true
        return true
    }

    /// The scheduled save starts: a change from now on schedules another.
    mutating func scheduledSaveStarts() {
        isSaveScheduled = false
    }

    /// A shared key's file was written without being forced to disk. Returns whether to schedule
    /// forcing it: none is scheduled yet.
    mutating func syncWanted() -> Bool {
        defer { isSyncScheduled = true }
        return !isSyncScheduled
    }

    /// The scheduled forcing of the file starts: a write from now on schedules another.
    mutating func scheduledSyncStarts() {
        isSyncScheduled = false
    }

    /// A save of the newest value, `version`, is about to run.
    mutating func beginSave(version: UInt64) -> SavePlan {
        if version == outsideVersion { savedVersion = max(savedVersion, version) }
        if isSaved(version) { return .upToDate }
        if let failure, failure.unencodableVersion == version { return .unencodable(failure.error) }
        let first = recordsToStore()
        let isMarkNeeded = first?.contains { name, record in
            record.hasUnsentChanges && storedRecords[name]?.hasUnsentChanges != true
        }
        return .write(recordsFirst: isMarkNeeded == true ? first : nil)
    }

    /// A write to storage is about to start: a value read from storage before it is stale.
    mutating func writeStarted() {
        storeGeneration &+= 1
    }

    /// `version` could not be encoded: its error stands until a later version is saved.
    mutating func encodeFailed(version: UInt64, error: any Error) {
        failure = SaveFailure(error: error, unencodableVersion: version)
        checkInvariants()
    }

    /// Storage holds `version` now. Returns whether that cleared a save error.
    @discardableResult
    mutating func saveSucceeded(version: UInt64) -> Bool {
        savedVersion = max(savedVersion, version)
        failedSaves = 0
        reportedFailures = []
        let hadFailure = failure != nil
        failure = nil
        checkInvariants()
        return hadFailure
    }

    /// The cell saves nothing from now on: its last container is gone (`reason` is `nil`), or its
    /// stored data could be neither read nor moved aside, and saving would overwrite it (`reason`
    /// is its save error from now on).
    mutating func stopSaving(_ reason: SavingStopped?) {
        isStopped = true
        stopReason = reason ?? stopReason
    }

    /// Whether the cell saves its changes: `false` once ``stopSaving(_:)`` was called.
    var isSaving: Bool {
        !isStopped
    }

    /// A write failed (the value's or the records'); returns whether to report it (a failure that
    /// persists is reported once until a save succeeds, not once per retry).
    mutating func saveFailed(_ error: any Error) -> Bool {
        failure = SaveFailure(error: error)
        failedSaves += 1
        return reportedFailures.insert(shortErrorMessage(error)).inserted
    }

    /// How long to wait before retrying after failed saves: 0.1 s, doubling, at most 30 s.
    var retryDelay: Double {
        min(30, 0.1 * pow(2, Double(min(max(failedSaves, 1) - 1, 9))))
    }

    /// Storage was read: `error` says why its value could not be used, `nil` that it could.
    /// Returns whether the load error changed (its observers are told).
    mutating func storageRead(error: (any Error)?) -> Bool {
        defer { loadError = error }
        return loadError != nil || error != nil
    }

    /// The error a container reports as its save error: why saving stopped, or the failed save.
    var saveError: (any Error)? {
        stopReason ?? failure?.error
    }

    // MARK: Across processes

    /// How many versions ``journalSequences`` keeps, at least: more than any receipt waits for.
    static var journalSequencesKept: Int { 4_096 }

    /// The cell's value of `version` is the shared key's file as of its journal's entry
    /// `sequence` (a write of this process saved through the key's gate, another's read from the
    /// journal, or the file read in as it stood then).
    mutating func journaled(_ version: UInt64, sequence: UInt64) {
        if let last = journalSequences.last, last.version >= version {
            if last.version == version { journalSequences[journalSequences.count - 1].sequence = sequence }
            return
        }
        journalSequences.append((version, sequence))
        if journalSequences.count >= 2 * Self.journalSequencesKept {
            journalSequences.removeFirst(Self.journalSequencesKept)
        }
    }

    /// Another process sends the key: the change of `version` went to that process's sender, not
    /// to this one's remote pipelines, and its outcome is what that sender publishes.
    mutating func handedToSender(_ version: UInt64) {
        handedToSenderThrough = max(handedToSenderThrough, version)
    }

    /// The journal entry of `version`, if its change went to another process's sender and the
    /// ledger still knows its entry.
    func handedEntry(of version: UInt64) -> UInt64? {
        version <= handedToSenderThrough ? journalSequence(of: version) : nil
    }

    /// The journal entry the cell's value of `version` stands for, if the ledger still knows it.
    func journalSequence(of version: UInt64) -> UInt64? {
        var low = 0
        var high = journalSequences.count
        while low < high {
            let middle = (low + high) / 2
            if journalSequences[middle].version < version { low = middle + 1 } else { high = middle }
        }
        guard low < journalSequences.count, journalSequences[low].version == version else { return nil }
        return journalSequences[low].sequence
    }

    /// The versions journaled at entries after `sequence`, oldest first, with their entries.
    func journaled(after sequence: UInt64) -> [(version: UInt64, sequence: UInt64)] {
        Array(journalSequences.drop { $0.sequence <= sequence })
    }

    // MARK: Sinks

    /// A sink's pipeline starts keeping its books here, as `books` say; returns their slot.
    mutating func openBooks(_ books: SinkBooks) -> Int {
        guard let slot = freeBookSlots.popLast() else {
            sinkBooks.append(books)
            return sinkBooks.count - 1
        }
        sinkBooks[slot] = books
        return slot
    }

    /// The pipeline is gone: nobody reads its books any more.
    mutating func closeBooks(_ slot: Int) {
        sinkBooks[slot] = SinkBooks(sinkName: "")
        freeBookSlots.append(slot)
    }

    /// How many pipelines keep their books here now.
    var openBookCount: Int { sinkBooks.count - freeBookSlots.count }

    /// Runs `event` on the books in `slot` (opened by ``openBooks(_:)``).
    mutating func books<Result>(_ slot: Int, _ event: (inout SinkBooks) -> Result) -> Result {
        event(&sinkBooks[slot])
    }

    /// A full buffer dropped or coalesced a change: noted in the books in `slot`.
    @inline(__always)
    mutating func overflowed(_ slot: Int, _ overflow: SinkBooks.Overflow) {
        sinkBooks[slot].overflowed(overflow)
    }

    /// The statistics in the books in `slot`, with `pending` changes waiting in its pipeline.
    func statistics(of slot: Int, pending: Int) -> SinkStatistics {
        sinkBooks[slot].statistics(pending: pending)
    }

    /// Whether the sink whose books are in `slot` is paused.
    func isPaused(_ slot: Int) -> Bool {
        sinkBooks[slot].isPaused
    }

    /// The status of a container whose sinks' books are `sinks`, each with what waits in its
    /// pipeline, in the order the sinks were given: their books and the save error, read at once.
    func syncStatus(of sinks: [(books: Int, pending: Int)]) -> SyncStatus {
        SyncStatus(
            sinks.map { sink in
                let books = sinkBooks[sink.books]
                return (books.statistics(pending: sink.pending), books.lastFailedAt)
            },
            saveError: saveError)
    }

    private func isSaved(_ version: UInt64) -> Bool {
        !savesValue || version <= savedVersion
    }

    /// Debug checks of the rules above.
    private func checkInvariants() {
        #if DEBUG
        for (name, stored) in storedRecords where !stored.hasUnsentChanges && stored == records[name] {
            assert(isSaved(agreedVersions[name] ?? 0), "storage holds an agreement on a value it does not hold")
        }
        if let version = failure?.unencodableVersion {
            assert(!isSaved(version), "an encode failure of a value that is saved")
        }
        #endif
    }
}
