import Foundation

/// The remote-sync channels of one persisted key's cell, one per destination, and the key's one
/// store of sync records: what makes persisted ``SyncedState``s of one key that sync to one
/// destination share one channel and one ledger.
///
/// The first container to sync the cell to a destination (a ``RemoteSyncSink/destination``) makes
/// its pipeline, connects its sink through the cell and hands both to this object, which feeds
/// the pipeline from a subscription of its own on the cell; later containers of that destination
/// join it instead of making another (so no conditional write of one conflicts with another's).
/// Each user is counted; the last to go closes the pipeline as a container's deinit closes its
/// own, and detaches the channel.
///
/// The records of every remote sink of the key (shared or not) live in one ``SyncRecordStore``,
/// since they are saved under one storage key: two stores would overwrite each other's records.
/// Their names stay unique among the containers alive at once.
///
/// Across processes (storage shared across processes), only the key's sender hands changes to a
/// destination's pipeline (``RemoteSenderLock``); the other processes' changes reach it through
/// the file, which its watcher sees as changes made outside. A process that takes the sender lock
/// (at launch, at a change once the sender is gone, or polling for it once it handed off changes
/// the sender may not have seen, ``waitForSender()``) first adopts the sync records the previous
/// sender stored, off the writer's thread, and holds its hand-offs back until then: its sink then
/// sends conditionally on the newest agreement, not on what it knew when it last sent.
///
/// The sender publishes what its destinations did with the key's journal entries
/// (``SharedOutcomes``), each time they settle more; a process that handed a change to another
/// process's sender answers that change's receipt from what the sender published
/// (``senderOutcome(of:at:)``).
///
/// `creation` serialises the containers' setup (held across a synced container's init, never
/// while a cell's lock is held); `lock` guards the rest, and is never held while calling out.
///
/// - Note: All operations on `CellRemotes` are thread-safe.
final class CellRemotes<Value: Sendable>: @unchecked Sendable {
    /// One destination's shared channel.
    private struct Remote {
        let pipeline: SinkPipeline<Value>
        let channel: RemoteChannel<Value>
        let subscription: Subscription
        /// Hands the pipeline the cell's current value as a local change.
        let sendCurrentValue: @Sendable () -> Void
        var users: Int
    }

    let key: String
    /// Held by a synced container across its setup, so that two containers made at once do not
    /// both open a destination's channel.
    let creation = Lock()
    private let storage: any StateStorage
    /// The cell whose ledger holds the records; weak, as the cell keeps this object.
    private weak var cell: StoredValue<Value>?
    private let lock = Lock()
    // Guarded by `lock`.
    private var remotes: [String: Remote] = [:]
    /// How many live users hold each record name.
    private var claimedNames: [String: Int] = [:]
    /// Weak: the channels keep it; one made again later finds the cell's ledger as it was.
    private weak var store: SyncRecordStore?
    /// Whether this process sends the key, when its storage is shared across processes.
    private let sender: RemoteSenderLock?
    /// How far this process is in sending the key, when its storage is shared across processes.
    private enum Sending {
        /// Another process sends, or none has changed the key yet.
        case no
        /// The sender lock is taken and the previous sender's records are being adopted; these
        /// hand-offs wait for that.
        case takingOver([@Sendable () -> Void])
        case yes
    }
    /// Guards `sending` and `isWaitingForSender`; held while the waiting hand-offs run, so that
    /// none overtakes them.
    private let sendingLock = Lock()
    private var sending = Sending.no
    /// Whether this process tries the sender lock every ``senderPollInterval`` (see
    /// ``waitForSender()``).
    private var isWaitingForSender = false
    /// Where the sender publishes its outcomes by journal entry, when storage is shared across
    /// processes.
    private let outcomesFile: SharedOutcomesFile?
    /// Held while a publication is made: one at a time, each going on from the file.
    private let publishing = Lock()
    /// Whether a publication is scheduled. Guarded by `lock`.
    private var isPublishScheduled = false
    /// Hears the shared pipelines settle changes, to publish them. Set once, in `init` (it
    /// holds this object weakly, so it is made after the other fields).
    private var settlements: StatisticsObserver?
    /// What a change's hand-off does, for ``handOn(_:_:)``.
    private enum HandOff { case now, later, waitForSender, takeOver }
    /// How often a process that handed off changes while another process sent the key tries
    /// the sender lock: how soon after the sender is gone those changes are sent.
    static var senderPollInterval: DispatchTimeInterval { .milliseconds(250) }

    init(key: String, storage: any StateStorage, cell: StoredValue<Value>) {
        self.key = key
        self.storage = storage
        self.cell = cell
        self.sender = RemoteSenderLock(key: key, storage: storage)
        self.outcomesFile = SharedOutcomesFile(key: key, storage: storage)
        if outcomesFile != nil { settlements = StatisticsObserver { [weak self] in self?.schedulePublication() } }
    }

