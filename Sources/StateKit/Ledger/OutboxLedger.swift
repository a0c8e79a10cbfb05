/// What one outbox log has recorded, acknowledged, settled without delivering and forced to disk,
/// and what each event makes the log write.
///
/// A value type, as ``CellLedger`` is: ``OutboxLog`` calls an event under its lock, the event
/// updates the books and says what to write, and the log writes it. The log keeps only its file's
/// mechanics (the handle, where each record starts, the lines a full disk kept out); it keeps no
/// version of its own. One ledger per log file: a log outlives the containers that write to it,
/// and passes from a released container to the next (the owner numbers here).
///
/// Transitions:
///
/// | event                            | books                                            | the log then                          |
/// | -------------------------------- | ------------------------------------------------ | ------------------------------------- |
/// | ``opened(lastRecorded:lastAcknowledged:settled:)`` | as the file says                 | rewrites it                           |
/// | ``recorded(_:)``                 | the newest version                               | repairs soon, if ``isComplete(hasFile:hasUnwritten:)`` is false |
/// | ``newestAppended()``             | the file holds the newest change                 | —                                     |
/// | ``newestKeptOut()``              | the newest change waits in memory (a full disk)  | —                                     |
/// | ``recordAppended()``             | one more record since the last rewrite           | reports "writable again" if it says so |
/// | ``writeFailed()``                | failing                                          | reports it, the first time            |
/// | ``acknowledged(_:)``             | acknowledged through it (never past the newest recorded) | compacts, or appends the acknowledgement (``Acknowledgement``) |
/// | ``acknowledgementLogged()``      | the file holds the acknowledgement              | —                                     |
/// | ``settle(_:as:)``                | the outcome kept (the newest ``keptOutcomes`` runs) | acknowledges the versions, with the outcome |
/// | ``fileReplaced()``               | the file holds everything; nothing forced yet    | reports "writable again" if it says so |
/// | ``repairWanted()`` / ``repairStarts()`` | a repair scheduled, or not                 | schedules one, if none was            |
/// | ``repairAfterUnwritten()``       | —                                                | ``Repair``: compact, append the acknowledgement, or nothing |
/// | ``forced(through:rewrites:)``    | forced to disk through it, unless the file was replaced meanwhile | —                    |
/// | ``takeOwnership()`` / ``release(_:)`` | the owner, and whether it lives              | —                                     |
struct OutboxLedger {
    /// What an acknowledgement makes the log write.
    struct Acknowledgement {
        /// Every version up to this one is acknowledged now.
        var through: UInt64
        /// Whether to rewrite the file as the acknowledgement and the newest change (everything
        /// recorded is acknowledged, and the file grew or lacks the newest change); when that
        /// fails, or otherwise, append the acknowledgement.
        var compacts: Bool
    }

    /// What a repair does once the changes a full disk kept out are appended.
    enum Repair {
        case nothing
        /// Rewrite the file: everything is acknowledged and it lacks the newest change.
        case compact
        /// Append the acknowledgement the file lacks.
        case appendAcknowledgement(UInt64)
    }

    /// How many runs of undelivered changes the log remembers for receipts.
    static var keptOutcomes: Int { 1_000 }
    /// How many records the file may gather before an acknowledgement of everything rewrites it.
    static var recordsBeforeCompaction: Int { 256 }

    /// The last version recorded: logged, or kept in memory while its append fails.
    private(set) var lastRecorded: UInt64 = 0
    /// Every version up to this one was delivered or settled.
    private(set) var lastAcknowledged: UInt64 = 0
    /// The newest acknowledgement the file holds.
    private var loggedAcknowledged: UInt64 = 0
    /// Whether the file holds the newest change's record (a container without storage starts from it).
    private(set) var isNewestLogged = true
    /// The changes settled without being delivered (receipts' outcomes), kept across launches.
    private(set) var settled = SinkOutcomes()
    /// The versions the file holds forced to disk; a rewrite starts over.
    private(set) var synchronizedThrough: UInt64 = 0
    /// Counts the rewrites of the file, so that a forced file replaced meanwhile is not trusted.
    private(set) var rewrites: UInt64 = 0
    private var recordsSinceCompaction = 0
    private var isRepairScheduled = false
    /// Whether writing the file fails (reported once, until it works again).
    private var isFailing = false
    private var owner: UInt64 = 0
    private var isOwnerLive = false
    /// Whether each record is forced to stable storage; set when any owner asked for it.
    var forcesEachRecord = false

    // MARK: Opening and owners

