import Observation
import Synchronization

/// Number of projections in the fan-out and same-path scenarios.
let projectionCount = 1_000

/// A value with many independently projectable parts: `\.cells[i]` is a distinct key path per `i`.
struct Grid: Equatable, Sendable {
    var cells = [Int](repeating: 0, count: projectionCount)
}

/// Counts how often ``Tally/counted`` is evaluated; deliveries run on the writing thread.
nonisolated(unsafe) var countedEvaluations = 0

/// A value whose projected part is a computed property that counts its own evaluations.
struct Tally: Equatable, Sendable {
    var total = 0

    var counted: Int {
        countedEvaluations &+= 1
        return total
    }
}

/// The Observation peer's model for the projection scenarios.
@Observable
final class ObservableGrid: @unchecked Sendable {
    var cells = [Int](repeating: 0, count: projectionCount)
}

/// The Observation peer's model for the same-path scenario.
@Observable
final class ObservableTally: @unchecked Sendable {
    var total = 0

    var counted: Int {
        countedEvaluations &+= 1
        return total
    }
}

/// The contended scenario's Observation peer: a thread-safe `Observable` counter, the Floor's
/// `Mutex` with Observation's registrar told before and after each write, as `@Observable`'s
/// setter tells it. StateKit's containers are `Observable`, so this is their bound there. The key
/// path is made once, as StateKit's is (a literal is looked up and retained on every use).
final class RegisteredCounter: Observable, Sendable {
    private static let valuePath: KeyPath<RegisteredCounter, Int> & Sendable = \.value
    private let registrar = ObservationRegistrar()
    private let storage = Mutex(0)

    var value: Int {
        registrar.access(self, keyPath: Self.valuePath)
        return storage.withLock { $0 }
    }

    func increment() {
        registrar.willSet(self, keyPath: Self.valuePath)
        storage.withLock { $0 += 1 }
        registrar.didSet(self, keyPath: Self.valuePath)
    }

    /// Scenario 2r's bound: a thread-safe write that, like `@Observable`'s setter, tells the
    /// registrar nothing of an equal value. The comparison takes the lock, and the registrar must
    /// be told outside it (its `willSet` runs `withObservationTracking`'s `onChange`, which may
    /// read the value), so the store takes it again.
    func write(_ newValue: Int) {
        guard storage.withLock({ $0 != newValue }) else { return }
        registrar.willSet(self, keyPath: Self.valuePath)
        storage.withLock { $0 = newValue }
        registrar.didSet(self, keyPath: Self.valuePath)
    }
}
