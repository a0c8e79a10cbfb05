import Foundation
import StateKitHTTP
import Testing

@testable import StateKit

/// Semantics 26: every write has a receipt, which resolves exactly once, per container, to
/// delivered, discarded or rejected, as the sinks' books say.
@Suite(.contendingTimeLimit) struct WriteReceiptTests {
    init() { DiagnosticsRecorder.start() }

    struct Refusal: StateSinkError {
        var isRetryable: Bool { false }
        var retryAfter: Duration? { nil }
    }

    struct Flake: Error {}

    /// Retries at once, two attempts, then gives up: a sink's failures settle quickly.
    private static let givesUpFast = SinkPolicy(
        maximumBatchSize: 1,
        retry: RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(1), maximumAttempts: 2),
        afterRepeatedFailures: .giveUpAndReport)

    @Test func aWriteIsDeliveredWhenEverySinkTookIt() async {
        let received = Collector<UInt64>()
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink { changes in for change in changes { received.append(change.version) } }
            ClosureSink { _ in }
        }
        let receipt = state.write { $0 += 1 }
        #expect(receipt.version == 1)
        #expect(await receipt.outcome(timeout: .seconds(30)) == .delivered)
        #expect(received.all == [1])
        #expect(await state.receipt(for: 1)?.outcome(timeout: .seconds(30)) == .delivered)
        #expect(state.receipt(for: 2) == nil, "a version not written yet")
        #expect(state.receipt(for: 0) == nil, "the starting value is no write")
        #expect(state.pendingWrites.isEmpty)
    }

    /// A sink that refuses a change for good makes its receipt rejected, naming the sink, however
    /// the other sinks did.
    @Test func aRefusalRejectsTheWrite() async {
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink { _ in }
            ClosureSink<Int>(policy: SinkPolicy(maximumBatchSize: 1)) { changes in
                if changes.contains(where: { $0.newValue == 2 }) { throw Refusal() }
            }
            .named("picky")
        }
        let first = state.write { $0 = 1 }
        let second = state.write { $0 = 2 }
        let third = state.write { $0 = 3 }
        #expect(await first.outcome(timeout: .seconds(30)) == .delivered)
        let refused = await second.outcome(timeout: .seconds(30))
        guard case .rejected(let reason)? = refused else {
            Issue.record("expected a rejection, got \(String(describing: refused))")
            return
        }
        #expect(reason.contains("picky"))
        #expect(await third.outcome(timeout: .seconds(30)) == .delivered)
        #expect(await second.outcome(timeout: .zero) == refused, "an outcome never changes")
    }

    /// The reasons name the remote sink's destination: a server that refuses the write for good
    /// (400), and one that fails until the policy gives the write up (503).
    @Test func theReasonsOfARemoteSinkNameItsDestination() async throws {
        for status in [400, 503] {
            let server = try FixtureHTTPServer(fallback: .init(status: status))
            defer { server.stop() }
            var policy = SinkPolicy.latestValue
            policy.retry = RetryPolicy(
                initialDelay: .microseconds(1), maximumDelay: .microseconds(10), maximumAttempts: 2)
            policy.afterRepeatedFailures = .giveUpAndReport
            let state = SyncedState(0, key: uniqueKey()) {
                HTTPSyncSink<Int>(endpoint: server.url, loadsOnStart: false, policy: policy)
            }
            let outcome = await state.write { $0 = 1 }.outcome(timeout: .seconds(30))
            switch (status, outcome) {
            case (400, .rejected(let reason)?), (503, .discarded(let reason)?):
                #expect(reason.contains(server.url.absoluteString), "\(reason)")
            default:
                Issue.record("HTTP \(status): \(String(describing: outcome))")
            }
        }
    }

    /// A validator's refusal changes nothing and is the receipt's outcome at once.
    @Test func aValidatorsRefusalIsRejectedAtOnce() async {
        struct NotPositive: Error {}
        let state = SyncedState(1, key: uniqueKey(), sinks: [ClosureSink { _ in }]) { _, proposed in
            guard proposed > 0 else { throw NotPositive() }
        }
        state.modify(5)
        let receipt = state.write { $0 = -1 }
        #expect(state.value == 5)
        #expect(receipt.version == 1, "the version the container kept")
        guard case .rejected(let reason)? = await receipt.outcome(timeout: .zero) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(reason.contains("validator"))
        #expect(await receipt.saved(timeout: .zero) == false)
    }

    /// 1,000 writes from four threads, with 30% of one sink's requests failing and a policy that
    /// gives a change up after two attempts: every receipt resolves, once, and says exactly what
    /// the sinks did.
    @Test func aThousandWritesWithThirtyPercentOfRequestsFailing() async {
        let delivered = Collector<UInt64>()
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink(policy: Self.givesUpFast) { changes in
                if Int.random(in: 0..<10) < 3 { throw Flake() }
                for change in changes { delivered.append(change.version) }
            }
            ClosureSink { _ in }
        }
        await onThreads(4) { _ in
            for _ in 0..<250 { state.write { $0 += 1 } }
        }
        #expect(state.version == 1_000)
        var outcomes: [UInt64: WriteOutcome] = [:]
        for version in UInt64(1)...1_000 {
            outcomes[version] = await state.receipt(for: version)?.outcome(timeout: .seconds(30))
        }
        let deliveredVersions = Set(delivered.all)
        #expect(outcomes.count == 1_000, "every receipt resolved")
        #expect(Set(outcomes.filter { $0.value == .delivered }.keys) == deliveredVersions)
        let discarded = outcomes.filter { if case .discarded = $0.value { true } else { false } }
        #expect(discarded.count == 1_000 - deliveredVersions.count)
        #expect(discarded.values.allSatisfy { "\($0)".contains("giveUpAndReport") })
        #expect(!discarded.isEmpty, "about 9% of the changes fail twice")
        for version in UInt64(1)...1_000 {
            #expect(await state.receipt(for: version)?.outcome(timeout: .zero) == outcomes[version])
        }
        #expect(state.pendingWrites.isEmpty)
    }

    /// A full buffer that drops the newest change discards it at once, naming the policy, while
    /// the change before it is still on its way.
    @Test func aChangeDroppedByAFullBufferIsDiscarded() async {
        let gate = Latch()
        let held = SinkPolicy(maximumBatchSize: 1, bufferLimit: 1, overflow: .dropNewest)
        let started = Collector<UInt64>()
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink(policy: held) { changes in
                started.append(changes[0].version)
                if changes[0].version == 1 { await gate.wait() }
            }
        }
        state.write { $0 = 1 }
        await eventually("the first change to be in flight") { started.all == [1] }
        state.write { $0 = 2 }
        let dropped = state.write { $0 = 3 }
        guard case .discarded(let reason)? = await dropped.outcome(timeout: .seconds(30)) else {
            Issue.record("expected a discard")
            return
        }
        #expect(reason.contains("dropNewest"))
        #expect(await state.receipt(for: 1)?.outcome(timeout: .zero) == nil, "still in flight")
        #expect(state.pendingWrites.map(\.version) == [1, 2])
        gate.open()
        #expect(await state.receipt(for: 2)?.outcome(timeout: .seconds(30)) == .delivered)
        #expect(await state.receipt(for: 1)?.outcome(timeout: .seconds(30)) == .delivered)
    }

    /// A change replaced in a full buffer by a newer one shares its outcome.
    @Test func aCoalescedChangeSharesTheOutcomeOfTheChangeThatReplacedIt() async {
        let gate = Latch()
        let started = Collector<UInt64>()
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink(policy: .latestValue) { changes in
                started.append(changes[0].version)
                if changes[0].version == 1 { await gate.wait() }
            }
        }
        state.write { $0 = 1 }
        await eventually("the first change to be in flight") { started.all == [1] }
        let replaced = state.write { $0 = 2 }
        state.write { $0 = 3 }
        #expect(await replaced.outcome(timeout: .milliseconds(50)) == nil)
        #expect(state.pendingWrites.map(\.version) == [1, 3])
        gate.open()
        #expect(await replaced.outcome(timeout: .seconds(30)) == .delivered)
        #expect(started.all == [1, 3])
    }

    /// What waits is listed, with its attempts and its sink's last error.
    @Test func pendingWritesListWhatWaitsWithItsAttempts() async {
        var policy = SinkPolicy.default
        policy.retry = RetryPolicy(initialDelay: .milliseconds(5), maximumDelay: .milliseconds(5), maximumAttempts: 3)
        policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: .seconds(600))
        policy.drainTimeout = .milliseconds(100)
        let state = SyncedState(0, key: uniqueKey()) {
            ClosureSink<Int>(policy: policy) { _ in throw Flake() }.named("down")
        }
        let before = Date()
        state.write { $0 = 1 }
        state.write { $0 = 2 }
        await eventually("the sink to pause") { state.syncStatus.value.isPaused }
        let pending = state.pendingWrites
        #expect(pending.map(\.version) == [1, 2])
        #expect(pending.first?.attempts == 3)
        #expect(pending.allSatisfy { $0.waitsFor == ["down"] && $0.lastError != nil && $0.origin == .local })
        #expect(pending.allSatisfy { $0.timestamp >= before.addingTimeInterval(-1) })
        #expect(await state.receipt(for: 1)?.outcome(timeout: .milliseconds(20)) == nil)
    }

    /// Inside a transaction a write learns its version from the commit; a write its transaction
    /// never commits is discarded.
    @Test func aWriteInATransactionTakesTheCommitsVersion() async {
        struct Abort: Error {}
        let state = SyncedState(0, key: uniqueKey()) { ClosureSink { _ in } }
        let other = SyncedState(0, key: uniqueKey()) { ClosureSink { _ in } }
        state.modify(10)
        let receipt = withStateTransaction {
            other.modify(1)
            return state.write { $0 += 1 }
        }
        #expect(receipt.version == 2)
        #expect(await receipt.outcome(timeout: .seconds(30)) == .delivered)
        var abandoned: WriteReceipt?
        #expect(throws: Abort.self) {
            try withStateTransaction {
                abandoned = state.write { $0 += 1 }
                throw Abort()
            }
        }
        #expect(state.value == 11)
        guard case .discarded(let reason)? = await abandoned?.outcome(timeout: .zero) else {
            Issue.record("expected a discard")
            return
        }
        #expect(reason.contains("transaction"))
        #expect(abandoned?.version == 0)
    }

    /// Two containers of one persisted key share its versions: each answers for the other's
    /// writes with its own sinks.
    @Test func twoContainersOfOneKeyAnswerForEachOthersWrites() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = FileStateStorage.file(directory)
        let key = uniqueKey()
        let first = SyncedState(0, key: key, storage: storage) { ClosureSink { _ in } }
        let second = SyncedState(0, key: key, storage: storage) { ClosureSink { _ in } }
        await onThreads(2) { index in
            for _ in 0..<100 { (index == 0 ? first : second).write { $0 += 1 } }
        }
        #expect(first.value == 200 && second.value == 200)
        for version in UInt64(1)...200 {
            #expect(await first.receipt(for: version)?.outcome(timeout: .seconds(30)) == .delivered)
            #expect(await second.receipt(for: version)?.outcome(timeout: .seconds(30)) == .delivered)
        }
        #expect(await first.write { $0 += 1 }.saved(timeout: .seconds(30)))
    }

    /// `saved` is true where storage keeps the write on disk: files (shared across processes
    /// too, forced when asked), `UserDefaults` (its file written when asked); never for storage
    /// in memory, which says so at once rather than at the deadline.
    @Test func savedIsTrueOnlyWhereStorageKeepsTheWriteOnDisk() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        defer { try? FileManager.default.removeItem(at: directory) }
        let suite = "statekit-receipts-\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let storages: [(String, any StateStorage, Bool)] = [
            ("file", FileStateStorage(directory: directory.appendingPathComponent("plain")), true),
            (
                "shared file",
                FileStateStorage(directory: directory.appendingPathComponent("shared"), sharedAcrossProcesses: true),
                true
            ),
            ("user defaults", UserDefaultsStateStorage(defaults, suiteName: suite), true),
            ("memory", InMemoryStateStorage(), false),
        ]
        for (name, storage, isDurable) in storages {
            let state = SyncedState(0, key: uniqueKey(), storage: storage) { ClosureSink { _ in } }
            let started = ContinuousClock.now
            // Ten minutes: a `false` that waited for its deadline shows against the bound below.
            #expect(await state.write { $0 += 1 }.saved(timeout: .seconds(600)) == isDurable, "\(name)")
            if !isDurable {
                #expect(ContinuousClock.now - started < .seconds(120), "\(name): waited for the deadline")
            }
        }
    }

    /// Without storage or an outbox nothing holds a write on disk.
    @Test func aContainerWithoutStorageSavesNothing() async {
        let state = SyncedState(0, key: uniqueKey()) { ClosureSink { _ in } }
        #expect(await state.write { $0 = 1 }.saved(timeout: .seconds(1)) == false)
    }
}
