import Foundation
import StateKit
import StateKitTesting
import Testing

/// A container that is persisted and synced at once: `SyncedState(_:key:storage:sinks:)`.
@Suite struct PersistedSyncedStateTests {
    init() { DiagnosticsRecorder.start() }

    @Test func aCartSurvivesARelaunchAndEveryChangeReachesItsSinks() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let sink = RecordingSink<[String]>()
        do {
            let cart = SyncedState([String](), key: key, storage: .file(directory.url), sinks: [sink])
            #expect(cart.isPersisting)
            cart.modify { $0.append("Book") }
            cart.modify { $0.append("Pen") }
            await cart.flush()
        }
        #expect(sink.values == [["Book"], ["Book", "Pen"]])
        let stored = try #require(try FileStateStorage.file(directory.url).load(forKey: key))
        #expect(try JSONDecoder().decode([String].self, from: stored) == ["Book", "Pen"])

        let relaunched = SyncedState([String](), key: key, storage: .file(directory.url)) {
            RecordingSink<[String]>()
        }
        #expect(relaunched.value == ["Book", "Pen"])
        #expect(relaunched.loadError == nil && relaunched.saveError == nil)
    }

    @Test func itSharesItsValueWithAPersistedStateOfTheSameKey() async throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        let synced = SyncedState(0, key: key, storage: storage, sinks: [sink])
        let persisted = PersistedState(0, key: key, storage: storage)
        persisted ~> 5
        #expect(synced.value == 5)
        synced ~> 6
        #expect(persisted.value == 6)
        await synced.flush()
        #expect(sink.values == [5, 6])
        #expect(try storage.load(forKey: key) == Data("6".utf8))
    }

    @Test func theSyncedWrapperPersistsToo() async throws {
        final class Model {
            @Synced var count: Int
            init(key: String, storage: InMemoryStateStorage, sink: RecordingSink<Int>) {
                _count = Synced(wrappedValue: 0, key: key, storage: storage, sinks: [sink])
            }
        }
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let sink = RecordingSink<Int>()
        let model = Model(key: key, storage: storage, sink: sink)
        model.count = 3
        await model.$count.flush()
        #expect(try storage.load(forKey: key) == Data("3".utf8))
        #expect(sink.values == [3])
        #expect(Model(key: key, storage: storage, sink: sink).count == 3)
    }

    @Test func withoutStorageNothingIsPersisted() {
        let state = SyncedState(0, key: uniqueKey(), sinks: [])
        #expect(!state.isPersisting)
        #expect(state.loadError == nil)
    }
}
