import Foundation
import Observation
import StateKitTesting
import Synchronization
import Testing

@testable import StateKit

@Suite struct StateHistoryTests {
    private struct Refused: Error {}

    @Test func anUndoRacingAWriteNeverLetsRedoOverwriteTheNewerValue() async {
        let trials = 20_000
        let cases = (0..<trials).map { _ in
            let a = MonitoredState(0, key: uniqueKey("a"))
            let history = StateHistory(tracking: a)
            a ~> 1
            a ~> 2
            return (a: a, history: history)
        }
        let barrier = SpinBarrier(parties: 2)
        await onThreads(2) { index in
            for trial in 0..<trials {
                barrier.arriveAndWait(round: trial)
                if index == 0 { cases[trial].history.undo() } else { cases[trial].a.modify(100 + trial) }
            }
        }
        for (trial, (a, history)) in cases.enumerated() {
            await waitUntilDelivered(a)
            // The user's write is the current value: no redo may bring back a value from before it.
            guard a.value == 100 + trial else { continue }
            #expect(!history.canRedo, "trial \(trial): redo would overwrite the newer value")
            history.redo()
            #expect(a.value == 100 + trial, "trial \(trial)")
        }
    }

    @Test func eachChangeIsOneStep() {
        let count = MonitoredState(0, key: uniqueKey("count"))
        let history = StateHistory(tracking: count)
        #expect(!history.canUndo)
        count ~> 1
        count ~> 2
        #expect(history.canUndo)
        #expect(history.undo())
        #expect(count.value == 1)
        #expect(history.undo())
        #expect(count.value == 0)
        #expect(!history.canUndo)
        #expect(!history.undo())
        #expect(count.value == 0)
    }

    @Test func transactionIsOneStepAndItsUndoOneTransaction() {
        let title = MonitoredState("Draft", key: uniqueKey("title"))
        let tags = MonitoredState<Set<String>>([], key: uniqueKey("tags"))
        let history = StateHistory(tracking: title, tags)
        withStateTransaction {
            title ~> "Published"
            tags ~> { $0.insert("news") }
        }
        let titles = title.record()
        let seenTags = Collector<String>()
        let subscription = title.subscribe { _ in seenTags.append(tags.value.sorted().joined()) }
        #expect(history.undo())
        #expect(titles.values == ["Published", "Draft"])
        #expect(seenTags.all == ["news", ""])
        #expect(tags.value == [])
        #expect(!history.canUndo)
        #expect(title.version == 2)
        #expect(tags.version == 2)
        subscription.cancel()
    }

