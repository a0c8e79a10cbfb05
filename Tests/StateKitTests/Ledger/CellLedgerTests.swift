import Foundation
import Testing

@testable import StateKit

/// The cell's ledger: its transitions, and what they promise a persisted synced
/// container under contention and a slow disk: storage never holds an agreement on a value it
/// does not hold, no save holds a writer, and flushes never block the cooperative pool.
@Suite(.contendingTimeLimit) struct CellLedgerTests {
    init() { DiagnosticsRecorder.start() }

    // MARK: Transitions

    @Test func aLocalChangesMarkIsStoredBeforeTheValueItMarks() {
        var ledger = CellLedger(savesValue: true)
        ledger.loaded(["server": SyncRecord(base: Data("1".utf8), validator: "v1")])
        let storesAtOnce = ledger.localChange(2)
        #expect(storesAtOnce == false, "a cell that saves its value stores the mark with it")
        guard case .write(let first) = ledger.beginSave(version: 2) else {
            Issue.record("the change is not saved")
            return
        }
        #expect(first?["server"] == SyncRecord(base: Data("1".utf8), validator: "v1", hasUnsentChanges: true))
        ledger.recordsStored(first ?? [:])
        ledger.saveSucceeded(version: 2)
        #expect(ledger.recordsToStore() == nil)
        guard case .upToDate = ledger.beginSave(version: 2) else {
            Issue.record("a saved version is saved again")
            return
        }
    }

