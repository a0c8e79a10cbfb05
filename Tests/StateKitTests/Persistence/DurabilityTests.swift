import Foundation
import Observation
import StateKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A storage that fails the way a full disk or an unreadable file does, on demand.
final class FaultyStorage: StateStorage, @unchecked Sendable {
    struct Fault: Error, Equatable {
        var operation: String
    }

    let base = InMemoryStateStorage()
    private let lock = NSLock()
    private var failingSaves = 0
    private var failingLoads = 0

    var location: String { "faulty:\(ObjectIdentifier(self).hashValue)" }

    /// Makes the next `count` saves throw.
    func failSaves(_ count: Int) { lock.withLock { failingSaves = count } }
    /// Makes the next `count` loads throw.
    func failLoads(_ count: Int) { lock.withLock { failingLoads = count } }

    func load(forKey key: String) throws -> Data? {
        let fails = lock.withLock { () -> Bool in
            guard failingLoads > 0 else { return false }
            failingLoads -= 1
            return true
        }
        if fails { throw Fault(operation: "load") }
        return try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        let fails = lock.withLock { () -> Bool in
            guard failingSaves > 0 else { return false }
            failingSaves -= 1
            return true
        }
        if fails { throw Fault(operation: "save") }
        try base.save(data, forKey: key)
    }

    func remove(forKey key: String) throws { try base.remove(forKey: key) }
}

/// Nothing lost on the way to disk: failed saves are retried, set-asides never collide, crashes
/// leave nothing behind, and load and save errors are visible.
@Suite struct DurabilityTests {
    init() { DiagnosticsRecorder.start() }

    @Test func flushRetriesASaveThatFailedOnceAndTheLastValueIsStored() throws {
        let storage = FaultyStorage()
        let key = uniqueKey()
        let state = PersistedState(0, key: key, storage: storage)
        storage.failSaves(1)
        state ~> 42
        state.flush()
        #expect(try storage.base.load(forKey: key) == Data("42".utf8))
        #expect(state.saveError == nil)
    }

    /// Off the pool: each flush retries a failing save for most of a second, sleeping.
    @Test func aSaveFailingForLongIsVisibleAsSaveErrorThenClearedByTheNextSave() async throws {
        try await offThePool(Self.failForLongThenSave)
    }

    private static func failForLongThenSave() throws {
        let storage = FaultyStorage()
        let key = uniqueKey()
        let state = PersistedState(0, key: key, storage: storage)
        storage.failSaves(1_000)
        state ~> 1
        state.flush()
        #expect(state.saveError as? FaultyStorage.Fault == FaultyStorage.Fault(operation: "save"))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind).contains(.storageFailed))
        storage.failSaves(0)
        state ~> 2
        state.flush()
        #expect(state.saveError == nil)
        #expect(try storage.base.load(forKey: key) == Data("2".utf8))
    }

    @Test func saveErrorIsObservable() async {
        await awayFromThePool(Self.observeTheSaveError)
    }

    private static func observeTheSaveError() {
        let storage = FaultyStorage()
        let state = PersistedState(0, key: uniqueKey(), storage: storage)
        let changed = LockedBox(false)
        withObservationTracking {
            _ = state.saveError
        } onChange: {
            changed.withLock { $0 = true }
        }
        storage.failSaves(1_000)
        state ~> 1
        state.flush()
        #expect(changed.withLock { $0 })
    }

    @Test func aLoadErrorIsVisibleAndTheUnreadDataIsKeptAsideBeforeAnythingIsSaved() throws {
        let storage = FaultyStorage()
        let key = uniqueKey()
        try storage.base.save(Data("7".utf8), forKey: key)
        storage.failLoads(1)
        let state = PersistedState(0, key: key, storage: storage)
        #expect(state.loadError as? FaultyStorage.Fault == FaultyStorage.Fault(operation: "load"))
        #expect(state.isPersisting)
        state ~> 8
        state.flush()
        #expect(try storage.base.load(forKey: key) == Data("8".utf8))
        let report = try #require(DiagnosticsRecorder.diagnostics(involving: key).first)
        #expect(report.kind == .storageFailed)
        let quoted = try #require(report.message.split(separator: "'").last { $0.hasPrefix("\(key).corrupt-") })
        let asideKey = String(quoted)
        #expect(try storage.base.load(forKey: asideKey) == Data("7".utf8))
    }

