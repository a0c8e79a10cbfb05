import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The file behind one or more ``DurableOutbox``es: a JSON-lines log of changes and
/// acknowledgements, owned by one container at a time.
///
/// One log object exists per file in a process (``OutboxLogRegistry``), and one process holds the
/// file at a time (an advisory `flock` on `<file>.lock`, released by the kernel when the process
/// dies, `kill -9` included). A container that finds the log held by a live container is refused;
/// one that finds it held only by a released container's draining pipeline takes it over, and the
/// old pipeline stops sending (its sends are ``isCurrent(_:)`` no more).
///
/// Rules that keep records:
/// - Records are only appended. The file is rewritten (atomically) only when opened, after every
///   record it could not trust was copied to a set-aside file, and when every recorded change is
///   acknowledged, so a rewrite never drops a change still to deliver.
/// - A rewrite keeps the newest change, acknowledged or not: for a container without storage the
///   log is where its value lives, and a relaunch starts from it (``newestChange``).
/// - A failed append is cut off again (`ftruncate`), or, if that fails too, the next record starts
///   on a new line, so a torn record never swallows the next one. A change whose append failed is
///   kept in memory (``unloggedLimit``) so a pipeline reading the log back still finds it.
/// - What a full disk kept out of the file goes in once it can: changes whose append failed are
///   appended, in order, before any newer one, and the newest change and the last acknowledgement
///   are written again, at the next write or by a repair retried every second meanwhile. So a
///   relaunch after space was freed goes on from the newest version: versions never go back.
/// - A file that cannot be read is never written: the outbox then runs without a log.
///
/// What the log recorded, acknowledged, settled and forced to disk are its ``OutboxLedger``'s
/// books, which say what to write; the log itself keeps only the file's mechanics: its handle,
/// where each record starts, and the lines and changes a full disk kept out.
///
/// - Note: All operations on `OutboxLog` are thread-safe.
final class OutboxLog<Value: Codable & Sendable>: @unchecked Sendable {
    /// Where a change record starts in the file.
    private struct Position {
        var version: UInt64
        var offset: UInt64
    }

    /// The highest version a record may carry: 2⁵³, the largest integer every JSON reader keeps
    /// exactly (a million changes a second for 285 years). A larger one is damage, not history.
    static var trustedVersionLimit: UInt64 { 1 << 53 }
    /// How many changes whose append failed are kept in memory for readers of the log.
    static var unloggedLimit: Int { 10_000 }

    let fileURL: URL
    let key: String
    /// Serialises sends across the owners of the log, so a new owner sends only after the old
    /// owner's last send finished: no change reaches the destination after a newer one.
    let sendTurn = AsyncGate()
    private let lock = Lock()
    private let lockFile: Int32
    /// Whether `lockFile` is closed yet: the registry waits for it before opening the file again
    /// (see ``OutboxLogRegistry``).
    let lockFileState = LockFileState()
    /// What the log recorded, acknowledged, settled and forced: the books. What follows is the
    /// file's mechanics.
    private var ledger = OutboxLedger()
    private var handle: FileHandle?
    private var endOffset: UInt64 = 0
    /// Where each change record the file holds starts, for reading changes back.
    private var positions = FIFOQueue<Position>()
    /// The changes whose append failed, for readers of the log (see ``unloggedLimit``).
    private var unlogged: [UInt64: StateChange<Value>] = [:]
    /// The newest change recorded, and its record's line as the file holds it.
    private var newest: (change: StateChange<Value>, line: Data)?
    /// Whether the next record must start with a line end (a failed append could not be cut off).
    private var needsNewline = false
    /// The changes whose append failed, with their lines, in version order: appended before any
    /// newer change.
    private var unwritten = FIFOQueue<(version: UInt64, line: Data)>()
    /// Diagnostics made under the lock, reported once it is let go (see ``note(_:_:error:)``).
    private var unreported: [StateDiagnostic] = []
    /// Where ``synchronize(through:)`` runs, one at a time: a call that finds its version forced
    /// by an earlier one returns at once, so concurrent calls share an `fsync`.
    private let synchronizing = DispatchQueue(label: "StateKit.OutboxLog.synchronize")

    private init(fileURL: URL, key: String, lockFile: Int32) {
        self.fileURL = fileURL
        self.key = key
        self.lockFile = lockFile
    }

