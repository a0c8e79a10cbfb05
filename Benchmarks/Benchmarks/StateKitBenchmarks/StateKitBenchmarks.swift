import Benchmark
import Dispatch
import OpenCombine
import StateKit

// Names are "<scenario>/<peer>"; Scripts/ratios.py divides each peer's median by the Floor's.

let lostUpdates = BenchmarkMetric.custom("lost updates per 1000", useScalingFactor: false)
let pathEvaluations = BenchmarkMetric.custom("path evaluations per write", useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, .mallocBytesCount],
        warmupIterations: 3,
        scalingFactor: .kilo,
        maxDuration: .milliseconds(300),
        maxIterations: 300
    )
    registerScalarScenarios(FloorPeer.self)
    registerScalarScenarios(StateKitPeer.self)
    registerScalarScenarios(SeedPeer.self)
    registerScalarScenarios(CombinePeer.self)
    registerScalarScenarios(ObservationPeer.self)
    registerObservableWriteBound()
    registerSubscriptionBound()
    registerFanOut()
    registerElementFanOut()
    registerSamePath()
    registerContention()
    registerSyncedState()
    registerPersistence()
    registerSharedPersistence()
    registerTransactions()
    registerDerived()
}

/// Scenarios 1, 2, 6 and 7 for one peer.
func registerScalarScenarios<P: Peer>(_ type: P.Type) {
    let handler: @Sendable (Int) -> Void = { blackHole($0) }

    let reader = P()
    Benchmark("1 read/\(P.name)") { benchmark in
        for _ in benchmark.scaledIterations { blackHole(reader.current) }
    }

    // "2r": the same writes to a container whose value has been read once, as an app's is:
    // StateKit's containers then report every write to their Observation registrar.
    for (scenario, readFirst, counts) in [("2 write", false, [0, 1, 10]), ("2r write after a read", true, [0, 1])] {
        for subscriberCount in counts {
            let peer = P()
            if readFirst { blackHole(peer.current) }
            let tokens = (0..<subscriberCount).map { _ in peer.listen(handler) }
            var next = 0
            Benchmark("\(scenario), \(subscriberCount) subscribers/\(P.name)") { benchmark in
                for _ in benchmark.scaledIterations {
                    next &+= 1
                    peer.write(next)
                }
                peer.drain()
                blackHole(tokens)
            }
        }
    }

    // Observation cannot remove a registration, so churn would only pile registrations up.
    if P.self != ObservationPeer.self { registerChurn(P.self, scenario: "6 subscribe+cancel") }
    registerKeptSubscriptions(P.self, scenario: "7 subscribe (kept)")
}

/// Scenarios 6 and 7's bound, in the Floor column: the Floor with tokens that keep StateKit's
/// subscription promises (``TokenFloor``).
func registerSubscriptionBound() {
    let token = "a token that cancels when released"
    registerChurn(TokenFloorPeer.self, scenario: "6 bound: subscribe+cancel, \(token)")
    registerKeptSubscriptions(TokenFloorPeer.self, scenario: "7 bound: subscribe (kept), \(token)")
}

/// Scenario 6 for one peer: a subscription made and cancelled.
func registerChurn<P: Peer>(_ type: P.Type, scenario: String) {
    let handler: @Sendable (Int) -> Void = { blackHole($0) }
    let churned = P()
    Benchmark("\(scenario)/\(P.name)") { benchmark in
        for _ in benchmark.scaledIterations {
            let token = churned.listen(handler)
            churned.cancel(token)
        }
    }
}

