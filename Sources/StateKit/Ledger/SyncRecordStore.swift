import Foundation

/// Where the sync records of one cell's remote destinations are kept: the records themselves are
/// the cell's ledger's (``CellLedger``), this object reads them at launch and writes them when the
/// ledger says so. The persisted containers of one key share one (``CellRemotes``), since they
/// keep their records under one storage key.
///
/// A local change marks every record unsent before its writer returns (``noteChange(_:origin:)``,
/// from the container's write observer), in the ledger; a persisted cell stores the mark before
/// the change's value, so a kill at any moment never leaves a saved local value whose record says
/// "sent". An agreement (``agree(_:base:validator:atVersion:)``) is stored only once the value it
/// agreed on is saved. No write runs on the writer's thread or under a container's lock: the
/// ledger's holder stores the records on the cell's queue, and ``flush()`` awaits it.
///
/// Across processes, only the key's sender writes the records (``RemoteSenderLock``); a process
/// that takes over reads what the previous one stored (``adoptSendersRecords()``).
///
/// Without storage (a container that does not persist, and has no outbox) the records live in
/// memory.
final class SyncRecordStore: @unchecked Sendable {
    /// The storage key of a container's records: beside its value, under a name no value uses.
    static func storageKey(for key: String) -> String {
        key + ".sync-record"
    }

    private struct Stored: Codable {
        var records: [String: SyncRecord]
    }

    let key: String
    private let storage: (any StateStorage)?
    /// The ledger's holder: a persisted cell (which holds this store weakly), or a ledger of the
    /// container's own. Kept alive by this store, so that a channel still delivering a released
    /// container's changes reads and records its agreements in the one ledger.
    private let ledger: any LedgerHost
    /// The key's sender lock, when its storage is shared across processes: only the sender writes
    /// the records (the others' would overwrite its agreements with older ones).
    private let sender: RemoteSenderLock?

    /// Loads the records `names` of `key` from `storage` into the ledger of `cell` (or a ledger of
    /// its own when `nil`); records that cannot be read are reported and taken as "everything
    /// unsent", so that nothing local is lost for want of them. With a `sender` (storage shared
    /// across processes) every record is taken as unsent: the stored value may hold another
    /// process's change that no sender has sent.
    init(
        key: String, storage: (any StateStorage)?, names: [String], cell: (any LedgerHost)? = nil,
        sender: RemoteSenderLock? = nil
    ) {
        self.key = key
        self.storage = storage
        self.sender = sender
        let ledger = cell ?? StandaloneLedger(key: key)
        self.ledger = ledger
        var found = Self.load(key: key, from: storage)
        if sender != nil {
            found = found?.mapValues { record in
                var unsent = record
                unsent.hasUnsentChanges = true
                return unsent
            }
        }
        ledger.withLedger { ledger in
            ledger.loaded(found)
            ledger.include(names)
        }
        if storage != nil { ledger.keepRecords(in: self) }
    }

    /// The stored records, `[:]` when there are none, `nil` when they cannot be read (reported).
    private static func load(key: String, from storage: (any StateStorage)?) -> [String: SyncRecord]? {
        guard let storage else { return [:] }
        do {
            guard let data = try storage.load(forKey: storageKey(for: key)) else { return [:] }
            return try JSONDecoder().decode(Stored.self, from: data).records
        } catch {
            StateDiagnostics.report(
                StateDiagnostic(
                    kind: .decodingFailed, keys: [key],
                    message: "the sync record of \(key) in \(storage.location) cannot be read; "
                        + "the stored value is taken as not yet sent",
                    error: error))
            return nil
        }
    }

    /// This process takes over sending the key (storage shared across processes): reads the
    /// records the previous sender stored into the ledger, the newest agreements there are.
    func adoptSendersRecords() {
        let found = Self.load(key: key, from: storage)
        ledger.withLedger { $0.tookOverSending(found) }
    }

