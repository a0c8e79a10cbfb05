import Testing

@testable import StateKit

/// An outbox log's books: each transition of its table, without a file (the log's fault tests
/// check what the file then holds: a full disk, torn records, a kill).
@Suite struct OutboxLedgerTests {
    /// A ledger that recorded `versions`, each appended.
    private func recording(_ versions: ClosedRange<UInt64>) -> OutboxLedger {
        var ledger = OutboxLedger()
        for version in versions {
            ledger.recorded(version)
            ledger.newestAppended()
            _ = ledger.recordAppended()
        }
        return ledger
    }

    @Test func anAcknowledgementNeverGoesPastWhatWasRecordedNorBack() {
        var ledger = recording(1...3)
        #expect(ledger.firstPending == 1)
        let pastTheNewest = ledger.acknowledged(7)
        #expect(pastTheNewest?.through == 3)
        #expect(ledger.lastAcknowledged == 3)
        #expect(ledger.firstPending == nil)
        let back = ledger.acknowledged(2)
        #expect(back == nil)
        let again = ledger.acknowledged(3)
        #expect(again == nil)
    }

    @Test func everythingAcknowledgedCompactsOnceTheFileGrewOrLacksTheNewest() {
        var grown = recording(1...OutboxLedger.recordsBeforeCompaction.asVersion)
        let partly = grown.acknowledged(1)
        #expect(partly?.compacts == false, "changes are still to deliver")
        let all = grown.acknowledged(OutboxLedger.recordsBeforeCompaction.asVersion)
        #expect(all?.compacts == true)

        var small = recording(1...3)
        let smallFile = small.acknowledged(3)
        #expect(smallFile?.compacts == false, "a small file keeps its records")

        var keptOut = recording(1...2)
        keptOut.recorded(3)
        keptOut.newestKeptOut()
        let withNewestKeptOut = keptOut.acknowledged(3)
        #expect(withNewestKeptOut?.compacts == true, "a rewrite writes the newest change the disk kept out")
    }

    @Test func theFileIsCompleteOnlyWithEveryChangeTheNewestAndTheAcknowledgement() {
        var ledger = recording(1...2)
        #expect(ledger.isComplete(hasFile: true, hasUnwritten: false))
        #expect(!ledger.isComplete(hasFile: false, hasUnwritten: false))
        #expect(!ledger.isComplete(hasFile: true, hasUnwritten: true))
        _ = ledger.acknowledged(1)
        #expect(!ledger.isComplete(hasFile: true, hasUnwritten: false), "the acknowledgement is not written yet")
        ledger.acknowledgementLogged()
        #expect(ledger.isComplete(hasFile: true, hasUnwritten: false))
        ledger.recorded(3)
        ledger.newestKeptOut()
        #expect(!ledger.isComplete(hasFile: true, hasUnwritten: false))
        ledger.newestAppended()
        #expect(ledger.isComplete(hasFile: true, hasUnwritten: false))
    }

    @Test func aRepairCompactsOrWritesTheMissingAcknowledgement() {
        var ledger = recording(1...2)
        guard case .nothing = ledger.repairAfterUnwritten() else {
            Issue.record("a complete file is repaired")
            return
        }
        _ = ledger.acknowledged(1)
        guard case .appendAcknowledgement(1) = ledger.repairAfterUnwritten() else {
            Issue.record("the acknowledgement the file lacks is not written")
            return
        }
        ledger.recorded(3)
        ledger.newestKeptOut()
        _ = ledger.acknowledged(3)
        guard case .compact = ledger.repairAfterUnwritten() else {
            Issue.record("a settled log that lacks its newest change is not rewritten")
            return
        }
        let endedAFailure = ledger.fileReplaced()
        #expect(endedAFailure == false)
        #expect(ledger.isComplete(hasFile: true, hasUnwritten: false))
    }

    @Test func aFailureIsReportedOnceAndItsEndOnce() {
        var ledger = OutboxLedger()
        // In order: two failures, two appends, a failure, two rewrites.
        let reports = [
            ledger.writeFailed(), ledger.writeFailed(), ledger.recordAppended(), ledger.recordAppended(),
            ledger.writeFailed(), ledger.fileReplaced(), ledger.fileReplaced(),
        ]
        #expect(reports == [true, false, true, false, true, true, false])
    }

    @Test func aRepairIsScheduledOnceUntilItStarts() {
        var ledger = OutboxLedger()
        let wishes = [ledger.repairWanted(), ledger.repairWanted()]
        ledger.repairStarts()
        let afterStart = ledger.repairWanted()
        #expect(wishes + [afterStart] == [true, false, true])
    }

    @Test func aFileReplacedWhileItWasForcedIsNotTakenAsForced() {
        var ledger = recording(1...5)
        let rewrites = ledger.rewrites
        let forcedTo3 = ledger.forced(through: 3, rewrites: rewrites)
        #expect(forcedTo3)
        #expect(ledger.synchronizedThrough == 3)
        let forcedTo2 = ledger.forced(through: 2, rewrites: rewrites)
        #expect(forcedTo2)
        #expect(ledger.synchronizedThrough == 3, "forcing never goes back")
        _ = ledger.fileReplaced()
        #expect(ledger.synchronizedThrough == 0, "the new file is not forced yet")
        let forcedAcrossTheRewrite = ledger.forced(through: 5, rewrites: rewrites)
        #expect(!forcedAcrossTheRewrite)
        #expect(ledger.synchronizedThrough == 0)
    }

    @Test func aReleasedOwnerNeverReleasesTheOneThatTookOver() {
        var ledger = OutboxLedger()
        let first = ledger.takeOwnership()
        #expect(ledger.hasLiveOwner)
        ledger.release(first)
        #expect(!ledger.hasLiveOwner)
        let second = ledger.takeOwnership()
        #expect(!ledger.isCurrent(first))
        ledger.release(first)
        #expect(ledger.hasLiveOwner && ledger.isCurrent(second))
    }

    @Test func openingAndSettlingKeepTheNewestOutcomes() {
        var found = SinkOutcomes()
        for version in UInt64(1)...UInt64(OutboxLedger.keptOutcomes + 5) {
            // Alternating, so that no two runs join.
            found.note(
                version...version,
                version.isMultiple(of: 2) ? .discarded(reason: "superseded") : .rejected(reason: "refused"))
        }
        var ledger = OutboxLedger()
        ledger.opened(lastRecorded: 2_000, lastAcknowledged: 1_990, settled: found)
        #expect(ledger.settled.entries.count == OutboxLedger.keptOutcomes)
        #expect(ledger.firstPending == 1_991)
        ledger.settle(1_991...1_991, as: .rejected(reason: "refused"))
        #expect(ledger.settled.entries.count == OutboxLedger.keptOutcomes)
        #expect(ledger.settled.entry(of: 1_991) != nil)
        #expect(ledger.settled.entry(of: 1) == nil)
    }
}

extension Int {
    fileprivate var asVersion: UInt64 { UInt64(self) }
}
