/// Observation's bridge for a derived value, shared by its node and the engine that publishes
/// it: reads register with it, and changes are told to it.
///
/// The point is made on the first read, so a derived state nobody reads under
/// `withObservationTracking` (or SwiftUI) pays nothing for it.
@usableFromInline
final class DerivedObservation: Sendable {
    @usableFromInline
    let point = OnceInstalledReference<ObservationPoint>()

    @usableFromInline
    init() {}

    /// Registers a read with the `withObservationTracking` scope running on this thread, if any.
    func registerAccess() {
        if let point = point.unretained {
            point._withUnsafeGuaranteedRef { $0.access() }
        } else {
            point.install(ObservationPoint()).access()
        }
    }

    /// Tells the scopes that read the value, if any, that it changed: `willSet`, then `didSet`.
    @inlinable
    func tellChanged() {
        guard let point = point.unretained else { return }
        point._withUnsafeGuaranteedRef {
            $0.willSet()
            $0.didSet()
        }
    }
}
