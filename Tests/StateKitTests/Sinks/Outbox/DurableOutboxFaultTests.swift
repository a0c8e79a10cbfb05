import Foundation
import Testing

@testable import StateKit  // OutboxLogRegistry and LockFileState: a log torn down while another opens

/// The outbox never erases, never drops what it logged, and never trusts what it cannot read:
/// second owners, takeovers, absurd and torn records, unreadable files, a full disk, a lagging sink.
@Suite(.timeLimit(.minutes(2))) struct DurableOutboxFaultTests {
    init() { DiagnosticsRecorder.start() }

    private func change(_ key: String, _ version: UInt64, value: Int? = nil) -> String {
        #"{"change":{"key":"\#(key)","oldValue":0,"newValue":\#(value ?? Int(truncatingIfNeeded: version)),"#
            + #""version":\#(version),"timestamp":"2025-01-01T00:00:00Z"}}"#
    }

    private func makeDirectory(_ name: String = #function) throws -> TemporaryDirectory {
        let directory = TemporaryDirectory(name)
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        return directory
    }

    private func diagnostics(_ kind: StateDiagnostic.Kind, _ key: String) -> [StateDiagnostic] {
        DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == kind }
    }

    @Test func aSecondLiveContainerOnTheSameFileIsRefusedAndErasesNothing() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let gate = Gate()
        let first = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: TestSink<Int>(gate: gate)) }
        for value in 1...3 { first.modify(value) }
        let logged = try Data(contentsOf: log)

        let secondSink = TestSink<Int>()
        // The same file spelled another way.
        let spelledOtherwise = directory.url.appending(path: "./sub/../state.outbox")
        let second = SyncedState(0, key: key) { DurableOutbox(fileURL: spelledOtherwise, wrapping: secondSink) }
        second.modify(10)
        await second.flush()

        #expect(diagnostics(.outboxInUse, key).count == 1)
        #expect(try Data(contentsOf: log) == logged, "the refused container wrote nothing to the log")
        #expect(secondSink.versions == [1], "a refused container still delivers, without a log")
        gate.open()
        await first.flush()
        #expect(first.statistics[0].sent == 3)
    }

    @Test func aSendCancelledWhileItWaitsForTheLogsTurnThrowsAndSendsNothing() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let outbox = DurableOutbox(fileURL: directory.url.appending(path: "state.outbox"), wrapping: sink)
        let state = SyncedState(0, key: key) { outbox }
        state.modify(1)
        await gate.arrived()  // the pipeline's send of version 1 holds the log's turn

        // Cancelled before or after it joins the line: either way it must not wait for the turn.
        let late = StateChange(key: key, oldValue: 1, newValue: 2, version: 2, timestamp: Date())
        let waiting = Task { try await outbox.send([late]) }
        waiting.cancel()
        let outcome = Collector<Result<Void, any Error>>()
        await bounded("the cancelled send to return while the turn is held", seconds: 10) { resumer in
            Task {
                outcome.append(await waiting.result)
                resumer.resume()
            }
        }
        guard case .failure(let error) = outcome.all.first else {
            Issue.record("the cancelled send did not throw: \(outcome.all)")
            return
        }
        #expect(error is CancellationError)

        gate.open()
        await state.flush()
        #expect(sink.versions == [1], "the cancelled send sent nothing")
    }

    @Test func aContainerCreatedAgainTakesTheLogOverWithoutErasingOrRepeatingVersions() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let gate = Gate()
        let firstSink = TestSink<Int>(gate: gate)
        do {
            let first = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: firstSink) }
            for value in 1...3 { first.modify(value) }
            await gate.arrived()
        }
        // The released container's pipeline is still sending 1...3 when the new one starts.
        let secondSink = TestSink<Int>()
        let second = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: secondSink) }
        #expect(second.version == 3)
        second.modify(4)
        second.modify(5)
        gate.open()
        await second.flush()

        // The released container's sink sent what was in flight; the new one sends the rest,
        // nothing twice and nothing after a newer change.
        #expect(firstSink.versions.first == 1)
        #expect(firstSink.versions + secondSink.versions == [1, 2, 3, 4, 5])
        #expect(diagnostics(.outboxInUse, key).isEmpty)
        let third = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: TestSink<Int>()) }
        #expect(third.version == 0, "refused: the second container still owns the log")
        withExtendedLifetime(second) {}
    }

    /// A container made on the file just as this process's previous log of it is torn down
    /// (released, so the registry reads it as gone, but its `deinit` has not yet closed its lock
    /// file) waits for the close and logs its changes. Before, it found the file locked, ran
    /// without a log (`outboxInUse`), and a relaunch lost its offline edit: seen once as a
    /// container without storage sending its default value where the logged edit was due.
    @Test func aContainerMadeWhileThePreviousLogIsTornDownWaitsForItsLockAndLogs() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        // The previous log's teardown, for 50 ms: its entry's log gone, its lock file locked.
        let path = OutboxLogRegistry.canonicalPath(log)
        let lockFile = open(path + ".lock", O_RDWR | O_CREAT, 0o644)
        #expect(flock(lockFile, LOCK_EX | LOCK_NB) == 0)
        let tornDown = LockFileState()
        OutboxLogRegistry.logs.withLock { $0[path] = OutboxLogRegistry.WeakLog(Gate(), lockFileState: tornDown) }
        Thread {
            usleep(50_000)
            close(lockFile)
            tornDown.markClosed()
        }.start()

        let gate = Gate()
        let sink = TestSink<Int>(gate: gate)
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        state.modify(7)
        #expect(diagnostics(.outboxInUse, key).isEmpty)
        #expect(try String(decoding: Data(contentsOf: log), as: UTF8.self).contains(#""newValue":7"#))
        gate.open()
        await state.flush()
        #expect(sink.versions == [1])
    }

    @Test func anOutboxHeldByAnotherProcessIsRefusedAndLeftIntact() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let events = directory.url.appending(path: "events.jsonl")
        let key = uniqueKey()
        let writer = try await SinksHelper.launch(["outbox-write", log.path, key, "50"])
        #expect(writer.firstLine == "wrote 50")
        let logged = try Data(contentsOf: log)

        let sink = TestSink<Int>()
        let intruder = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        intruder.modify(1)
        await intruder.flush()
        #expect(diagnostics(.outboxInUse, key).count == 1)
        #expect(try Data(contentsOf: log) == logged)

        await writer.kill()
        let deliverer = try await SinksHelper.launch(["outbox-deliver", log.path, key, events.path])
        await deliverer.waitForExit()
        #expect(deliverer.firstLine == "delivered 51")
        withExtendedLifetime(intruder) {}
    }

    /// Writes `lines` to the log at `log`, one record a line: a log as a relaunch finds it.
    private func writeLog(_ lines: [String], to log: URL) throws {
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: log)
    }

    /// Outcomes a receipt reads after a relaunch, as the log keeps them: a range that runs
    /// backwards or past the trusted versions is set aside and reported, the good one is kept,
    /// and the change after them is delivered.
    @Test func absurdOutcomeRecordsAreSetAsideAndTheGoodOneKept() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let lines = [
            change(key, 1), change(key, 2),
            #"{"acknowledged":2,"settled":{"from":2,"through":2,"rejected":"sink s refused it"}}"#,
            #"{"settled":{"from":9,"through":3,"discarded":"backwards"}}"#,
            #"{"settled":{"from":1,"through":18446744073709551615,"discarded":"absurd"}}"#,
            change(key, 3),
        ]
        try writeLog(lines, to: log)

        let sink = TestSink<Int>()
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        await state.flush()
        #expect(sink.versions == [3])
        #expect(await state.receipt(for: 1)?.outcome(timeout: .seconds(30)) == .delivered)
        #expect(await state.receipt(for: 2)?.outcome(timeout: .seconds(30)) == .rejected(reason: "sink s refused it"))
        #expect(await state.receipt(for: 3)?.outcome(timeout: .seconds(30)) == .delivered)
        #expect(diagnostics(.outboxCorruptRecord, key).count == 2)
    }

    @Test func absurdNumbersAreSetAsideAndTheRecordsAfterThemDelivered() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let lines = [
            change(key, 1), change(key, 2), #"{"acknowledged":18446744073709551615}"#, change(key, 3),
            change(key, UInt64.max), change("another-key", 4), change(key, 4),
        ]
        try writeLog(lines, to: log)

        let sink = TestSink<Int>()
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        await state.flush()
        #expect(sink.versions == [1, 2, 3, 4])
        #expect(state.version == 4)
        state.modify(50)
        await state.flush()
        #expect(sink.versions == [1, 2, 3, 4, 5], "no wrap to 0, nothing silenced")
        let reports = diagnostics(.outboxCorruptRecord, key)
        #expect(reports.count == 3)
        let asideFiles = directory.fileNames.filter { $0.hasPrefix("state.outbox.set-aside-") }
        #expect(asideFiles.count == 1)
        let aside = try String(contentsOf: directory.url.appending(path: asideFiles[0]), encoding: .utf8)
        #expect(aside == [lines[2], lines[4], lines[5]].joined(separator: "\n") + "\n")
    }

    @Test func anUnreadableFileIsReportedAndNeverOverwritten() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        // A directory where the log should be: reading it fails, even as root.
        let log = directory.url.appending(path: "state.outbox")
        try FileManager.default.createDirectory(at: log, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: log.appending(path: "inside"))
        let key = uniqueKey()
        let sink = TestSink<Int>()
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        state.modify(1)
        await state.flush()
        #expect(diagnostics(.outboxUnreadable, key).count == 1)
        #expect(sink.versions == [1])
        #expect(try String(contentsOf: log.appending(path: "inside"), encoding: .utf8) == "keep me")
    }

    @Test func aFullDiskLeavesNoPartialRecordToSwallowTheNext() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let events = directory.url.appending(path: "events.jsonl")
        let key = uniqueKey()
        let writer = try await SinksHelper.launch(["outbox-full-disk", log.path, key, "4000"])
        let parts = writer.firstLine.split(separator: " ")
        await writer.kill()
        #expect(parts.count == 3 && parts[0] == "failed")
        let failed = try #require(UInt64(parts.count == 3 ? parts[1] : ""))
        let last = try #require(UInt64(parts.count == 3 ? parts[2] : ""))
        #expect(last == failed + 10)

        let deliverer = try await SinksHelper.launch(["outbox-deliver", log.path, key, events.path])
        await deliverer.waitForExit()
        let received = try JSONLinesAnalyticsBackend(fileURL: events).events().map(\.idempotencyKey)
        // The change whose append failed was kept in memory (reported) and appended, in its place,
        // once the log could grow again: every change was logged, none twice.
        let expected = (1...last + 1).map { "\(key)#\($0)" }
        #expect(received == expected)
        #expect(!deliverer.diagnostics.contains("[outbox-corrupt-record]"))
    }

    /// A full disk while 1,000 changes are written and delivered, then space freed and nothing more
    /// written before a kill: the relaunch goes on from version 1,000, so versions and idempotency
    /// keys never repeat; so does one after a launch that found the disk full from its start.
    /// Before, the log held only its first acknowledgement and the relaunch started again at 1
    /// (issue 51, 4).
    @Test func versionsGoOnAfterAFullDiskIsFreed() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let writer = try await SinksHelper.launch(["outbox-full-disk-freed", log.path, key, "-"])
        #expect(writer.firstLine == "freed 1000")
        // Time for the log to repair itself once it can grow again (it retries every second).
        await eventually("the log to hold version 1000") {
            (try? String(contentsOf: log, encoding: .utf8))?.contains(#""version":1000"#) == true
        }
        await writer.kill()

        // A second launch finds the disk full from its start: the log cannot even be rewritten as
        // it is opened. It logs ten more, and space is freed.
        let second = try await SinksHelper.launch(["outbox-full-disk-at-start", log.path, key, "-"])
        #expect(second.firstLine == "freed 1010")
        await eventually("the log to hold version 1010") {
            (try? String(contentsOf: log, encoding: .utf8))?.contains(#""version":1010"#) == true
        }
        await second.kill()
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
        #expect(state.version == 1_010)
        #expect(state.value == 1_010)
        state.modify { $0 += 1 }
        #expect(state.version == 1_011)
    }

    @Test func behindAnOutboxALaggingSinkLosesNothingWhenItsBufferIsFull() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        let gate = Gate()
        let sink = TestSink<Int>(policy: SinkPolicy(maximumBatchSize: 7, bufferLimit: 10), gate: gate)
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        for value in 1...1_000 { state.modify(value) }
        await waitUntilDelivered(state)
        #expect(state.statistics[0].pending == 1_000)
        gate.open()
        await state.flush()
        #expect(sink.versions == Array(1...1_000))
        #expect(state.statistics[0].dropped == 0)
        #expect(state.statistics[0].sent == 1_000)
        #expect(diagnostics(.sinkDroppedChanges, key).isEmpty)
    }

    @Test func pendingChangesBeyondTheBufferAreReadBackFromTheLogAfterARestart() async throws {
        let directory = try makeDirectory()
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "state.outbox")
        let key = uniqueKey()
        try Data(((1...500).map { change(key, UInt64($0)) }.joined(separator: "\n") + "\n").utf8).write(to: log)
        let sink = TestSink<Int>(policy: SinkPolicy(maximumBatchSize: 3, bufferLimit: 4))
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        state.modify(-1)
        await state.flush()
        #expect(sink.versions == Array(1...501))
        #expect(sink.changes.last?.newValue == -1)
    }
}
