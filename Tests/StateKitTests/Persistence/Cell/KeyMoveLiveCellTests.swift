import Foundation
import StateKit
import StateKitTesting
import Testing

/// Keys that move while a cell of the earlier key is alive in the process (issue 42, item 5):
/// the move goes through that cell, so it copies the cell's newest value, the cell
/// sees the key emptied as one outside change, and a container opened on the earlier key
/// afterwards reads the default, not the moved value.
@Suite struct KeyMoveLiveCellTests {
    init() { DiagnosticsRecorder.start() }

    /// Each storage a container can use.
    enum Kind: String, CaseIterable, CustomTestStringConvertible {
        case file, memory, userDefaults

        var testDescription: String { rawValue }
    }

    @Test(arguments: Kind.allCases)
    func aLiveContainerOfTheEarlierKeySeesTheMoveAsOneChange(_ kind: Kind) throws {
        let place = MovePlace(kind)
        defer { place.cleanUp() }
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        let earlier = place.open(old)
        earlier.modify("Ada")
        place.flush(earlier)
        let heard = earlier.recordChanges()

        let moved = place.open(new, previousKeys: [old])
        #expect(moved.value == "Ada")
        // At once: the move told the earlier key's cell, it did not wait for a watcher.
        #expect(earlier.value == "")
        #expect(heard.values.map(\.newValue) == [""])
        #expect(heard.values.map(\.origin) == [.external])
        #expect(place.open(old).value == "")

        place.flush(moved)
        place.flush(earlier)
        #expect(try place.stored(old) == nil)
        #expect(try place.stored(new) == "Ada")
        #expect(heard.values.count == 1)
        #expect(DiagnosticsRecorder.diagnostics(involving: old).isEmpty)
        #expect(DiagnosticsRecorder.diagnostics(involving: new).isEmpty)
    }

    @Test(arguments: Kind.allCases)
    func theMoveCarriesTheNewestValueOfTheEarlierCellNotTheStoredOne(_ kind: Kind) throws {
        // Saves that take a while: the value written last is surely not in storage yet when
        // the move starts (UserDefaults stores before a write returns, so it is, there).
        let place = MovePlace(kind, saveDelay: 0.1)
        defer { place.cleanUp() }
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        let earlier = place.open(old)
        earlier.modify("Ada")
        place.flush(earlier)
        earlier.modify("Grace")

        let moved = place.open(new, previousKeys: [old])
        #expect(moved.value == "Grace")
        #expect(earlier.value == "")
        #expect(place.open(old).value == "")

        place.flush(earlier)
        place.flush(moved)
        #expect(try place.stored(old) == nil, "a save of the earlier cell brought the old key back")
        #expect(try place.stored(new) == "Grace")
    }

    @Test(arguments: Kind.allCases)
    func aLingeringCellOfTheEarlierKeyIsFlushedMovedAndForgotten(_ kind: Kind) throws {
        let place = MovePlace(kind, saveDelay: 0.2)
        defer { place.cleanUp() }
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        var earlier: MonitoredState<String>? = place.open(old)
        earlier?.modify("Ada")
        if let earlier { place.flush(earlier) }
        // No container holds the cell any more; the save in flight still does (not in
        // UserDefaults, which stores before the write returns: the cell is gone there).
        earlier?.modify("Grace")
        earlier = nil

        let moved = place.open(new, previousKeys: [old])
        #expect(moved.value == "Grace")
        let reopened = place.open(old)
        #expect(reopened.value == "")

        place.flush(reopened)
        place.flush(moved)
        #expect(try place.stored(old) == nil)
        #expect(try place.stored(new) == "Grace")
    }

