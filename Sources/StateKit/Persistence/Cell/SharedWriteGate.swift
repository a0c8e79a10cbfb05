import Dispatch
import Foundation
import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The ``WriteGate`` of a key in a ``FileStateStorage`` shared across processes: it makes every
/// write of the key's cell atomic against every process using the directory.
///
/// A write of the cell (any of its containers' `modify`, `~>`, `set`, a remote or outside value,
/// a `didModify()`) goes:
/// 1. ``willWrite()``, without the cell's lock: take the key's ``SharedKeyLock`` (the process's
///    writers queue on its in-process half; the file lock then waits for other processes). Reads
///    go on meanwhile. If the key's ``SharedKeyJournal`` has changes this process has not read,
///    let the key go, deliver them (``catchUp()``), and take it again; after ten catch-ups in a
///    row, keep the key and publish them there, each on its own, their delivery held back until
///    the write's own (``didWrite()``).
/// 2. If the key's generation or its file's ``FileStamp`` differ from what this process last read
///    or wrote, skip the journal to its end (a transaction's commit takes the changes since its
///    last read as one) and read the file; if it holds another value than the cell's (a change
///    the journal missed, or one a commit takes in), that value becomes the cell's, at a version
///    of its own, before the write's check and body run, so they see it.
/// 3. The write's check and body run under the cell's lock, as for any container.
/// 4. ``changeWillBeDelivered(_:)``, the cell's write observer, under the cell's lock, for the
///    change the write made: encode, advance the generation, write a temporary file and rename
///    it into place, append the bytes to the journal; mark the version saved (the cell's own save then has nothing to do); let the
///    key go. The change is delivered after that, so no handler runs while the key is held, and a
///    handler may write to it again. Forcing the file to disk is left to a coalesced `fsync` on a
///    queue of the gate's own (a `kill -9` loses nothing: the kernel has the file).
/// 5. ``didWrite()``: a write that changed nothing (an equal value, a validator's refusal) still
///    holds the key; it publishes the value step 2 brought in, if any, as an outside change, and
///    lets the key go.
///
/// A transaction's commit enters the gates of all its shared keys (``enterForTransaction()``, in
/// the order of their lock files, before any cell's lock), so steps 1 and 2 run for each; in step 4
/// the write observer only encodes the change (`staged`); once every change is applied,
/// ``commitTogether(_:)`` writes them all through one ``SharedTransactionRecord``, and
/// ``leaveTransaction()`` lets each key go, as step 5 does.
///
/// The save in step 4 holds the cell's lock, so a read of this key on another thread may wait for
/// one file write; reads of other keys never do.
///
/// Lock order: the key lock, then the value's `ioLock` (held with it, from ``willWrite()`` to the
/// end), then the cell's lock; the value's own saves take the key lock before `ioLock` too, and
/// the value takes `ioLock` before the cell's lock everywhere else. A key lock is awaited holding
/// no other lock, or only the key locks (and `ioLock`s) of keys before it in the order of lock
/// files (a transaction's commit, a key move's load); while one is held only file I/O, the cell's
/// lock and later key locks are waited for: so no two processes, and no two threads, wait for
/// each other.
///
/// A process killed while it holds the key (inside a body, or between the write and the rename)
/// loses its change: the file holds the value before it, and the kernel releases the lock.
///
/// - Note: All operations on `SharedWriteGate` are thread-safe: its state is guarded by the key
///   lock, which a thread holds from ``willWrite()`` to the delivery of its change or to
///   ``didWrite()``.
final class SharedWriteGate<Value>: WriteGate, @unchecked Sendable {
    /// Weak: the value holds the cell, which holds the gate. Once it is gone, writes pass.
    private weak var value: StoredValue<Value>?
    private let keyLock: SharedKeyLock
    private let storage: FileStateStorage
    private let key: String
    private let fileName: String
    private let path: String
    private let syncQueue: DispatchQueue
    /// The thread holding the key, or 0; written by that thread.
    private let holder = Atomic<UInt>(0)
    /// Reports to publish once no lock is held (bytes kept aside while the key was held).
    private let reports = LockedBox<[() -> Void]>([])
    /// The deliveries ``enterBehind()`` holds back, by thread, until its write's ``didWrite()``
    /// (the key may be another thread's by then); counted, so that other writes skip the lookup.
    private let heldDeliveries = LockedBox<[UInt: DeferredDelivery]>([:])
    private let heldDeliveryCount = Atomic<Int>(0)
    // Guarded by `keyLock`.
    /// The value whose `ioLock` the holder holds, kept alive until it lets go.
    private var holding: StoredValue<Value>?
    /// The value step 2 replaced, and the version the outside value took, until a change
    /// publishes it.
    private var broughtIn: (replaced: Value, version: UInt64)?
    /// Whether the holder holds the key for a transaction's commit: the write observer then keeps
    /// the change in `staged`, for ``commitTogether(_:)``.
    private var isHeldForTransaction = false
    /// The change a transaction's commit made, encoded, until the commit writes it.
    private var staged: (representation: StoredRepresentation, data: Data, version: UInt64)?
    /// The key's journal, and where this process stopped reading it (`nil` until it starts).
    private let journal: SharedKeyJournal
    private var position: SharedKeyJournal.Position?
    /// Where a damaged journal tail was last reported, so that it is reported once.
    private var reportedDamage: UInt64?
    /// Whether the holder is publishing other processes' changes (``catchUp()``): the write
    /// observer then leaves them be.
    private var isCatchingUp = false