    @Test func anAgreementOnAValueStorageDoesNotHoldYetIsStoredAsUnsentOnTheOldValidator() {
        var ledger = CellLedger(savesValue: true)
        let stored = SyncRecord(base: Data("1".utf8), validator: "v1")
        ledger.loaded(["server": stored])
        _ = ledger.localChange(2)
        let isChanged = ledger.agreed("server", base: Data("2".utf8), validator: "v2", atVersion: 2)
        #expect(isChanged)
        // What a kill right now may leave: the old record, marked unsent (a conflict on v1 goes
        // to the policy with the true base), never "agreed on 2" beside a stored 1.
        #expect(
            ledger.recordsToStore()?["server"] == SyncRecord(base: stored.base, validator: "v1", hasUnsentChanges: true)
        )
        ledger.saveSucceeded(version: 2)
        #expect(ledger.recordsToStore()?["server"] == SyncRecord(base: Data("2".utf8), validator: "v2"))
        #expect(ledger.records["server"]?.hasUnsentChanges == false)
    }

    /// A base taken with local changes unsent (a merge, or a conflict the local side won) is the
    /// one the next conditional write uses at once, and storage gets it only with a value that
    /// includes it: a kill before leaves the old base, so the relaunch meets the conflict again
    /// instead of sending the unmerged value over the server's change.
    @Test func aBaseTakenWithUnsentChangesIsStoredOnlyWithAValueThatIncludesIt() {
        var ledger = CellLedger(savesValue: true)
        let stored = SyncRecord(base: Data("1".utf8), validator: "v1", hasUnsentChanges: true)
        ledger.loaded(["server": stored])
        ledger.recordsStored(["server": stored])
        _ = ledger.localChange(2)
        ledger.saveSucceeded(version: 2)
        // The server changed to 5 (v5); the merge is a local change, version 3, not saved yet.
        let isBased = ledger.based("server", base: Data("5".utf8), validator: "v5", from: 3)
        #expect(isBased)
        #expect(ledger.records["server"]?.validator == "v5", "the next write is conditional on v5")
        #expect(ledger.recordsToStore() == nil, "storage keeps the old base until version 3 is saved")
        _ = ledger.localChange(3)
        ledger.saveSucceeded(version: 3)
        #expect(
            ledger.recordsToStore()?["server"]
                == SyncRecord(base: Data("5".utf8), validator: "v5", hasUnsentChanges: true))
        // A merge not made yet (its value exists only in the request): never stored, until the
        // agreement that follows its success.
        _ = ledger.based("server", base: Data("6".utf8), validator: "v6", from: nil)
        ledger.saveSucceeded(version: 3)
        #expect(ledger.recordsToStore()?["server"]?.validator != "v6")
        _ = ledger.agreed("server", base: Data("7".utf8), validator: "v7", atVersion: 3)
        #expect(ledger.recordsToStore()?["server"] == SyncRecord(base: Data("7".utf8), validator: "v7"))
    }

    @Test func aLocalChangeAfterTheAgreedVersionStaysUnsent() {
        var ledger = CellLedger(savesValue: false)
        ledger.loaded([:])
        ledger.include(["server"])
        let first = ledger.localChange(1)
        let second = ledger.localChange(2)
        #expect(first, "without a value to save, the records are stored at once")
        #expect(second == false, "already unsent: nothing more to store")
        _ = ledger.agreed("server", base: Data("1".utf8), validator: "v1", atVersion: 1)
        #expect(ledger.records["server"]?.hasUnsentChanges == true)
        _ = ledger.agreed("server", base: Data("2".utf8), validator: "v2", atVersion: 2)
        #expect(ledger.records["server"]?.hasUnsentChanges == false)
    }

    @Test func anEncodeFailureStandsUntilALaterValueIsSaved() {
        struct Unencodable: Error {}
        var ledger = CellLedger(savesValue: true)
        ledger.loaded([:])
        ledger.encodeFailed(version: 3, error: Unencodable())
        guard case .unencodable = ledger.beginSave(version: 3) else {
            Issue.record("the unencodable version is tried again, or called saved")
            return
        }
        #expect(ledger.saveError is Unencodable)
        guard case .write = ledger.beginSave(version: 4) else {
            Issue.record("a later version is not saved")
            return
        }
        ledger.saveSucceeded(version: 4)
        #expect(ledger.saveError == nil)
    }

    @Test func aFailureThatPersistsIsReportedOnceAndBacksOff() {
        var ledger = CellLedger(savesValue: true)
        let full = CocoaError(.fileWriteOutOfSpace)
        let first = ledger.saveFailed(full)
        let again = ledger.saveFailed(full)
        #expect(first)
        #expect(again == false)
        #expect(ledger.retryDelay == 0.2)
        ledger.saveSucceeded(version: 1)
        #expect(ledger.saveError == nil)
        let afterSuccess = ledger.saveFailed(full)
        #expect(afterSuccess, "a failure after a success is new")
    }

    /// The ledger is the one copy of the load error too: a read says whether it changed it (its
    /// observers are told only then).
    @Test func theLoadErrorIsTheLedgersOwnAndAReadSaysWhenItChangedIt() {
        var ledger = CellLedger(savesValue: true)
        let goodRead = ledger.storageRead(error: nil)
        #expect(!goodRead && ledger.loadError == nil)
        let badBytes = ledger.storageRead(error: CocoaError(.fileReadCorruptFile))
        #expect(badBytes && ledger.loadError != nil)
        let badAgain = ledger.storageRead(error: CocoaError(.fileReadCorruptFile))
        #expect(badAgain, "a new failure is told, as each read that finds one was")
        let readAgain = ledger.storageRead(error: nil)
        #expect(readAgain && ledger.loadError == nil)
    }

    /// The ledger is the one copy of the save error: a success says whether it cleared one (its
    /// observers are told only then), and saving stopped for good keeps its reason over any save.
    @Test func theSaveErrorIsTheLedgersOwnAndASuccessSaysWhenItClearedIt() {
        var ledger = CellLedger(savesValue: true)
        let clearedNothing = ledger.saveSucceeded(version: 1)
        #expect(!clearedNothing)
        _ = ledger.saveFailed(CocoaError(.fileWriteOutOfSpace))
        let cleared = ledger.saveSucceeded(version: 2)
        #expect(cleared)
        #expect(ledger.saveError == nil)
        let stopped = SavingStopped(key: "k", location: "memory", reason: CocoaError(.fileReadCorruptFile))
        ledger.stopSaving(stopped)
        #expect(!ledger.isSaving)
        ledger.saveSucceeded(version: 3)
        #expect(ledger.saveError is SavingStopped)
        ledger.stopSaving(nil)
        #expect(ledger.saveError is SavingStopped, "a retired cell keeps why it stopped")
        var retired = CellLedger(savesValue: true)
        retired.stopSaving(nil)
        #expect(!retired.isSaving && retired.saveError == nil)
    }

    /// What storage holds, as the ledger knows it: the fingerprint of the bytes the cell last read
    /// or wrote (the bytes of a failed write are no outside change either), and for a shared key
    /// the generation and file stamp, which say when the file must be read again.
    @Test func theLedgerKnowsWhatStorageHolds() {
        var ledger = CellLedger(savesValue: true)
        let one = Data("1".utf8)
        let two = Data("2".utf8)
        #expect(ledger.isOutsideChange(one))
        ledger.storageHolds(fingerprint: one)
        #expect(!ledger.isOutsideChange(one))
        ledger.writeFailed(fingerprint: two)
        #expect(!ledger.isOutsideChange(two), "a failed write's own bytes")
        #expect(ledger.isOutsideChange(Data("3".utf8)))
        #expect(ledger.isOutsideChange(nil), "the value removed outside")
        let stamp = FileStamp(path: "/")
        let first = ledger.storageSeen(at: (1, stamp))
        let same = ledger.storageSeen(at: (1, stamp))
        let moved = ledger.storageSeen(at: (2, stamp))
        ledger.storageSeen(at: nil)
        let afterFailedCommit = ledger.storageSeen(at: (2, stamp))
        #expect(first, "never read")
        #expect(!same)
        #expect(moved, "another writer's generation")
        #expect(afterFailedCommit, "unknown after a failed commit")
    }

    /// A burst of changes schedules one save, and a burst of a shared key's writes one `fsync`;
    /// each schedules again once the scheduled one starts; a cell that stopped saving schedules
    /// no save.
    @Test func aBurstSchedulesOneSaveAndOneSync() {
        var ledger = CellLedger(savesValue: true)
        let saves = (0..<3).map { _ in ledger.saveWanted() }
        let syncs = (0..<3).map { _ in ledger.syncWanted() }
        ledger.scheduledSaveStarts()
        ledger.scheduledSyncStarts()
        let saveAfterStart = ledger.saveWanted()
        let syncAfterStart = ledger.syncWanted()
        ledger.scheduledSaveStarts()
        ledger.stopSaving(nil)
        let saveWhenStopped = ledger.saveWanted()
        #expect(saves == [true, false, false])
        #expect(syncs == [true, false, false])
        #expect(saveAfterStart && syncAfterStart)
        #expect(!saveWhenStopped)
    }

    // MARK: The ledger at work

    /// Two writers and a sink agreeing on every send: replaying the storage's writes in order, a
    /// stored record that says "agreed" always sits beside the value it agreed on.
    @Test func storageNeverHoldsAnAgreementOnAValueItDoesNotHold() async throws {
        let storage = RecordingStorage()
        let key = uniqueKey()
        let sink = TestRemoteSink<Int>()
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
        await onThreads(2) { _ in
            for _ in 0..<300 { state.modify { $0 += 1 } }
        }
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(state.value == 600)
        #expect(sink.server == 600)

        var value: Data?
        var agreements = 0
        for save in storage.saves {
            if save.key == key {
                value = save.data
                continue
            }
            let records = try JSONDecoder().decode([String: [String: SyncRecord]].self, from: save.data)
            for record in records["records"]?.values.map({ $0 }) ?? [] where !record.hasUnsentChanges {
                agreements += 1
                let base = try record.base.map { try JSONDecoder().decode(Int.self, from: $0) }
                let held = try value.map { try JSONDecoder().decode(Int.self, from: $0) }
                #expect(base == held, "a stored agreement on \(base as Any) beside a stored \(held as Any)")
            }
        }
        #expect(agreements > 0)
        withExtendedLifetime(state) {}
    }

    /// A storage that takes 300 ms a save never holds a write: each returns far inside the bound.
    @Test func aSlowStorageNeverHoldsAWriter() async throws {
        let storage = RecordingStorage(delay: 0.3)
        let key = uniqueKey()
        let sink = TestRemoteSink<Int>()
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
        var slowest = Duration.zero
        for value in 1...40 {
            let start = ContinuousClock.now
            state.modify(value)
            slowest = max(slowest, ContinuousClock.now - start)
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(slowest < .milliseconds(250), "a write waited \(slowest)")
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(sink.server == 40)
        #expect(try storage.load(forKey: key).map { try JSONDecoder().decode(Int.self, from: $0) } == 40)
    }

    /// 32 containers on a 300 ms storage flushed at once, agreeing as they go: no save runs on a
    /// thread of the cooperative pool (before the ledger, each agreement saved there).
    @Test func thirtyTwoFlushesRunNoSaveOnTheCooperativePool() async throws {
        let storage = RecordingStorage(delay: 0.3)
        let states = (0..<32).map { index in
            SyncedState(0, key: uniqueKey() + "-\(index)", storage: storage, sinks: [TestRemoteSink<Int>()])
        }
        for state in states { state.modify(1) }
        let synced = await withTaskGroup(of: Bool.self) { group in
            for state in states { group.addTask { await state.flush(timeout: .seconds(120)) } }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(synced)
        #expect(storage.saves.count >= 64, "each container saves its value and its record")
        #expect(storage.saves.filter(\.isOnATask).isEmpty)
    }
}

/// Storage in memory that keeps every save in order, and whether it ran inside a task, and may take
/// `delay` seconds a save, as a slow disk.
final class RecordingStorage: StateStorage {
    struct Save: Sendable {
        var key: String
        var data: Data
        var isOnATask: Bool
    }

    private let base = InMemoryStateStorage()
    private let delay: Double
    private let recorded = LockedBox<[Save]>([])

    init(delay: Double = 0) {
        self.delay = delay
    }

    var location: String { "recording:\(ObjectIdentifier(self).hashValue)" }
    var saves: [Save] { recorded.withLock { $0 } }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        let isOnATask = withUnsafeCurrentTask { $0 != nil }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        // Recorded and saved together, so the record's order is storage's.
        try recorded.withLock { saves in
            try base.save(data, forKey: key)
            saves.append(Save(key: key, data: data, isOnATask: isOnATask))
        }
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}
