import Observation

/// The bridge from a StateKit container or projection to Swift's Observation: one registrar and
/// one observed property.
///
/// The registrar's subject is this small non-generic object rather than the generic container, so
/// the key path `\ObservationPoint.value` is instantiated once per process and a read registers
/// access without looking up generic metadata or allocating. Which container changed is told by
/// the registrar, not by the key path.
@usableFromInline
final class ObservationPoint: Observable, Sendable {
    private let registrar = ObservationRegistrar()

    @usableFromInline
    init() {}

    /// The observed property; only its key path matters.
    var value: Void { () }

    /// Registers a read with the `withObservationTracking` scope (or SwiftUI view) running on
    /// this thread, if any.
    @usableFromInline
    func access() {
        registrar.access(self, keyPath: \.value)
    }

    /// Tells Observation a change is about to land: `withObservationTracking`'s `onChange` runs
    /// here, on the calling thread. Never call it while holding a container's lock.
    func willSet() {
        registrar.willSet(self, keyPath: \.value)
    }

    /// Tells Observation a change has landed.
    func didSet() {
        registrar.didSet(self, keyPath: \.value)
    }
}