    @Test func aMoveWaitsWhileTheEarlierCellsNewestValueCannotBeSaved() throws {
        let storage = FaultyStorage()
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        let earlier = PersistedState("", key: old, storage: storage)
        earlier.modify("Ada")
        earlier.flush()
        storage.failSaves(1_000)
        earlier.modify("Grace")

        // Moving the stored "Ada" would lose "Grace": nothing moves, and the failure is reported.
        var moved: PersistedState<String>? = PersistedState("", key: new, storage: storage, previousKeys: [old])
        #expect(moved?.value == "")
        #expect(earlier.value == "Grace")
        #expect(try storage.base.load(forKey: old) == Data(#""Ada""#.utf8))
        #expect(try storage.base.load(forKey: new) == nil)
        let reported = DiagnosticsRecorder.diagnostics(involving: new)
        #expect(reported.map(\.kind) == [.storageFailed])
        #expect(reported.first?.message.contains("'\(old)'") == true)

        // Once saves work again, the next first load of the key moves the newest value.
        storage.failSaves(0)
        moved = nil
        moved = PersistedState("", key: new, storage: storage, previousKeys: [old])
        #expect(moved?.value == "Grace")
        #expect(earlier.value == "")
        #expect(try storage.base.load(forKey: old) == nil)
    }

    @Test func aRelaunchFindsTheValueUnderTheNewKeyOnlyAfterALiveCellMovedIt() throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let storage = FileStateStorage.file(directory.url)
        let (old, new) = (uniqueKey() + "-displayName", uniqueKey() + "-username")
        let earlier = PersistedState("", key: old, storage: storage)
        earlier.modify("Ada")
        earlier.flush()
        earlier.modify("Grace")
        let moved = PersistedState("", key: new, storage: storage, previousKeys: [old])
        earlier.flush()
        moved.flush()

