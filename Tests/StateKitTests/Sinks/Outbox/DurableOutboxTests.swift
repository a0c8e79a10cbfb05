import Foundation
import StateKit
import Testing

@Suite(.timeLimit(.minutes(1))) struct DurableOutboxTests {
    init() { DiagnosticsRecorder.start() }

    private func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appending(path: "statekit-outbox-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// For a container without storage the log is where its value lives: once everything is
    /// delivered and the log compacted (every 256 records), and again when it is reopened, it
    /// still holds the newest change, which the next launch starts from.
    @Test func aLaunchStartsFromTheNewestChangeEvenWhenEverythingWasDeliveredAndCompacted() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appending(path: "state.outbox")
        let key = uniqueKey()
        for launch in 1...3 {
            let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: ClosureSink<Int> { _ in }) }
            #expect(state.value == (launch - 1) * 300, "launch \(launch) started from \(state.value)")
            #expect(state.version == UInt64((launch - 1) * 300))
            for _ in 1...300 { state.modify { $0 += 1 } }
            await state.flush()
            #expect(state.statistics[0].pending == 0)
        }
        let records = try Data(contentsOf: log).split(separator: 0x0A).count
        #expect(records < 300, "the log was not compacted: \(records) records")
    }

    @Test(arguments: [false, true])
    func changesOfAKilledWriterArriveExactlyOnceInOrderAfterRestart(withTornTail: Bool) async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appending(path: "state.outbox")
        let events = directory.appending(path: "events.jsonl")
        let key = uniqueKey()
        let count = 200

        let writer = try await SinksHelper.launch(["outbox-write", log.path, key, String(count)])
        #expect(writer.firstLine == "wrote \(count)")
        await writer.kill()
        #expect(writer.process.terminationReason == .uncaughtSignal)
        #expect(!FileManager.default.fileExists(atPath: events.path))
        if withTornTail {
            let handle = try FileHandle(forWritingTo: log)
            try handle.seekToEnd()
            try handle.write(contentsOf: Data(#"{"change":{"key":"\#(key)","newVal"#.utf8))
            try handle.close()
        }

        let deliverer = try await SinksHelper.launch(["outbox-deliver", log.path, key, events.path])
        #expect(await deliverer.exitStatus() == 0)
        #expect(deliverer.firstLine == "delivered \(count + 1)")
        let received = try JSONLinesAnalyticsBackend(fileURL: events).events()
        #expect(received.map(\.idempotencyKey) == (1...count + 1).map { "\(key)#\($0)" })
        #expect(received.map(\.properties["value"]) == (1...count).map(String.init) + ["-1"])
        #expect(deliverer.diagnostics.contains("[outbox-corrupt-record]") == withTornTail)
    }

    @Test func recoverySkipsDamagedRecordsAndHonoursAcknowledgements() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appending(path: "state.outbox")
        let key = uniqueKey()
        func change(_ version: Int) -> String {
            #"{"change":{"key":"\#(key)","oldValue":\#(version - 1),"newValue":\#(version * 10),"#
                + #""version":\#(version),"timestamp":"2025-01-01T00:00:00Z"}}"#
        }
        let lines = [change(1), change(2), "{not json", change(3), #"{"acknowledged":2}"#, change(4), change(4)]
        try Data((lines.joined(separator: "\n") + "\n" + #"{"change":{"#).utf8).write(to: log)

        let sink = TestSink<Int>()
        let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        await state.flush()
        #expect(sink.versions == [3, 4])
        #expect(sink.changes.map(\.newValue) == [30, 40])
        #expect(state.version == 4)
        let corrupt = DiagnosticsRecorder.diagnostics(involving: key).filter { $0.kind == .outboxCorruptRecord }
        #expect(corrupt.count == 2)

        state.modify(5)
        await state.flush()
        #expect(sink.versions == [3, 4, 5])
        #expect(sink.changes.last?.idempotencyKey == "\(key)#5")
    }

    @Test func acknowledgedChangesAreNotDeliveredAgainAfterRestart() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let log = directory.appending(path: "state.outbox")
        let key = uniqueKey()
        let first = TestSink<Int>()
        do {
            let state = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: first) }
            for value in 1...3 { state.modify(value) }
            await state.flush()
        }
        #expect(first.versions == [1, 2, 3])

        let second = TestSink<Int>()
        let restarted = SyncedState(0, key: key) { DurableOutbox(fileURL: log, wrapping: second) }
        await restarted.flush()
        #expect(second.versions.isEmpty)
        #expect(restarted.version == 3)
        restarted.modify(4)
        await restarted.flush()
        #expect(second.versions == [4])
    }
}
