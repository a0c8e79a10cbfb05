import Dispatch
import Foundation

/// The one cell of a key in a storage, shared by every persisted container that holds it in this
/// process (a ``PersistedState``, a ``UserDefaultsState``, `@Persisted`, a persisted
/// ``SyncedState``), and what keeps it in storage.
///
/// The cell is a hidden container, ``cell``: each of the key's containers is made with
/// ``State/init(sharing:key:)`` and so shares its lock, value, version, subscribers and delivery.
/// A write through any of them is atomic against all, and a container made while another lives
/// reads the live value at once. This object then only moves values between the cell and the
/// storage:
/// - every change of the cell is saved (a subscriber of the cell schedules it); a save writes
///   the cell's newest value, so a burst of changes costs one write, and writes nothing when the
///   newest value is one that came from storage;
/// - a change made outside (another process, a replaced file, other code writing `UserDefaults`)
///   is noticed by the storage's watcher, read, and written into the cell as one change, which is
///   not saved again. What the storage holds is recognised by its fingerprint, so the container's
///   own writes never come back as changes, and neither do the bytes of a save that failed.
///
/// Saves and reads of the storage are serialised by `ioLock`; `lock` guards the rest. The order
/// the locks are taken in:
/// - `ioLock`, then the cell's lock, then `lock`; the cell's lock may be held when `lock` is
///   taken, never the other way round.
/// - A key move (``prepare()``) holds the `ioLock`s of the new key's value and of the earlier
///   keys' live values together: it takes them in one order for every thread, by object
///   identity, so two values moving into each other's keys never wait for each other.
/// - No `ioLock` holder takes the registry's lock: ``prepare()`` looks the earlier keys' live
///   values up before it takes any `ioLock`, and with them held reads only the registry's count
///   of registrations, whose lock is taken last of all. (The registry does take an `ioLock` under
///   its own lock, to ``retire()`` a value; that is safe because of this rule.)
final class StoredValue<Value>: LiveStoredValue, @unchecked Sendable {
    let key: String
    /// The storage's location, as the registry knows it.
    let location: String
    let codec: StoredValueCodec<Value>
    /// The hidden container whose lock, value, version and subscribers the key's containers share.
    let cell: MonitoredState<Value>
    /// The observable load error every container of this value reports, and the observation of
    /// its save error (the ledger's, ``saveError``).
    let status = PersistenceStatus()

    /// Where earlier releases stored the value, newest first; see
    /// ``moveFromPreviousKeys(throughLiveValues:)``.
    private let previousCodecs: [(key: String, codec: StoredValueCodec<Value>)]
    private let defaultValue: Value
    private let savesInline: Bool
    private let queue: DispatchQueue
    let ioLock = Lock()
    private let lock = Lock()
    /// Hears every change of the cell, to save it.
    private var changes: Subscription?
    // Guarded by `lock`.
    private var members: [WeakContainer<Value>] = []
    /// What the cell has saved and sent. `lock` guards it, so its dynamic exclusivity check is
    /// skipped: every write's save scheduling reads it, and the check cost 107 instructions a write.
    @exclusivity(unchecked) private var ledger = CellLedger(savesValue: true)
    /// Where the records of the cell's remote destinations are kept, once a synced container of
    /// the key made them: its saves store them around the value, as the ledger says. Weak: the
    /// store keeps the cell (and so its ledger) alive while a remote channel uses it.
    private weak var recordStore: SyncRecordStore?
    private var isCheckScheduled = false
    // Guarded by `ioLock`.
    private var watchToken: AnyObject?
    /// What other layers keep per cell, one of each type, made by the first to ask.
    private let attachments = LockedBox<[ObjectIdentifier: AnyObject]>([:])
    /// The key's lock when its storage is shared across processes: every save takes it before
    /// `ioLock` (see ``SharedWriteGate``).
    let sharedKeyLock = OnceInstalledReference<SharedKeyLock>()

    /// Creates the cell of `key`; ``prepare()`` loads it.
    ///
    /// - Parameters:
    ///   - location: The storage's location, under which the registry keeps its live values.
    ///   - previousCodecs: The same storage under the key's earlier names, newest first.
    ///   - savesInline: Save on the delivering thread before the write returns (for
    ///     `UserDefaults`, which only writes memory), rather than on a queue of its own.
    init(
        key: String,
        location: String,
        codec: StoredValueCodec<Value>,
        previousCodecs: [(key: String, codec: StoredValueCodec<Value>)] = [],
        defaultValue: Value,
        savesInline: Bool
    ) {
        self.key = key
        self.location = location
        self.codec = codec
        self.previousCodecs = previousCodecs
        self.defaultValue = defaultValue
        self.cell = MonitoredState(defaultValue, key: key)
        // The key's containers, which share the cell, are what an inspector shows.
        InspectionRegistry.shared.remove(cell)
        // Its containers' validators become the cell's after it is shared.
        cell.assignsBlindly = false
        self.savesInline = savesInline
        self.queue = DispatchQueue(label: "StateKit.persistence.\(key)", qos: .utility)
        changes = cell.addSubscriber(
            queue: nil,
            handler: .value { [weak self] _ in self?.scheduleSave() },
            sendsCurrentValue: false)
    }

