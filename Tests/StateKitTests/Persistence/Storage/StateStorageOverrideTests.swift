import Foundation
import StateKit
import StateKitTesting
import Testing

/// `withStateStorage` puts one storage in place of every persisted container's own, for
/// previews and tests: the real directory and `UserDefaults` are never written.
@Suite struct StateStorageOverrideTests {
    init() { DiagnosticsRecorder.start() }

    @Test func containersCreatedInsideKeepTheirValueInTheOverride() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let memory = InMemoryStateStorage()
        let name = uniqueKey()
        let (persisted, synced) = withStateStorage(memory) {
            (
                PersistedState(1, key: name, storage: .file(directory.url)),
                SyncedState("a", key: name + "-synced", storage: .file(directory.url), sinks: [])
            )
        }
        persisted ~> 2
        synced ~> "b"
        persisted.flush()
        await synced.flush()
        #expect(persisted.storage.location == memory.location)
        #expect(Set(memory.keys) == [name, name + "-synced"])
        #expect(!FileManager.default.fileExists(atPath: directory.url.path))
        let outside = PersistedState(0, key: name, storage: .file(directory.url))
        #expect(outside.value == 0)
    }

    @Test func aUserDefaultsStateInsideNeverWritesItsDefaults() throws {
        let suite = "StateStorageOverrideTests-\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        let memory = InMemoryStateStorage()
        let name = uniqueKey()
        let flag = withStateStorage(memory) { UserDefaultsState(false, key: name, defaults: defaults) }
        flag ~> true
        flag.flush()
        #expect(defaults.object(forKey: name) == nil)
        #expect(try memory.load(forKey: name) != nil)
        let again = withStateStorage(memory) { UserDefaultsState(false, key: name + "-again", defaults: defaults) }
        #expect(again.value == false)
        let reloaded = withStateStorage(memory) { () -> UserDefaultsState<Bool> in
            let first = UserDefaultsState(false, key: name, defaults: defaults)
            return first
        }
        #expect(reloaded.value == true)

        let otherSuite = UserDefaultsStateStorage(defaults)
        let redirected = withStateStorage(otherSuite) { UserDefaultsState(0, key: name + "-suite") }
        redirected ~> 3
        #expect(defaults.integer(forKey: name + "-suite") == 3)
        #expect(UserDefaults.standard.object(forKey: name + "-suite") == nil)
    }

    @Test func overridesNestAndEndWithTheCall() {
        let outer = InMemoryStateStorage()
        let inner = InMemoryStateStorage()
        let own = InMemoryStateStorage()
        let name = uniqueKey()
        let (a, b) = withStateStorage(outer) {
            (
                withStateStorage(inner) { PersistedState(0, key: name, storage: own) },
                PersistedState(0, key: name + "-outer", storage: own)
            )
        }
        let after = PersistedState(0, key: name + "-after", storage: own)
        #expect(a.storage.location == inner.location)
        #expect(b.storage.location == outer.location)
        #expect(after.storage.location == own.location)
    }

    @Test func theAsyncOverrideReachesTheTasksItStarts() async throws {
        let memory = InMemoryStateStorage()
        let name = uniqueKey()
        let locations = try await withStateStorage(memory) {
            try await Task.sleep(for: .milliseconds(1))
            async let child = PersistedState(0, key: name, storage: .inMemory).storage.location
            let grouped = await withTaskGroup(of: String.self) { group in
                for index in 0..<4 {
                    group.addTask { PersistedState(0, key: "\(name)-\(index)", storage: .inMemory).storage.location }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
            return await [child] + grouped
        }
        #expect(locations == Array(repeating: memory.location, count: 5))
        #expect(Set(memory.keys).isEmpty || memory.keys.allSatisfy { $0.hasPrefix(name) })
    }

    @Test func threadsInsideTheOverrideShareOneCellPerKey() async {
        let memory = InMemoryStateStorage()
        let name = uniqueKey()
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        await onThreads(4) { _ in
            withStateStorage(memory) {
                let counter = PersistedState(0, key: name, storage: .file(directory.url))
                for _ in 0..<1_000 { counter.modify { $0 += 1 } }
                counter.flush()
            }
        }
        let reloaded = withStateStorage(memory) { PersistedState(0, key: name, storage: .file(directory.url)) }
        #expect(reloaded.value == 4_000)
        #expect(!FileManager.default.fileExists(atPath: directory.url.path))
    }

    /// The extension process of an app, run inside the override as a preview would: the shared
    /// App Group file is never written.
    @Test func aProcessInsideTheOverrideLeavesTheSharedDirectoryAlone() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let name = uniqueKey()
        let (ready, done, status) = try await awayFromThePool {
            Result { () throws -> (String?, String?, Int32) in
                let child = try TestHelperProcess(["key-increment", directory.url.path, name, "100", "in-memory"])
                defer { if child.process.isRunning { child.kill() } }
                let ready = child.nextLine()
                child.send("go")
                let done = child.nextLine(startingWith: "done")
                return (ready, done, child.waitForExit() ? child.process.terminationStatus : -1)
            }
        }.get()
        #expect(ready == "ready")
        #expect(done == "done 100")
        #expect(status == 0)
        let written = (try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? []
        #expect(!written.contains { $0.contains(name) })
    }
}

/// The StateKitTesting trait: one line gives every test of a suite a storage of its own.
@Suite(.inMemoryStateStorage) struct InMemoryStateStorageTraitTests {
    static let sharedName = "InMemoryStateStorageTraitTests-\(UUID().uuidString)"

    @Test(arguments: 0..<3) func eachTestStartsFromAnEmptyStorage(_ run: Int) {
        defer { UserDefaults.standard.removeObject(forKey: Self.sharedName) }
        let count = PersistedState(0, key: Self.sharedName, storage: .userDefaults())
        #expect(count.value == 0)
        count.modify { $0 += run + 1 }
        count.flush()
        #expect(UserDefaults.standard.object(forKey: Self.sharedName) == nil)
    }
}