    /// The file, read at open, says so (after its records that cannot be trusted were set aside).
    mutating func opened(lastRecorded: UInt64, lastAcknowledged: UInt64, settled: SinkOutcomes) {
        self.lastRecorded = lastRecorded
        self.lastAcknowledged = lastAcknowledged
        self.settled = settled
        self.settled.keepNewest(Self.keptOutcomes)
    }

    /// A new live container owns the log; returns its owner number.
    mutating func takeOwnership() -> UInt64 {
        owner += 1
        isOwnerLive = true
        return owner
    }

    /// Whether a live container owns the log.
    var hasLiveOwner: Bool { isOwnerLive }

    /// The container `owner` was released: the log may be taken over.
    mutating func release(_ owner: UInt64) {
        if self.owner == owner { isOwnerLive = false }
    }

    /// Whether `owner` still owns the log.
    func isCurrent(_ owner: UInt64) -> Bool {
        self.owner == owner
    }

    /// The first version recorded and not acknowledged, if any.
    var firstPending: UInt64? {
        lastAcknowledged < lastRecorded ? lastAcknowledged + 1 : nil
    }

    // MARK: Writing

    /// The change of `version` was recorded (``newestAppended()`` or ``newestKeptOut()`` say
    /// whether the file holds it).
    mutating func recorded(_ version: UInt64) {
        lastRecorded = version
    }

    /// The file holds the newest change now (appended, or appended once a full disk let it).
    mutating func newestAppended() {
        isNewestLogged = true
    }

    /// A full disk kept the newest change out of the file: it waits in memory for a repair.
    mutating func newestKeptOut() {
        isNewestLogged = false
    }

    /// A record was appended. Returns whether that ended a failure (to report).
    mutating func recordAppended() -> Bool {
        recordsSinceCompaction += 1
        defer { isFailing = false }
        return isFailing
    }

    /// Writing the file failed. Returns whether to report it: the first failure of a run.
    mutating func writeFailed() -> Bool {
        defer { isFailing = true }
        return !isFailing
    }

    /// The file was rewritten whole (at open, a compaction, a repair), from what the log holds in
    /// memory, the newest change included. Returns whether that ended a failure (to report).
    mutating func fileReplaced() -> Bool {
        isNewestLogged = true
        rewrites &+= 1
        synchronizedThrough = 0
        recordsSinceCompaction = 0
        loggedAcknowledged = lastAcknowledged
        defer { isFailing = false }
        return isFailing
    }

    /// The destination accepted every change up to `version`. Returns what to write, or `nil`
    /// when that acknowledges nothing new.
    mutating func acknowledged(_ version: UInt64) -> Acknowledgement? {
        guard version > lastAcknowledged else { return nil }
        lastAcknowledged = min(version, lastRecorded)
        let isSettled = lastAcknowledged >= lastRecorded
        return Acknowledgement(
            through: lastAcknowledged,
            compacts: isSettled && (recordsSinceCompaction >= Self.recordsBeforeCompaction || !isNewestLogged))
    }

    /// The file holds the newest acknowledgement.
    mutating func acknowledgementLogged() {
        loggedAcknowledged = lastAcknowledged
    }

    /// The sink settled `versions` without delivering them, as `fate` says.
    mutating func settle(_ versions: ClosedRange<UInt64>, as fate: SinkOutcomes.Fate) {
        settled.note(versions, fate)
        settled.keepNewest(Self.keptOutcomes)
    }

    // MARK: Repair

    /// Whether the file holds everything it should: a file open, no change kept out
    /// (`hasUnwritten`), the newest change, the newest acknowledgement.
    func isComplete(hasFile: Bool, hasUnwritten: Bool) -> Bool {
        hasFile && !hasUnwritten && isNewestLogged && loggedAcknowledged >= lastAcknowledged
    }

    /// A repair is wanted. Returns whether to schedule one: none is scheduled.
    mutating func repairWanted() -> Bool {
        defer { isRepairScheduled = true }
        return !isRepairScheduled
    }

    /// The scheduled repair starts: a failure from now on schedules another.
    mutating func repairStarts() {
        isRepairScheduled = false
    }

    /// What a repair writes once the changes a full disk kept out are in the file.
    func repairAfterUnwritten() -> Repair {
        if lastAcknowledged >= lastRecorded && !isNewestLogged { return .compact }
        if loggedAcknowledged < lastAcknowledged { return .appendAcknowledgement(lastAcknowledged) }
        return .nothing
    }

    // MARK: Forcing to disk

    /// The file, as it was after `rewrites` rewrites, is forced to disk through `version`.
    /// Returns `false` when it was replaced meanwhile: the new one is to be forced.
    mutating func forced(through version: UInt64, rewrites: UInt64) -> Bool {
        guard rewrites == self.rewrites else { return false }
        synchronizedThrough = max(synchronizedThrough, version)
        return true
    }
}