    /// The cell's one `Attachment`, made by `make` the first time it is asked for: what a layer
    /// above keeps per cell (the synced containers' shared remote channels), for as long as the
    /// cell lives. `make` runs under a lock of its own, never the cell's.
    func attachment<Attachment: AnyObject>(_ make: () -> Attachment) -> Attachment {
        attachments.withLock { attachments in
            if let found = attachments[ObjectIdentifier(Attachment.self)] as? Attachment { return found }
            let made = make()
            attachments[ObjectIdentifier(Attachment.self)] = made
            return made
        }
    }

    /// Whether changes are saved: `false` when the stored data could be neither read nor moved
    /// aside, so that saving would overwrite it.
    var isPersisting: Bool {
        lock.withLock { ledger.isSaving }
    }

    /// Why the newest value is not in storage, or `nil`: the ledger's save error, observable
    /// through ``status``.
    var saveError: (any Error)? {
        status.saveError { lock.withLock { ledger.saveError } }
    }

    /// Why the stored value could not be used (the ledger's, observed as ``saveError`` is).
    var loadError: (any Error)? {
        status.loadError { lock.withLock { ledger.loadError } }
    }

    /// Loads the stored value (once), moving it from an earlier key first, and starts watching
    /// the storage.
    ///
    /// The move goes through the live values of the earlier keys in this process (a container
    /// of one, or a value only a save in flight keeps): each is saved first, so its newest value
    /// is the one moved, and reads its key again once the move emptied it, so it changes to its
    /// default at once, as if another process had moved the key. Their `ioLock`s are held with
    /// this one's from the save to the read (see the type's lock order), so no save of theirs
    /// lands in between.
    ///
    /// In storage shared across processes the keys' locks (``SharedKeyLock``) are taken first, this
    /// key's and the earlier keys', so that no other process writes any of them while the move
    /// and the load run (a move that raced another process's `modify` of the earlier key would
    /// lose or repeat it), nor while bytes that do not decode are kept aside.
    ///
    /// The live values are looked up before the locks are taken; if the registry took in a value
    /// meanwhile (it may hold an earlier key, and may even have loaded it), the locks are let go
    /// and the look-up done again. A value of an earlier key made while the move runs is not
    /// among those it goes through; it reads its key again once the move is done.
    func prepare() {
        // Every container of the key after the first finds it loaded, and looks nothing up. Read
        // under `ioLock`, which the load holds: a container made while another's load runs waits
        // for the loaded value, rather than writing over the default the load then replaces.
        guard !ioLock.withLock({ lock.withLock { ledger.isLoaded } }) else { return }
        let registry = StoredValueRegistry.shared
        var liveValues: [String: any LiveStoredValue] = [:]
        var result: (outcome: Outcome?, afterUnlocking: [() -> Void], hasLoaded: Bool)?
        var attempts = 0
        while result == nil {
            attempts += 1
            let registrations = registry.registrations
            liveValues = liveValuesOfPreviousKeys()
            let keyLocks = keyLocksForLoad(liveValues)
            for keyLock in keyLocks { keyLock.lock() }
            defer { for keyLock in keyLocks.reversed() { keyLock.unlock() } }
            let lockOrder = ([self] + liveValues.values).sorted { ObjectIdentifier($0) < ObjectIdentifier($1) }
            result = Self.withIOLocks(of: lockOrder[...]) {
                // Under `ioLock`, which every load holds: one of two racing loads runs.
                guard !lock.withLock({ ledger.isLoaded }) else { return (nil, [], false) }
                // Bounded, so that a stream of new containers elsewhere cannot hold the load up.
                guard previousCodecs.isEmpty || registry.registrations == registrations || attempts > 100 else {
                    return nil
                }
                lock.withLock { ledger.loadStarts() }
                let (moveFailure, afterMove) = moveFromPreviousKeys(throughLiveValues: liveValues, keyLocks: keyLocks)
                let (loaded, outcome) = loadInitialValue(keyLocks: keyLocks)
                cell.lock.withLock { cell.storedValue = loaded }
                watchToken = codec.watch { [weak self] in self?.storageMayHaveChanged() }
                return (outcome ?? moveFailure, afterMove, true)
            }
        }
        guard let result else { return }
        if let outcome = result.outcome { publish(outcome) }
        for action in result.afterUnlocking { action() }
        guard result.hasLoaded, !previousCodecs.isEmpty else { return }
        for (previousKey, live) in liveValuesOfPreviousKeys() where live !== liveValues[previousKey] {
            live.storageMayHaveChangedNow()
        }
    }