    deinit {
        try? handle?.close()
        close(lockFile)
        lockFileState.markClosed()
    }

    /// Opens the log at `fileURL` for the container `key`, taking the process-wide lock on it.
    ///
    /// - Returns: The log, or why it cannot be used (already reported as a diagnostic).
    static func open(fileURL: URL, key: String) -> OutboxLog? {
        let directory = fileURL.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            report(.outboxWriteFailed, key: key, "cannot create the directory of \(fileURL.path)", error: error)
            return nil
        }
        let lockPath = fileURL.path + ".lock"
        let descriptor = openLockFile(lockPath)
        guard descriptor >= 0 else {
            report(.outboxWriteFailed, key: key, "cannot open the lock file \(lockPath): errno \(errno)")
            return nil
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            report(
                .outboxInUse, key: key,
                "the outbox \(fileURL.path) is held by another process; this container's changes are not logged")
            return nil
        }
        let log = OutboxLog(fileURL: fileURL, key: key, lockFile: descriptor)
        defer { log.reportNoted(later: false) }
        return log.recover() ? log : nil
    }

    // MARK: Ownership

    /// Makes the caller the owner (a new live container) and returns its owner number.
    func takeOwnership() -> UInt64 {
        lock.withLock { ledger.takeOwnership() }
    }

    /// Whether a live container owns the log.
    var hasLiveOwner: Bool { lock.withLock { ledger.hasLiveOwner } }

    /// Notes that the container `owner` was released; the log may be taken over.
    func release(_ owner: UInt64) {
        lock.withLock { ledger.release(owner) }
    }

    /// Whether `owner` still owns the log (a released owner's pipeline stops sending once
    /// another container took over).
    func isCurrent(_ owner: UInt64) -> Bool {
        lock.withLock { ledger.isCurrent(owner) }
    }

    /// The last version recorded, the first not acknowledged (if any), and the changes settled
    /// without being delivered.
    var state: (lastRecorded: UInt64, firstPending: UInt64?, outcomes: SinkOutcomes) {
        lock.withLock { (ledger.lastRecorded, ledger.firstPending, ledger.settled) }
    }

    var lastRecordedVersion: UInt64 { lock.withLock { ledger.lastRecorded } }

    /// The newest change recorded, delivered or not: the value a container without storage had
    /// when it last wrote, which its next launch starts from.
    var newestChange: StateChange<Value>? { lock.withLock { newest?.change } }

    var lastAcknowledgedVersion: UInt64 { lock.withLock { ledger.lastAcknowledged } }

    /// Whether each record is forced to stable storage; set when any owner asked for it.
    var synchronizesEachRecord: Bool {
        get { lock.withLock { ledger.forcesEachRecord } }
        set { lock.withLock { ledger.forcesEachRecord = newValue } }
    }

    // MARK: Writing

    /// Appends `change`; called under the container's lock, in version order.
    func record(_ change: StateChange<Value>) {
        let isWhole = lock.withLock {
            ledger.recorded(change.version)
            guard let line = encode(LogRecord(change: change)) else {
                newest = (change, Data())
                keepUnlogged(change)
                return false
            }
            newest = (change, line)
            if let handle, appendUnwritten(to: handle), let offset = append(line, to: handle) {
                ledger.newestAppended()
                positions.append(Position(version: change.version, offset: offset))
                return unreported.isEmpty
            }
            ledger.newestKeptOut()
            keepUnlogged(change)
            unwritten.append((change.version, line))
            return false
        }
        guard !isWhole else { return }
        reportNoted(later: true)
        if lock.withLock({ !isComplete }) { repairSoon() }
    }

    /// Appends the changes whose append failed, in order; returns whether none is left.
    private func appendUnwritten(to handle: FileHandle) -> Bool {
        while let (version, line) = unwritten.first {
            guard let offset = append(line, to: handle) else { return false }
            positions.append(Position(version: version, offset: offset))
            unlogged[version] = nil
            if version == newest?.change.version { ledger.newestAppended() }
            _ = unwritten.popFirst()
        }
        return true
    }

    /// Whether the file holds everything it should: every change, the newest, the acknowledgement.
    private var isComplete: Bool {
        ledger.isComplete(hasFile: handle != nil, hasUnwritten: !unwritten.isEmpty)
    }

    /// Schedules ``repair()`` in a second, unless it is scheduled already.
    private func repairSoon() {
        guard lock.withLock({ ledger.repairWanted() }) else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + 1) { [weak self] in self?.repair() }
    }

    /// Writes what a failure kept out of the file (see the type's rules), and tries again in a
    /// second while it cannot.
    private func repair() {
        let isComplete = lock.withLock {
            ledger.repairStarts()
            if handle == nil {
                _ = rewriteLocked()
            } else if let handle, appendUnwritten(to: handle) {
                switch ledger.repairAfterUnwritten() {
                case .nothing:
                    break
                case .compact:
                    _ = compactLocked()
                case .appendAcknowledgement(let version):
                    if let line = encode(LogRecord(acknowledged: version)), append(line, to: handle) != nil {
                        ledger.acknowledgementLogged()
                    }
                }
            }
            return self.isComplete
        }
        reportNoted(later: false)
        if !isComplete { repairSoon() }
    }

    /// Records that the sink settled `versions` without delivering them, as `fate` says, and
    /// acknowledges them: they are not sent again, and a relaunch's receipts say what became of them.
    func settle(_ versions: ClosedRange<UInt64>, as fate: SinkOutcomes.Fate) {
        lock.withLock { ledger.settle(versions, as: fate) }
        acknowledge(versions.upperBound, settling: LoggedOutcome(versions, fate))
    }

    /// Forces the file to disk, off the writer's thread and the cooperative pool, and says whether
    /// it holds the change of `version` or a newer one (which carries its value); `false` while
    /// that change waits in memory for a full disk.
    func synchronize(through version: UInt64) async -> Bool {
        await withCheckedContinuation { continuation in
            synchronizing.async { continuation.resume(returning: self.synchronizeNow(through: version)) }
        }
    }

    private func synchronizeNow(through version: UInt64) -> Bool {
        // A rewrite during the `fsync` replaced the file forced: the new one is forced next.
        for _ in 0..<3 {
            let found: (descriptor: Int32, through: UInt64, rewrites: UInt64)? = lock.withLock {
                // Written, unless a full disk kept it out: then it waits for the repair (a delivered
                // change leaves the queue of what failed, while the file still lacks the newest).
                let isWritten: Bool
                if ledger.isNewestLogged {
                    isWritten = !unwritten.firstSatisfies { $0.version <= version }
                } else {
                    isWritten = unwritten.firstSatisfies { $0.version > version }
                }
                guard version <= ledger.lastRecorded, isWritten, unlogged[version] == nil, let handle else {
                    return nil
                }
                if version <= ledger.synchronizedThrough { return (-1, ledger.synchronizedThrough, ledger.rewrites) }
                // Duplicated: a rewrite may close the handle while the descriptor is forced.
                let through = unwritten.first.map { $0.version - 1 } ?? ledger.lastRecorded
                return (dup(handle.fileDescriptor), through, ledger.rewrites)
            }
            guard let found else { return false }
            guard found.descriptor >= 0 else { return true }
            let isForced = fsync(found.descriptor) == 0
            close(found.descriptor)
            guard isForced else { return false }
            // The directory too: the file may be new, renamed into place by a rewrite.
            FileReplacement.synchronize(fileURL.deletingLastPathComponent().path)
            let isCurrent = lock.withLock { ledger.forced(through: found.through, rewrites: found.rewrites) }
            if isCurrent { return true }
        }
        return false
    }

    /// Records that the destination accepted every change up to `version`.
    func acknowledge(_ version: UInt64) {
        acknowledge(version, settling: nil)
    }

    private func acknowledge(_ version: UInt64, settling outcome: LoggedOutcome?) {
        let needsRepair = lock.withLock {
            guard let acknowledgement = ledger.acknowledged(version) else { return false }
            let through = acknowledgement.through
            while let first = positions.first, first.version <= through { _ = positions.popFirst() }
            if !unlogged.isEmpty { unlogged = unlogged.filter { $0.key > through } }
            while unwritten.firstSatisfies({ $0.version <= through }) { _ = unwritten.popFirst() }
            if acknowledgement.compacts && compactLocked() { return false }
            if let handle, let line = encode(LogRecord(acknowledged: through, settled: outcome)),
                append(line, to: handle) != nil
            {
                ledger.acknowledgementLogged()
            }
            return !isComplete
        }
        reportNoted(later: false)
        if needsRepair { repairSoon() }
    }

    /// Writes `line` at the end and returns where it starts; on failure cuts the file back so no
    /// partial record stays, and returns `nil`.
    @discardableResult
    private func append(_ line: Data, to handle: FileHandle) -> UInt64? {
        let start = endOffset
        do {
            if needsNewline {
                try handle.write(contentsOf: Data([0x0A]))
                endOffset += 1
                needsNewline = false
            }
            let offset = endOffset
            try handle.write(contentsOf: line)
            endOffset += UInt64(line.count)
            if ledger.forcesEachRecord { try handle.synchronize() }
            if ledger.recordAppended() { note(.outboxWriteFailed, "the log \(fileURL.path) is writable again") }
            return offset
        } catch {
            // A partial record must not swallow the next one: cut it off, or end its line later.
            do {
                try handle.truncate(atOffset: start)
                try handle.seek(toOffset: start)
                endOffset = start
            } catch {
                endOffset = (try? handle.seekToEnd()) ?? endOffset
                needsNewline = true
            }
            if ledger.writeFailed() {
                note(
                    .outboxWriteFailed,
                    "could not append to the log \(fileURL.path); changes are kept in memory (up to "
                        + "\(Self.unloggedLimit)) until it is writable again, and would not survive a crash",
                    error: error)
            }
            return nil
        }
    }

    private func keepUnlogged(_ change: StateChange<Value>) {
        unlogged[change.version] = change
        if unlogged.count > Self.unloggedLimit, let oldest = unlogged.keys.min() {
            unlogged[oldest] = nil
            if unwritten.first?.version == oldest { _ = unwritten.popFirst() }
            note(
                .sinkDroppedChanges,
                "the log \(fileURL.path) is not writable and \(Self.unloggedLimit) changes wait in memory; "
                    + "dropped version \(oldest)")
        }
    }

    /// Rewrites the file as one acknowledgement record and the newest change, once everything
    /// recorded is acknowledged.
    private func compactLocked() -> Bool {
        guard var header = encode(LogRecord(acknowledged: ledger.lastAcknowledged)) else { return false }
        header.append(outcomeLines())
        if let newest, !newest.line.isEmpty { header.append(newest.line) }
        guard replaceFile(with: header) else { return false }
        positions.removeAll()
        return true
    }

    /// Writes the file anew from memory, when it could not be written at open (a full disk): the
    /// acknowledgement, then the changes to deliver, or the newest change when there are none.
    private func rewriteLocked() -> Bool {
        guard var data = encode(LogRecord(acknowledged: ledger.lastAcknowledged)) else { return false }
        data.append(outcomeLines())
        var written: [Position] = []
        for (version, line) in unwritten.elements {
            written.append(Position(version: version, offset: UInt64(data.count)))
            data.append(line)
        }
        if unwritten.isEmpty, let newest, !newest.line.isEmpty { data.append(newest.line) }
        guard replaceFile(with: data) else { return false }
        positions.removeAll()
        for position in written {
            positions.append(position)
            unlogged[position.version] = nil
        }
        unwritten.removeAll()
        return true
    }

    /// Atomically replaces the file with `data` and reopens it for appending.
    private func replaceFile(with data: Data) -> Bool {
        do {
            try data.write(to: fileURL, options: .atomic)
            let newHandle = try FileHandle(forWritingTo: fileURL)
            endOffset = try newHandle.seekToEnd()
            try? handle?.close()
            handle = newHandle
            needsNewline = false
            if ledger.fileReplaced() { note(.outboxWriteFailed, "the log \(fileURL.path) is writable again") }
            return true
        } catch {
            // Reported once while the log fails, as a failed append is.
            if ledger.writeFailed() {
                note(.outboxWriteFailed, "could not rewrite the log \(fileURL.path)", error: error)
            }
            return false
        }
    }

    // MARK: Reading back

    /// Up to `maximumCount` logged changes from `version` on, in order, read back from the file
    /// (and from memory for changes whose append failed).
    func changes(from version: UInt64, maximumCount: Int) -> [StateChange<Value>] {
        let (bytes, kept): (Data, [StateChange<Value>]) = lock.withLock {
            let kept = unlogged.values.filter { $0.version >= version }
            var low = 0
            var high = positions.count
            while low < high {
                let middle = (low + high) / 2
                if positions[offset: middle].version < version { low = middle + 1 } else { high = middle }
            }
            guard low < positions.count else { return (Data(), kept) }
            let start = positions[offset: low].offset
            let end = maximumCount < positions.count - low ? positions[offset: low + maximumCount].offset : endOffset
            guard let reader = try? FileHandle(forReadingFrom: fileURL) else { return (Data(), kept) }
            defer { try? reader.close() }
            guard (try? reader.seek(toOffset: start)) != nil else { return (Data(), kept) }
            return ((try? reader.read(upToCount: Int(end - start))) ?? Data(), kept)
        }
        let decoder = Self.decoder()
        var changes = kept
        for line in bytes.split(separator: 0x0A) {
            guard let change = try? decoder.decode(LogRecord<Value>.self, from: Data(line)).change,
                change.version >= version
            else { continue }
            changes.append(change)
        }
        if !kept.isEmpty { changes.sort { $0.version < $1.version } }
        return Array(changes.prefix(maximumCount))
    }

    // MARK: Opening

    /// Reads the file, sets aside what it cannot trust, and rewrites it as the pending changes.
    ///
    /// - Returns: `false` when the file cannot be read (it is left as it is).
    private func recover() -> Bool {
        let data: Data
        if FileManager.default.fileExists(atPath: fileURL.path) {
            do {
                data = try Data(contentsOf: fileURL)
            } catch {
                Self.report(
                    .outboxUnreadable, key: key,
                    "cannot read the outbox \(fileURL.path); it is left untouched and this container's changes "
                        + "are not logged",
                    error: error)
                return false
            }
        } else {
            data = Data()
        }
        let decoder = Self.decoder()
        // The pending changes with their lines as read, so rewriting the log re-encodes nothing.
        var pending: [(change: StateChange<Value>, line: Data)] = []
        var acknowledged: UInt64 = 0
        var highest: UInt64 = 0
        var newestSeen: (change: StateChange<Value>, line: Data)?
        var settled = SinkOutcomes()
        var rejected: [(line: Int, bytes: Data, reason: String)] = []
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: false)
        for (index, line) in lines.enumerated() where !line.isEmpty {
            if index == lines.count - 1 {
                rejected.append((index + 1, Data(line), "a torn last record (no line end)"))
                continue
            }
            guard let record = try? decoder.decode(LogRecord<Value>.self, from: Data(line)) else {
                rejected.append((index + 1, Data(line), "a record that does not decode"))
                continue
            }
            if let change = record.change {
                guard change.version <= Self.trustedVersionLimit, change.key == key else {
                    let reason =
                        change.key == key
                        ? "an absurd version \(change.version)" : "a change of another key '\(change.key)'"
                    rejected.append((index + 1, Data(line), reason))
                    continue
                }
                highest = max(highest, change.version)
                if change.version >= (newestSeen?.change.version ?? 0) { newestSeen = (change, Data(line) + [0x0A]) }
                if change.version > acknowledged && change.version > (pending.last?.change.version ?? 0) {
                    pending.append((change, Data(line)))
                }
            }
            if let outcome = record.settled {
                guard outcome.from <= outcome.through, outcome.through <= Self.trustedVersionLimit else {
                    let reason = "an absurd outcome of versions \(outcome.from)...\(outcome.through)"
                    rejected.append((index + 1, Data(line), reason))
                    continue
                }
                settled.note(outcome.from...outcome.through, outcome.fate)
            }
            if let version = record.acknowledged {
                // Only a rewritten log's first record may acknowledge what it does not list.
                guard version <= Self.trustedVersionLimit, version <= highest || index == 0 else {
                    rejected.append((index + 1, Data(line), "an absurd acknowledgement of version \(version)"))
                    continue
                }
                highest = max(highest, version)
                acknowledged = max(acknowledged, version)
            }
        }
        pending.removeAll { $0.change.version <= acknowledged }
        newest = newestSeen
        ledger.opened(
            lastRecorded: highest, lastAcknowledged: pending.isEmpty ? highest : acknowledged, settled: settled)
        let isSetAside = rejected.isEmpty || setAside(rejected)
        guard isSetAside else {
            // The bad bytes stay where they are; appending goes on after a line end.
            do {
                let handle = try FileHandle(forWritingTo: fileURL)
                endOffset = try handle.seekToEnd()
                self.handle = handle
                needsNewline = data.last != 0x0A && !data.isEmpty
            } catch {
                Self.report(.outboxWriteFailed, key: key, "cannot append to \(fileURL.path)", error: error)
            }
            for (change, _) in pending { unlogged[change.version] = change }
            return true
        }
        var rewritten = encode(LogRecord(acknowledged: ledger.lastAcknowledged)) ?? Data()
        rewritten.append(outcomeLines())
        // The newest change stays in the file even when it was delivered (see ``newestChange``).
        if pending.isEmpty, let newestSeen { rewritten.append(newestSeen.line) }
        var positions: [Position] = []
        for (change, line) in pending {
            positions.append(Position(version: change.version, offset: UInt64(rewritten.count)))
            rewritten.append(line)
            rewritten.append(0x0A)
        }
        if replaceFile(with: rewritten) {
            for position in positions { self.positions.append(position) }
        } else {
            // Written again from memory by the repair, once it can be.
            for (change, line) in pending {
                unlogged[change.version] = change
                unwritten.append((change.version, line + [0x0A]))
            }
            repairSoon()
        }
        return true
    }

    /// Copies `rejected` records to `<file>.set-aside-<timestamp>` and reports each.
    private func setAside(_ rejected: [(line: Int, bytes: Data, reason: String)]) -> Bool {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss.SSS'Z'"
        let aside = URL(
            fileURLWithPath: fileURL.path
                + ".set-aside-\(formatter.string(from: Date()))-\(UUID().uuidString.prefix(8))")
        var bytes = Data()
        for record in rejected {
            bytes.append(record.bytes)
            bytes.append(0x0A)
        }
        do {
            try bytes.write(to: aside, options: .atomic)
        } catch {
            for record in rejected {
                Self.report(
                    .outboxCorruptRecord, key: key,
                    "outbox \(fileURL.path): line \(record.line) is \(record.reason) (\(record.bytes.count) bytes); "
                        + "skipped, and left in the log because copying it aside failed",
                    error: error)
            }
            return false
        }
        for record in rejected {
            Self.report(
                .outboxCorruptRecord, key: key,
                "outbox \(fileURL.path): line \(record.line) is \(record.reason) (\(record.bytes.count) bytes); "
                    + "skipped and kept in \(aside.path)")
        }
        return true
    }

    // MARK: Helpers

    /// The lines of the outcomes kept, for a rewritten file.
    private func outcomeLines() -> Data {
        var lines = Data()
        for entry in ledger.settled.entries {
            guard let outcome = LoggedOutcome(entry.versions, entry.fate),
                let line = encode(LogRecord(settled: outcome))
            else { continue }
            lines.append(line)
        }
        return lines
    }

    private static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    private func encode(_ record: LogRecord<Value>) -> Data? {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        do {
            var data = try encoder.encode(record)
            data.append(0x0A)
            return data
        } catch {
            note(.outboxWriteFailed, "cannot encode a record for \(fileURL.path)", error: error)
            return nil
        }
    }

    /// Keeps a diagnostic made under the lock, for ``reportNoted(later:)``: the handler is the
    /// user's code, and may write to the container whose write is logging.
    private func note(_ kind: StateDiagnostic.Kind, _ message: String, error: (any Error)? = nil) {
        unreported.append(StateDiagnostic(kind: kind, keys: [key], message: message, error: error))
    }

    /// Reports what ``note(_:_:error:)`` kept; `later`, on another thread, for a caller that holds
    /// a container's lock (``record(_:)``).
    private func reportNoted(later: Bool) {
        let diagnostics = lock.withLock {
            defer { unreported = [] }
            return unreported
        }
        guard !diagnostics.isEmpty else { return }
        guard later else { return diagnostics.forEach(StateDiagnostics.report) }
        DispatchQueue.global().async { diagnostics.forEach(StateDiagnostics.report) }
    }

    static func report(_ kind: StateDiagnostic.Kind, key: String, _ message: String, error: (any Error)? = nil) {
        StateDiagnostics.report(StateDiagnostic(kind: kind, keys: [key], message: message, error: error))
    }
}

/// Opens (creating it if needed) the lock file beside a log.
private func openLockFile(_ path: String) -> Int32 {
    #if canImport(Glibc)
    Glibc.open(path, O_RDWR | O_CREAT, 0o644)
    #elseif canImport(Musl)
    Musl.open(path, O_RDWR | O_CREAT, 0o644)
    #else
    Darwin.open(path, O_RDWR | O_CREAT, 0o644)
    #endif
}
