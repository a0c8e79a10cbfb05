import Foundation
import Observation
import StateKit
import StateKitTesting
import Testing

/// Semantics 11 under contention: persisted containers of one key in one storage are one cell
/// (one value, one version, one lock, one order of subscribers), not values kept in step after
/// the fact.
@Suite struct OneCellPerKeyTests {
    init() { DiagnosticsRecorder.start() }

    @Test(.contendingTimeLimit) func incrementsThroughTwoFileContainersAreAllKept() async {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        let key = uniqueKey()
        let containers = [
            PersistedState(0, key: key, storage: .file(directory.url)),
            PersistedState(0, key: key, storage: .file(directory.url)),
        ]
        await onThreads(4) { index in
            for _ in 0..<2_500 { containers[index % 2].modify { $0 += 1 } }
        }
        #expect(containers[0].value == 10_000)
        #expect(containers[1].value == 10_000)
        #expect(containers[0].version == containers[1].version)
        containers[1].flush()
        let reopened = PersistedState(-1, key: key, storage: .file(directory.url.appendingPathComponent(".")))
        #expect(reopened.value == 10_000)
    }

    @Test(.contendingTimeLimit) func incrementsThroughEveryKindOfContainerOnOneSuiteAreAllKept() async {
        let suite = "statekit.cell.\(UUID().uuidString)"
        let defaults = UserDefaults(suiteName: suite)!
        defer { defaults.removePersistentDomain(forName: suite) }
        let key = uniqueKey()
        let plain = UserDefaultsState(0, key: key, defaults: defaults)
        let persisted = PersistedState(0, key: key, storage: .userDefaults(defaults))
        let synced = SyncedState(0, key: key, storage: .userDefaults(defaults), sinks: [])
        let containers: [MonitoredState<Int>] = [plain, persisted, synced]
        await onThreads(6) { index in
            for _ in 0..<1_000 { containers[index % 3].modify { $0 += 1 } }
        }
        for container in containers { #expect(container.value == 6_000) }
        plain.flush()
        #expect(defaults.integer(forKey: key) == 6_000)
    }

    @Test(.contendingTimeLimit) func aContainerMadeDuringWritesReadsTheLiveValue() async {
        let suite = "statekit.cell.\(UUID().uuidString)"
        let defaults = UserDefaults(suiteName: suite)!
        defer { defaults.removePersistentDomain(forName: suite) }
        for trial in 0..<20 {
            let key = "\(uniqueKey())-\(trial)"
            let first = UserDefaultsState(0, key: key, defaults: defaults)
            await onThreads(4) { _ in
                for _ in 0..<500 { first.modify { $0 += 1 } }
            }
            let second = UserDefaultsState(0, key: key, defaults: defaults)
            #expect(second.value == 2_000)
            #expect(second.version == first.version)
        }
    }

    /// A container made while another container's load of the key is still reading storage waits
    /// for the loaded value. (With the load's flag read outside the load's lock, the second
    /// container went on from the default at once, and the load then wrote the stored value over
    /// its increment.)
    @Test func aContainerMadeDuringTheFirstsLoadStartsFromTheLoadedValue() async {
        let storage = SlowFirstLoadStorage()
        let key = uniqueKey()
        try? storage.base.save(Data("5".utf8), forKey: key)
        let (first, second) = await awayFromThePool {
            let loading = DispatchSemaphore(value: 0)
            let firstMade = DispatchSemaphore(value: 0)
            storage.onSlowLoad = { loading.signal() }
            let first = LockedBox<PersistedState<Int>?>(nil)
            Thread {
                first.withLock { $0 = PersistedState(0, key: key, storage: storage) }
                firstMade.signal()
            }.start()
            loading.wait()
            let second = PersistedState(0, key: key, storage: storage)
            second.modify { $0 += 1 }
            firstMade.wait()
            let made = first.withLock { $0 }
            return (made?.value, second.value)
        }
        #expect(second == 6)
        #expect(first == 6)
    }

    @Test func aJoiningOptionalReadsWhatOtherCodeJustStored() {
        let suite = "statekit.cell.\(UUID().uuidString)"
        let defaults = UserDefaults(suiteName: suite)!
        defer { defaults.removePersistentDomain(forName: suite) }
        let key = uniqueKey()
        let first = UserDefaultsState<Bool?>(nil, key: key, defaults: defaults)
        defaults.set(false, forKey: key)
        let second = UserDefaultsState<Bool?>(nil, key: key, defaults: defaults)
        #expect(second.value == false)
        #expect(first.value == false)
    }

    @Test func twoContainersOfOneKeyInOneTransactionAreOneChange() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let first = PersistedState(0, key: key, storage: storage)
        let second = PersistedState(0, key: key, storage: storage)
        let heardFirst = first.record()
        let heardSecond = second.record()
        withStateTransaction {
            first.modify(1)
            second.modify(2)
            #expect(first.value == 2)
        }
        #expect(first.value == 2)
        #expect(second.value == 2)
        #expect(heardFirst.values == [0, 2])
        #expect(heardSecond.values == [0, 2])
    }