    /// The live values, of any type, that hold the earlier keys in this storage, by key; never
    /// this one (a key listed as its own earlier key).
    private func liveValuesOfPreviousKeys() -> [String: any LiveStoredValue] {
        var found: [String: any LiveStoredValue] = [:]
        for previous in previousCodecs where found[previous.key] == nil {
            guard let live = StoredValueRegistry.shared.liveStoredValue(key: previous.key, location: location),
                live !== self
            else { continue }
            found[previous.key] = live
        }
        return found
    }

    /// The key locks a load takes first when the storage is shared across processes: this key's and
    /// its earlier keys' (a live value's own, where one is installed), in the order of their paths,
    /// so that two processes' loads never wait for each other in a cycle.
    private func keyLocksForLoad(_ liveValues: [String: any LiveStoredValue]) -> [SharedKeyLock] {
        guard let path = codec.sharedLockPath else { return [] }
        var locks = [sharedKeyLock.current ?? SharedKeyLock(path: path)]
        for previous in previousCodecs {
            guard let path = previous.codec.sharedLockPath, !locks.contains(where: { $0.path == path }) else {
                continue
            }
            locks.append(liveValues[previous.key]?.installedKeyLock ?? SharedKeyLock(path: path))
        }
        return locks.sorted { $0.path < $1.path }
    }

    /// Advances the generation of each of `keyLocks`, held, before a load changes what a key's
    /// file holds (see ``SharedKeyLock``).
    private static func advanceGenerations(_ keyLocks: [SharedKeyLock]) {
        for keyLock in keyLocks { _ = keyLock.advanceGeneration() }
    }

    /// Runs `body` holding the `ioLock` of each of `values`, taken in their order.
    private static func withIOLocks<Result>(
        of values: ArraySlice<any LiveStoredValue>,
        _ body: () -> Result
    ) -> Result {
        guard let first = values.first else { return body() }
        return first.ioLock.withLock { withIOLocks(of: values.dropFirst(), body) }
    }

    /// Adds a container made with ``State/init(sharing:key:)`` over ``cell``.
    ///
    /// For `UserDefaults`, which other code in the process may have just written, the key is read
    /// again first, so the new container starts from what it holds now.
    func add(_ member: State<Value>) {
        lock.withLock {
            members.removeAll { $0.container == nil }
            members.append(WeakContainer(container: member))
        }
        if savesInline { checkStorage(isSettled: false) }
    }

    /// Takes `value` as the cell's own, as loaded, and saves it: a value newer than storage found
    /// at launch (a synced container's outbox logged it before the process was killed, and its save
    /// never ran). Only while `member` is the cell's one container, so that nobody has seen the
    /// value it replaces. The cell's version becomes at least `version`, so that the save sees a
    /// version newer than the one saved. Returns whether it did.
    ///
    /// A value storage did not hold is a local change the stored records may not mark yet (the
    /// outbox logs a change on the writer's thread, the ledger stores its mark later, with the
    /// value): the ledger takes it as one before the save is scheduled, so the mark is stored first.
    func adoptAtLaunch(_ value: Value, version: UInt64, by member: State<Value>) -> Bool {
        let isOnlyMember = lock.withLock {
            members.allSatisfy { $0.container == nil || $0.container === member }
        }
        guard isOnlyMember else { return false }
        let fingerprint = try? codec.encode(value)?.fingerprint
        let isNew = fingerprint == nil || !storageHolds(fingerprint: fingerprint)
        let adoptedVersion = cell.lock.withLock {
            cell.storedValue = value
            cell.storedVersion = max(cell.storedVersion, version)
            return cell.storedVersion
        }
        if isNew { _ = lock.withLock { ledger.localChange(adoptedVersion) } }
        scheduleSave()
        return true
    }

    /// Saves the newest value now if it is not saved yet, retrying a failed save, and returns
    /// once it is in storage, cannot be encoded, or the attempts are used up; the outcome is
    /// published before it returns.
    func flush() {
        var delay = 0.01
        for _ in 0..<4 {
            if saveNewest() { return }
            Thread.sleep(forTimeInterval: delay)
            delay *= 4
        }
    }

    /// ``flush()`` for async code: run on the cell's own queue and awaited, so that a slow or
    /// failing storage never holds a thread of the cooperative pool.
    func flushOffThePool() async {
        await withCheckedContinuation { continuation in
            queue.async {
                self.flush()
                continuation.resume()
            }
        }
    }

