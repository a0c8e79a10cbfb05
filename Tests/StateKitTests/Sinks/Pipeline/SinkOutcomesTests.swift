import Foundation
import Testing

@testable import StateKit

/// What a sink's pipeline remembers of the changes it settled without delivering them: exact
/// outcomes, and bounded memory when it coalesces without end.
@Suite struct SinkOutcomesTests {
    /// A pipeline's state machine with its sink's books, driven as the pipeline drives them.
    private struct Machine {
        var machine: SinkPipelineStateMachine<Int>
        var books = SinkBooks(sinkName: "s")

        init(policy: SinkPolicy, isLogBacked: Bool, startVersion: UInt64, firstPending: UInt64?) {
            machine = SinkPipelineStateMachine(
                policy: policy, isLogBacked: isLogBacked, startVersion: startVersion, firstPending: firstPending)
        }

        var outcomes: SinkOutcomes { books.outcomes }

        mutating func enqueue(_ change: StateChange<Int>) {
            if let overflow = machine.enqueue(change).overflow { books.overflowed(overflow) }
        }

        mutating func nextBatch(hasWaitedForInterval: Bool) -> SinkPipelineStateMachine<Int>.Next {
            machine.nextBatch(hasWaitedForInterval: hasWaitedForInterval, books: &books)
        }

        mutating func sendSucceeded(at now: Date) {
            _ = machine.sendSucceeded(at: now, books: &books)
        }

        mutating func sendFailed(_ error: any Error, attempt: Int) {
            _ = machine.sendFailed(
                error, retryAfter: nil, isRetryable: true, attempt: attempt, at: (Date(), .now), books: &books)
        }

        mutating func skip(_ version: UInt64) {
            _ = machine.skip(version)
        }

        func outcome(of version: UInt64) -> WriteOutcome? {
            machine.outcome(of: version, books: books)
        }
    }

    /// A remote sink's policy, one change a batch, a buffer of one: 4,000 changes, each batch
    /// taken while two more arrive (one coalesced into the other). Every change is delivered
    /// once its batch is, and nothing is kept once it is. Off the pool: under the sanitizer it
    /// takes seconds.
    @Test func coalescingWithoutEndKeepsNothingOnceDelivered() async {
        await awayFromThePool { Self.coalesceWithoutEnd() }
    }

    private static func change(_ version: UInt64) -> StateChange<Int> {
        StateChange(
            key: "k", oldValue: 0, newValue: Int(version), version: version, timestamp: Date(), instance: nil,
            origin: .local)
    }

    private static func coalesceWithoutEnd() {
        var machine = Machine(policy: .latestValue, isLogBacked: false, startVersion: 0, firstPending: nil)
        var version: UInt64 = 0
        for _ in 0..<2_000 {
            version += 1
            machine.enqueue(Self.change(version))
            version += 1
            machine.enqueue(Self.change(version))
            guard case .send(let batch) = machine.nextBatch(hasWaitedForInterval: true) else {
                Issue.record("no batch at version \(version)")
                return
            }
            #expect(batch.map(\.version) == [version])
            #expect(machine.outcome(of: version - 1) == nil, "coalesced into the batch in flight")
            machine.sendSucceeded(at: Date())
            #expect(machine.outcome(of: version - 1) == .delivered)
        }
        #expect(machine.outcomes.entries.isEmpty)
        #expect((1...version).allSatisfy { machine.outcome(of: $0) == .delivered })
    }

    /// Coalesced changes share the fate of the change that replaced them: given up with it.
    @Test func coalescedChangesShareAGivenUpChangesFate() {
        var policy = SinkPolicy.latestValue
        policy.retry = RetryPolicy(maximumAttempts: 1)
        policy.afterRepeatedFailures = .giveUpAndReport
        var machine = Machine(policy: policy, isLogBacked: false, startVersion: 0, firstPending: nil)
        for version in UInt64(1)...5 { machine.enqueue(Self.change(version)) }
        #expect(machine.outcome(of: 2) == nil)
        guard case .send(let batch) = machine.nextBatch(hasWaitedForInterval: true) else {
            Issue.record("no batch")
            return
        }
        #expect(batch.map(\.version) == [5])
        struct Down: Error {}
        machine.sendFailed(Down(), attempt: 1)
        for version in UInt64(1)...5 {
            guard case .discarded(let reason)? = machine.outcome(of: version) else {
                Issue.record("version \(version): \(String(describing: machine.outcome(of: version)))")
                continue
            }
            #expect(reason.contains("giveUpAndReport"))
        }
        machine.enqueue(Self.change(6))
        #expect(machine.outcome(of: 6) == nil)
    }

    /// A change that is not for the sink (skipped) is settled at once when nothing waits, and
    /// stays so when a later change is buffered and coalesced.
    @Test func aSkippedChangeStaysSettled() {
        var machine = Machine(policy: .latestValue, isLogBacked: false, startVersion: 0, firstPending: nil)
        machine.skip(1)
        #expect(machine.outcome(of: 1) == .delivered)
        machine.enqueue(Self.change(2))
        machine.enqueue(Self.change(3))
        #expect(machine.outcome(of: 1) == .delivered)
        #expect(machine.outcome(of: 2) == nil)
        _ = machine.nextBatch(hasWaitedForInterval: true)
        machine.sendSucceeded(at: Date())
        #expect((1...3).allSatisfy { machine.outcome(of: $0) == .delivered })
    }

    @Test func rangesOfOneFateJoinAndLookupsFindThem() {
        var outcomes = SinkOutcomes()
        outcomes.note(1...3, .discarded(reason: "a"))
        outcomes.note(4...4, .discarded(reason: "b"))
        outcomes.note(10...12, .rejected(reason: "c"))
        outcomes.note(6...6, .discarded(reason: "d"))
        #expect(outcomes.entries.count == 3)
        #expect(outcomes.entry(of: 4)?.fate == .discarded(reason: "a"))
        #expect(outcomes.entry(of: 5) == nil)
        #expect(outcomes.entry(of: 6)?.fate == .discarded(reason: "d"))
        #expect(outcomes.entry(of: 11)?.fate == .rejected(reason: "c"))
        outcomes.keepNewest(1)
        #expect(outcomes.entries.map(\.versions) == [10...12])
    }
}
