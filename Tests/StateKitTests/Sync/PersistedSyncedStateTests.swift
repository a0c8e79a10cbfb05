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

    /// 32 flushes of containers whose storage takes 300 ms a save, on a pool of 2 threads: each
    /// waits for its save without holding a thread of the pool, so a heartbeat task keeps beating.
    @Test func flushesWaitForSlowSavesWithoutHoldingThePool() async throws {
        let storage = SlowStorage(delay: 0.3)
        let states = (0..<32).map {
            SyncedState(0, key: uniqueKey("slow-\($0)"), storage: storage, sinks: [ClosureSink<Int> { _ in }])
        }
        for state in states { state ~> 1 }
        let heartbeat = Task {
            let clock = ContinuousClock()
            var (last, longestGap) = (clock.now, Duration.zero)
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(10))
                longestGap = max(longestGap, clock.now - last)
                last = clock.now
            }
            return longestGap
        }
        await withTaskGroup(of: Void.self) { group in
            for state in states { group.addTask { await state.flush() } }
        }
        heartbeat.cancel()
        let longestGap = await heartbeat.value
        #expect(longestGap < .milliseconds(250), "the pool was held for \(longestGap)")
        for state in states {
            let stored = try #require(try storage.load(forKey: state.key))
            #expect(try JSONDecoder().decode(Int.self, from: stored) == 1)
        }
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

/// Storage in memory whose every save takes `delay` seconds, as a slow disk.
final class SlowStorage: StateStorage {
    private let base = InMemoryStateStorage()
    private let delay: Double

    init(delay: Double) {
        self.delay = delay
    }

    var location: String { "slow:\(ObjectIdentifier(self).hashValue)" }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        Thread.sleep(forTimeInterval: delay)
        try base.save(data, forKey: key)
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}