    /// Whether storage holds the cell's value of `version`, or a newer one, forced to disk (for
    /// ``WriteReceipt/saved(timeout:)``): the storage forces it now, on the cell's queue (a key
    /// shared across processes is written without it; `UserDefaults` writes its file later).
    /// `nil` when it never will: storage in memory.
    func holdsOnDisk(_ version: UInt64) async -> Bool? {
        guard lock.withLock({ ledger.storageHolds(version: version) }) else { return false }
        return await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.codec.makeDurable() ? true : nil) }
        }
    }

    // MARK: Saving

    /// Keeps the records of the cell's remote destinations in `store` from now on: every save
    /// stores them around the value, as the ledger says.
    func keepRecords(in store: SyncRecordStore) {
        lock.withLock { recordStore = store }
    }

    func retire() -> Bool {
        guard lock.withLock({ members.allSatisfy { $0.container == nil } }) else { return false }
        flush()
        lock.withLock {
            ledger.stopSaving(nil)
            members = []
        }
        ioLock.withLock { watchToken = nil }
        return true
    }

    private func scheduleSave(after delay: Double = 0) {
        if savesInline && delay == 0 {
            saveNewest()
            return
        }
        guard lock.withLock({ ledger.saveWanted() }) else { return }
        queue.asyncAfter(deadline: .now() + delay) {
            self.lock.withLock { self.ledger.scheduledSaveStarts() }
            if !self.saveNewest() { self.scheduleRetry() }
        }
    }

    /// After a failed background save, tries again later (0.1 s, doubling, at most 30 s), while
    /// the newest value is not saved.
    private func scheduleRetry() {
        scheduleSave(after: lock.withLock { ledger.retryDelay })
    }

    /// Writes the cell's newest value unless it is already saved. Returns whether that is done
    /// with: storage holds the newest value, or it cannot be encoded (its error stands until a
    /// later value is saved); `false` after a failed write, which is worth retrying.
    ///
    /// A failed save leaves the value unsaved, and does not make what it tried to write the known
    /// content of storage: only a save that succeeded does.
    @discardableResult
    private func saveNewest() -> Bool {
        let keyLock = sharedKeyLock.current
        if let keyLock {
            // A write on this thread holds the key (a flush inside its body): it saves the
            // cell's value as it makes it. Another thread's hold is waited for below.
            guard !keyLock.isHeldByCurrentThread else { return true }
            if isNewestSaved {
                // The gate saved it: what is left is an agreement's records, which only the key's
                // sender writes, so without the key's lock.
                guard let failed = ioLock.withLock({ storeRecords(nil) }) else { return true }
                publish(failed)
                return false
            }
            keyLock.lock()
        }
        let (outcome, isDone) = ioLock.withLock { saveNewestLocked() }
        keyLock?.unlock()
        publish(outcome)
        return isDone
    }

    /// ``saveNewest()``'s work, with `ioLock` held: returns the outcome to publish once it is
    /// released, and whether saving is done with.
    ///
    /// The ledger says what to write (``CellLedger/beginSave(version:)``): a local change's unsent
    /// mark goes into the records before the value, and an agreement's records after it.
    private func saveNewestLocked() -> (outcome: Outcome, isDone: Bool) {
        let (newest, newestVersion) = cell.lock.withLock { (cell.storedValue, cell.storedVersion) }
        let (isSaving, plan) = lock.withLock { (ledger.isSaving, ledger.beginSave(version: newestVersion)) }
        guard isSaving else { return (Outcome(), true) }
        let recordsFirst: [String: SyncRecord]?
        switch plan {
        case .upToDate:
            // Storage holds the newest value, whichever save put it there (one that succeeded on
            // another thread may not have published yet); an agreement may have left records.
            if let failed = storeRecords(nil) { return (failed, false) }
            return (savedOutcome(newestVersion), true)
        case .unencodable:
            return (Outcome(), true)
        case .write(let first):
            recordsFirst = first
        }
        if let recordsFirst, let failed = storeRecords(recordsFirst) {
            return (failed, false)
        }
        let representation: StoredRepresentation?
        do {
            representation = try codec.encode(newest)
        } catch {
            lock.withLock { ledger.encodeFailed(version: newestVersion, error: error) }
            return (
                Outcome(
                    isSaveErrorChanged: true,
                    diagnostic: StateDiagnostic(
                        kind: .encodingFailed, keys: [key],
                        message: "could not encode \(Value.self) for \(codec.location): \(error)", error: error)),
                true
            )
        }
        let fingerprint = representation?.fingerprint
        if !storageHolds(fingerprint: fingerprint) {
            // A key shared across processes: its generation moves before its file is replaced
            // (see ``SharedKeyLock``), and only then, so that a save with nothing to write does not
            // send every other process to read the file.
            if let keyLock = sharedKeyLock.current, keyLock.isHeldByCurrentThread { _ = keyLock.advanceGeneration() }
            do {
                try storeLocked(representation) { try codec.store(representation) }
            } catch {
                return (failedSave(error), false)
            }
        }
        let saved = savedOutcome(newestVersion)
        if let failed = storeRecords(nil) { return (failed, false) }
        return (saved, true)
    }

    /// Storage holds the cell's value of `version`: the outcome tells the save error's observers
    /// if that cleared it.
    private func savedOutcome(_ version: UInt64, journalSequence: UInt64? = nil) -> Outcome {
        Outcome(
            isSaveErrorChanged: lock.withLock {
                if let journalSequence { ledger.journaled(version, sequence: journalSequence) }
                return ledger.saveSucceeded(version: version)
            })
    }

    /// Stores `records`, or what the ledger says to store now when `nil`, in the record store;
    /// with `ioLock` held. Returns the outcome of a failure.
    private func storeRecords(_ records: [String: SyncRecord]?) -> Outcome? {
        let (store, toStore) = lock.withLock { (recordStore, records ?? ledger.recordsToStore()) }
        guard let store, let toStore else { return nil }
        do {
            try store.write(toStore)
        } catch {
            return failedSave(error)
        }
        lock.withLock { ledger.recordsStored(toStore) }
        return nil
    }

    /// The outcome of a failed save: the error, and a diagnostic unless the same failure was
    /// reported already (a full disk is reported once, not once per retry).
    private func failedSave(_ error: any Error) -> Outcome {
        let isNew = lock.withLock { ledger.saveFailed(error) }
        return Outcome(
            isSaveErrorChanged: true,
            diagnostic: isNew ? StoredValueRecovery.failure("saving", key: key, in: codec.location, error: error) : nil)
    }

    /// Publishes an outcome (the load and save errors' observers, a diagnostic) after the locks
    /// are released: each runs user code (Observation's `onChange`, the diagnostics handler). An
    /// outcome published late does no harm: the errors are read from the ledger.
    private func publish(_ outcome: Outcome) {
        if outcome.isLoadErrorChanged { status.loadErrorChanged() }
        if outcome.isSaveErrorChanged { status.saveErrorChanged() }
        if let diagnostic = outcome.diagnostic { StateDiagnostics.report(diagnostic) }
    }

    // MARK: Loading

    /// Moves the value from the newest earlier key that holds one to ``key``, once: written under
    /// the new key, then removed from the old one. A value already under the new key wins, and
    /// the earlier keys are removed; so a kill -9 between the two steps is finished at the next
    /// launch, and never leaves both keys in use.
    ///
    /// An earlier key with a live value in `liveValues` is saved first, so storage holds its
    /// newest value; if that save fails, the move stops there (the stale stored value is never
    /// moved) and is tried again at the next load. Called with the `ioLock`s of this value and of
    /// `liveValues` held.
    ///
    /// - Returns: The outcome of a failure, if any, and what to run once the locks are released:
    ///   publishing the live values' saves, and writing what their emptied keys now hold into
    ///   their cells.
    private func moveFromPreviousKeys(
        throughLiveValues liveValues: [String: any LiveStoredValue], keyLocks: [SharedKeyLock]
    ) -> (Outcome?, [() -> Void]) {
        guard !previousCodecs.isEmpty else { return (nil, []) }
        var afterUnlocking: [() -> Void] = []
        do {
            var hasValue = try codec.load() != nil
            for previous in previousCodecs {
                let live = liveValues[previous.key]
                if let live {
                    let (isSaved, publishSave) = live.flushForMoveLocked()
                    afterUnlocking.append(publishSave)
                    guard isSaved else { throw EarlierValueNotSaved(key: previous.key) }
                }
                guard let representation = try previous.codec.load() else { continue }
                Self.advanceGenerations(keyLocks)
                if !hasValue {
                    try codec.store(representation)
                    hasValue = true
                }
                try previous.codec.store(nil)
                if let live { afterUnlocking.append(live.storageChangedLocked()) }
            }
            return (nil, afterUnlocking)
        } catch {
            return (
                Outcome(
                    diagnostic: StoredValueRecovery.failure(
                        "moving to key '\(key)'", key: key, in: codec.location, error: error)),
                afterUnlocking
            )
        }
    }

    /// Saves the newest value now, if it is not saved, for a key move that is about to copy what
    /// storage holds; called with `ioLock` held, once.
    ///
    /// - Returns: Whether storage holds the newest value (or a value that is not saved at all:
    ///   a value not loaded yet, or one that does not persist), and the publication of the save's
    ///   outcome, to run once the locks are released.
    func flushForMoveLocked() -> (isSaved: Bool, publish: () -> Void) {
        guard lock.withLock({ ledger.isLoaded }) else { return (true, {}) }
        let (outcome, _) = saveNewestLocked()
        let isSaved = lock.withLock { ledger.failure == nil }
        return (isSaved, { self.publish(outcome) })
    }

    /// The key's lock, once its writes take it (``shareAcrossProcesses(in:)``).
    var installedKeyLock: SharedKeyLock? {
        sharedKeyLock.current
    }

    /// Reads the key now, and writes what it holds into the cell if that is an outside change.
    func storageMayHaveChangedNow() {
        checkStorage(isSettled: false)
    }

    /// Reads the key again at once, after a key move changed it; called with `ioLock` held.
    ///
    /// - Returns: What to run once the locks are released: writing what the key holds now (after
    ///   a move, nothing: the default) into the cell as one outside change, as
    ///   ``storageMayHaveChanged()`` would a little later.
    func storageChangedLocked() -> () -> Void {
        var outcome = Outcome()
        let found = readStorageLocked(isSettled: false, outcome: &outcome)
        return {
            self.publish(outcome)
            if let found { self.applyOutside(found.value, readAt: found.generation) }
        }
    }

    /// The stored value, or the default when there is none, or none that can be used (reported,
    /// and the data moved aside: if it cannot be, nothing is saved, so it is not overwritten).
    /// `keyLocks` are held (storage shared across processes).
    private func loadInitialValue(keyLocks: [SharedKeyLock]) -> (Value, Outcome?) {
        let representation: StoredRepresentation
        do {
            guard let stored = try codec.load() else { return (defaultValue, nil) }
            representation = stored
        } catch {
            return (defaultValue, setAsideAtLoad(error: error, reading: true, keyLocks: keyLocks))
        }
        do {
            let loaded = try codec.decode(representation)
            noteStored(fingerprint: representation.fingerprint)
            return (loaded, nil)
        } catch {
            return (defaultValue, setAsideAtLoad(error: error, reading: false, keyLocks: keyLocks))
        }
    }

    private func setAsideAtLoad(error: any Error, reading: Bool, keyLocks: [SharedKeyLock]) -> Outcome {
        let kind: StateDiagnostic.Kind = reading ? .storageFailed : .decodingFailed
        let problem =
            reading
            ? "the value stored in \(codec.location) could not be read: \(error)"
            : "the value stored in \(codec.location) does not decode as \(Value.self): "
                + StoredValueRecovery.describe(error)
        do {
            Self.advanceGenerations(keyLocks)
            let asideKey = try codec.moveAside()
            return Outcome(
                isLoadErrorChanged: lock.withLock { ledger.storageRead(error: error) },
                diagnostic: StateDiagnostic(
                    kind: kind, keys: [key],
                    message: "\(problem); started from the default value and kept the stored value as '\(asideKey)'",
                    error: error))
        } catch let moveError {
            let isLoadErrorChanged = lock.withLock {
                ledger.stopSaving(SavingStopped(key: key, location: codec.location, reason: moveError))
                return ledger.storageRead(error: error)
            }
            return Outcome(
                isLoadErrorChanged: isLoadErrorChanged,
                isSaveErrorChanged: true,
                diagnostic: StateDiagnostic(
                    kind: kind, keys: [key],
                    message: "\(problem); started from the default value, and will not save, because moving the "
                        + "stored value aside failed: \(moveError)",
                    error: error))
        }
    }

    // MARK: Outside changes

    /// Called by the storage's watcher: reads the key soon, coalescing a burst of events.
    func storageMayHaveChanged() {
        let isNew = lock.withLock {
            guard !isCheckScheduled else { return false }
            isCheckScheduled = true
            return true
        }
        guard isNew else { return }
        queue.asyncAfter(deadline: .now() + 0.01) {
            self.lock.withLock { self.isCheckScheduled = false }
            self.checkStorage(isSettled: false)
        }
    }

    /// Reads the key and, if it holds something this process neither wrote, tried to write nor
    /// read last, writes it into the cell. Bytes that do not decode are given a moment (a writer
    /// may be halfway through), then kept aside and reported; the value stays as it was.
    private func checkStorage(isSettled: Bool) {
        // Shared across processes: each change of the key's journal, through its gate.
        if let gate = sharedWriteGate { return gate.catchUp() }
        var outcome = Outcome()
        let found = ioLock.withLock { readStorageLocked(isSettled: isSettled, outcome: &outcome) }
        publish(outcome)
        if let found { applyOutside(found.value, readAt: found.generation) }
    }

    /// ``checkStorage(isSettled:)``'s read, with `ioLock` held: the value to write into the cell,
    /// if any, and the save generation it was read at; what to publish goes into `outcome`.
    private func readStorageLocked(
        isSettled: Bool,
        outcome: inout Outcome
    ) -> (value: Value, generation: UInt64)? {
        guard lock.withLock({ ledger.isLoaded }) else { return nil }
        let representation: StoredRepresentation?
        do {
            representation = try codec.load()
        } catch {
            return nil
        }
        let fingerprint = representation?.fingerprint
        guard lock.withLock({ ledger.isOutsideChange(fingerprint) }) else { return nil }
        let newValue: Value
        if let representation {
            do {
                newValue = try codec.decode(representation)
            } catch {
                if isSettled {
                    noteStored(fingerprint: fingerprint)
                    outcome = keepOutsideBadData(representation, error: error)
                } else {
                    queue.asyncAfter(deadline: .now() + 0.15) { self.checkStorage(isSettled: true) }
                }
                return nil
            }
        } else {
            newValue = defaultValue
        }
        return lock.withLock {
            outcome.isLoadErrorChanged = ledger.storageRead(error: nil)
            ledger.storageHolds(fingerprint: fingerprint)
            return (newValue, ledger.storeGeneration)
        }
    }

    /// Writes a value read from storage into the cell as one change, which is not saved again,
    /// unless a save may have replaced it in storage since it was read (`generation`): the newer
    /// local value then stands. The cell's validator applies, as to any write; one it refuses is
    /// reported.
    ///
    /// Called without `ioLock`: the cell's subscribers run before it returns, and may save or flush.
    private func applyOutside(_ newValue: Value, readAt generation: UInt64) {
        let cell = self.cell
        let rejection = cell.write(
            unlessAlready: { current in
                // Runs under the cell's lock, right before the write (again after Observation's
                // willSet): the version it marks is the one the write takes, unless refused.
                if cell.isEqual?(current, newValue) ?? false { return true }
                var isRefused = false
                if let validator = cell.validator {
                    do { try validator(current, newValue) } catch { isRefused = true }
                }
                let version = cell.storedVersion &+ 1
                return self.lock.withLock {
                    guard self.ledger.storeGeneration == generation else { return true }
                    self.ledger.outsideValueApplied(isRefused ? nil : version)
                    return false
                }
            },
            origin: .external,
            { $0 = newValue }
        )
        rejection?.report()
    }

    private func keepOutsideBadData(_ representation: StoredRepresentation, error: any Error) -> Outcome {
        let problem =
            "the value written to \(codec.location) outside this container does not decode as \(Value.self): "
            + StoredValueRecovery.describe(error)
        let kept: String
        do {
            kept = "kept a copy as '\(try codec.copyAside(representation))'"
        } catch let copyError {
            kept = "could not keep a copy aside: \(copyError)"
        }
        return Outcome(
            isLoadErrorChanged: lock.withLock { ledger.storageRead(error: error) },
            diagnostic: StateDiagnostic(
                kind: .decodingFailed, keys: [key],
                message: "\(problem); the value stays as it was, and \(kept)", error: error))
    }
}

