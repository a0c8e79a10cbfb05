/// The remote-sync channels of one persisted key's cell, one per destination, and the key's one
/// store of sync records: what makes persisted ``SyncedState``s of one key that sync to one
/// destination share one channel and one ledger (DESIGN 21).
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
    let sender: RemoteSenderLock?

    init(key: String, storage: any StateStorage, cell: StoredValue<Value>) {
        self.key = key
        self.storage = storage
        self.cell = cell
        self.sender = RemoteSenderLock(key: key, storage: storage)
    }

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
            let records = store ?? SyncRecordStore(key: key, storage: storage, names: [], cell: cell)
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
        let sender = self.sender
        let subscription = cell.addSubscriber(
            queue: nil,
            handler: .change { change in
                guard takesRemote || change.origin != .remote, sender?.isSender ?? true else { return }
                pipeline.enqueue(instance == nil ? change : change.made(by: instance))
            },
            sendsCurrentValue: false
        )
        lock.withLock {
            remotes[destination] = Remote(pipeline: pipeline, channel: channel, subscription: subscription, users: 1)
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
