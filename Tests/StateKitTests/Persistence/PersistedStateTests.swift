import Foundation
import StateKit
import Testing

/// A storage that counts saves, over another storage.
final class CountingStorage: StateStorage, @unchecked Sendable {
    let base: any StateStorage
    private let lock = NSLock()
    private var saveCount = 0

    init(_ base: any StateStorage) { self.base = base }

    var saves: Int { lock.withLock { saveCount } }
    var location: String { base.location }
    func load(forKey key: String) throws -> Data? { try base.load(forKey: key) }
    func remove(forKey key: String) throws { try base.remove(forKey: key) }
    func save(_ data: Data, forKey key: String) throws {
        lock.withLock { saveCount += 1 }
        try base.save(data, forKey: key)
    }
}

struct Profile: Codable, Sendable, Equatable {
    var name: String
    var age: Int
}

@Suite struct PersistedStateTests {
    init() { DiagnosticsRecorder.start() }

    @Test func storedValueIsLoadedOnCreation() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#"{"age":3,"name":"Ada"}"#.utf8), forKey: key)
        let profile = PersistedState(Profile(name: "", age: 0), key: key, storage: storage)
        #expect(profile.value == Profile(name: "Ada", age: 3))
        #expect(profile.version == 0)
    }

    @Test func changesAreSavedAndLoadedByTheNextContainer() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        do {
            let profile = PersistedState(Profile(name: "", age: 0), key: key, storage: .file(directory.url))
            profile.modify { $0.name = "Grace" }
            profile ~> Profile(name: "Grace", age: 85)
            profile.flush()
        }
        let reloaded = PersistedState(Profile(name: "", age: 0), key: key, storage: .file(directory.url))
        #expect(reloaded.value == Profile(name: "Grace", age: 85))
    }

    @Test func optionalNilIsStoredAsNilNotAsTheDefault() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        do {
            let rating = PersistedState<Int?>(5, key: key, storage: storage)
            rating ~> nil
            rating.flush()
        }
        #expect(PersistedState<Int?>(5, key: key, storage: storage).value == nil)
    }

    @Test func rapidChangesCoalesceAndTheLastValueIsOnDiskAfterFlush() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = CountingStorage(.file(directory.url))
        let key = uniqueKey()
        let counter = PersistedState(0, key: key, storage: storage)
        for _ in 0..<10_000 { counter.modify { $0 += 1 } }
        counter.flush()
        print("PersistedState: \(storage.saves) file writes for 10,000 changes")
        #expect(storage.saves < 10_000)
        #expect(storage.saves >= 1)
        let onDisk = try #require(try FileStateStorage.file(directory.url).load(forKey: key))
        #expect(String(decoding: onDisk, as: UTF8.self) == "10000")
    }

    @Test func concurrentWritersLeaveTheNewestValueStored() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let counter = PersistedState(0, key: key, storage: storage)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<1_000 { counter.modify { $0 += 1 } }
        }
        counter.flush()
        #expect(counter.value == 8_000)
        #expect(try storage.load(forKey: key) == Data("8000".utf8))
    }

    @Test func flushWithoutChangesWritesNothing() {
        let storage = CountingStorage(InMemoryStateStorage())
        let state = PersistedState("a", key: uniqueKey(), storage: storage)
        state.flush()
        #expect(storage.saves == 0)
        state ~> "a"
        state.flush()
        #expect(storage.saves == 0)
    }

    @Test func inPlaceChangeAnnouncedByHandIsSaved() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let state = PersistedState([1], key: key, storage: storage)
        state.modify { $0.append(2) }
        state.didModify()
        state.flush()
        #expect(try storage.load(forKey: key) == Data("[1,2]".utf8))
        #expect(state.version == 2)
    }

    @Test func corruptFileFallsBackToDefaultAndKeepsBytes() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let storage = FileStateStorage.file(directory.url)
        let garbage = Data([0x7B, 0x22, 0x6E, 0xFF, 0x00])
        try storage.save(garbage, forKey: key)

        let profile = PersistedState(Profile(name: "default", age: 0), key: key, storage: storage)
        #expect(profile.value == Profile(name: "default", age: 0))
        #expect(profile.isPersisting)

        let diagnostics = DiagnosticsRecorder.diagnostics(involving: key)
        let diagnostic = try #require(diagnostics.first { $0.kind == .decodingFailed })
        #expect(diagnostic.error is DecodingError)
        #expect(diagnostic.message.contains(storage.location))
        #expect(diagnostic.description.contains(key))
        let asideName = try #require(directory.fileNames.first { $0.hasPrefix("\(key).corrupt-") })
        #expect(try Data(contentsOf: directory.url.appendingPathComponent(asideName)) == garbage)
        #expect(try storage.load(forKey: key) == nil)

        profile.modify { $0.age = 1 }
        profile.flush()
        #expect(try Data(contentsOf: directory.url.appendingPathComponent(asideName)) == garbage)
    }

    @Test func typeChangedBetweenReleasesFallsBackAndKeepsBytes() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#""dark""#.utf8), forKey: key)
        let state = PersistedState(Profile(name: "", age: 0), key: key, storage: storage)
        #expect(state.value == Profile(name: "", age: 0))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).contains { $0.kind == .decodingFailed })
        let aside = try #require(storage.keys.first { $0.hasPrefix("\(key).corrupt-") })
        #expect(try storage.load(forKey: aside) == Data(#""dark""#.utf8))
    }

    @Test func sameKeyWithDifferentTypesIsReportedAndDoesNotCorrupt() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let count = PersistedState(1, key: key, storage: storage)
        count ~> 2
        count.flush()
        let name = PersistedState("x", key: key, storage: storage)
        #expect(!name.isPersisting)
        name ~> "y"
        name.flush()
        #expect(try storage.load(forKey: key) == Data("2".utf8))
        let conflict = try #require(DiagnosticsRecorder.diagnostics(involving: key).first { $0.kind == .keyConflict })
        #expect(conflict.message.contains("Int") && conflict.message.contains("String"))
        #expect(PersistedState(0, key: key, storage: storage).isPersisting)
    }

    @Test func claimEndsWhenTheContainerIsGone() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        do { _ = PersistedState(1, key: key, storage: storage) }
        #expect(PersistedState("x", key: key, storage: storage).isPersisting)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).isEmpty)
    }

    @Test func persistedPropertyIsStoredAndProjectsItsContainer() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        final class Model {
            @Persisted var theme: String
            init(key: String, directory: URL) {
                _theme = Persisted(wrappedValue: "light", key: key, storage: .file(directory))
            }
        }
        let model = Model(key: key, directory: directory.url)
        let seen = Collector<String>()
        let subscription = model.$theme.subscribe { seen.append($0) }
        model.theme = "dark"
        model.$theme.flush()
        #expect(seen.all == ["light", "dark"])
        #expect(Model(key: key, directory: directory.url).theme == "dark")
        subscription.cancel()
    }
}

extension PersistedStateTests {
    final class SettingsModel {
        @Persisted(key: "PersistedStateTests.theme", storage: .inMemory) var theme = "light"
    }

    @Test func persistedWrapperReadsLikeAStoredProperty() {
        let settings = SettingsModel()
        settings.theme = "dark"
        settings.$theme.flush()
        #expect(settings.theme == "dark")
        #expect(settings.$theme.key == "PersistedStateTests.theme")
    }
}