    init(value: StoredValue<Value>, keyLock: SharedKeyLock, storage: FileStateStorage) {
        self.value = value
        self.keyLock = keyLock
        self.storage = storage
        self.key = value.key
        self.fileName = FileStateStorage.fileName(forKey: value.key)
        self.path = storage.fileURL(forKey: value.key).path
        self.syncQueue = DispatchQueue(label: "StateKit.shared.\(value.key)", qos: .utility)
        self.journal = SharedKeyJournal(forFileAt: path)
    }

    /// Starts reading the key's journal at its end: the changes before are in what the cell loaded.
    func startReadingJournal() {
        keyLock.lock()
        let end = journal.end(holding: keyLock)
        position = end
        if let value {
            let version = value.cell.lock.withLock { value.cell.storedVersion }
            value.withLedger { $0.journaled(version, sequence: end.lastSequence) }
        }
        keyLock.unlock()
    }

    /// Delivers what other processes wrote since this process last read the key, each change of
    /// the key's journal as its own change (origin ``ChangeOrigin/external``), in order; or, when
    /// this process is further behind than the journal goes back, one change to the newest value,
    /// and a diagnostic naming the gap. Called by the storage's watcher, without any lock; the
    /// changes are delivered once the key is let go.
    func catchUp() {
        let delivery = DeferredDelivery.begin()
        keyLock.lock()
        holder.store(currentThreadID(), ordering: .relaxed)
        publishMissed()
        leave()
        publishReports()
        delivery.end()
    }

    override func willWrite() {
        // A transaction's commit on this thread holds the key already.
        if holder.load(ordering: .relaxed) == currentThreadID() { return }
        // Other processes' changes since this one last read the key are delivered before the write
        // takes the key; a stream of them must not hold the write up, so after ten catch-ups the
        // write takes the key behind them all the same.
        for _ in 0..<SharedKeyHooks.catchUpsBeforeTakingIn {
            if enter(unlessBehind: true) { return }
            catchUp()
        }
        enterBehind()
    }

    /// Takes the key however far behind its journal this process is, and publishes what it
    /// missed, each change on its own: their delivery, and then the write's, are held back until
    /// ``didWrite()``, once the key is let go.
    private func enterBehind() {
        let delivery = DeferredDelivery.begin()
        keyLock.lock()
        holder.store(currentThreadID(), ordering: .relaxed)
        publishMissed()
        heldDeliveries.withLock { $0[currentThreadID()] = delivery }
        heldDeliveryCount.add(1, ordering: .relaxed)
    }

    /// Holding the key, brings in what other processes wrote since this process last read it and
    /// publishes it, each change on its own; the key stays held, with the value's `ioLock`, and the
    /// changes are delivered when the caller's delivery ends.
    private func publishMissed() {
        guard let value else { return }
        value.ioLock.lock()
        holding = value
        isCatchingUp = true
        bringIn(from: value, publishingEach: true)
        if let broughtIn {
            value.cell.lock.lock()
            value.cell.publishAndUnlock(
                oldValue: value.cell.wantsChangeRecords ? broughtIn.replaced : nil, origin: .external)
            self.broughtIn = nil
        }
        isCatchingUp = false
    }

    /// Ends the delivery ``enterBehind()`` held back on this thread, if it did.
    private func endHeldDelivery() {
        guard heldDeliveryCount.load(ordering: .relaxed) > 0,
            let delivery = heldDeliveries.withLock({ $0.removeValue(forKey: currentThreadID()) })
        else { return }
        heldDeliveryCount.subtract(1, ordering: .relaxed)
        delivery.end()
    }

    override var transactionOrder: String { keyLock.path }