/// Scenario 7 for one peer: subscriptions made and kept, to count what each keeps allocated.
func registerKeptSubscriptions<P: Peer>(_ type: P.Type, scenario: String) {
    let handler: @Sendable (Int) -> Void = { blackHole($0) }
    Benchmark("\(scenario)/\(P.name)", configuration: .init(maxIterations: 50)) { benchmark in
        let peer = P()
        var tokens: [P.Token] = []
        tokens.reserveCapacity(benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { tokens.append(peer.listen(handler)) }
        benchmark.stopMeasurement()
        for token in tokens { peer.cancel(token) }
    }
}

/// Scenario 2r's bound, in the Observation column: what any thread-safe `Observable` container
/// that skips equal values must do to write once its value has been read (``RegisteredCounter``).
/// `@Observable`'s own write takes no lock; StateKit's containers must.
func registerObservableWriteBound() {
    let counter = RegisteredCounter()
    blackHole(counter.value)
    var next = 0
    Benchmark("2r bound: a locked write told to the registrar, 0 subscribers/Observation") { benchmark in
        for _ in benchmark.scaledIterations {
            next &+= 1
            counter.write(next)
        }
    }
}

/// Scenario 3: 1,000 projections on distinct key paths; each write changes one of them.
func registerFanOut() {
    let configuration = Benchmark.Configuration(scalingFactor: .one, maxIterations: 3_000)
    let handler: @Sendable (Int) -> Void = { blackHole($0) }

    let floor = Floor(Grid())
    let floorTokens = (0..<projectionCount).map { index in
        let projection = FloorProjection(initial: Grid(), read: { $0.cells[index] }, handler: handler)
        return floor.subscribe { projection.evaluate($0) }
    }
    var floorNext = 0
    Benchmark("3 fan-out 1,000 paths/Floor", configuration: configuration) { _ in
        floorNext &+= 1
        let cell = floorNext % projectionCount
        floor.modify { $0.cells[cell] &+= 1 }
        blackHole(floorTokens)
    }

    let state = MonitoredState(Grid(), key: "benchmark.grid")
    let stateTokens = (0..<projectionCount).map { index in
        state.observe(\Grid.cells[index]).subscribe(handler)
    }
    var stateNext = 0
    Benchmark("3 fan-out 1,000 paths/StateKit", configuration: configuration) { _ in
        stateNext &+= 1
        let cell = stateNext % projectionCount
        state.modify { $0.cells[cell] &+= 1 }
        blackHole(stateTokens)
    }

    let subject = CurrentValueSubject<Grid, Never>(Grid())
    let subjectTokens = (0..<projectionCount).map { index in
        subject.map { $0.cells[index] }.removeDuplicates().sink(receiveValue: handler)
    }
    var subjectNext = 0
    Benchmark("3 fan-out 1,000 paths/Combine", configuration: configuration) { _ in
        subjectNext &+= 1
        subject.value.cells[subjectNext % projectionCount] &+= 1
        blackHole(subjectTokens)
    }

    let model = ObservableGrid()
    let trackers = (0..<projectionCount).map { index in
        ObservationTracker(model, read: { $0.cells[index] }, handler: handler)
    }
    var modelNext = 0
    Benchmark("3 fan-out 1,000 paths/Observation", configuration: configuration) { _ in
        modelNext &+= 1
        model.cells[modelNext % projectionCount] &+= 1
        blackHole(trackers)
    }
}

/// Scenarios 3e and 3w: element projections (`state.cells[i]`), which share one read of the
/// collection per change. 3e: 1,000 and 10,000 of them, each whole-value `modify` changing one
/// element. 3w: a write through one of 100 or 10,000 element projections (the Floor, which has no
/// projection to write through, writes the element and evaluates every projection).
func registerElementFanOut() {
    let configuration = Benchmark.Configuration(scalingFactor: .one, maxIterations: 3_000)
    let handler: @Sendable (Int) -> Void = { blackHole($0) }
    for (scenario, size, writesThrough) in [
        ("3e fan-out 1,000 elements", 1_000, false), ("3e fan-out 10,000 elements", 10_000, false),
        ("3w write through one of 100 elements", 100, true), ("3w write through one of 10,000 elements", 10_000, true),
    ] {
        let grid = Grid(cells: [Int](repeating: 0, count: size))
        let floor = Floor(grid)
        let floorTokens = (0..<size).map { index in
            let projection = FloorProjection(initial: grid, read: { $0.cells[index] }, handler: handler)
            return floor.subscribe { projection.evaluate($0) }
        }
        var floorNext = 0
        Benchmark("\(scenario)/Floor", configuration: configuration) { _ in
            floorNext &+= 1
            let cell = floorNext % size
            if writesThrough {
                let value = floorNext
                floor.modify { $0.cells[cell] = value }
            } else {
                floor.modify { $0.cells[cell] &+= 1 }
            }
            blackHole(floorTokens)
        }

        let state = MonitoredState(grid, key: "benchmark.elements.\(size)")
        let cells = (0..<size).map { state.cells[$0] }
        let stateTokens = cells.map { $0.subscribe(handler) }
        var stateNext = 0
        Benchmark("\(scenario)/StateKit", configuration: configuration) { _ in
            stateNext &+= 1
            let cell = stateNext % size
            if writesThrough {
                cells[cell].modify(stateNext)
            } else {
                state.modify { $0.cells[cell] &+= 1 }
            }
            blackHole(stateTokens)
        }
    }
}

/// Scenario 4: 1,000 projections on one computed path that counts its evaluations; every write
/// changes it. Reports how many times the path was evaluated per write.
func registerSamePath() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, .mallocCountTotal, .mallocBytesCount, pathEvaluations],
        scalingFactor: .one,
        maxIterations: 3_000
    )
    let handler: @Sendable (Int) -> Void = { blackHole($0) }

    func measuringEvaluations(_ benchmark: Benchmark, _ write: () -> Void) {
        let before = countedEvaluations
        write()
        benchmark.measurement(pathEvaluations, countedEvaluations &- before)
    }

    let floor = Floor(Tally())
    let floorTokens = (0..<projectionCount).map { _ in
        let projection = FloorProjection(initial: Tally(), read: { $0.counted }, handler: handler)
        return floor.subscribe { projection.evaluate($0) }
    }
    Benchmark("4 same path x1,000/Floor", configuration: configuration) { benchmark in
        measuringEvaluations(benchmark) { floor.modify { $0.total &+= 1 } }
        blackHole(floorTokens)
    }

    let state = MonitoredState(Tally(), key: "benchmark.tally")
    let stateTokens = (0..<projectionCount).map { _ in state.observe(\Tally.counted).subscribe(handler) }
    Benchmark("4 same path x1,000/StateKit", configuration: configuration) { benchmark in
        measuringEvaluations(benchmark) { state.modify { $0.total &+= 1 } }
        blackHole(stateTokens)
    }

    let subject = CurrentValueSubject<Tally, Never>(Tally())
    let subjectTokens = (0..<projectionCount).map { _ in
        subject.map(\.counted).removeDuplicates().sink(receiveValue: handler)
    }
    Benchmark("4 same path x1,000/Combine", configuration: configuration) { benchmark in
        measuringEvaluations(benchmark) { subject.value.total &+= 1 }
        blackHole(subjectTokens)
    }

    let model = ObservableTally()
    let trackers = (0..<projectionCount).map { _ in
        ObservationTracker(model, read: { $0.counted }, handler: handler)
    }
    Benchmark("4 same path x1,000/Observation", configuration: configuration) { benchmark in
        measuringEvaluations(benchmark) { model.total &+= 1 }
        blackHole(trackers)
    }
}