    /// Whether the key's storage is shared across processes: another process may send it.
    var isAcrossProcesses: Bool { sender != nil }

    /// The pipeline serving `destination`, now with one more user, or `nil` when none does.
    func join(_ destination: String) -> SinkPipeline<Value>? {
        lock.withLock {
            guard remotes[destination] != nil else { return nil }
            remotes[destination]?.users += 1
            return remotes[destination]?.pipeline
        }
    }

    /// Claims the record names a container's new remote sinks asked for, each made unique among
    /// the names in use (a `'` added as ``SyncedState/recordNames(of:)`` does), and returns them
    /// with the key's record store, and whether it was just made (its maker starts it).
    func claimRecords(_ names: [String?]) -> (names: [String?], records: SyncRecordStore, isNew: Bool) {
        lock.withLock {
            let claimed = names.map { name -> String? in
                guard var name else { return nil }
                while claimedNames[name] != nil { name += "'" }
                claimedNames[name] = 1
                return name
            }
            let isNew = store == nil
            let records =
                store ?? SyncRecordStore(key: key, storage: storage, names: [], cell: cell, sender: sender)
            store = records
            records.include(claimed.compactMap { $0 })
            return (claimed, records, isNew)
        }
    }

    /// Gives back record names claimed for sinks that no shared channel holds.
    func releaseNames(_ names: [String]) {
        lock.withLock {
            for name in names { claimedNames[name] = nil }
        }
    }

    /// Takes `pipeline`, just made for `destination` and connected through `channel`, as the
    /// destination's shared pipeline, with one user, and feeds it every change of `cell` (a
    /// remote one only when it keeps a log: a remote sink is not handed what it took from its
    /// remote copy). `instance` marks the changes, as the maker's own sinks mark theirs.
    func serve(
        _ destination: String, pipeline: SinkPipeline<Value>, channel: RemoteChannel<Value>,
        cell: MonitoredState<Value>, instance: String?
    ) {
        let takesRemote = pipeline.log != nil
        let subscription = cell.addSubscriber(
            queue: nil,
            handler: .change { [weak self] change in
                guard takesRemote || change.origin != .remote else { return pipeline.skip(change.version) }
                guard let self else { return }
                let change = instance == nil ? change : change.made(by: instance)
                guard self.sender != nil else { return pipeline.enqueue(change) }
                self.handOn(change.version) { pipeline.enqueue(change) }
            },
            sendsCurrentValue: false
        )
        let key = self.key
        let sendCurrentValue: @Sendable () -> Void = { [weak cell] in
            guard let cell else { return }
            let (value, version) = cell.lock.withLock { (cell.storedValue, cell.storedVersion) }
            pipeline.enqueue(
                StateChange(
                    key: key, oldValue: value, newValue: value, version: version, timestamp: Date(),
                    instance: instance, origin: .local))
        }
        lock.withLock {
            remotes[destination] = Remote(
                pipeline: pipeline, channel: channel, subscription: subscription,
                sendCurrentValue: sendCurrentValue, users: 1)
        }
        if let settlements { pipeline.observeStatistics(settlements) }
    }

    /// Whether this process sends the key: without sharing across processes, always; otherwise it
    /// holds the sender lock, or takes it now and adopts the previous sender's records on this
    /// thread (a container's launch, which reads storage anyway).
    func takeOverNow() -> Bool {
        guard let sender else { return true }
        let isNew: Bool? = sendingLock.withLock {
            guard case .no = sending else { return false }
            guard sender.tryLock() else { return nil }
            sending = .takingOver([])
            return true
        }
        guard let isNew else { return false }
        if isNew { finishTakingOver() }
        return true
    }

    /// Returns once a takeover under way has handed on what waited for it.
    func takeoverFinished() async {
        guard sender != nil else { return }
        await withCheckedContinuation { continuation in
            RemoteSenderLock.takeOverQueue.async { continuation.resume() }
        }
    }

    /// Runs `enqueue`, the hand-off of the change of `version` to a shared pipeline, if this
    /// process sends the key: at once when it does; once the takeover is done when it takes the
    /// sender lock now; never while another process holds it (that process's sender sends it,
    /// and publishes its outcome).
    private func handOn(_ version: UInt64, _ enqueue: @escaping @Sendable () -> Void) {
        guard let sender else { return enqueue() }
        let step: HandOff = sendingLock.withLock {
            switch sending {
            case .yes:
                return .now
            case .takingOver(let waiting):
                sending = .takingOver(waiting + [enqueue])
                return .later
            case .no:
                guard sender.tryLock() else {
                    cell?.withLedger { $0.handedToSender(version) }
                    defer { isWaitingForSender = true }
                    return isWaitingForSender ? .later : .waitForSender
                }
                sending = .takingOver([enqueue])
                return .takeOver
            }
        }
        switch step {
        case .now: enqueue()
        case .takeOver: RemoteSenderLock.takeOverQueue.async { self.finishTakingOver() }
        case .waitForSender: waitForSender()
        case .later: break
        }
    }

