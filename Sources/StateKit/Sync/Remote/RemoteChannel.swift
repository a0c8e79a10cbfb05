import Foundation

/// A remote-sync sink's way into its container: read it, and apply remote values that the
/// container does not send back to the sink.
///
/// Each remote sink of a container gets a channel of its own, with its ``syncRecord``: what the
/// sink and its server last agreed on, kept with a persisted container's value across launches.
///
/// The channel holds its container weakly (the container owns the sink that owns the channel);
/// once the container is gone, reads return `nil` and writes do nothing. The channel of a sink
/// shared by the persisted containers of one key (sinks of one `destination`) works
/// through their shared cell instead, for as long as any of them lives.
///
/// - Note: All operations on `RemoteChannel` are thread-safe.
public final class RemoteChannel<Value: Sendable>: @unchecked Sendable {
    /// The key of the container.
    public let key: String
    /// The name the sink's ``syncRecord`` is kept under: the sink's ``StateSink/name``, made
    /// unique among the container's remote sinks.
    public let recordName: String
    private let lock = Lock()
    /// The container, or the cell its key's persisted containers share. Guarded by `lock`.
    private weak var state: MonitoredState<Value>?
    private let records: SyncRecordStore
    /// Whether the container keeps its value in storage.
    private let isPersisted: Bool
    /// The pipeline of the sink this channel was made for; held weakly, as the sink holds the
    /// channel and the pipeline holds the sink.
    private weak var pipeline: SinkPipeline<Value>?

    /// A channel into `state` alone.
    init(state: SyncedState<Value>, recordName: String, records: SyncRecordStore) {
        self.key = state.key
        self.recordName = recordName
        self.state = state
        self.records = records
        self.isPersisted = state.persistence != nil
        let names = SyncedState<Value>.recordNames(of: state.pipelines.map(\.sink))
        let pipeline = zip(state.pipelines, names).first { $0.1 == recordName }?.0
        self.pipeline = pipeline
        // Connected: its destination has yet to answer, and the status says so until it does.
        pipeline?.awaitFirstContact()
    }

    /// Runs `load`, the sink's load of the remote value when its container starts, on a task of
    /// its own, and lets the container's status and ``SyncedState/flush()`` know of it.
    ///
    /// A remote sink that loads at start calls it from ``RemoteSyncSink/connect(_:)``:
    /// ``SyncedState/flush()`` and ``SyncedState/flush(timeout:)`` wait for `load` to finish, so
    /// the container's value right after a flush is the server's (merged with unsent local
    /// changes as the sink's conflict rules say), and a short-lived process does not exit before
    /// it. A `load` that returns is the destination's first answer
    /// (``SinkStatistics/isAwaitingFirstContact`` becomes `false`); one that throws is the sink's
    /// ``SinkStatistics/lastError`` until a load or a send succeeds, and is tried again on the
    /// sink's retry schedule (``SinkPolicy/retry``, then ``SinkPolicy/afterRepeatedFailures``'s
    /// interval), and at once by ``SyncedState/flush(timeout:)`` and ``SyncedState/refresh()``.
    ///
    /// ```swift
    /// struct ProfileSink: RemoteSyncSink {
    ///     func send(_ changes: [StateChange<Int>]) async throws {}
    ///     func refresh() async throws {}
    ///     func connect(_ channel: RemoteChannel<Int>) {
    ///         channel.loadAtStart { try await refresh() }
    ///     }
    /// }
    /// ```
    ///
    /// - Parameter load: The load; it should give up within a bounded time (a request timeout),
    ///   as flushes wait for it.
    public func loadAtStart(_ load: @escaping @Sendable () async throws -> Void) {
        guard let pipeline = lock.withLock({ self.pipeline }) else {
            Task { try? await load() }
            return
        }
        pipeline.load(load)
    }

    /// A channel into the cell of `persistence`, shared by the persisted containers of its key
    /// until ``detach()``, for the sink of the shared `pipeline`.
    init(
        cell persistence: StoredValue<Value>, recordName: String, records: SyncRecordStore,
        pipeline: SinkPipeline<Value>
    ) {
        self.key = persistence.key
        self.recordName = recordName
        self.state = persistence.cell
        self.records = records
        self.isPersisted = true
        self.pipeline = pipeline
        // Connected: its destination has yet to answer, and the status says so until it does.
        pipeline.awaitFirstContact()
    }

    /// A channel into no container, for a remote sink used on its own (sent changes without a
    /// ``SyncedState``): its record lives in a ledger of its own, in memory, under `key`.
    package init(unattachedKey key: String, recordName: String) {
        self.key = key
        self.recordName = recordName
        self.records = SyncRecordStore(key: key, storage: nil, names: [recordName])
        self.isPersisted = false
    }

    /// The last container using a shared channel is gone: from now on it is as a released
    /// container's.
    func detach() {
        lock.withLock {
            state = nil
        }
    }

    private var container: MonitoredState<Value>? {
        lock.withLock { state }
    }

    /// The container's value and version, read together; `nil` once the container is gone.
    public var current: (value: Value, version: UInt64)? {
        guard let state = container else { return nil }
        return state.lock.withLock { (state.storedValue, state.storedVersion) }
    }