/// What a load, save or check found, published (the load and save errors' observers told,
/// diagnostic reported) after the locks are released: each runs user code (Observation's
/// `onChange`, the diagnostics handler). The errors themselves are the ledger's, noted when found.
private struct Outcome {
    /// Whether the ledger's load error changed.
    var isLoadErrorChanged = false
    /// Whether the ledger's save error changed.
    var isSaveErrorChanged = false
    var diagnostic: StateDiagnostic?
}

/// Why a key move stopped: a live value of an earlier key could not be saved first, and moving
/// what storage holds would move a stale value.
private struct EarlierValueNotSaved: Error, CustomStringConvertible {
    let key: String

    var description: String {
        "the newest value of the earlier key '\(key)' could not be saved first; the move is tried again at the next load"
    }
}

/// The error a persisted container reports as its ``PersistedState/saveError`` when it does not
/// save at all: the stored data could be neither read nor moved aside, and saving would
/// overwrite it.
public struct SavingStopped: Error, Sendable, CustomStringConvertible {
    /// The key that is not saved.
    public let key: String
    /// The storage's location.
    public let location: String
    /// Why the stored data could not be moved aside.
    public let reason: any Error

    /// `"not saving 'theme' in file:///…/: …"`.
    public var description: String {
        "not saving '\(key)' in \(location): the stored value could be neither read nor moved aside (\(reason)), "
            + "so changes stay in memory"
    }
}