/// Scenario 5: two threads each increment 100,000 times (long enough to overlap well; a start
/// barrier would measure the scheduler instead); the time is per increment pair, and increments
/// lost to a non-atomic read-modify-write are counted. Observation is not thread-safe for writes,
/// so its peer here is a `Mutex` with the registrar told around each write (``RegisteredCounter``).
func registerContention() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, lostUpdates],
        maxIterations: 200
    )

    func contend(_ benchmark: Benchmark, read: () -> Int, increment: @escaping @Sendable () -> Void) {
        let count = 100 * benchmark.scaledIterations.count
        let before = read()
        DispatchQueue.concurrentPerform(iterations: 2) { _ in
            for _ in 0..<count { increment() }
        }
        let gained = read() - before
        benchmark.measurement(lostUpdates, (2 * count - gained) * 1_000 / (2 * count))
    }

    let floor = Floor(0)
    Benchmark("5 contended modify/Floor", configuration: configuration) { benchmark in
        contend(benchmark, read: { floor.value }, increment: { floor.modify { $0 += 1 } })
    }

    let state = MonitoredState(0, key: "benchmark.contended")
    Benchmark("5 contended modify/StateKit", configuration: configuration) { benchmark in
        contend(benchmark, read: { state.value }, increment: { state.modify { $0 += 1 } })
    }

    let seed = SeedState(0, key: "benchmark.contended")
    Benchmark("5 contended modify/Seed", configuration: configuration) { benchmark in
        contend(benchmark, read: { seed.value }, increment: { seed.modify(seed.value + 1) })
    }

    let registered = RegisteredCounter()
    Benchmark("5 contended modify/Observation", configuration: configuration) { benchmark in
        contend(benchmark, read: { registered.value }, increment: { registered.increment() })
    }

    let subject = UncheckedBox(CurrentValueSubject<Int, Never>(0))
    Benchmark("5 contended modify/Combine", configuration: configuration) { benchmark in
        contend(benchmark, read: { subject.value.value }, increment: { subject.value.value += 1 })
    }
}