    override func enterForTransaction() {
        // The commit's body reads the transaction's log: other processes' changes are taken in
        // as one, and make the body run again.
        enter(unlessBehind: false)
        isHeldForTransaction = true
    }

    override func leaveTransaction() {
        guard holder.load(ordering: .relaxed) == currentThreadID() else { return publishReports() }
        isHeldForTransaction = false
        staged = nil
        didWrite()
    }

    /// Takes the key, and brings in what was written elsewhere since this process last knew it (a
    /// transaction's commit takes other processes' changes in as one).
    /// - Parameter unlessBehind: Let the key go again, and return `false`, if its journal has
    ///   changes this process has not read, for ``catchUp()`` to deliver first.
    @discardableResult
    private func enter(unlessBehind: Bool) -> Bool {
        keyLock.lock()
        if unlessBehind, let position, keyLock.journalEnd.lastSequence > position.lastSequence {
            keyLock.unlock()
            return false
        }
        holder.store(currentThreadID(), ordering: .relaxed)
        guard let value else { return true }
        // Held to the end of the write, before the cell's lock, as the value's own saves do.
        value.ioLock.lock()
        holding = value
        bringIn(from: value, publishingEach: false)
        return true
    }

    /// Brings what other processes wrote since this process last read or wrote the key into the
    /// cell, holding the key: when `publishingEach`, each entry of the journal as a change of its
    /// own, published now (delivered when the caller's delivery ends); then the file's value, if
    /// it is not the last of those (a write the journal missed), at a version of its own, kept in
    /// `broughtIn` for the caller to publish.
    private func bringIn(from value: StoredValue<Value>, publishingEach: Bool) {
        guard value.storageSeen(at: (keyLock.generation, FileStamp(path: path))) else { return }
        readJournal(publishingEach ? value : nil)
        var report: (() -> Void)?
        let found = value.readChangedLocked(publishLater: &report)
        if let report { reports.withLock { $0.append(report) } }
        guard let found else { return }
        let cell = value.cell
        let (replaced, version) = cell.lock.withLock {
            let replaced = cell.storedValue
            cell.storedValue = found
            cell.storedVersion &+= 1
            return (replaced, cell.storedVersion)
        }
        // The file's value includes every entry of the journal so far.
        noteSaved(version, of: value, atEntry: keyLock.journalEnd.lastSequence)
        broughtIn = (broughtIn?.replaced ?? replaced, version)
    }

    /// Reads the journal's new entries, and publishes each as a change of the cell of `value`, if
    /// given; reports a gap or a damaged tail.
    private func readJournal(_ value: StoredValue<Value>?) {
        guard var position else { return }
        let before = position.lastSequence
        let reading = journal.read(after: &position)
        self.position = position
        if let damagedAt = reading.damagedAt, damagedAt != reportedDamage {
            reportedDamage = damagedAt
            let diagnostic = StateDiagnostic(
                kind: .storageFailed, keys: [key],
                message: "the journal of '\(key)' (\(journal.path)) has a damaged tail at byte \(damagedAt), ignored: "
                    + "the next write there cuts it off")
            reports.withLock { $0.append { StateDiagnostics.report(diagnostic) } }
        }
        guard let value else { return }
        if reading.missed > 0 {
            // Further behind than the journal goes back: the file's value comes in as one change.
            let diagnostic = StateDiagnostic(
                kind: .changesMissed, keys: [key],
                message: "this process missed \(reading.missed) changes of '\(key)' made by other processes "
                    + "(after change \(before), the journal keeps the last \(SharedKeyJournal.backlog)); "
                    + "it takes the newest value as one change")
            reports.withLock { $0.append { StateDiagnostics.report(diagnostic) } }
            return
        }
        for entry in reading.entries where !value.storageHolds(fingerprint: entry.bytes) {
            let representation = StoredRepresentation(payload: entry.bytes, fingerprint: entry.bytes)
            // Bytes that do not decode are the file's to report, if it still holds them.
            guard let newValue = try? value.codec.decode(representation) else { continue }
            value.noteStored(fingerprint: entry.bytes)
            let cell = value.cell
            cell.lock.lock()
            let replaced = cell.storedValue
            cell.storedValue = newValue
            cell.storedVersion &+= 1
            noteSaved(cell.storedVersion, of: value, atEntry: entry.sequence)
            cell.publishAndUnlock(oldValue: cell.wantsChangeRecords ? replaced : nil, origin: .external)
        }
    }