extension StoredValue: LedgerHost {
    func withLedger<Result>(_ body: (inout CellLedger) -> Result) -> Result {
        lock.withLock { body(&ledger) }
    }

    func noteLocalChange(_ version: UInt64) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return ledger.localChange(version)
    }

    func noteOverflow(_ slot: Int, _ overflow: SinkBooks.Overflow) {
        lock.lock()
        ledger.overflowed(slot, overflow)
        lock.unlock()
    }

    func storeLedgerSoon() {
        scheduleSave()
    }

    func flushLedger() async {
        await flushOffThePool()
    }
}

// MARK: - Shared across processes

/// What ``SharedWriteGate`` needs of the value's bookkeeping, kept here because it is private.
extension StoredValue {
    /// Whether storage holds the cell's newest value: the gate saved it, or it came from there.
    /// Then a save after a change has nothing to do, and does not take the key's lock (which
    /// another process's writers wait for).
    private var isNewestSaved: Bool {
        let newestVersion = cell.lock.withLock { cell.storedVersion }
        return lock.withLock { ledger.storageHolds(version: newestVersion) }
    }

    /// The gate wrote the key's file without forcing it to disk: whether to schedule that
    /// (``CellLedger/syncWanted()``).
    func syncWanted() -> Bool {
        lock.withLock { ledger.syncWanted() }
    }

