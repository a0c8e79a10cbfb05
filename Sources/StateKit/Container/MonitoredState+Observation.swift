import Observation

/// A `MonitoredState` is `Observable` without the macro: reading ``State/value`` inside
/// `withObservationTracking` (or a SwiftUI view's `body`) registers the read, and every change
/// calls the container's registrar before the new value lands and after it has.
///
/// `withObservationTracking`'s `onChange` therefore runs on the writing thread *before* the write,
/// like `@Observable`'s, while the container's own subscribers run after it with the new value.
/// See <doc:Observation>.
extension MonitoredState: Observable {}

extension State {
    /// Registers a read of ``State/value`` with Observation if the container is observable, making
    /// the container's bridge first if it has none.
    ///
    /// A write that finds no bridge skips the registrar: nothing has read the value, so nothing
    /// tracks it. A read racing a concurrent write may miss that write's notification, as with
    /// `@Observable`, whose `willSet` also runs before the value is stored; later writes notify it.
    /// A container with a bridge is observable, or is the cell whose bridge the observable
    /// containers of its key share, so a bridge found needs no look at ``isObservable`` (2 of a
    /// read's 85 instructions).
    @inlinable
    final func registerAccessIfObservable() {
        if let point = observation.unretained {
            point._withUnsafeGuaranteedRef { $0.access() }
        } else if isObservable {
            installObservationPoint().access()
        }
    }

    @usableFromInline
    final func installObservationPoint() -> ObservationPoint {
        observation.install(ObservationPoint())
    }
}
