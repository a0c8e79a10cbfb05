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

    /// 32 flushes of containers whose storage takes 300 ms a save (after a first that fails at
    /// once, so that each flush has a save to make): each waits for its save without running it
    /// on a thread of the cooperative pool. (A heartbeat on the pool would show it too, but other
    /// suites running beside this one hold the pool as well.)
    @Test func flushesWaitForSlowSavesWithoutHoldingThePool() async throws {
        let storage = SlowStorage(delay: 0.3)
        let states = (0..<32).map {
            SyncedState(0, key: uniqueKey("slow-\($0)"), storage: storage, sinks: [ClosureSink<Int> { _ in }])
        }
        for state in states { state ~> 1 }
        await withTaskGroup(of: Void.self) { group in
            for state in states { group.addTask { await state.flush() } }
        }
        #expect(storage.savesRunOnATask == 0)
        #expect(storage.saveCount >= 32)
        for state in states {
            let stored = try #require(try storage.load(forKey: state.key))
            #expect(try JSONDecoder().decode(Int.self, from: stored) == 1)
        }
    }

    /// The state a kill -9 right after a write returns leaves: the outbox logged 5, storage still
    /// holds 3 (its save never ran). The relaunch starts from 5 and saves it, so storage, container
    /// and what the outbox delivers converge; before, the container kept 3 while the server got 5.
    @Test(arguments: [false, true])
    func aRelaunchTakesTheLoggedValueThatStorageNeverSaved(delivered: Bool) async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let outbox = directory.url.appending(path: "count.outbox")
        let received = RecordingSink<Int>()
        do {
            // Undelivered: a sink that never answers, so the log keeps 1...5 pending.
            let sink = ClosureSink<Int> { _ in if !delivered { try await Task.sleep(for: .seconds(3_600)) } }
            // The same files under another name, so that the relaunch below gets a cell of its own
            // and loads what the files hold, as a new process would.
            let state = SyncedState(
                0, key: key, storage: Relocated(base: .file(directory.url)),
                sinks: [DurableOutbox(fileURL: outbox, wrapping: sink)])
            for value in 1...5 { state ~> value }
            #expect(await state.flush(timeout: .milliseconds(delivered ? 60_000 : 100)) == delivered)
        }
        try FileStateStorage.file(directory.url).save(Data("3".utf8), forKey: key)

        let relaunched = SyncedState(
            0, key: key, storage: .file(directory.url), sinks: [DurableOutbox(fileURL: outbox, wrapping: received)])
        #expect(relaunched.value == 5)
        await relaunched.flush()
        let stored = try #require(try FileStateStorage.file(directory.url).load(forKey: key))
        #expect(try JSONDecoder().decode(Int.self, from: stored) == 5)
        #expect(received.values.last ?? 5 == 5)
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

/// Storage in memory whose first save of each key fails at once and every later one takes `delay`
/// seconds, as a slow disk; it counts the saves that ran on a thread of the cooperative pool,
/// inside a task.
final class SlowStorage: StateStorage {
    private let base = InMemoryStateStorage()
    private let delay: Double
    private let counts = LockedBox((saves: 0, onATask: 0, failedKeys: Set<String>()))

    init(delay: Double) {
        self.delay = delay
    }

    var location: String { "slow:\(ObjectIdentifier(self).hashValue)" }
    var saveCount: Int { counts.withLock { $0.saves } }
    var savesRunOnATask: Int { counts.withLock { $0.onATask } }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        let isOnATask = withUnsafeCurrentTask { $0 != nil }
        let isFirst = counts.withLock {
            $0.saves += 1
            if isOnATask { $0.onATask += 1 }
            return $0.failedKeys.insert(key).inserted
        }
        if isFirst { throw CocoaError(.fileWriteUnknown) }
        Thread.sleep(forTimeInterval: delay)
        try base.save(data, forKey: key)
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}

/// Another storage's files under another location, so that the registry gives its containers a
/// cell of their own: a stand-in for the same files seen from another process.
struct Relocated: StateStorage {
    let base: FileStateStorage

    var location: String { "relocated:" + base.location }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        try base.save(data, forKey: key)
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}
