import Dispatch
import Foundation
import Observation
import StateKit

/// Values that cross threads (persisted, synced, compared by the container) are `nonisolated`:
/// under main-actor default isolation their `Codable` and `Equatable` conformances would otherwise
/// be main-actor-isolated, and a conformance used off the main actor must not be.
nonisolated struct Profile: Equatable, Sendable, Codable {
    var name = "Ann"
    var visits = 0
}

/// A view model the way an app writes one: main-actor isolated by default, no annotations.
final class ProfileModel {
    @Stateful var count = 0
    @Stateful(key: "profile") var profile = Profile()
    var subscriptions = Set<Subscription>()
    var rendered: [String] = []

    func bind() {
        $count.subscribe { count in print("count (sync): \(count)") }.store(in: &subscriptions)
        $count.subscribe(on: .global()) { count in print("count (queue): \(count)") }.store(in: &subscriptions)
        $count.subscribeOnMain { [weak self] count in self?.rendered.append("count \(count)") }
            .store(in: &subscriptions)
        $profile.subscribeChanges { change in print("profile \(change.oldValue) -> \(change.newValue)") }
            .store(in: &subscriptions)
        $profile.name.subscribeOnMain { [weak self] name in self?.rendered.append("name \(name)") }
            .store(in: &subscriptions)
    }
}

/// A row of a list, projected by identity.
nonisolated struct Row: Identifiable, Equatable, Sendable {
    var id: Int
    var title: String
}

/// A grid whose cells are projected by position.
nonisolated struct Board: Equatable, Sendable {
    var cells = [0, 0, 0]
}

/// A seed-style listener, main-actor isolated like the rest of the module.
final class TitleListener: StateListener {
    nonisolated func stateModified<T>(_ state: State<T>) { print("listener: \(state.key)") }
}

/// A sink of the app's own, as `SyncedState` takes them.
struct PrintSink: StateSink {
    func send(_ changes: [StateChange<Profile>]) async throws {
        for change in changes { print("sink: \(change.newValue)") }
    }
}

/// Property wrappers that persist and sync, in a main-actor class.
final class SettingsModel {
    @Persisted(key: "client.theme", storage: .inMemory, previousKeys: ["client.oldTheme"]) var theme = "light"
    @Synced(key: "client.score", sinks: [LoggingSink()]) var score = 0
}

/// What a validator calls must be `nonisolated`: validators run on the writing thread, off the
/// main actor, even in a main-actor class.
nonisolated enum QuantityRule {
    static func allows(_ quantity: Int) -> Bool { quantity >= 0 }
}
nonisolated struct NegativeQuantity: Error {}

/// A validated property in a main-actor class.
final class OrderModel {
    @Stateful(
        key: "client.quantity",
        validator: { _, proposed in
            guard QuantityRule.allows(proposed) else { throw NegativeQuantity() }
        })
    var quantity = 1
}

let model = ProfileModel()
model.bind()

let order = OrderModel()
order.quantity = 2
do {
    try order.$quantity.set(-1)
} catch {
    print("refused: \(error)")
}

// Containers and operators.
let plain = State(1, key: "plain")
plain ~> 2
plain ~> { $0 += 1 }
let counter = MonitoredState(0, key: "counter")
counter.modify { $0 += 1 }
let validated = MonitoredState(0, key: "validated") { _, proposed in
    if proposed < 0 { throw RejectedValue() }
}
struct RejectedValue: Error {}
try? validated.set(-1)

// Projections, writable and read-only.
let profile = MonitoredState(Profile(), key: "profile.standalone")
let name: MutableObserved<String> = profile.name
name ~> "Bob"
name.modify { $0 += "!" }
let visits: Observed<Int> = profile.readOnly.visits
let mirror = MonitoredState(Profile(), key: "profile.mirror")
let binding = mirror <~ profile
let nameMirror = MonitoredState("", key: "name.mirror")
let nameBinding = nameMirror <~ name
model.$count ~> 5
model.count += 1

// Observation, with no macro.
withObservationTracking {
    _ = model.count
    _ = visits.value
} onChange: {
    print("will change")
}
model.count = 7

// Async consumers.
let changes = counter.changes
let consumer = Task {
    var seen: [Int] = []
    for await value in counter.values {
        seen.append(value)
        if value >= 4 { break }
    }
    for await part in profile.name.values(buffering: .unbounded) {
        print("name \(part)")
        break
    }
    return seen
}
counter ~> 3
counter ~> 4
let changeConsumer = Task {
    for await change in changes {
        print("change to \(change.newValue)")
        if change.newValue == 5 { break }
    }
}

// Sinks, persistence and their property wrappers.
let synced = SyncedState(Profile(), key: "profile.synced") {
    PrintSink()
    ClosureSink { changes in print("closure sink: \(changes.count)") }
}
synced.name ~> "Dee"
await synced.flush()
let syncStatus = synced.syncStatus.value
print(syncStatus.isSynced, syncStatus.hasContactedEveryDestination, syncStatus.sinks.map(\.isAwaitingFirstContact))
let persisted = PersistedState(Profile(), key: "profile.persisted", storage: .inMemory)
persisted.visits ~> 3
let moved = PersistedState(Profile(), key: "profile.moved", storage: .inMemory, previousKeys: ["profile.old"])
moved.visits ~> 4
let sharedDirectory = URL.temporaryDirectory.appending(path: "statekit-client-shared")
let launches = PersistedState(0, key: "launches", storage: .file(sharedDirectory, sharedAcrossProcesses: true))
launches.modify { $0 += 1 }
let sharedStorage = FileStateStorage(directory: sharedDirectory, sharedAcrossProcesses: true)
print(sharedStorage.isSharedAcrossProcesses, launches.value > 0)
let settings = SettingsModel()
settings.theme = "dark"
settings.score += 1
settings.$score ~> 10
let rows = MonitoredState([Row(id: 1, title: "one"), Row(id: 2, title: "two")], key: "rows")
let second = rows[id: 2]
let firstRow = rows.readOnly[0]
let firstByPosition = MonitoredState(Board(), key: "board").cells[0]
firstByPosition ~> 1
print(firstRow.value, firstByPosition.value)
let secondTitle = second.subscribeOnMain { row in print("row 2: \(row?.title ?? "removed")") }
second.modify { $0?.title = "zwei" }
second ~> nil
let listener = TitleListener()
rows.attach(listener: listener)
rows.detach(listener: listener)
print(secondTitle.isActive)
print(binding.isActive, nameBinding.isActive, model.rendered, await consumer.value.count)
counter ~> 5
await changeConsumer.value