    /// Writes `value`, which came from the remote copy, into the container as one change marked
    /// remote, and returns the change's version.
    ///
    /// With `ifVersion`, the write happens only if the container is still at that version, so a
    /// local change made meanwhile is never overwritten silently: the sink sees `nil` and resolves
    /// the conflict instead. The container's validator applies as to any write.
    ///
    /// - Parameters:
    ///   - value: The remote value.
    ///   - ifVersion: The version the container must still be at; `nil` to write unconditionally.
    /// - Returns: The version of the change, or `nil` when nothing was written: the container is
    ///   gone, has moved past `ifVersion`, or its validator refused (reported as for any write).
    @discardableResult
    public func applyRemote(_ value: Value, ifVersion: UInt64? = nil) -> UInt64? {
        guard let state = container else { return nil }
        var version: UInt64?
        let rejection = state.write(
            unlessAlready: { _ in
                // Runs under the container's lock, right before the write (again after
                // Observation's willSet, when observed): the last answer is the one that counts.
                let isCurrent = ifVersion.map { state.storedVersion == $0 } ?? true
                version = isCurrent ? state.storedVersion &+ 1 : nil
                return !isCurrent
            },
            origin: .remote,
            { $0 = value }
        )
        guard let rejection else { return version }
        rejection.report()
        return nil
    }

    /// Mutates the container's value as one local change (sent on to every sink, this one
    /// included), such as the result of merging a remote value into it, and returns its version.
    ///
    /// - Returns: The version of the change, or `nil` when the container is gone or its validator
    ///   refused (reported as for any write).
    @discardableResult
    public func modify(_ body: (inout Value) -> Void) -> UInt64? {
        guard let state = container else { return nil }
        var version: UInt64?
        let rejection = state.write(
            unlessAlready: { _ in
                version = state.storedVersion &+ 1
                return false
            },
            body
        )
        guard let rejection else { return version }
        rejection.report()
        return nil
    }

    /// Whether `change` came from a remote copy (``ChangeOrigin/remote``), such as one applied
    /// with ``applyRemote(_:ifVersion:)``: it must not be sent back.
    public func isRemote(_ change: StateChange<Value>) -> Bool {
        change.origin == .remote
    }

    /// What this sink and its server last agreed on, and whether local changes are unsent; read
    /// from storage when a persisted container starts.
    public var syncRecord: SyncRecord {
        records.record(recordName)
    }

    /// Notes, before the sink writes `data` (encoded as the sink encodes values) to its server,
    /// that it is sending it, and returns once the note is stored; a container whose records are
    /// kept in memory only returns at once.
    ///
    /// A process killed after the write reached the server and before its agreement was recorded
    /// leaves `data` in ``syncRecord`` (``SyncRecord/sending``): the next launch, or across
    /// processes the process that takes over sending the key, finds it there. A server holding
    /// those bytes holds the cell's own value, not another device's: no conflict, and newer local
    /// changes are written over it; a server holding their first bytes holds the write cut short.
    public func recordSending(_ data: Data) async {
        guard records.notesSending else { return }
        await records.sending(recordName, data: data)
    }

    /// Records that the server holds `base` under `validator` while the container's local changes
    /// stay unsent: its validator moved, its value was cut short, or a conflict was resolved for
    /// the local side (`version`, the local value that includes `base`; `nil` until it is made).
    ///
    /// The ledger takes it now, for the sink's next conditional write, and stores it once storage
    /// holds that local value: a kill never leaves a record whose base the stored value lacks.
    package func recordBase(_ base: Data?, validator: String?, from version: UInt64?) {
        guard container != nil || !isPersisted else { return }
        records.base(recordName, base: base, validator: validator, from: version)
    }

    /// The container's version the server last agreed on this launch (0: none): a change up to it
    /// needs no sending.
    package var agreedVersion: UInt64 {
        records.agreedVersion(of: recordName)
    }

    /// Records that the server's value replaced the container's local changes up to `version`
    /// (a conflict resolved for the server): they were never delivered.
    package func recordDiscarded(through version: UInt64) {
        records.discarded(recordName, through: version)
    }

    /// Whether the server's value replaced the local change of `version`
    /// (``recordDiscarded(through:)``).
    package func isDiscarded(_ version: UInt64) -> Bool {
        records.isDiscarded(recordName, version: version)
    }

    /// Records that the server now holds `base` (encoded as the sink encodes values) under
    /// `validator`, as of the container's `version`: local changes made after that version stay
    /// unsent.
    ///
    /// It returns at once: the cell's ledger (``syncRecord`` reads it) takes the agreement now,
    /// and stores it on the cell's own queue, after the value it agreed on, so a kill at any
    /// moment leaves a record that never claims more than storage holds. ``SyncedState/flush()``
    /// waits for that store.
    ///
    /// Once the container is gone, the agreement on a change its outbox still delivered is
    /// recorded only for a container without storage: the value is in the outbox's log, and no
    /// local change can follow. A persisted container's last value may not be saved yet, so its
    /// record stays unsent.
    public func recordAgreement(base: Data?, validator: String?, atVersion version: UInt64) {
        guard container != nil || !isPersisted else { return }
        records.agree(recordName, base: base, validator: validator, atVersion: version)
    }
}
