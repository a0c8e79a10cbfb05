// Drives one StateKit scenario for callgrind, which counts instructions repeatably on a shared
// machine. Only `measured(_:_:)` is counted when run as Scripts/profile.sh does.
import CombinePeers
import Foundation
import Observation
import OpenCombine
import StateKit
import StateKitInspector
import Synchronization

struct Grid: Equatable, Sendable {
    var cells = [Int](repeating: 0, count: 1_000)
}

/// Ten stored properties: what most projections look at (`\.user.name`), unlike `\.cells[i]`.
struct Row: Equatable, Sendable {
    var a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, h = 0, i = 0, j = "ten"
}

/// The seed article's pattern: an override of `didModify()`, which every change runs through the
/// delivery queue.
final class HookedState: MonitoredState<Int>, @unchecked Sendable {
    var hookCalls = 0

    override func didModify() {
        hookCalls &+= 1
    }
}

/// A remote-sync sink whose sends never finish: `syncedWrite` counts the writer's side only.
struct ParkedRemoteSink: RemoteSyncSink {
    var policy: SinkPolicy { .latestValue }
    func connect(_ channel: RemoteChannel<Int>) {}
    func refresh() async throws {}
    func send(_ changes: [StateChange<Int>]) async throws {
        try await Task.sleep(for: .seconds(3_600))
    }
}

/// The bound of an observable read (`readBound`): what any thread-safe `Observable` container must
/// do to read its value, a lock pair and telling Observation's registrar of the access.
final class RegisteredReader: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    private let keyPath = \RegisteredReader.value
    private let storage = Mutex(0)

    var value: Int {
        registrar.access(self, keyPath: keyPath)
        return storage.withLock { $0 }
    }
}

/// Storage in memory whose saves wait until `release()`: `persistedWrite` and `syncedWrite` count
/// the writer's side only. With saves that finish, how many a loop schedules (each an allocation
/// on the writer's thread) depends on how the machine runs the saving thread beside the writer,
/// which made the allocation count of these paths vary with the machine's load.
final class ParkedStorage: StateStorage {
    private let base = InMemoryStateStorage()
    private let gate = DispatchSemaphore(value: 0)

    var location: String { "parked" }

    func release() {
        gate.signal()
    }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        gate.wait()
        gate.signal()
        try base.save(data, forKey: key)
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}

/// How many times the links of `chainCutoff` computed.
nonisolated(unsafe) var linkComputations = 0

/// An open inspector page's event stream: connects, then reads (and drops) what arrives on a
/// thread of its own; returns once the inspector counts the page (its first bytes arrived).
enum EventStreamReader {
    static func open(_ url: URL) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(url.port!).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(connected == 0, "cannot connect to the inspector")
        let request = "GET /events?\(url.query!) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        _ = request.withCString { send(descriptor, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        _ = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while buffer.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, 0) }) > 0 {}
        }
        thread.start()
    }
}

@inline(never)
func measured(_ count: Int, _ body: () -> Void) {
    for _ in 0..<count { body() }
}

let arguments = CommandLine.arguments
let scenario = arguments.count > 1 ? arguments[1] : "write1"
let count = arguments.count > 2 ? Int(arguments[2]) ?? 10_000 : 10_000
var next = 0