    @Test func dataThatCanBeNeitherReadNorMovedAsideIsNeverOverwritten() throws {
        let storage = FaultyStorage()
        let key = uniqueKey()
        try storage.base.save(Data("7".utf8), forKey: key)
        storage.failLoads(2)  // the load, and the move aside (which reads it)
        let state = PersistedState(0, key: key, storage: storage)
        #expect(state.loadError != nil)
        #expect(!state.isPersisting)
        #expect(state.saveError is SavingStopped)
        state ~> 8
        state.flush()
        #expect(try storage.base.load(forKey: key) == Data("7".utf8))
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.storageFailed])
    }

    @Test func aThousandSetAsidesInARowKeepAThousandFiles() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let storage = FileStateStorage.file(directory.url)
        for index in 0..<1_000 {
            try storage.save(Data("bad \(index)".utf8), forKey: key)
            _ = PersistedState(0, key: key, storage: storage)
        }
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
        let asides = names.filter { $0.hasPrefix("\(key).corrupt-") }
        #expect(asides.count == 1_000)
        let contents = Set(try asides.map { try Data(contentsOf: directory.url.appendingPathComponent($0)) })
        #expect(contents.count == 1_000)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).count == 1_000)
    }

    @Test func staleTemporaryFilesOfDeadProcessesAreRemovedAndNothingElse() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let key = uniqueKey()
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        #expect(hasExited(finished, within: 60))
        let deadPID = finished.processIdentifier
        let stale = ".\(key).json.tmp-\(deadPID)-\(UUID().uuidString)"
        let live = ".\(key).json.tmp-\(getpid())-\(UUID().uuidString)"
        let unrelated = [".\(key).json.tmp-notes", "\(key).json.tmp-\(deadPID)-\(UUID().uuidString)", "notes.txt"]
        for name in [stale, live] + unrelated {
            try Data("x".utf8).write(to: directory.url.appendingPathComponent(name))
        }
        _ = PersistedState(0, key: key, storage: .file(directory.url))
        let names = Set(try FileManager.default.contentsOfDirectory(atPath: directory.url.path))
        #expect(!names.contains(stale))
        #expect(names.isSuperset(of: [live] + unrelated))
    }

    @Test func killedWritersLeaveNoTemporaryFilesOnceTheStorageIsUsedAgain() async throws {
        try await offThePool {
            let directory = TemporaryDirectory()
            defer { directory.cleanUp() }
            let key = uniqueKey()
            var leftBehind = 0
            for _ in 0..<20 {
                let writer = try TestHelperProcess(["write-loop", directory.url.path, key])
                #expect(writer.nextLine(startingWith: "flushed") != nil)
                writer.kill()
                let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
                leftBehind += names.filter { $0.contains(".tmp-") }.count
            }
            _ = PersistedState([Int](), key: key, storage: .file(directory.url))
            let names = try FileManager.default.contentsOfDirectory(atPath: directory.url.path)
            print(
                "20 writers killed with kill -9 mid-write: \(leftBehind) temporary files seen, \(names.count - 1) left after the next use"
            )
            #expect(names == ["\(key).json"])
        }
    }

    @Test func aCorruptUserDefaultsFileIsReportedAndKeptAside() throws {
        #if canImport(Darwin)
        // cfprefsd owns the files on Apple platforms.
        #else
        let suite = "statekit-corrupt-\(UUID().uuidString)"
        let home =
            ProcessInfo.processInfo.environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        let file = home.appendingPathComponent("\(suite).plist")
        try Data("this is not a property list".utf8).write(to: file)
        defer {
            try? FileManager.default.removeItem(at: file)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: home.path)) ?? []
            where name.hasPrefix("\(suite).plist.corrupt-") {
                try? FileManager.default.removeItem(at: home.appendingPathComponent(name))
            }
        }
        let key = uniqueKey()
        let defaults = try #require(UserDefaults(suiteName: suite))
        _ = UserDefaultsState(0, key: key, defaults: defaults)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.storageFailed])
        let names = try FileManager.default.contentsOfDirectory(atPath: home.path)
        let aside = try #require(names.first { $0.hasPrefix("\(suite).plist.corrupt-") })
        #expect(try Data(contentsOf: home.appendingPathComponent(aside)) == Data("this is not a property list".utf8))
        #endif
    }
}
