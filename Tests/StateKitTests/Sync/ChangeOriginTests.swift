import Foundation
import StateKit
import Testing

/// Every change says where it came from (semantics 18): local writes, values a remote sink took
/// from its server, changes another process wrote to storage, undo and redo. Remote values are
/// not sent back to remote sinks nor counted as sent, and history never records or reverts them.
@Suite(.timeLimit(.minutes(1))) struct ChangeOriginTests {
    init() { DiagnosticsRecorder.start() }

    @Test func writesAndTransactionsAreLocal() {
        let state = MonitoredState(0, key: uniqueKey())
        let origins = Collector<ChangeOrigin>()
        let subscription = state.subscribeChanges { origins.append($0.origin) }
        state.modify(1)
        state.modify { $0 += 1 }
        withStateTransaction { state.modify(5) }
        #expect(origins.all == [.local, .local, .local])
        subscription.cancel()
    }

    @Test func undoAndRedoAreMarkedAsSuch() {
        let state = MonitoredState(0, key: uniqueKey())
        let history = StateHistory(tracking: state)
        let origins = Collector<ChangeOrigin>()
        let subscription = state.subscribeChanges { origins.append($0.origin) }
        state.modify(1)
        history.undo()
        history.redo()
        #expect(origins.all == [.local, .undo, .redo])
        #expect(state.value == 1)
        subscription.cancel()
    }

    @Test func aRemoteValueIsRemoteAndNeitherSentBackNorCountedAsSent() async throws {
        let remote = TestRemoteSink<Int>()
        let analytics = TestSink<Int>()
        let state = SyncedState(0, key: uniqueKey(), sinks: [remote, analytics])
        let channel = try #require(remote.connectedChannel)
        #expect(channel.applyRemote(7) == 1)
        state.modify(8)
        await state.flush()
        #expect(analytics.changes.map(\.origin) == [.remote, .local])
        #expect(analytics.changes.map(\.newValue) == [7, 8])
        // Before origins, the remote sink was handed its own value back and counted it as sent.
        #expect(remote.changes.map(\.newValue) == [8])
        #expect(state.statistics[0].sent == 1)
        #expect(remote.sent == [8])
        #expect(channel.isRemote(analytics.changes[0]))
        #expect(!channel.isRemote(analytics.changes[1]))
    }

    @Test func aProjectionsChangeCarriesItsContainersOrigin() throws {
        struct Settings: Equatable, Sendable, Codable { var accent = "teal" }
        let remote = TestRemoteSink<Settings>()
        let state = SyncedState(Settings(), key: uniqueKey(), sinks: [remote])
        let origins = Collector<ChangeOrigin>()
        let subscription = state.observe(\.accent).subscribeChanges { origins.append($0.origin) }
        try #require(remote.connectedChannel).applyRemote(Settings(accent: "green"))
        state.modify { $0.accent = "orange" }
        waitUntilDelivered(state)
        #expect(origins.all == [.remote, .local])
        subscription.cancel()
    }

    @Test func aRefreshIsNotCountedAsSent() async throws {
        let remote = TestRemoteSink<Int>(server: 42)
        let state = SyncedState(0, key: uniqueKey(), sinks: [remote])
        try await state.refresh()
        await state.flush()
        #expect(state.value == 42)
        #expect(state.statistics[0].sent == 0)
        #expect(state.statistics[0].pending == 0)
        #expect(remote.changes.isEmpty)
    }

    @Test func aChangeWrittenToStorageByAnotherProcessIsExternal() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let state = PersistedState(0, key: key, storage: .file(directory.url))
        state.modify(1)
        state.flush()
        let arrived = Collector<StateChange<Int>>()
        let subscription = state.subscribeChanges { arrived.append($0) }
        try Data("2".utf8).write(to: directory.url.appendingPathComponent("\(key).json"), options: .atomic)
        await bounded("the outside change") { resumer in
            DispatchQueue.global().async {
                while arrived.all.isEmpty { usleep(1_000) }
                resumer.resume()
            }
        }
        #expect(arrived.all.map(\.origin) == [.external])
        #expect(arrived.all.map(\.newValue) == [2])
        subscription.cancel()
    }

    @Test func historyNeverRecordsNorRevertsARemoteChange() throws {
        let remote = TestRemoteSink<Int>()
        let synced = SyncedState(0, key: uniqueKey(), sinks: [remote])
        let other = MonitoredState("a", key: uniqueKey())
        let history = StateHistory(tracking: synced, other)
        other.modify("b")
        synced.modify(1)
        waitUntilDelivered(synced)
        try #require(remote.connectedChannel).applyRemote(7)
        waitUntilDelivered(synced)
        // The remote value is not a step, and the step that set 1 is dropped: undoing it would
        // overwrite what came from the server. The other container's step stays.
        #expect(history.undo())
        #expect(synced.value == 7)
        #expect(other.value == "a")
        #expect(!history.canUndo)
        #expect(history.redo())
        #expect(other.value == "b")
        #expect(synced.value == 7)
    }

    @Test func changesLoggedBeforeOriginsDecodeAsLocal() throws {
        let old = Data(
            #"{"key":"k","oldValue":1,"newValue":2,"version":3,"timestamp":0}"#.utf8)
        let change = try JSONDecoder().decode(StateChange<Int>.self, from: old)
        #expect(change.origin == .local)
        let remote = StateChange(
            key: "k", oldValue: 1, newValue: 2, version: 3, timestamp: Date(timeIntervalSince1970: 0), origin: .remote)
        let encoded = try JSONEncoder().encode(remote)
        #expect(try JSONDecoder().decode(StateChange<Int>.self, from: encoded) == remote)
        #expect(!String(decoding: try JSONEncoder().encode(change), as: UTF8.self).contains("origin"))
    }
}
