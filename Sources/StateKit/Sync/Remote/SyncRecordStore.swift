import Foundation

/// The sync records of one synced container, one per remote-sync sink, and where they are kept;
/// the persisted containers of one key share one (``CellRemotes``), since they keep their records
/// under one storage key.
///
/// A local change marks every record unsent before its writer returns (``noteChange(_:)``, from
/// the container's write observer), so the mark is in storage before the change's value is: a
/// kill at any moment never leaves a saved local value whose record says "sent". A sink clears
/// the mark (``agree(_:base:validator:atVersion:)``) only after the value it agreed on is saved,
/// and only when no local change came after the one the server took. Both run under the
/// container's lock, so the records are saved in the order of the changes they follow.
///
/// Without storage (a container that does not persist) the records live in memory.
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
    private let lock = Lock()
    // Guarded by `lock`.
    private var records: [String: SyncRecord] = [:]
    /// The version of the newest local change, or of the unsent value found at launch.
    private var lastLocalVersion: UInt64 = 0
    /// Whether every record already says unsent: a local change then saves nothing.
    private var isAllUnsent = false
    /// Whether the stored records could not be read: every record starts unsent.
    private var isDamaged = false

    /// Loads the records `names` of `key` from `storage`; records that cannot be read are
    /// reported and taken as "everything unsent", so that nothing local is lost for want of them.
    init(key: String, storage: (any StateStorage)?, names: [String]) {
        self.key = key
        self.storage = storage
        defer {
            for name in names where records[name] == nil { records[name] = SyncRecord(hasUnsentChanges: isDamaged) }
            isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        }
        guard let storage else { return }
        do {
            guard let data = try storage.load(forKey: Self.storageKey(for: key)) else { return }
            records = try JSONDecoder().decode(Stored.self, from: data).records
        } catch {
            StateDiagnostics.report(
                StateDiagnostic(
                    kind: .decodingFailed, keys: [key],
                    message: "the sync record of \(key) in \(storage.location) cannot be read; "
                        + "the stored value is taken as not yet sent",
                    error: error))
            isDamaged = true
        }
    }

    /// Adds the records `names` that it does not hold yet (a container that joined the key's
    /// cell later, with remote sinks of its own), as its initializer adds them.
    func include(_ names: [String]) {
        lock.withLock {
            for name in names where records[name] == nil { records[name] = SyncRecord(hasUnsentChanges: isDamaged) }
            isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
        }
    }

    /// The container starts at `version`: an unsent value it holds is the local change at it.
    func start(atVersion version: UInt64) {
        lock.withLock {
            if records.values.contains(where: \.hasUnsentChanges) { lastLocalVersion = version }
        }
    }

    /// The record `name`.
    func record(_ name: String) -> SyncRecord {
        lock.withLock { records[name] ?? SyncRecord() }
    }

    /// Marks every record unsent for a change that is not remote. Called under the container's
    /// lock, before the change's writer returns.
    func noteChange(_ version: UInt64, origin: ChangeOrigin) {
        guard origin != .remote else { return }
        lock.withLock {
            lastLocalVersion = version
            guard !isAllUnsent else { return }
            for name in records.keys { records[name]?.hasUnsentChanges = true }
            isAllUnsent = true
            saveLocked()
        }
    }

    /// Records that the server holds `base` under `validator`, as of the container's `version`:
    /// local changes after it stay unsent. Called under the container's lock.
    func agree(_ name: String, base: Data?, validator: String?, atVersion version: UInt64) {
        lock.withLock {
            let record = SyncRecord(base: base, validator: validator, hasUnsentChanges: lastLocalVersion > version)
            guard records[name] != record else { return }
            records[name] = record
            isAllUnsent = records.values.allSatisfy(\.hasUnsentChanges)
            saveLocked()
        }
    }

    private func saveLocked() {
        guard let storage else { return }
        do {
            let data = try JSONEncoder().encode(Stored(records: records))
            try storage.save(data, forKey: Self.storageKey(for: key))
        } catch {
            StateDiagnostics.report(
                StateDiagnostic(
                    kind: .storageFailed, keys: [key],
                    message: "the sync record of \(key) cannot be saved in \(storage.location)", error: error))
        }
    }
}