    @Test(.contendingTimeLimit) func everySubscriberHearsEveryChangeOnceInOneOrder() async {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let containers = (0..<3).map { _ in PersistedState(0, key: key, storage: storage) }
        let heard = containers.map { $0.recordChanges() }
        await onThreads(3) { index in
            for _ in 0..<1_000 { containers[index].modify { $0 += 1 } }
        }
        for container in containers { await waitUntilDelivered(container) }
        for changes in heard {
            #expect(changes.values.map(\.newValue) == Array(1...3_000))
            #expect(changes.values.map(\.version) == changes.values.map(\.version).sorted())
        }
    }

    @Test func aValidatorGuardsWritesThroughEveryContainerOfItsKey() {
        struct OutOfRange: Error {}
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let guarded = PersistedState(5, key: key, storage: storage) { _, proposed in
            guard (0...10).contains(proposed) else { throw OutOfRange() }
        }
        let other = PersistedState(5, key: key, storage: storage)
        other.modify(50)
        #expect(guarded.value == 5)
        #expect(other.value == 5)
        #expect(DiagnosticsRecorder.diagnostics(involving: key).map(\.kind) == [.rejectedWrite])
    }

    @Test func aReleasedContainerEndsItsOwnSubscriptionsOnly() async {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let kept = PersistedState(0, key: key, storage: storage)
        var released: PersistedState<Int>? = PersistedState(0, key: key, storage: storage)
        let keptHeard = kept.record()
        var iterator = released!.values.makeAsyncIterator()
        #expect(await iterator.next() == 0)
        let releasedHeard = released!.record()
        released = nil
        kept.modify(1)
        #expect(await iterator.next() == nil)
        #expect(keptHeard.values == [0, 1])
        #expect(releasedHeard.values == [0])
    }

    @Test func derivedStateOfTwoContainersOfOneKeyComputesOnce() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let first = PersistedState(1, key: key, storage: storage)
        let second = PersistedState(1, key: key, storage: storage)
        let sum = DerivedState(first, second) { $0 + $1 }
        let heard = sum.record()
        first.modify(2)
        #expect(sum.value == 4)
        #expect(heard.values == [2, 4])
    }
}

/// A seed-article listener that notes which container told it of a change.
private final class IdentityListener: StateListener, @unchecked Sendable {
    let stateListenerQueue = DispatchQueue(label: "identity-listener")
    let told = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var containers: [ObjectIdentifier] = []

    func stateModified<T>(_ state: State<T>) {
        lock.withLock { containers.append(ObjectIdentifier(state)) }
        told.signal()
    }

    var seen: [ObjectIdentifier] { lock.withLock { containers } }
}

extension OneCellPerKeyTests {
    @Test func aListenerIsToldByTheContainerItWasAttachedToWhicheverContainerWrote() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let window = PersistedState(0, key: key, storage: storage)
        let widget = PersistedState(0, key: key, storage: storage)
        let listener = IdentityListener()
        window.attach(listener: listener)
        widget.modify(5)
        waitFor(listener.told, "the listener to be told")
        #expect(listener.seen == [ObjectIdentifier(window)])
        #expect(window.allListeners.count == 1)
        #expect(widget.allListeners.isEmpty)
    }
}

extension OneCellPerKeyTests {
    @Test func observationTrackingOneContainerSeesAWriteThroughAnother() {
        let storage = InMemoryStateStorage()
        let key = uniqueKey()
        let shown = PersistedState("", key: key, storage: storage)
        let edited = PersistedState("", key: key, storage: storage)
        let changed = LockedBox(false)
        withObservationTracking {
            _ = shown.value
        } onChange: {
            changed.withLock { $0 = true }
        }
        edited.modify("Ada")
        #expect(changed.withLock { $0 })
    }
}

/// Storage in memory whose first load takes 300 ms, telling `onSlowLoad` when it starts.
private final class SlowFirstLoadStorage: StateStorage, @unchecked Sendable {
    let base = InMemoryStateStorage()
    var onSlowLoad: (() -> Void)?
    private let isFirst = LockedBox(true)

    var location: String { "slow-first-load:\(ObjectIdentifier(self).hashValue)" }

    func load(forKey key: String) throws -> Data? {
        let isFirstLoad = isFirst.withLock { first in
            defer { first = false }
            return first
        }
        if isFirstLoad {
            onSlowLoad?()
            usleep(300_000)
        }
        return try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws { try base.save(data, forKey: key) }

    func remove(forKey key: String) throws { try base.remove(forKey: key) }
}
