import Observation

/// An `Observed` projection is `Observable` without the macro, and it triggers tracking only when
/// **its** part changed: a write elsewhere in the container, or one that leaves the part equal,
/// leaves a `withObservationTracking` on ``Observed/value`` untouched.
///
/// The first read of ``Observed/value`` gives the projection its own registrar and subscribes it
/// to its part; the subscription lasts as long as the projection, and the container holds nothing
/// else of it. Because the part's change is known only once the container's write has landed,
/// a projection's `onChange` runs after the write (a container's own runs before it).
extension Observed: Observable {}

extension Observed {
    /// The projection's registrar, subscribing it to its part on first use.
    ///
    /// The subscription is made before the first read, so no change after that read is missed.
    func observationPoint() -> ObservationPoint {
        if let point = tracking.point { return point }
        let point = ObservationPoint()
        let subscription = projection.subscribe(
            queue: nil,
            handler: .value { _ in
                point.willSet()
                point.didSet()
            },
            sendsCurrentValue: false,
            onRootReleased: nil
        )
        return tracking.install(point, subscription)
    }
}

/// Where an ``Observed`` keeps its registrar and the subscription that drives it.
///
/// Made lazily and lock-free: two threads reading a new projection at once may both build one;
/// the first to install wins and the other's subscription is cancelled as it is released. The
/// subscription's handler holds only the registrar, never the projection, so nothing forms a cycle
/// and the container keeps nothing of a released projection.
final class ProjectionTracking: Sendable {
    private let installed = OnceInstalledReference<Installed>()

    /// The installed registrar, if any.
    var point: ObservationPoint? {
        installed.current?.point
    }

    /// Installs `point` and `subscription` unless another thread did first; returns the winner.
    func install(_ point: ObservationPoint, _ subscription: Subscription) -> ObservationPoint {
        installed.install(Installed(point: point, subscription: subscription)).point
    }

    private final class Installed: Sendable {
        let point: ObservationPoint
        let subscription: Subscription

        init(point: ObservationPoint, subscription: Subscription) {
            self.point = point
            self.subscription = subscription
        }
    }
}