    /// Appends `data`, just stored, to the key's journal; this process has read everything before.
    /// Returns the entry's sequence number, `nil` if the append failed.
    private func appendToJournal(_ data: Data) -> UInt64? {
        // A failure costs other processes the change's own delivery: they take the file's value.
        guard let end = try? journal.append(data, holding: keyLock) else { return nil }
        if position != nil { position = end }
        return end.lastSequence
    }

    /// The cell's write observer: saves the change about to be delivered and lets the key go.
    /// Called under the cell's lock, on the writing thread, which holds the key.
    func changeWillBeDelivered(_ change: StateChange<Value>) {
        guard holder.load(ordering: .relaxed) == currentThreadID(), !isCatchingUp else { return }
        broughtIn = nil
        if isHeldForTransaction { return stage(change) }
        if let value, case .saved(let entry) = save(change.newValue) {
            noteSaved(change.version, of: value, atEntry: entry)
        }
        leave()
    }

    /// Keeps a transaction's change, encoded, for ``commitTogether(_:)``; a value the file holds
    /// already is saved.
    private func stage(_ change: StateChange<Value>) {
        guard let value, value.isPersisting else { return }
        do {
            guard let representation = try value.codec.encode(change.newValue),
                let data = representation.payload as? Data
            else { return }
            if value.storageHolds(fingerprint: representation.fingerprint) {
                staged = nil
                noteSaved(change.version, of: value)
            } else {
                staged = (representation, data, change.version)
            }
        } catch {
            // The cell's own save retries it (taking the key lock).
            staged = nil
            noteFailed(error, of: value)
        }
    }

    override func commitTogether(_ gates: [WriteGate]) {
        let participants = gates.compactMap { $0 as? any SharedTransactionParticipant }.filter(\.hasStagedWrite)
        if participants.count == 1 { return participants[0].saveStaged() }
        guard !participants.isEmpty else { return }
        let record = SharedTransactionRecord(writes: participants.compactMap(\.stagedWrite))
        let locks = Dictionary(participants.map { ($0.lockPath, $0.stagedKeyLock) }) { first, _ in first }
        do {
            try record.commit(holding: locks, afterFirstReplace: SharedKeyHooks.afterFirstReplace)
            for participant in participants { participant.stagedWriteSucceeded() }
        } catch {
            for participant in participants { participant.stagedWriteFailed(error) }
        }
    }

    override func didWrite() {
        defer {
            publishReports()
            endHeldDelivery()
        }
        guard holder.load(ordering: .relaxed) == currentThreadID() else { return }
        guard let broughtIn, let cell = value?.cell else { return leave() }
        // Published as an outside change, whose delivery lets the key go.
        cell.lock.lock()
        cell.publishAndUnlock(oldValue: cell.wantsChangeRecords ? broughtIn.replaced : nil, origin: .external)
        if holder.load(ordering: .relaxed) == currentThreadID() { leave() }
    }

    /// Publishes the reports kept while the key was held, now that no lock is.
    private func publishReports() {
        let pending = reports.withLock { reports in
            let pending = reports
            reports = []
            return pending
        }
        for report in pending { report() }
    }

    private func leave() {
        broughtIn = nil
        holding?.ioLock.unlock()
        holding = nil
        holder.store(0, ordering: .relaxed)
        keyLock.unlock()
    }

    /// What a save through the gate did.
    private enum Save {
        /// The file holds the value now: written, and appended to the journal as `entry` (`nil`
        /// when the file held it already, or the append failed).
        case saved(entry: UInt64?)
        case failed
    }

    /// Writes `newValue` to the key's file unless it holds it already.
    private func save(_ newValue: Value) -> Save {
        guard let value, value.isPersisting else { return .failed }
        do {
            guard let representation = try value.codec.encode(newValue), let data = representation.payload as? Data
            else { return .failed }
            return save(representation: representation, data: data)
        } catch {
            noteFailed(error, of: value)
            return .failed
        }
    }

    /// Storage holds the cell's value of `version`: the value's ledger notes it now, with the
    /// journal's entry `sequence` it stands for, if known (a write whose append failed stands for
    /// none); a save error that clears is published after every lock is let go (its observers are
    /// user code, which may write to the container).
    private func noteSaved(_ version: UInt64, of value: StoredValue<Value>, atEntry sequence: UInt64? = nil) {
        guard let publish = value.noteSaved(version: version, journalSequence: sequence) else { return }
        reports.withLock { $0.append(publish) }
    }

    /// A save through the gate failed: the value's ledger keeps the error now, and its report is
    /// published after every lock is let go.
    private func noteFailed(_ error: any Error, of value: StoredValue<Value>) {
        let publish = value.noteSaveFailed(error)
        reports.withLock { $0.append(publish) }
    }

