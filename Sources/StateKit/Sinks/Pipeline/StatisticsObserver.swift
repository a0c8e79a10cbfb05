/// What a pipeline calls after every change of its statistics, installed once; it must not wait.
///
/// A pipeline that several containers share (the persisted containers of one key syncing to one
/// destination) has one installed observer, which it holds; each other container's observer
/// follows it, held by that container only (``SyncStatusMonitor``, ``ReceiptBook``), so that a
/// released container stops being told, and short-lived containers leave nothing behind in a
/// pipeline that outlives them.
final class StatisticsObserver: Sendable {
    private let action: @Sendable () -> Void
    /// The observers of other containers sharing the pipeline, told after this one.
    private let followers = LockedBox<[WeakStatisticsObserver]>([])

    init(_ statisticsChanged: @escaping @Sendable () -> Void) {
        self.action = statisticsChanged
    }

    /// Runs the action, then every live follower's; forgets the followers that are gone.
    func statisticsChanged() {
        action()
        for follower in followers.withLock(WeakStatisticsObserver.live) { follower.statisticsChanged() }
    }

    /// Has `follower` told after this observer while it lives (the caller keeps it).
    func add(_ follower: StatisticsObserver) {
        followers.withLock { followers in
            _ = WeakStatisticsObserver.live(&followers)
            followers.append(WeakStatisticsObserver(observer: follower))
        }
    }

    /// How many followers this observer keeps, gone or not: the gone are forgotten at the next
    /// change of the statistics or the next follower.
    var followerCount: Int { followers.withLock(\.count) }
}

/// An observer held weakly: by a pipeline's installed observer and by a stored value's status,
/// which outlive the containers whose observers they tell.
struct WeakStatisticsObserver {
    weak var observer: StatisticsObserver?

    /// The live observers of `observers`, which forgets those that are gone.
    static func live(_ observers: inout [WeakStatisticsObserver]) -> [StatisticsObserver] {
        observers.removeAll { $0.observer == nil }
        return observers.compactMap(\.observer)
    }
}