    /// The scheduled forcing of the key's file starts.
    func scheduledSyncStarts() {
        lock.withLock { ledger.scheduledSyncStarts() }
    }

    /// Whether storage holds the bytes of `fingerprint`, as the cell last read or wrote it.
    func storageHolds(fingerprint: Data?) -> Bool {
        lock.withLock { ledger.storedFingerprint == fingerprint }
    }

    /// The shared key's generation and file stamp are `stamp` now (`nil`: unknown); returns whether
    /// either moved since the cell last read or wrote the file (see ``CellLedger/storageSeen(at:)``).
    @discardableResult
    func storageSeen(at stamp: (generation: UInt64, stamp: FileStamp)?) -> Bool {
        lock.withLock { ledger.storageSeen(at: stamp) }
    }

    /// Storage holds the bytes of `fingerprint`: the cell read them (the gate, from the key's
    /// journal too), or wrote them.
    func noteStored(fingerprint: Data?) {
        lock.withLock { ledger.storageHolds(fingerprint: fingerprint) }
    }

    /// Reads the key, for the gate, with `ioLock` held, and returns its value if storage holds
    /// other bytes than the cell last read or wrote: the value to write into the cell. An absent
    /// value is the default. Bytes that do not decode are kept aside, as the watcher's check does,
    /// before the gate's write replaces them; the report is in `publishLater`, to run once no lock
    /// is held.
    func readChangedLocked(publishLater: inout (() -> Void)?) -> Value? {
        // A value the watcher read earlier is not written into the cell after this read, even when
        // the file is back to what the gate knew (another process's writes went A, B, A), since
        // the watcher may have read the B.
        lock.withLock { ledger.writeStarted() }
        let found: StoredRepresentation?
        do {
            found = try codec.load()
        } catch {
            return nil
        }
        let fingerprint = found?.fingerprint
        guard !storageHolds(fingerprint: fingerprint) else { return nil }
        let value: Value
        do {
            value = try found.map(codec.decode) ?? defaultValue
        } catch {
            if let found {
                let outcome = keepOutsideBadData(found, error: error)
                publishLater = { self.publish(outcome) }
            }
            noteStored(fingerprint: fingerprint)
            return nil
        }
        noteStored(fingerprint: fingerprint)
        return value
    }