    /// Tries the sender lock every ``senderPollInterval`` until this process sends the key; when
    /// it takes the lock, it sends the key's current value. This process handed off changes the
    /// sender may never have seen (it sees another process's write within its watcher's delay),
    /// and the sender may exit or die before it does, with no change after them to take over at.
    /// Ends when this process sends, or the key's last synced container is gone.
    private func waitForSender() {
        RemoteSenderLock.takeOverQueue.asyncAfter(deadline: .now() + Self.senderPollInterval) { [weak self] in
            guard let self, let sender = self.sender else { return }
            let takesOver: Bool? = self.sendingLock.withLock {
                guard case .no = self.sending else { return nil }
                guard sender.tryLock() else { return false }
                self.sending = .takingOver([{ self.sendCurrentValues() }])
                return true
            }
            switch takesOver {
            case true?: self.finishTakingOver()
            case false?: self.waitForSender()
            case nil: break
            }
        }
    }

    /// Hands every destination's pipeline the cell's current value.
    private func sendCurrentValues() {
        for send in lock.withLock({ remotes.values.map(\.sendCurrentValue) }) { send() }
    }

    /// Adopts the records the previous sender stored, then hands on what waited for that.
    private func finishTakingOver() {
        lock.withLock { store }?.adoptSendersRecords()
        sendingLock.withLock {
            sender?.startSending()
            if case .takingOver(let waiting) = sending {
                for enqueue in waiting { enqueue() }
            }
            sending = .yes
        }
    }

    // MARK: Outcomes across processes

    /// What another process's sender published for the change of `version`, which this process
    /// handed to it, at `pipeline`, one of the cell's shared ones: `nil` while it is not settled,
    /// and for a change this process did not hand off, or whose journal entry it does not know
    /// (its append failed: the sender took the file in at a later entry).
    func senderOutcome(of version: UInt64, at pipeline: SinkPipeline<Value>) -> WriteOutcome? {
        guard let outcomesFile, lock.withLock({ remotes.values.contains { $0.pipeline === pipeline } }),
            let sequence = cell?.withLedger({ $0.handedEntry(of: version) })
        else { return nil }
        return outcomesFile.read().outcome(ofEntry: sequence)
    }

    /// A shared pipeline settled changes: publishes them soon, if this process sends the key (in
    /// the others, a change handed to a pipeline costs nothing more).
    private func schedulePublication() {
        guard sender?.isSending == true else { return }
        let isNew = lock.withLock {
            defer { isPublishScheduled = true }
            return !isPublishScheduled
        }
        guard isNew else { return }
        DispatchQueue.global(qos: .utility).async { self.publish() }
    }

    /// Publishes what the cell's destinations settled since the last publication, by journal
    /// entry, in order: the entries up to each version of the cell that every destination settled
    /// share that version's outcome.
    private func publish() {
        lock.withLock { isPublishScheduled = false }
        guard let outcomesFile, let cell, sendingLock.withLock({ if case .yes = sending { true } else { false } })
        else { return }
        publishing.withLock {
            var outcomes = outcomesFile.read()
            let before = outcomes
            let pipelines = lock.withLock { remotes.values.map(\.pipeline) }
            for (version, sequence) in cell.withLedger({ $0.journaled(after: outcomes.settledThrough) })
            where sequence > outcomes.settledThrough {
                let found = pipelines.reduce(WriteOutcome.delivered as WriteOutcome?) { sofar, pipeline in
                    WriteOutcome.combining(sofar, pipeline.outcomes(of: [version])[0])
                }
                guard let found else { break }
                outcomes.settle(through: sequence, as: found)
            }
            guard outcomes != before else { return }
            // On failure, written whole at the next settlement; the other processes' receipts wait.
            try? outcomesFile.write(outcomes)
        }
    }

    /// One user of `destination` is gone; the last one closes its pipeline, as a released
    /// container closes its own, and detaches its channel.
    func leave(_ destination: String) {
        let closed: Remote? = lock.withLock {
            guard var remote = remotes[destination] else { return nil }
            remote.users -= 1
            guard remote.users == 0 else {
                remotes[destination] = remote
                return nil
            }
            remotes[destination] = nil
            claimedNames[remote.channel.recordName] = nil
            return remote
        }
        guard let closed else { return }
        closed.subscription.cancel()
        closed.pipeline.close()
        closed.channel.detach()
    }
}
