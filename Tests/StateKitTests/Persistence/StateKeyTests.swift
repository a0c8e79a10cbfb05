import Foundation
import StateKit
import StateKitTesting
import Testing

/// A key declared once, as an app, its widget and its intents share it.
@Suite struct StateKeyTests {
    struct Habit: Codable, Equatable, Sendable {
        var name: String
    }

    final class TrackerModel {
        @Persisted var habits: [Habit]

        init(_ key: StateKey<[Habit]>) {
            _habits = Persisted(key)
        }
    }

    init() { DiagnosticsRecorder.start() }

    @Test func everyContainerOfAKeyTakesItsNameDefaultAndStorage() throws {
        let storage = InMemoryStateStorage()
        let name = uniqueKey()
        try storage.save(Data(#"[{"name":"read"}]"#.utf8), forKey: name + "-old")
        let key = StateKey(name, default: [Habit](), storage: storage, previousKeys: [name + "-old"])
        let persisted = PersistedState(key)
        let synced = SyncedState(key, sinks: [RecordingSink<[Habit]>()])
        let built = SyncedState(key) { RecordingSink<[Habit]>() }
        let model = TrackerModel(key)
        #expect(persisted.key == name)
        #expect(persisted.value == [Habit(name: "read")])
        #expect(persisted.storage.location == storage.location)
        model.habits.append(Habit(name: "water"))
        #expect(synced.value == [Habit(name: "read"), Habit(name: "water")])
        #expect(built.value == synced.value)
        persisted.flush()
        #expect(try storage.load(forKey: name + "-old") == nil)
        #expect(try storage.load(forKey: name) != nil)
    }

    @Test func theDefaultStorageIsStandardUserDefaults() {
        let name = uniqueKey()
        defer { UserDefaults.standard.removeObject(forKey: name) }
        let key = StateKey(name, default: 7)
        let count = PersistedState(key)
        count ~> 8
        count.flush()
        #expect(UserDefaults.standard.integer(forKey: name) == 8)
    }

    @Test func containersOfOneKeyOnFourThreadsLoseNoIncrement() async {
        let key = StateKey(uniqueKey(), default: 0, storage: InMemoryStateStorage())
        let model = TrackerModel(StateKey(uniqueKey(), default: [], storage: InMemoryStateStorage()))
        #expect(model.habits.isEmpty)
        await onThreads(4) { thread in
            let counter = PersistedState(key)
            for _ in 0..<1_000 {
                counter.modify { $0 += 1 }
            }
        }
        #expect(PersistedState(key).value == 4_000)
    }

    @Test func aValueWrittenThroughAKeyIsThereAtTheNextLaunch() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let name = uniqueKey()
        do {
            let model = TrackerModel(StateKey(name, default: [], storage: .file(directory.url)))
            model.habits = [Habit(name: "water")]
            model.$habits.flush()
        }
        let relaunched = PersistedState(StateKey(name, default: [Habit](), storage: .file(directory.url)))
        #expect(relaunched.value == [Habit(name: "water")])
    }

    @Test func twoDeclarationsOfOneNameThatDisagreeAreReported() {
        let name = uniqueKey()
        let storage = InMemoryStateStorage()
        _ = StateKey(name, default: 0, storage: storage)
        _ = StateKey(name, default: 1, storage: storage)
        #expect(DiagnosticsRecorder.diagnostics(involving: name).isEmpty)

        _ = StateKey(name, default: "zero", storage: storage)
        _ = StateKey(name, default: 0, storage: InMemoryStateStorage())
        let reports = DiagnosticsRecorder.diagnostics(involving: name)
        #expect(reports.map(\.kind) == [.keyConflict, .keyConflict])
        #expect(reports.first?.message.contains("StateKey<String>") == true)
        #expect(reports.first?.message.contains("StateKey<Int>") == true)
    }

    /// An app and its extension in two processes, each declaring the key: 2 × 1,000 increments
    /// through `@Persisted` and `PersistedState` by turns, none lost, and the next launch sees them.
    @Test func twoProcessesDeclaringOneKeyLoseNoIncrement() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let name = uniqueKey()
        let finals = try await awayFromThePool {
            Result { () throws -> [Int] in
                let children = try (0..<2).map { _ in
                    try TestHelperProcess(["key-increment", directory.url.path, name, "1000"])
                }
                defer { children.forEach { if $0.process.isRunning { $0.kill() } } }
                for child in children where child.nextLine() != "ready" { return [] }
                for child in children { child.send("go") }
                return children.map { child in
                    defer { child.waitForExit() }
                    return Int(child.nextLine(startingWith: "done")?.dropFirst("done ".count) ?? "") ?? -1
                }
            }
        }.get()
        #expect(finals.count == 2)
        #expect(finals.max() == 2_000)
        let key = StateKey(name, default: 0, storage: .file(directory.url, sharedAcrossProcesses: true))
        #expect(PersistedState(key).value == 2_000)
    }
}
