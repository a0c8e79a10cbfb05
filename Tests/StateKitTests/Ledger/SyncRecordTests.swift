import Foundation
import Testing

@testable import StateKit

/// The sync record (semantics 17) with any remote sink: marked unsent in storage before a local
/// write's value is, cleared only once the server took the value, kept in storage across launches, and
/// what makes a relaunch send an edit the last run could not. One test waits for its turn to
/// contend (see `contending`), hence the suite's limit.
@Suite(.contendingTimeLimit) struct SyncRecordTests {
    init() { DiagnosticsRecorder.start() }

    private func record(_ directory: TemporaryDirectory, _ key: String) throws -> SyncRecord? {
        let storage = FileStateStorage(directory: directory.url)
        guard let data = try storage.load(forKey: SyncRecordStore.storageKey(for: key)) else { return nil }
        let records = try JSONDecoder().decode([String: [String: SyncRecord]].self, from: data)
        return records["records"]?.values.first
    }

    /// Runs one "launch": a persisted synced container on `directory` with `sink`, released at the end.
    private func launch(
        _ directory: TemporaryDirectory, _ key: String, _ sink: TestRemoteSink<Int>,
        _ body: (SyncedState<Int>) async throws -> Void
    ) async throws {
        let state = SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
        try await body(state)
        state.persistence?.flush()
    }

    @Test func anEditMadeOfflineIsSentAtTheNextLaunch() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let online = TestRemoteSink<Int>()
        try await launch(directory, key, online) { state in
            state.modify(1)
            await state.flush()
        }
        #expect(online.sent == [1])
        #expect(try record(directory, key)?.hasUnsentChanges == false)

        let offline = TestRemoteSink<Int>(offline: true)
        try await launch(directory, key, offline) { state in
            state.modify(2)
            await state.flush()  // returns once the sink pauses, the change still pending
            #expect(state.statistics[0].pending == 1)
        }
        #expect(offline.sent.isEmpty)
        let unsent = try #require(try record(directory, key))
        #expect(unsent.hasUnsentChanges)
        #expect(unsent.base == Data("1".utf8))
        #expect(unsent.validator == "v1")

        // Before the record, nothing was sent: the relaunched container made no change.
        let relaunched = TestRemoteSink<Int>(server: 1)
        try await launch(directory, key, relaunched) { state in
            #expect(state.value == 2)
            await state.flush()
            #expect(state.statistics[0].sent == 1)
        }
        #expect(relaunched.sent == [2])
        #expect(try record(directory, key)?.hasUnsentChanges == false)
        #expect(try record(directory, key)?.base == Data("2".utf8))
    }

    @Test func aLocalWritesUnsentMarkIsStoredBeforeItsValue() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = TestRemoteSink<Int>(offline: true)
        let state = SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
        #expect(try record(directory, key) == nil)
        state.modify(5)
        // No flush: a kill at any moment must not leave a saved 5 with a "sent" record. Both are
        // stored on the cell's queue, the mark first; the value is read first here, so a 5 seen
        // was stored after the record read next.
        let storage = FileStateStorage(directory: directory.url)
        let deadline = ContinuousClock.now + .seconds(60)
        var isSaved = false
        while !isSaved && ContinuousClock.now < deadline {
            isSaved = try storage.load(forKey: key) == Data("5".utf8)
            let stored = try record(directory, key)
            if isSaved { #expect(stored?.hasUnsentChanges == true) }
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(isSaved)
        sink.setOffline(false)
        state.modify(6)
        // The sink paused while offline: flush(timeout:) waits through the pause for its retry.
        #expect(await state.flush(timeout: .seconds(60)))
        let final = try record(directory, key)
        #expect(
            final == SyncRecord(base: Data("6".utf8), validator: "v1", hasUnsentChanges: false),
            "\(String(describing: final)) \(state.statistics)")
    }

    @Test func aRemoteValueDoesNotMarkTheRecordUnsent() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = TestRemoteSink<Int>(server: 9)
        let state = SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
        try await state.refresh()
        await state.flush()
        #expect(state.value == 9)
        #expect(try record(directory, key)?.hasUnsentChanges != true)
        #expect(sink.sent.isEmpty)
    }

    @Test func aDamagedRecordIsReportedAndTheValueTakenAsUnsent() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let storage = FileStateStorage(directory: directory.url)
        try storage.save(Data("3".utf8), forKey: key)
        try storage.save(Data("{ torn".utf8), forKey: SyncRecordStore.storageKey(for: key))
        let sink = TestRemoteSink<Int>()
        let state = SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
        await state.flush()
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.decodingFailed])
        #expect(sink.sent == [3])
        #expect(try record(directory, key)?.hasUnsentChanges == false)
    }

    @Test func theRecordEndsCleanOnlyWhenTheServerHoldsTheNewestValueUnderContention() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = TestRemoteSink<Int>()
        let state = SyncedState(0, key: key, storage: .file(directory.url), sinks: [sink])
        await onThreads(4) { _ in
            for _ in 0..<500 { state.modify { $0 += 1 } }
        }
        await state.flush()
        #expect(state.value == 2_000)
        #expect(sink.server == 2_000)
        let final = try #require(try record(directory, key))
        #expect(final.base == Data("2000".utf8))
        #expect(!final.hasUnsentChanges)
        #expect(sink.sent.last == 2_000)
        #expect(sink.sent == sink.sent.sorted())
    }

    @Test func whatAnOutboxKeptIsSentOnlyOnceTheSinkKnowsItsRecord() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let outbox = directory.url.appendingPathComponent("outbox")
        // Before the fix, a pipeline started delivering the outbox's changes as it was made,
        // before its container connected the sink: the sink sent them without its record.
        for launch in 1...3 {
            let key = "outboxed"
            let offline = TestRemoteSink<Int>(offline: true)
            do {
                let state = SyncedState(0, key: key, storage: .file(directory.url)) {
                    DurableOutbox(fileURL: outbox, wrapping: offline)
                }
                state.modify(launch)
                await state.flush()
            }
            let online = TestRemoteSink<Int>(connectDelay: .milliseconds(100))
            let state = SyncedState(0, key: key, storage: .file(directory.url)) {
                DurableOutbox(fileURL: outbox, wrapping: online)
            }
            await state.flush()
            #expect(online.sendsBeforeConnect == 0)
            #expect(online.sent == [launch])
            #expect(state.statistics[0].failed == 0)
        }
    }

    @Test func anOutboxAndANamePassTheChannelOn() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let wrapped = TestRemoteSink<Int>()
        let named = TestRemoteSink<Int>()
        let state = SyncedState(0, key: uniqueKey()) {
            DurableOutbox(fileURL: directory.url.appendingPathComponent("outbox"), wrapping: wrapped)
            named.named("second")
        }
        let first = try #require(wrapped.connectedChannel)
        let second = try #require(named.connectedChannel)
        #expect(first.recordName == "DurableOutbox<TestRemoteSink<Int>>")
        #expect(second.recordName == "second")
        withExtendedLifetime(state) {}
    }
}
