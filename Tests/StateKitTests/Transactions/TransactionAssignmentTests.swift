import Foundation
import StateKit
import StateKitTesting
import Synchronization
import Testing

/// A body that assigns a container before reading it: the transaction reads nothing of it, so
/// another thread's write meanwhile is no conflict; and the thread's log reuses emptied entries
/// only for the container they were made for.
@Suite struct TransactionAssignmentTests {
    private struct Refused: Error {}

    /// Runs `write` on another thread and waits for it, while the calling thread's body runs.
    private func meanwhile(_ write: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            write()
            done.signal()
        }.start()
        waitFor(done, "the other thread's write")
    }

    @Test func anAssignmentRacingAnotherWriteCommitsWithoutRunningTheBodyAgain() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let changes = a.recordChanges()
        let runs = Atomic<Int>(0)
        withStateTransaction {
            runs.add(1, ordering: .relaxed)
            a.modify(5)
            b.modify(5)
            if runs.load(ordering: .relaxed) == 1 { meanwhile { a.modify(3) } }
            #expect(a.value == 5)
        }
        #expect(runs.load(ordering: .relaxed) == 1)
        #expect(a.value == 5 && a.version == 2)
        #expect(b.value == 5 && b.version == 1)
        #expect(changes.values.map(\.version) == [1, 2])
        #expect(changes.values.map(\.oldValue) == [0, 3])
        #expect(changes.values.map(\.newValue) == [3, 5])
    }

    @Test func assigningTheValueAnotherThreadWroteMeanwhileIsNoChange() {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let values = a.record()
        withStateTransaction {
            a.modify(5)
            meanwhile { a.modify(5) }
        }
        #expect(a.value == 5 && a.version == 1)
        #expect(values.values == [0, 5])
    }

    @Test func aNestedBodyThatAssignedAndThrewLeavesWhatTheOuterBodyReadsChecked() {
        struct Undo: Error {}
        let a = MonitoredState(1, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let runs = Atomic<Int>(0)
        withStateTransaction {
            runs.add(1, ordering: .relaxed)
            try? withStateTransaction {
                a.modify(9)
                throw Undo()
            }
            let seen = a.value
            if runs.load(ordering: .relaxed) == 1 { meanwhile { a.modify(4) } }
            b.modify(seen + 1)
        }
        // The first run read 1 after the undo; the commit found 4, and the second run read it.
        #expect(runs.load(ordering: .relaxed) == 2)
        #expect(a.value == 4 && a.version == 1)
        #expect(b.value == 5 && b.version == 1)
    }

    @Test func aValidatedContainerIsReadBeforeAnAssignmentAndCheckedAtTheCommit() {
        let checked = MonitoredState(0, key: uniqueKey("checked")) { current, proposed in
            if proposed < current { throw Refused() }
        }
        let runs = Atomic<Int>(0)
        withStateTransaction {
            runs.add(1, ordering: .relaxed)
            checked.modify(5)
            if runs.load(ordering: .relaxed) == 1 { meanwhile { checked.modify(7) } }
        }
        // The validator compared 5 with the 0 the body read; the commit found 7 and ran it again,
        // when the validator refused 5.
        #expect(runs.load(ordering: .relaxed) == 2)
        #expect(checked.value == 7 && checked.version == 1)
    }

    @Test(.contendingTimeLimit)
    func containersAssignedTogetherAreNeverSeenApart() async {
        let a = MonitoredState(0, key: uniqueKey("a"))
        let b = MonitoredState(0, key: uniqueKey("b"))
        let changes = Atomic<UInt64>(0)
        let subscription = a.subscribe { _ in changes.add(1, ordering: .relaxed) }
        let apart = Collector<[Int]>()
        let writersDone = Atomic<Int>(0)
        await onThreads(4) { index in
            switch index {
            case 0, 1:
                // Assigns, never reading: values of its own, from 1 and -1 outwards.
                let sign = index == 0 ? 1 : -1
                for step in 1...20_000 {
                    withStateTransaction {
                        a.modify(sign * step)
                        b.modify(sign * step)
                    }
                }
                writersDone.add(1, ordering: .releasing)
            case 2:
                // Reads and writes, moving both by the same amount.
                while writersDone.load(ordering: .acquiring) < 2 {
                    withStateTransaction {
                        a.modify { $0 += 1_000_000 }
                        b.modify { $0 += 1_000_000 }
                    }
                }
            default:
                while writersDone.load(ordering: .acquiring) < 2 {
                    let (x, y) = withStateTransaction { (a.value, b.value) }
                    if x != y { apart.append([x, y]) }
                }
            }
        }
        await waitUntilDelivered(a)
        subscription.cancel()
        #expect(apart.all == [])
        #expect(a.value == b.value)
        // Each transaction changed both or neither.
        #expect(a.version == b.version)
        #expect(changes.load(ordering: .relaxed) == a.version + 1)
    }

    @Test func anEntryIsReusedOnlyForTheContainerItWasMadeFor() {
        // Each container is released before the next is made, which malloc likely puts at the
        // same address, with its lock at the old lock's: a thread's emptied entry must not pass
        // for the new container's.
        for round in 0..<2_000 {
            let container = MonitoredState(round, key: uniqueKey("reused"))
            let values = container.record()
            withStateTransaction {
                if round.isMultiple(of: 2) {
                    container.modify { $0 += 1 }
                } else {
                    container.modify(round + 1)
                }
            }
            if container.value != round + 1 || container.version != 1 || values.values != [round, round + 1] {
                Issue.record("round \(round): \(container.value) at version \(container.version), saw \(values.values)")
                return
            }
        }
    }

    @Test func theEntriesAThreadKeepsHoldNoContainerAlive() {
        weak var firstReleased: MonitoredState<Int>?
        weak var lastReleased: MonitoredState<Int>?
        do {
            let containers = (0..<40).map { MonitoredState($0, key: uniqueKey("c\($0)")) }
            firstReleased = containers.first
            lastReleased = containers.last
            withStateTransaction { for container in containers { container.modify { $0 += 1 } } }
            withStateTransaction { for container in containers.suffix(3) { container.modify(0) } }
            #expect(containers.map(\.value) == (1..<38).map { $0 } + [0, 0, 0])
        }
        #expect(firstReleased == nil)
        #expect(lastReleased == nil)
    }
}
