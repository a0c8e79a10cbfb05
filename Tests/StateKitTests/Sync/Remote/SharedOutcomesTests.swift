import Foundation
import Testing

@testable import StateKit

/// What a shared key's sender publishes for the other processes' receipts, by journal entry: the
/// settled entries and the exceptions, the file that carries them, and the ledger's map from a
/// process's versions to the entries they stand for (two real processes:
/// ``RemoteSenderLockTests``).
@Suite struct SharedOutcomesTests {
    @Test func anEntryTakesTheFateOfTheFirstSettledVersionAtOrAfterIt() {
        var outcomes = SharedOutcomes()
        #expect(outcomes.outcome(ofEntry: 1) == nil, "nothing settled yet")
        outcomes.settle(through: 3, as: .delivered)
        outcomes.settle(through: 6, as: .discarded(reason: "the server won"))
        outcomes.settle(through: 7, as: .rejected(reason: "refused"))
        #expect(outcomes.outcome(ofEntry: 2) == .delivered)
        #expect(outcomes.outcome(ofEntry: 4) == .discarded(reason: "the server won"))
        #expect(outcomes.outcome(ofEntry: 7) == .rejected(reason: "refused"))
        #expect(outcomes.outcome(ofEntry: 8) == nil)
        outcomes.settle(through: 5, as: .rejected(reason: "late"))
        #expect(outcomes.outcome(ofEntry: 5) == .discarded(reason: "the server won"), "settled once")
        #expect(outcomes.settledThrough == 7)
    }

    @Test func onlyTheNewestExceptionsAreKeptAndNoEntryBeforeThemReadsAsDelivered() {
        var outcomes = SharedOutcomes()
        let kept = UInt64(SharedOutcomes.exceptionsKept)
        for entry in UInt64(1)...2 * kept {
            outcomes.settle(through: 2 * entry - 1, as: .delivered)
            outcomes.settle(through: 2 * entry, as: .discarded(reason: "\(2 * entry)"))
        }
        #expect(outcomes.exceptions.count == SharedOutcomes.exceptionsKept)
        #expect(outcomes.outcome(ofEntry: 4 * kept) == .discarded(reason: "\(4 * kept)"))
        #expect(outcomes.outcome(ofEntry: 2 * kept + 1) == .delivered)
        #expect(outcomes.outcome(ofEntry: 2) == nil, "its exception was dropped: too old to say")
        #expect(outcomes.outcome(ofEntry: 2 * kept - 1) == nil)
    }

    @Test func aMissingDamagedOrStaleFileSettlesNothingAndAWriteReplacesItWhole() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let storage = FileStateStorage.file(directory.url, sharedAcrossProcesses: true)
        let key = uniqueKey("outcomes")
        let file = try #require(SharedOutcomesFile(key: key, storage: storage))
        #expect(file.read() == SharedOutcomes())
        let url = directory.url.appending(path: ".\(FileStateStorage.fileName(forKey: key)).outcomes")
        #expect(FileManager.default.createFile(atPath: url.path, contents: Data("{\"settledThrough\":".utf8)))
        #expect(file.read() == SharedOutcomes(), "a torn file is nothing settled")
        var outcomes = SharedOutcomes()
        outcomes.settle(through: 4, as: .delivered)
        try file.write(outcomes)
        #expect(file.read() == SharedOutcomes(), "ahead of a journal that has no entry yet")
        let keyLock = SharedKeyLock(path: storage.lockFileURL(forKey: key).path)
        keyLock.lock()
        keyLock.setJournalEnd(lastSequence: 3, length: 0)
        keyLock.unlock()
        #expect(file.read() == SharedOutcomes(), "ahead of the journal's last entry")
        keyLock.lock()
        keyLock.setJournalEnd(lastSequence: 4, length: 0)
        keyLock.unlock()
        #expect(file.read() == outcomes)
        #expect(SharedOutcomesFile(key: key, storage: FileStateStorage.file(directory.url)) == nil, "not shared")
    }

    @Test func theLedgerTiesEachVersionToItsEntryAndForgetsOnlyTheOldest() {
        var ledger = CellLedger(savesValue: true)
        ledger.journaled(3, sequence: 10)
        ledger.journaled(4, sequence: 12)
        ledger.journaled(4, sequence: 13)
        ledger.journaled(2, sequence: 20)
        #expect(ledger.journalSequence(of: 3) == 10)
        #expect(ledger.journalSequence(of: 4) == 13, "a version's newest entry")
        #expect(ledger.journalSequence(of: 2) == nil, "versions only go forward")
        #expect(ledger.journaled(after: 10).map(\.version) == [4])
        #expect(ledger.handedEntry(of: 3) == nil, "not handed to another process's sender")
        ledger.handedToSender(3)
        #expect(ledger.handedEntry(of: 3) == 10)
        #expect(ledger.handedEntry(of: 4) == nil)
        let kept = CellLedger.journalSequencesKept
        for version in UInt64(5)...UInt64(5 + 2 * kept) { ledger.journaled(version, sequence: version + 100) }
        #expect(ledger.journalSequence(of: 3) == nil)
        #expect(ledger.journalSequence(of: UInt64(5 + 2 * kept)) == UInt64(105 + 2 * kept))
    }
}
