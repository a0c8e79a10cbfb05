import Foundation
import StateKit
import Testing

/// Idempotency keys never repeat for a container key: not across launches, not when a container
/// is created again, and not when its outbox cannot be used.
@Suite(.timeLimit(.minutes(1))) struct IdempotencyKeyTests {
    init() { DiagnosticsRecorder.start() }

    @Test func aContainerCreatedAgainInTheSameProcessNeverRepeatsAKey() async {
        let key = uniqueKey()
        var keys: [String] = []
        for value in ["pro", "team"] {
            let sink = TestSink<String>()
            let state = SyncedState("free", key: key, sinks: [sink])
            state.modify(value)
            await state.flush()
            #expect(sink.versions == [1], "versions start again at 1 without an outbox")
            keys += sink.changes.map(\.idempotencyKey)
        }
        #expect(keys.count == 2)
        #expect(Set(keys).count == 2, "plan#1 meant 'pro' in one container and 'team' in the next")
    }

    @Test func aNewLaunchNeverRepeatsAKey() async throws {
        let key = uniqueKey()
        var firstKeys: [String] = []
        for _ in 0..<2 {
            let helper = try await SinksHelper.launch(["idempotency-keys", "-", key, "3"])
            await helper.waitForExit()
            firstKeys.append(helper.firstLine)
        }
        // Each launch's first change is version 1.
        #expect(firstKeys.allSatisfy { $0.hasPrefix("\(key)#") && $0.hasSuffix(":1") })
        #expect(firstKeys[0] != firstKeys[1])
    }

    @Test func behindAnOutboxVersionsContinueAndKeysAreKeyAndVersion() async throws {
        let directory = TemporaryDirectory()
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        defer { directory.cleanUp() }
        let log = directory.url.appending(path: "plan.outbox")
        let key = uniqueKey()
        var keys: [String] = []
        for value in ["pro", "team"] {
            let sink = TestSink<String>()
            let state = SyncedState("free", key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
            state.modify(value)
            await state.flush()
            keys += sink.changes.map(\.idempotencyKey)
            #expect(sink.changes.allSatisfy { $0.instance == nil })
        }
        #expect(keys == ["\(key)#1", "\(key)#2"])
    }

    @Test func anOutboxThatCannotBeUsedFallsBackToAnInstancePart() async throws {
        let directory = TemporaryDirectory()
        let log = directory.url.appending(path: "plan.outbox")
        try FileManager.default.createDirectory(at: log, withIntermediateDirectories: true)
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = TestSink<String>()
        let state = SyncedState("free", key: key) { DurableOutbox(fileURL: log, wrapping: sink) }
        state.modify("pro")
        await state.flush()
        let instance = try #require(sink.changes.first?.instance)
        #expect(sink.changes.map(\.idempotencyKey) == ["\(key)#\(instance):1"])
    }

    @Test func aChangeKeepsItsInstanceThroughCoding() throws {
        let change = StateChange(
            key: "plan", oldValue: "free", newValue: "pro", version: 3, timestamp: Date(timeIntervalSince1970: 0),
            instance: "00ff00ff00ff00ff")
        let decoded = try JSONDecoder().decode(StateChange<String>.self, from: JSONEncoder().encode(change))
        #expect(decoded == change)
        #expect(decoded.idempotencyKey == "plan#00ff00ff00ff00ff:3")
        let plain = StateChange(key: "plan", oldValue: "free", newValue: "pro", version: 3, timestamp: Date())
        #expect(plain.idempotencyKey == "plan#3")
    }
}