        // The next process (`statekit-testhelper read` opens a String container on the key).
        #expect(try TestHelperProcess.run(["read", directory.url.path, old]) == [""])
        #expect(try TestHelperProcess.run(["read", directory.url.path, new]) == ["Grace"])
    }

    @Test(.contendingTimeLimit, arguments: Kind.allCases)
    func aMoveDuringWritesToTheEarlierContainerCarriesAValueItHeld(_ kind: Kind) async throws {
        let outcomes = await contending { Self.moveDuringWrites(kind, trials: 10) }
        for (trial, outcome) in outcomes.enumerated() {
            #expect(outcome.held.contains(outcome.moved), "trial \(trial): moved '\(outcome.moved)'")
            #expect(outcome.seconds < 10, "trial \(trial): the move took \(outcome.seconds) s")
        }
    }

    typealias WritesOutcome = (moved: String, held: Set<String>, seconds: Double)

    /// Moves `old` to `new` while a thread writes `"1"`, `"2"`, … to a container of `old`;
    /// returns, per trial, the value moved, the values the earlier container held, and how long
    /// the move took.
    private static func moveDuringWrites(_ kind: Kind, trials: Int) -> [WritesOutcome] {
        let place = MovePlace(kind)
        defer { place.cleanUp() }
        var outcomes: [WritesOutcome] = []
        for trial in 0..<trials {
            let (old, new) = (uniqueKey() + "-old-\(trial)", uniqueKey() + "-new-\(trial)")
            let earlier = place.open(old)
            earlier.modify("0")
            place.flush(earlier)
            let held = earlier.record()
            let stop = LockedBox(false)
            let started = DispatchSemaphore(value: 0)
            let stopped = DispatchSemaphore(value: 0)
            Thread {
                var count = 0
                while !stop.withLock({ $0 }) {
                    count += 1
                    earlier.modify("\(count)")
                    if count == 50 { started.signal() }
                }
                if count < 50 { started.signal() }
                stopped.signal()
            }.start()
            waitFor(started, "the writer to start")
            let start = Date()
            let moved = place.open(new, previousKeys: [old])
            let seconds = Date().timeIntervalSince(start)
            stop.withLock { $0 = true }
            waitFor(stopped, "the writer to stop")
            place.flush(earlier)
            outcomes.append((moved.value, Set(held.values), seconds))
        }
        return outcomes
    }

    @Test(.contendingTimeLimit)
    func twoKeysMovingIntoEachOtherNeitherDeadlockNorDuplicate() async throws {
        let outcomes = await contending { Self.moveIntoEachOther(trials: 200) }
        for (trial, outcome) in outcomes.enumerated() {
            #expect(outcome.finished, "trial \(trial): the two moves did not finish within 30 s")
            guard outcome.finished else { return }
            #expect(outcome.values.sorted() == ["", "Ada"], "trial \(trial): containers hold \(outcome.values)")
            #expect(outcome.stored.sorted() == ["Ada"], "trial \(trial): storage holds \(outcome.stored)")
        }
    }

    /// Opens, at once on two threads, a container of `a` that moves from `b` and one of `b` that
    /// moves from `a`, with "Ada" stored under `a`; returns whether both finished within 30 s,
    /// what they hold, and what the two keys hold.
    private static func moveIntoEachOther(trials: Int) -> [(finished: Bool, values: [String], stored: [String])] {
        let storage = InMemoryStateStorage()
        var outcomes: [(finished: Bool, values: [String], stored: [String])] = []
        for trial in 0..<trials {
            let (a, b) = (uniqueKey() + "-a-\(trial)", uniqueKey() + "-b-\(trial)")
            try? storage.save(Data(#""Ada""#.utf8), forKey: a)
            let opened = LockedBox<[PersistedState<String>]>([])
            let done = DispatchSemaphore(value: 0)
            for (key, previous) in [(a, b), (b, a)] {
                Thread {
                    let state = PersistedState("", key: key, storage: storage, previousKeys: [previous])
                    opened.withLock { $0.append(state) }
                    done.signal()
                }.start()
            }
            let finished = (0..<2).allSatisfy { _ in done.wait(timeout: .now() + 30) == .success }
            let stored = [a, b].compactMap { try? storage.load(forKey: $0) }
                .map { String(decoding: $0, as: UTF8.self) == #""Ada""# ? "Ada" : String(decoding: $0, as: UTF8.self) }
            outcomes.append((finished, opened.withLock { $0.map(\.value) }, stored))
            if !finished { break }
        }
        return outcomes
    }
}

/// A storage of one kind, with containers of `String` opened on it, as a test of a key move
/// needs them.
private struct MovePlace {
    let kind: KeyMoveLiveCellTests.Kind
    private let directory = TemporaryDirectory()
    private let suite = TemporaryDefaults()
    private let storage: (any StateStorage)?

    /// - Parameter saveDelay: How long each save of a file or in-memory storage takes.
    init(_ kind: KeyMoveLiveCellTests.Kind, saveDelay: Double? = nil) {
        self.kind = kind
        let base: (any StateStorage)? =
            switch kind {
            case .file: FileStateStorage.file(directory.url)
            case .memory: InMemoryStateStorage()
            case .userDefaults: nil
            }
        if let base, let saveDelay {
            storage = SlowSavingStorage(base, delay: saveDelay)
        } else {
            storage = base
        }
    }

    /// A container of `key`: a `PersistedState`, or for UserDefaults a `UserDefaultsState` (or
    /// a `PersistedState` over `.userDefaults` when it moves a key, so both kinds take part).
    func open(_ key: String, previousKeys: [String] = []) -> MonitoredState<String> {
        if let storage { return PersistedState("", key: key, storage: storage, previousKeys: previousKeys) }
        if previousKeys.isEmpty { return UserDefaultsState("", key: key, defaults: suite.defaults) }
        return PersistedState("", key: key, storage: .userDefaults(suite.defaults), previousKeys: previousKeys)
    }

    func flush(_ container: MonitoredState<String>) {
        if let persisted = container as? PersistedState<String> { persisted.flush() }
        if let defaults = container as? UserDefaultsState<String> { defaults.flush() }
    }

    /// What storage holds for `key`, or `nil`.
    func stored(_ key: String) throws -> String? {
        guard let storage else { return suite.defaults.string(forKey: key) }
        return try storage.load(forKey: key).map { try JSONDecoder().decode(String.self, from: $0) }
    }

    func cleanUp() {
        directory.cleanUp()
        suite.cleanUp()
    }
}

/// A storage whose every save takes `delay` seconds before it reaches `base`, as a slow disk;
/// the same place as `base` (its location), so that containers over either share cells.
private final class SlowSavingStorage: StateStorage {
    private let base: any StateStorage
    private let delay: Double

    init(_ base: any StateStorage, delay: Double) {
        self.base = base
        self.delay = delay
    }

    var location: String { base.location }

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