    /// Adds the records `names` that it does not hold yet (a container that joined the key's
    /// cell later, with remote sinks of its own), as its initializer adds them.
    func include(_ names: [String]) {
        ledger.withLedger { $0.include(names) }
    }

    /// The container starts at `version`: an unsent value it holds is the local change at it.
    func start(atVersion version: UInt64) {
        ledger.withLedger { $0.start(atVersion: version) }
    }

    /// The record `name`.
    func record(_ name: String) -> SyncRecord {
        ledger.withLedger { $0.records[name] } ?? SyncRecord()
    }

    /// Marks every record unsent for a change that is not remote. Called under the container's
    /// lock, before the change's writer returns; stores nothing itself.
    func noteChange(_ version: UInt64, origin: ChangeOrigin) {
        guard origin != .remote else { return }
        if ledger.noteLocalChange(version) { ledger.storeLedgerSoon() }
    }

    /// The outbox of the record `name` holds changes up to `version` it did not deliver: the
    /// record is unsent (``CellLedger/loggedUndelivered(_:throughVersion:)``).
    func loggedUndelivered(_ name: String, throughVersion version: UInt64) {
        if ledger.withLedger({ $0.loggedUndelivered(name, throughVersion: version) }) { ledger.storeLedgerSoon() }
    }

    /// Records that the server holds `base` under `validator`, as of the container's `version`:
    /// local changes after it stay unsent. Stored on the cell's queue, after the value.
    func agree(_ name: String, base: Data?, validator: String?, atVersion version: UInt64) {
        if ledger.withLedger({ $0.agreed(name, base: base, validator: validator, atVersion: version) }) {
            ledger.storeLedgerSoon()
        }
    }

    /// The version the record `name` last agreed on this launch (0: none).
    func agreedVersion(of name: String) -> UInt64 {
        ledger.withLedger { $0.agreedVersion(of: name) }
    }

    /// Records that the destination of `name` replaced the local changes up to `version`.
    func discarded(_ name: String, through version: UInt64) {
        ledger.withLedger { $0.discarded(name, through: version) }
    }

    /// Whether the destination of `name` replaced the local change of `version`.
    func isDiscarded(_ name: String, version: UInt64) -> Bool {
        ledger.withLedger { $0.isDiscarded(name, version: version) }
    }

    /// Records a base taken with local changes unsent (see ``CellLedger/based(_:base:validator:from:)``).
    func base(_ name: String, base: Data?, validator: String?, from version: UInt64?) {
        if ledger.withLedger({ $0.based(name, base: base, validator: validator, from: version) }) {
            ledger.storeLedgerSoon()
        }
    }

    /// Whether the records note each value before it is sent (``RemoteChannel/recordSending(_:)``):
    /// they are kept in storage, so that a launch after a kill finds what was in flight.
    var notesSending: Bool {
        storage != nil
    }

    /// Notes that `data` is about to be sent under the record `name`, and returns once that is
    /// stored (or failed); across processes, only the key's sender writes it.
    func sending(_ name: String, data: Data) async {
        guard sender?.isSending ?? true else { return }
        if ledger.withLedger({ $0.sending(name, data: data) }) {
            ledger.storeLedgerSoon()
            await ledger.flushLedger()
        }
    }

    /// Returns once the records the ledger said to store before the call are stored (or failed).
    func flush() async {
        await ledger.flushLedger()
    }

    /// Writes `records` to storage; called by the ledger's holder on the cell's queue.
    func write(_ records: [String: SyncRecord]) throws {
        guard let storage, sender?.isSending ?? true else { return }
        let data = try JSONEncoder().encode(Stored(records: records))
        try storage.save(data, forKey: Self.storageKey(for: key))
    }

    /// Reports a failed ``write(_:)`` of a container without storage (a persisted cell reports it
    /// as a save error).
    func reportWriteFailure(_ error: any Error) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .storageFailed, keys: [key],
                message: "the sync record of \(key) cannot be saved in \(storage?.location ?? "memory")",
                error: error))
    }
}
