import Foundation
import Testing

@testable import StateKit

/// Semantics 26 across launches: a receipt's outcome survives kill -9, and a relaunch resolves
/// every write an earlier launch logged, without sending again what a sink refused.
@Suite(.timeLimit(.minutes(2))) struct ReceiptRelaunchTests {
    init() { DiagnosticsRecorder.start() }

    struct Refusal: StateSinkError {
        var isRetryable: Bool { false }
        var retryAfter: Duration? { nil }
    }

    /// A child writes 600 changes behind an outbox; its sink refuses every seventh and takes the
    /// others of the first 300, then holds the rest; the child is killed. The relaunch says the
    /// refused ones were rejected (naming the sink), the others of the first half delivered, and
    /// delivers the second half, each once: nothing refused is sent again.
    @Test func outcomesSurviveAKillAndTheRelaunchResolvesEveryLoggedWrite() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.cleanUp() }
        let log = temporary.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let child = try await SinksHelper.launch(["outbox-receipts", log.path, key, "600"])
        #expect(child.firstLine == "settled 300 wrote 600")
        await child.kill()

        let received = Collector<UInt64>()
        let state = SyncedState(0, key: key) {
            DurableOutbox(
                fileURL: log,
                wrapping: ClosureSink<Int> { changes in for change in changes { received.append(change.version) } })
        }
        #expect(state.version == 600)
        #expect(state.value == 600)
        for version in UInt64(1)...600 {
            let outcome = await state.receipt(for: version)?.outcome(timeout: .seconds(30))
            if version <= 300 && version % 7 == 0 {
                guard case .rejected(let reason)? = outcome else {
                    Issue.record("version \(version): \(String(describing: outcome))")
                    continue
                }
                #expect(reason.contains("picky"))
            } else {
                #expect(outcome == .delivered, "version \(version): \(String(describing: outcome))")
            }
        }
        // The held batch (version 301) and everything after it, once each, in order.
        #expect(received.all == Array(301...600))
        #expect(state.pendingWrites.isEmpty)
    }

    /// A write whose log append met a full disk is not saved, however long one waits, until the
    /// disk has room: then the log's repair writes it, and it is saved.
    @Test func aWriteTheFullDiskKeptOutOfTheLogIsNotSavedUntilItIsWritten() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.cleanUp() }
        let child = try await SinksHelper.launch([
            "outbox-saved-full-disk", temporary.url.appending(path: "state.outbox").path, uniqueKey(), "-",
        ])
        #expect(await child.exitStatus() == 0)
        #expect(child.firstLine == "saved false true")
    }

    /// In one process: a container released and made again over its outbox answers for the
    /// versions the first one wrote, with what the log kept of their outcomes, also after the log
    /// was compacted (every 256 records).
    @Test func aContainerMadeAgainAnswersForTheFirstOnesWrites() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.cleanUp() }
        let log = temporary.url.appending(path: "state.outbox")
        let key = uniqueKey()
        do {
            let refusing = ClosureSink<Int>(policy: SinkPolicy(maximumBatchSize: 1)) { changes in
                if changes[0].version % 100 == 0 { throw Refusal() }
            }
            let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: refusing).named("strict") }
            var last: WriteReceipt?
            for _ in 1...700 { last = state.write { $0 += 1 } }
            #expect(
                await last?.outcome(timeout: .seconds(30)) == .rejected(reason: "sink strict refused it: \(Refusal())"))
        }
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
        #expect(state.version == 700)
        for version in UInt64(1)...700 {
            let outcome = await state.receipt(for: version)?.outcome(timeout: .seconds(30))
            if version % 100 == 0 {
                #expect(
                    outcome.map { "\($0)".contains("strict") } == true,
                    "version \(version): \(String(describing: outcome))")
            } else {
                #expect(outcome == .delivered, "version \(version)")
            }
        }
        #expect(state.receipt(for: 701) == nil)
    }
}