    /// Writes `data`, encoded as `representation`, to the key's file unless it holds it already.
    private func save(representation: StoredRepresentation, data: Data) -> Save {
        guard let value else { return .failed }
        do {
            var entry: UInt64?
            if !value.storageHolds(fingerprint: representation.fingerprint) {
                let generation = keyLock.advanceGeneration()
                try value.storeLocked(representation) { try storage.replace(data, fileName: fileName) }
                entry = appendToJournal(data)
                value.storageSeen(at: (generation, FileStamp(path: path)))
                scheduleSync(of: value)
            }
            return .saved(entry: entry)
        } catch {
            // The cell's own save retries it (taking the key lock).
            noteFailed(error, of: value)
            return .failed
        }
    }

    /// How long after a write its file is forced to disk, so that a burst of writes costs one
    /// `fsync` (back to back, they made every rename wait for the journal: 2,344 for 3,000 writes,
    /// and the rename about 170 µs).
    private static var syncDelay: Double { 0.05 }

    /// Forces the key's file to disk soon, once for a burst of writes (the ledger of `value` says
    /// when one is scheduled).
    private func scheduleSync(of value: StoredValue<Value>) {
        guard value.syncWanted() else { return }
        syncQueue.asyncAfter(deadline: .now() + Self.syncDelay) { [storage, key, weak value] in
            value?.scheduledSyncStarts()
            storage.synchronize(forKey: key)
        }
    }
}

extension StoredValue {
    /// The gate of the key, when its storage is shared across processes.
    var sharedWriteGate: SharedWriteGate<Value>? {
        cell.observation.current?.writeGate.current as? SharedWriteGate<Value>
    }
}

/// A gate of a key shared across processes, as a transaction's commit sees it, whatever the
/// key's value type: what it staged, and what to do once the commit wrote it. Called holding the
/// key, on the thread that holds it.
protocol SharedTransactionParticipant: AnyObject {
    var hasStagedWrite: Bool { get }
    var stagedWrite: SharedTransactionRecord.Write? { get }
    var lockPath: String { get }
    var stagedKeyLock: SharedKeyLock { get }
    /// Writes the staged change alone (the commit changed no other shared key).
    func saveStaged()
    func stagedWriteSucceeded()
    func stagedWriteFailed(_ error: any Error)
}

extension SharedWriteGate: SharedTransactionParticipant {
    var hasStagedWrite: Bool { staged != nil }

    var stagedWrite: SharedTransactionRecord.Write? {
        staged.map { SharedTransactionRecord.Write(file: path, lock: keyLock.path, bytes: $0.data) }
    }

    var lockPath: String { keyLock.path }

    var stagedKeyLock: SharedKeyLock { keyLock }

    func saveStaged() {
        guard let staged, let value else { return }
        self.staged = nil
        if case .saved(let entry) = save(representation: staged.representation, data: staged.data) {
            noteSaved(staged.version, of: value, atEntry: entry)
        }
    }

    func stagedWriteSucceeded() {
        guard let staged, let value else { return }
        self.staged = nil
        // The record wrote the file; this keeps the bookkeeping of a save.
        try? value.storeLocked(staged.representation) {}
        let entry = appendToJournal(staged.data)
        value.storageSeen(at: (keyLock.generation, FileStamp(path: path)))
        noteSaved(staged.version, of: value, atEntry: entry)
    }

    func stagedWriteFailed(_ error: any Error) {
        guard let value else { return }
        staged = nil
        // The file may hold the new value (the next holder completes the commit) or the old one;
        // it is read again at the next write, and the cell's own save retries.
        value.storageSeen(at: nil)
        noteFailed(error, of: value)
    }
}

extension StoredValue {
    /// Makes every write of the cell atomic against other processes using `storage`, once: the
    /// key's lock for every save, and a ``SharedWriteGate`` on the cell's observation point, with
    /// its write observer.
    func shareAcrossProcesses(in storage: FileStateStorage) {
        guard sharedKeyLock.current == nil else { return }
        let keyLock = sharedKeyLock.install(SharedKeyLock(path: storage.lockFileURL(forKey: key).path))
        let gate = SharedWriteGate(value: self, keyLock: keyLock, storage: storage)
        let point = cell.installObservationPoint()
        guard point.writeGate.install(gate) === gate else { return }
        gate.startReadingJournal()
        cell.lock.withLock {
            let earlier = cell.writeObserver
            cell.writeObserver = { change in
                earlier?(change)
                gate.changeWillBeDelivered(change)
            }
        }
    }
}
