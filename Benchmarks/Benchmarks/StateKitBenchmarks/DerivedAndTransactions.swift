import Benchmark
import Observation
import CombinePeers
import OpenCombine
import StateKit

/// Scenarios 10 to 13: one write to each of 2 or 10 containers (one subscriber each), plainly and
/// as one `withStateTransaction`; in the Floor column, the same on ``TransactionFloor``.
func registerTransactions() {
    let handler: @Sendable (Int) -> Void = { blackHole($0) }
    for count in [2, 10] {
        for isTransaction in [false, true] {
            let containers = (0..<count).map { MonitoredState(0, key: "benchmark.transaction.\($0)") }
            let tokens = containers.map { $0.subscribe(handler) }
            var next = 0
            let scenario = count == 2 ? (isTransaction ? 11 : 10) : (isTransaction ? 13 : 12)
            let name = isTransaction ? "one transaction" : "plain writes"
            Benchmark("\(scenario) \(count) containers, \(name)/StateKit") { benchmark in
                for _ in benchmark.scaledIterations {
                    next &+= 1
                    if isTransaction {
                        withStateTransaction { for container in containers { container.modify(next) } }
                    } else {
                        for container in containers { container.modify(next) }
                    }
                }
                blackHole(tokens)
            }
            let floors = (0..<count).map { _ in TransactionFloor(0) }
            for floor in floors { floor.subscribe(handler) }
            Benchmark("\(scenario) \(count) containers, \(name)/Floor") { benchmark in
                for _ in benchmark.scaledIterations {
                    next &+= 1
                    if isTransaction {
                        withFloorTransaction { for floor in floors { floor.modify(next) } }
                    } else {
                        for floor in floors { floor.modify(next) }
                    }
                }
            }
        }
    }
}

/// The Observation peer's model for the derived scenario: a computed property of two stored ones.
@Observable
final class ObservablePair: @unchecked Sendable {
    var a = 0
    var b = 0

    var sum: Int { a + b }
}

/// Scenario 14: a value derived from 2 sources, with one subscriber; each write changes one source.
/// Scenario 15: a chain of 1,000 derived values (each the previous plus one) with one subscriber at
/// the end; each write changes the root. StateKit only: the same chain of 1,000 OpenCombine `map`s
/// (through `AnyPublisher`) overflows the benchmark thread's stack when it subscribes.
func registerDerived() {
    let handler: @Sendable (Int) -> Void = { blackHole($0) }

    // The floor: each source's subscription recomputes the sum from both current values.
    let floorA = Floor(0)
    let floorB = Floor(0)
    let floorTokens = [floorA, floorB].map { source in
        source.subscribe { _ in handler(floorA.value + floorB.value) }
    }
    var floorNext = 0
    Benchmark("14 derived of 2 sources/Floor") { benchmark in
        for _ in benchmark.scaledIterations {
            floorNext &+= 1
            (floorNext & 1 == 0 ? floorA : floorB).modify(floorNext)
        }
        blackHole(floorTokens)
    }

    let a = MonitoredState(0, key: "benchmark.derived.a")
    let b = MonitoredState(0, key: "benchmark.derived.b")
    let sum = DerivedState(a, b) { $0 + $1 }
    let sumToken = sum.subscribe(handler)
    var stateNext = 0
    Benchmark("14 derived of 2 sources/StateKit") { benchmark in
        for _ in benchmark.scaledIterations {
            stateNext &+= 1
            (stateNext & 1 == 0 ? a : b).modify(stateNext)
        }
        blackHole(sumToken)
    }

    let subjectA = CurrentValueSubject<Int, Never>(0)
    let subjectB = CurrentValueSubject<Int, Never>(0)
    let combined = CombineLatestPublisher(a: subjectA, b: subjectB).map { $0 + $1 }.sink(receiveValue: handler)
    var combineNext = 0
    Benchmark("14 derived of 2 sources/Combine") { benchmark in
        for _ in benchmark.scaledIterations {
            combineNext &+= 1
            (combineNext & 1 == 0 ? subjectA : subjectB).value = combineNext
        }
        blackHole(combined)
    }

    let pair = ObservablePair()
    let tracker = ObservationTracker(pair, read: { $0.sum }, handler: handler)
    var pairNext = 0
    Benchmark("14 derived of 2 sources/Observation") { benchmark in
        for _ in benchmark.scaledIterations {
            pairNext &+= 1
            if pairNext & 1 == 0 { pair.a = pairNext } else { pair.b = pairNext }
        }
        blackHole(tracker)
    }

    let chainConfiguration = Benchmark.Configuration(scalingFactor: .one, maxIterations: 3_000)
    let root = MonitoredState(0, key: "benchmark.chain")
    var last = root.map { $0 }
    for _ in 1..<chainLength { last = last.map { $0 + 1 } }
    let chainToken = last.subscribe(handler)
    var chainNext = 0
    Benchmark("15 derived chain x1,000/StateKit", configuration: chainConfiguration) { _ in
        chainNext &+= 1
        root.modify(chainNext)
        blackHole(chainToken)
    }

}

/// The number of links in the chain scenario.
let chainLength = 1_000
