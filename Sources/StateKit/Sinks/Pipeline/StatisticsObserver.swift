/// What a pipeline calls after every change of its statistics, installed once; it must not wait.
///
/// A pipeline that several containers share (the persisted containers of one key syncing to one
/// destination) has one installed observer; each other container's status monitor follows it.
final class StatisticsObserver: Sendable {
    private let action: @Sendable () -> Void
    /// The observers of other containers sharing the pipeline, told after this one.
    private let followers = LockedBox<[StatisticsObserver]>([])

    init(_ statisticsChanged: @escaping @Sendable () -> Void) {
        self.action = statisticsChanged
    }

    /// Runs the action, then every follower's.
    func statisticsChanged() {
        action()
        for follower in followers.withLock({ $0 }) { follower.statisticsChanged() }
    }

    /// Has `follower` told after this observer, from now on.
    func add(_ follower: StatisticsObserver) {
        followers.withLock { $0.append(follower) }
    }
}
