import Foundation
import StateKit
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Keys that move: `previousKeys` reads a value stored under an earlier key, stores it under the
/// new one and removes the old, once; nothing lost, never both keys in use.
@Suite struct KeyMoveTests {
    init() { DiagnosticsRecorder.start() }

    struct Profile: Codable, Equatable, Sendable {
        var name = ""
    }

    @Test func aFileValueMovesToTheNewKeyOnce() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        try storage.save(Data(#"{"name":"Ada"}"#.utf8), forKey: old)

        let profile = PersistedState(Profile(), key: new, storage: storage, previousKeys: [old])
        #expect(profile.value == Profile(name: "Ada"))
        #expect(try storage.load(forKey: old) == nil)
        #expect(try JSONDecoder().decode(Profile.self, from: #require(try storage.load(forKey: new))) == profile.value)

        profile.modify { $0.name = "Grace" }
        profile.flush()
        try storage.save(Data(#"{"name":"stale"}"#.utf8), forKey: old + "-unrelated")
        #expect(try storage.load(forKey: old) == nil)
        #expect(DiagnosticsRecorder.diagnostics(involving: new).isEmpty)
    }

    @Test func aValueUnderTheNewKeyWinsAndTheOldKeyIsRemoved() throws {
        let storage = InMemoryStateStorage()
        let (old, new) = (uniqueKey() + "-old", uniqueKey() + "-new")
        try storage.save(Data("1".utf8), forKey: old)
        try storage.save(Data("2".utf8), forKey: new)
        let state = PersistedState(0, key: new, storage: storage, previousKeys: [old])
        #expect(state.value == 2)
        #expect(try storage.load(forKey: old) == nil)
    }

    @Test func theNewestPreviousKeyThatHoldsAValueIsTheOneMoved() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data("1".utf8), forKey: key + "-v1")
        try storage.save(Data("2".utf8), forKey: key + "-v2")
        let state = PersistedState(0, key: key, storage: storage, previousKeys: [key + "-v2", key + "-v1"])
        #expect(state.value == 2)
        #expect(try storage.load(forKey: key + "-v1") == nil)
        #expect(try storage.load(forKey: key + "-v2") == nil)
    }

    @Test func aUserDefaultsValueMovesForEveryKindOfContainer() {
        let suite = "statekit.keymove.\(UUID().uuidString)"
        let defaults = UserDefaults(suiteName: suite)!
        defer { defaults.removePersistentDomain(forName: suite) }
        let key = uniqueKey()
        defaults.set(true, forKey: key + "-touchID")
        let flag = UserDefaultsState(false, key: key, defaults: defaults, previousKeys: [key + "-touchID"])
        #expect(flag.value == true)
        #expect(defaults.object(forKey: key) as? Bool == true)
        #expect(defaults.object(forKey: key + "-touchID") == nil)

        defaults.set("Ada", forKey: key + "-displayName")
        let name = PersistedState(
            "", key: key + "-username", storage: .userDefaults(defaults), previousKeys: [key + "-displayName"])
        #expect(name.value == "Ada")
        #expect(defaults.string(forKey: key + "-username") == "Ada")
        #expect(defaults.object(forKey: key + "-displayName") == nil)

        defaults.set(3, forKey: key + "-oldScore")
        let score = SyncedState(
            0, key: key + "-score", storage: .userDefaults(defaults), previousKeys: [key + "-oldScore"], sinks: [])
        #expect(score.value == 3)
        #expect(defaults.object(forKey: key + "-oldScore") == nil)
    }

    @Test func thePersistedWrapperMovesItsKey() throws {
        final class Model {
            @Persisted var name: String
            init(storage: InMemoryStateStorage, key: String, previous: String) {
                _name = Persisted(wrappedValue: "", key: key, storage: storage, previousKeys: [previous])
            }
        }
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#""Ada""#.utf8), forKey: key + "-old")
        let model = Model(storage: storage, key: key, previous: key + "-old")
        #expect(model.name == "Ada")
        #expect(try storage.load(forKey: key + "-old") == nil)
    }

    @Test func aVersionedValueMovesAndMigratesInOneLoad() throws {
        struct Settings: VersionedValue, Equatable, Sendable {
            static let schemaVersion = 2
            var fontSize: Double

            static func migrate(from storedVersion: Int, decoder: any Decoder) throws -> Settings {
                struct V1: Decodable { var size: Int }
                return Settings(fontSize: Double(try V1(from: decoder).size))
            }
        }
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data(#"{"size":17}"#.utf8), forKey: key + "-old")
        let settings = PersistedState(Settings(fontSize: 14), key: key, storage: storage, previousKeys: [key + "-old"])
        #expect(settings.value == Settings(fontSize: 17))
        #expect(try storage.load(forKey: key + "-old") == nil)
    }

    @Test func aLiveCellOfTheNewKeyIsJoinedAndNothingMovesAgain() throws {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        try storage.save(Data("5".utf8), forKey: key + "-old")
        let first = PersistedState(0, key: key, storage: storage, previousKeys: [key + "-old"])
        first.modify(6)
        try storage.save(Data("1".utf8), forKey: key + "-old")
        let second = PersistedState(0, key: key, storage: storage, previousKeys: [key + "-old"])
        #expect(second.value == 6)
    }

    @Test func aKillNineAtAnyMomentOfTheMoveLosesNothingAndLeavesOneKey() async throws {
        // Killing and relaunching keeps a core busy for a while: on a thread of its own, in its turn with
        // the other tests that load the machine (the delivery bounds measure latency meanwhile).
        let interrupted = try await contending { Result { try Self.killDuringMoves() } }.get()
        #expect(interrupted > 0, "no kill landed before the helper finished; the test proved nothing")
    }

    /// Kills a helper process at moments spread over moving a key (from at once to 4 ms after it
    /// starts, with jitter), 16 times; returns how many kills landed before the old key was removed.
    private static func killDuringMoves() throws -> Int {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        let expected = Array(0..<30_000)
        let encoded = try JSONEncoder().encode(expected)
        var interrupted = 0
        for trial in 0..<16 {
            let (old, new) = ("old-\(trial)", "new-\(trial)")
            try storage.save(encoded, forKey: old)
            let helper = try TestHelperProcess(["move", directory.url.path, new, old])
            #expect(helper.nextLine() == "moving")
            usleep(UInt32(trial * 250) + UInt32.random(in: 0...250))
            // The helper waits for its input to end once it has moved the key, so it is alive here.
            helper.kill()
            if try storage.load(forKey: old) != nil { interrupted += 1 }

            // Whatever the moment, one of the keys holds the whole value.
            let onDisk = try [old, new].compactMap { try storage.load(forKey: $0) }
            #expect(onDisk.contains(encoded), "trial \(trial): the value is in neither key")

            // The next launch finishes the move: the value under the new key, the old key gone.
            let relaunched = PersistedState([Int](), key: new, storage: storage, previousKeys: [old])
            #expect(relaunched.value == expected, "trial \(trial)")
            #expect(try storage.load(forKey: old) == nil, "trial \(trial): both keys are in use")
            #expect(try storage.load(forKey: new) == encoded)
        }
        return interrupted
    }
}
