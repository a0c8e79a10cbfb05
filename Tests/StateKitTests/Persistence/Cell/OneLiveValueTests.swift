import Foundation
import StateKit
import StateKitTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Semantics 11, within a process: every persisted container of one key in one storage shares one value.
@Suite struct OneLiveValueTests {
    init() { DiagnosticsRecorder.start() }

    @Test func aWriteThroughOneFileContainerIsSeenAndHeardThroughTheOther() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let window = PersistedState(Profile(name: "", age: 0), key: key, storage: .file(directory.url))
        let preview = PersistedState(Profile(name: "preview", age: 0), key: key, storage: .file(directory.url))
        let heard = preview.record()

        window.modify { $0.name = "Ada" }
        #expect(preview.value == Profile(name: "Ada", age: 0))
        #expect(heard.values == [Profile(name: "", age: 0), Profile(name: "Ada", age: 0)])

        preview.modify { $0.age = 36 }
        #expect(window.value == Profile(name: "Ada", age: 36))
        window.flush()
        let stored = try #require(try FileStateStorage.file(directory.url).load(forKey: key))
        #expect(try JSONDecoder().decode(Profile.self, from: stored) == Profile(name: "Ada", age: 36))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
    }

    @Test func aSecondContainerStartsFromTheLiveValueNotFromDisk() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let first = PersistedState(1, key: key, storage: storage)
        first ~> 2
        let second = PersistedState(100, key: key, storage: storage)
        #expect(second.value == 2)
        #expect(second.version == first.version)
    }

    @Test func persistedWrapperInTwoModelsSharesOneValue() {
        final class Model {
            @Persisted var count: Int
            init(key: String, storage: InMemoryStateStorage) {
                _count = Persisted(wrappedValue: 0, key: key, storage: storage)
            }
        }
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let first = Model(key: key, storage: storage)
        let second = Model(key: key, storage: storage)
        first.count = 5
        #expect(second.count == 5)
        second.$count.modify { $0 += 1 }
        #expect(first.count == 6)
    }

    @Test func userDefaultsStateAndPersistedStateOnOneKeyShareOneValue() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        let seed = UserDefaultsState(false, key: key, defaults: suite.defaults)
        let wrapped = PersistedState(false, key: key, storage: .userDefaults(suite.defaults))
        let heard = wrapped.record()
        seed ~> true
        #expect(wrapped.value == true)
        #expect(heard.values == [false, true])
        #expect(suite.defaults.object(forKey: key) as? Bool == true)
        wrapped ~> false
        #expect(seed.value == false)
    }

    @Test func twoInstancesOfOneDefaultsSuiteAreOneStorage() {
        let suite = TemporaryDefaults()
        defer { suite.cleanUp() }
        let key = uniqueKey()
        let other = UserDefaults(suiteName: suite.name)!
        let first = UserDefaultsState(0, key: key, defaults: suite.defaults)
        let second = UserDefaultsState(0, key: key, defaults: other)
        first ~> 7
        #expect(second.value == 7)
    }

    @Test func oneDirectorySpelledThreeWaysIsOneStorage() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let state = directory.url.appendingPathComponent("state", isDirectory: true)
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let link = directory.url.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: state)
        let key = uniqueKey()

        let plain = PersistedState(0, key: key, storage: .file(URL(fileURLWithPath: state.path)))
        let slashed = PersistedState(0, key: key, storage: .file(URL(fileURLWithPath: state.path + "/")))
        let dotted = PersistedState(
            0, key: key, storage: .file(URL(fileURLWithPath: state.path + "/../state", isDirectory: true)))
        let linked = PersistedState(0, key: key, storage: .file(link))
        plain ~> 3
        #expect([slashed.value, dotted.value, linked.value] == [Int](repeating: 3, count: 3))
        #expect(Set([plain, slashed, dotted, linked].map(\.storage.location)).count == 1)

        let wrongType = PersistedState("x", key: key, storage: .file(link))
        #expect(!wrongType.isPersisting)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .keyConflict })
        wrongType ~> "overwrite?"
        plain.flush()
        #expect(try FileStateStorage.file(state).load(forKey: key) == Data("3".utf8))
    }

    @Test func concurrentWritersThroughManyContainersEndOnOneValueEverywhere() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let containers = (0..<4).map { _ in PersistedState(0, key: key, storage: .file(directory.url)) }
        let recorders = containers.map { $0.record() }
        await onThreads(8) { thread in
            let container = containers[thread % containers.count]
            for _ in 0..<500 { container.modify { $0 += 1 } }
        }
        // A change queued behind another thread's delivery reaches the other containers when it
        // is delivered; each barrier waits for what the previous round handed on.
        for _ in 0..<2 {
            for container in containers { await waitUntilDelivered(container) }
        }
        let values = Set(containers.map(\.value))
        #expect(values.count == 1)
        for recorder in recorders { #expect(recorder.latest == containers[0].value) }
        containers[0].flush()
        let stored = try #require(try FileStateStorage.file(directory.url).load(forKey: key))
        #expect(Int(String(decoding: stored, as: UTF8.self)) == containers[0].value)
    }

    @Test func incomingChangesAreNotSavedAgain() {
        let storage = CountingStorage(InMemoryStateStorage())
        let key = uniqueKey()
        let first = PersistedState(0, key: key, storage: storage)
        let others = (0..<5).map { _ in PersistedState(0, key: key, storage: storage) }
        first ~> 1
        first.flush()
        #expect(storage.saves == 1)
        #expect(others.allSatisfy { $0.value == 1 })
    }
}
