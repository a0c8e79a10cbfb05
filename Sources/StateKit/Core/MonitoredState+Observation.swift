import Observation

/// A `MonitoredState` is `Observable` without the macro: reading ``State/value`` inside
/// `withObservationTracking` (or a SwiftUI view's `body`) registers the read, and every change
/// calls the container's registrar before the new value lands and after it has.
///
/// `withObservationTracking`'s `onChange` therefore runs on the writing thread *before* the write,
/// like `@Observable`'s, while the container's own subscribers run after it with the new value.
/// See <doc:Observation>.
extension MonitoredState: Observable {}
