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
    /// Registers a read of ``State/value`` with Observation, making the container's bridge first if
    /// it has none.
    ///
    /// A write that finds no bridge skips the registrar: nothing has read the value, so nothing
    /// tracks it. A read racing a concurrent write may miss that write's notification, as with
    /// `@Observable`, whose `willSet` also runs before the value is stored; later writes notify it.
    @inlinable
    final func registerAccess() {
        if let point = observation.unretained {
            point._withUnsafeGuaranteedRef { $0.access() }
        } else {
            installObservationPoint().access()
        }
    }

    @usableFromInline
    final func installObservationPoint() -> ObservationPoint {
        observation.install(ObservationPoint())
    }
}