    /// Writes `representation` through `write`, with `ioLock` held, keeping the ledger's
    /// bookkeeping of a write: storage may hold it even when the write fails.
    func storeLocked(_ representation: StoredRepresentation?, through write: () throws -> Void) throws {
        lock.withLock { ledger.writeStarted() }
        do {
            try write()
        } catch {
            lock.withLock { ledger.writeFailed(fingerprint: representation?.fingerprint) }
            throw error
        }
        noteStored(fingerprint: representation?.fingerprint)
    }

    /// Storage holds the cell's value at `version`, the key's file as of its journal's entry
    /// `journalSequence`, if known: the save after the change has nothing to do. Takes the value's own lock,
    /// which may be taken under the cell's. Returns what to publish once no lock is held, when
    /// that cleared the save error.
    func noteSaved(version: UInt64, journalSequence: UInt64?) -> (() -> Void)? {
        let outcome = savedOutcome(version, journalSequence: journalSequence)
        return outcome.isSaveErrorChanged ? { self.publish(outcome) } : nil
    }

    /// The gate's save failed: the ledger keeps the error at once (a save that succeeds after it
    /// clears it). Takes the value's own lock, which may be taken under the cell's. Returns what to
    /// publish once no lock is held: the error's observers and its report.
    func noteSaveFailed(_ error: any Error) -> () -> Void {
        let outcome = failedSave(error)
        return { self.publish(outcome) }
    }
}