switch scenario {
case "read":
    // Read once first: the first read makes the container's Observation bridge, once per
    // container, as `readBound` makes its registrar before its loop.
    let state = MonitoredState(0, key: "read")
    next &+= state.value
    measured(count) { next &+= state.value }
case "readBound":
    let reader = RegisteredReader()
    measured(count) { next &+= reader.value }
case "writeAfterRead":
    // Scenario 2r: writes to a container whose value was read once, outside any tracking.
    let state = MonitoredState(0, key: "writeAfterRead")
    next &+= state.value
    measured(count) {
        next &+= 1
        state.modify(next)
    }
case "write0", "write1", "write10":
    let subscribers = Int(scenario.dropFirst(5))!
    let state = MonitoredState(0, key: "write")
    let tokens = (0..<subscribers).map { _ in state.subscribe { _ in } }
    measured(count) {
        next &+= 1
        state.modify(next)
    }
    withExtendedLifetime(tokens) {}
case "fanout", "fanout10k":
    // Scenario 3: distinct paths, one changes per write; fanout10k has ten times the projections.
    let size = scenario == "fanout" ? 1_000 : 10_000
    let state = MonitoredState(Grid(cells: [Int](repeating: 0, count: size)), key: scenario)
    let tokens = (0..<size).map { index in state.observe(\Grid.cells[index]).subscribe { _ in } }
    measured(count) {
        next &+= 1
        let cell = next % size
        state.modify { $0.cells[cell] &+= 1 }
    }
    withExtendedLifetime(tokens) {}
case "fanoutTree", "fanoutTree10k":
    // fanout with element projections (`state.cells[i]`), which share one read of `cells` per write.
    let size = scenario == "fanoutTree" ? 1_000 : 10_000
    let state = MonitoredState(Grid(cells: [Int](repeating: 0, count: size)), key: scenario)
    let tokens = (0..<size).map { index in state.cells[index].subscribe { _ in } }
    measured(count) {
        next &+= 1
        let cell = next % size
        state.modify { $0.cells[cell] &+= 1 }
    }
    withExtendedLifetime(tokens) {}
case "writeThrough100", "writeThrough10k":
    // A write through one of 100 or 10,000 element projections, each subscribed: flat when only
    // the written element's projections are evaluated.
    let size = scenario == "writeThrough100" ? 100 : 10_000
    let state = MonitoredState(Grid(cells: [Int](repeating: 0, count: size)), key: scenario)
    let cells = (0..<size).map { state.cells[$0] }
    let tokens = cells.map { cell in cell.subscribe { _ in } }
    // One write first, so that the loop does not count the generic metadata its first write
    // instantiates: callgrind then dumps, with that allocation's call arc, every allocation the
    // setup made.
    cells[0].modify(-1)
    measured(count) {
        next &+= 1
        cells[next % size].modify(next)
    }
    withExtendedLifetime(tokens) {}
case "subscribe1k", "subscribe10k":
    // Subscribing one more projection to a container that has 1,000 or 10,000 on other paths.
    let size = scenario == "subscribe1k" ? 1_000 : 10_000
    let state = MonitoredState(Grid(cells: [Int](repeating: 0, count: size)), key: scenario)
    let others = (0..<size).map { index in state.observe(\Grid.cells[index]).subscribe { _ in } }
    measured(count) { state.observe(\Grid.cells[next % size]).subscribe { _ in }.cancel() }
    withExtendedLifetime(others) {}
case "samePath":
    // Scenario 4: 1,000 subscriptions to one path, which every write changes.
    let state = MonitoredState(Row(), key: "samePath")
    let tokens = (0..<1_000).map { _ in state.observe(\Row.a).subscribe { _ in } }
    measured(count) { state.modify { $0.a &+= 1 } }
    withExtendedLifetime(tokens) {}
case "fanoutStored":
    let state = MonitoredState(Row(), key: "fanoutStored")
    let paths: [KeyPath<Row, Int>] = [\.a, \.b, \.c, \.d, \.e, \.f, \.g, \.h, \.i]
    var tokens = paths.map { path in state.observe(path).subscribe { _ in } }
    tokens.append(state.observe(\.j).subscribe { _ in })
    measured(count) {
        next &+= 1
        state.modify { $0.a &+= 1 }
    }
    withExtendedLifetime(tokens) {}
case "hook":
    let state = HookedState(0, key: "hook")
    let token = state.subscribe { _ in }
    measured(count) {
        next &+= 1
        state.modify(next)
    }
    next &+= state.hookCalls
    withExtendedLifetime(token) {}
case "plain2", "plain10", "transaction2", "transaction10":
    // One write to each of 2 or 10 containers (one subscriber each), plainly or as one transaction.
    let isTransaction = scenario.hasPrefix("transaction")
    let containers = (0..<Int(scenario.drop { !$0.isNumber })!).map { MonitoredState(0, key: "c\($0)") }
    let tokens = containers.map { $0.subscribe { _ in } }
    measured(count) {
        next &+= 1
        if isTransaction {
            withStateTransaction { for container in containers { container.modify(next) } }
        } else {
            for container in containers { container.modify(next) }
        }
    }
    withExtendedLifetime(tokens) {}
case "relay":
    // A write whose one subscriber writes another container (one subscriber): the queued path
    // a derived state's update takes.
    let source = MonitoredState(0, key: "source")
    let target = MonitoredState(0, key: "target")
    let tokens = [source.subscribe { target.modify($0) }, target.subscribe { _ in }]
    measured(count) {
        next &+= 1
        source.modify(next)
    }
    withExtendedLifetime(tokens) {}
case "derived2":
    // A derived state of 2 sources with one subscriber; each write changes one source.
    let a = MonitoredState(0, key: "a")
    let b = MonitoredState(0, key: "b")
    let sum = DerivedState(a, b) { $0 + $1 }
    let token = sum.subscribe { _ in }
    measured(count) {
        next &+= 1
        (next & 1 == 0 ? a : b).modify(next)
    }
    withExtendedLifetime(token) {}
case "combine2":
    // derived2's peer: Combine's combineLatest of 2 subjects, mapped to their sum, with one sink.
    let a = CurrentValueSubject<Int, Never>(0)
    let b = CurrentValueSubject<Int, Never>(0)
    let sink = CombineLatestPublisher(a: a, b: b).map { $0 + $1 }.sink { _ in }
    measured(count) {
        next &+= 1
        (next & 1 == 0 ? a : b).value = next
    }
    withExtendedLifetime(sink) {}
case "chain":
    // A chain of 1,000 derived states with one subscriber at the end; each write changes the root.
    let root = MonitoredState(0, key: "root")
    var last = root.map { $0 }
    for _ in 1..<1_000 { last = last.map { $0 + 1 } }
    let token = last.subscribe { _ in }
    measured(count) {
        next &+= 1
        root.modify(next)
    }
    withExtendedLifetime(token) {}
case "chainCutoff":
    // The same chain with a cutoff in the middle: link 500 keeps its value for 9 writes in 10,
    // so the 499 links after it compute only on the tenth (early cutoff).
    let root = MonitoredState(0, key: "root")
    var last = root.map { $0 }
    for link in 1..<1_000 {
        last = last.map { value in
            linkComputations &+= 1
            return link == 500 ? value / 10 : value + 1
        }
    }
    let token = last.subscribe { _ in }
    linkComputations = 0
    measured(count) {
        next &+= 1
        root.modify(next)
    }
    print("link computations per write: \(Double(linkComputations) / Double(count))")
    withExtendedLifetime(token) {}
case "persistedWrite":
    let storage = ParkedStorage()
    let state = PersistedState(0, key: "persistedWrite", storage: storage)
    let token = state.subscribe { _ in }
    measured(count) {
        next &+= 1
        state.modify(next)
    }
    storage.release()
    state.flush()
    withExtendedLifetime(token) {}
case "sharedModify":
    // An uncontended modify of a key in file storage shared across processes: the key's lock, a
    // stat, an encode, a write and a rename (the kernel's share is not counted by callgrind).
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("statekit-profile-shared-\(ProcessInfo.processInfo.processIdentifier)")
    let state = PersistedState(0, key: "sharedModify", storage: .file(directory, sharedAcrossProcesses: true))
    measured(count) { state.modify { $0 += 1 } }
    try? FileManager.default.removeItem(at: directory)
case "syncedWrite":
    // A persisted synced write with a remote sink: saved, handed to the sink, its record kept.
    let state = SyncedState(0, key: "syncedWrite", storage: ParkedStorage(), sinks: [ParkedRemoteSink()])
    measured(count) {
        next &+= 1
        state.modify(next)
    }
    withExtendedLifetime(state) {}
case "join":
    let storage = InMemoryStateStorage()
    let first = PersistedState(0, key: "join", storage: storage)
    first.modify(1)
    measured(count) { next &+= PersistedState(0, key: "join", storage: storage).value }
case "inspected0", "inspected1", "watched0", "watched1":
    // write0 and write1 with an inspector running: `inspected`, no page open; `watched`, one page
    // open (its event stream read on a thread of its own), so every container counts its changes.
    let subscribers = Int(scenario.suffix(1))!
    let state = MonitoredState(0, key: "write")
    let tokens = (0..<subscribers).map { _ in state.subscribe { _ in } }
    let inspector = try! StateInspector.start()
    if scenario.hasPrefix("watched") { EventStreamReader.open(inspector.url) }
    measured(count) {
        next &+= 1
        state.modify(next)
    }
    inspector.stop()
    withExtendedLifetime(tokens) {}
case "churn":
    let state = MonitoredState(0, key: "churn")
    measured(count) { state.subscribe { _ in }.cancel() }
case "subscribe":
    // Subscriptions kept: what one costs to make, and the allocations it keeps.
    let state = MonitoredState(0, key: "subscribe")
    var tokens: [StateKit.Subscription] = []
    tokens.reserveCapacity(count)
    measured(count) { tokens.append(state.subscribe { _ in }) }
    withExtendedLifetime(tokens) {}
default:
    fatalError("unknown scenario \(scenario)")
}
print(scenario, count, next)