    @Test func redoReappliesTheUndoneStep() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState("", key: uniqueKey("b"))
        let history = StateHistory(tracking: a, b)
        withStateTransaction {
            a ~> 1
            b ~> "one"
        }
        history.undo()
        #expect(history.canRedo)
        #expect(history.redo())
        #expect(a.value == 1)
        #expect(b.value == "one")
        #expect(!history.canRedo)
        #expect(history.canUndo)
        #expect(!history.redo())
    }

    @Test func undoAndRedoAreNotNewSteps() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let history = StateHistory(tracking: a)
        a ~> 1
        a ~> 2
        history.undo()
        history.undo()
        #expect(a.value == 0)
        #expect(!history.canUndo)
        history.redo()
        history.redo()
        #expect(a.value == 2)
        #expect(!history.canRedo)
        history.undo()
        history.undo()
        #expect(a.value == 0)
    }

    @Test func newChangeAfterAnUndoClearsTheRedoSteps() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let history = StateHistory(tracking: a)
        a ~> 1
        a ~> 2
        history.undo()
        a ~> 5
        #expect(!history.canRedo)
        #expect(!history.redo())
        history.undo()
        #expect(a.value == 1)
    }

    @Test func stepsPastTheLimitAreForgotten() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let history = StateHistory(tracking: a, limit: 3)
        for next in 1...5 { a ~> next }
        var undone = 0
        while history.undo() { undone += 1 }
        #expect(undone == 3)
        #expect(a.value == 2)
    }

    @Test func changesOfUntrackedContainersAreNotSteps() {
        let tracked = MonitoredState(0, key: uniqueKey("tracked"))
        let other = MonitoredState(0, key: uniqueKey("other"))
        let history = StateHistory(tracking: tracked)
        withStateTransaction {
            tracked ~> 1
            other ~> 1
        }
        other ~> 2
        history.undo()
        #expect(tracked.value == 0)
        #expect(other.value == 2)
        #expect(!history.canUndo)
    }

    @Test func undoRefusedByAValidatorChangesNothing() {
        DiagnosticsRecorder.start()
        let isLocked = Collector<Bool>()
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b")) { _, proposed in
            if proposed == 0 && !isLocked.all.isEmpty { throw Refused() }
        }
        let history = StateHistory(tracking: a, b)
        withStateTransaction {
            a ~> 1
            b ~> 1
        }
        isLocked.append(true)
        #expect(!history.undo())
        #expect(a.value == 1)
        #expect(b.value == 1)
        #expect(history.canUndo)
        #expect(DiagnosticsRecorder.diagnostics(involving: b.key).map(\.kind) == [.rejectedWrite])
    }

    @Test func canUndoAndCanRedoAreObservable() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let history = StateHistory(tracking: a)
        let probe = TrackingProbe<[Bool]>()
        probe.trackContinuously { [history.canUndo, history.canRedo] }
        a ~> 1
        a ~> 2
        history.undo()
        history.undo()
        // Three changes of availability (a second step changes nothing); like a container's,
        // `onChange` runs before each lands.
        #expect(probe.firings == [[false, false], [true, false], [true, true]])
        #expect([history.canUndo, history.canRedo] == [false, true])
    }

    @Test func historyInAHandlerUndoesWithoutDeadlock() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let history = StateHistory(tracking: a)
        let subscription = a.subscribe { value in
            if value == 13 { history.undo() }
        }
        a ~> 5
        a ~> 13
        #expect(a.value == 5)
        #expect(history.canRedo)
        subscription.cancel()
    }

    @Test func releasedHistoryLeavesNothingOnItsContainers() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        weak var weakHistory: StateHistory?
        do {
            let history = StateHistory(tracking: a)
            weakHistory = history
            #expect(a.subscriberCount == 1)
        }
        #expect(weakHistory == nil)
        #expect(a.subscriberCount == 0)
        a ~> 1
    }

    @Test func concurrentWritersStepsAllUndoBackToTheStart() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let history = StateHistory(tracking: a, b, limit: 100_000)
        await onThreads(4) { index in
            for _ in 0..<500 {
                if index.isMultiple(of: 2) {
                    a.modify { $0 += 1 }
                } else {
                    withStateTransaction {
                        a.modify { $0 += 1 }
                        b.modify { $0 -= 1 }
                    }
                }
            }
        }
        await waitUntilDelivered(a)
        await waitUntilDelivered(b)
        #expect(a.value == 2_000)
        #expect(b.value == -1_000)
        var undone = 0
        while history.undo() { undone += 1 }
        #expect(undone >= 1 && undone <= 2_000)
        #expect(a.value == 0)
        #expect(b.value == 0)
        var redone = 0
        while history.redo() { redone += 1 }
        #expect(redone == undone)
        #expect(a.value == 2_000)
        #expect(b.value == -1_000)
    }
}

/// Lets threads start each round of a race at the same moment.
private final class SpinBarrier: Sendable {
    private let arrived = Atomic<Int>(0)
    private let parties: Int

    init(parties: Int) {
        self.parties = parties
    }

    /// Waits until every party has arrived for `round` (0, 1, 2, … in turn), yielding the core
    /// while it waits, so the other tests running meanwhile are not starved.
    func arriveAndWait(round: Int) {
        arrived.add(1, ordering: .acquiringAndReleasing)
        while arrived.load(ordering: .acquiring) < parties * (round + 1) { sched_yield() }
    }
}
