import Observation

/// The load error of one stored value, and the observation of its save error, shared by its
/// containers and observable: a SwiftUI view (or `withObservationTracking`) reading
/// ``PersistedState/saveError`` updates when it changes.
///
/// The save error itself is the cell's ledger's (``CellLedger/saveError``), read there each time:
/// this only tells its observers when it changed, so a late notice never brings back an error the
/// ledger has cleared.
final class PersistenceStatus: Observable, Sendable {
    private let registrar = ObservationRegistrar()
    private let load = LockedBox<(any Error)?>(nil)
    /// Told after the save error changed: the status monitors of the synced containers of the key,
    /// held weakly (each container holds its own), so that released containers leave nothing here.
    private let saveErrorObservers = LockedBox<[WeakStatisticsObserver]>([])

    /// Tells `observer` each time the save error changes, after it changed, while it lives.
    func onSaveErrorChange(_ observer: StatisticsObserver) {
        saveErrorObservers.withLock { observers in
            _ = WeakStatisticsObserver.live(&observers)
            observers.append(WeakStatisticsObserver(observer: observer))
        }
    }

    /// Why the stored value could not be used: unreadable storage, or bytes that do not decode
    /// (on load, or written outside later); `nil` once a value is read again.
    var loadError: (any Error)? {
        get {
            registrar.access(self, keyPath: \.loadError)
            return load.withLock { $0 }
        }
        set {
            guard load.withLock({ $0 != nil || newValue != nil }) else { return }
            registrar.withMutation(of: self, keyPath: \.loadError) {
                load.withLock { $0 = newValue }
            }
        }
    }

    /// Reads the save error `read` gives (the ledger's), as an observed property: an observer
    /// tracking it hears ``saveErrorChanged()``.
    func saveError(_ read: () -> (any Error)?) -> (any Error)? {
        registrar.access(self, keyPath: \.self)
        return read()
    }

    /// The ledger's save error changed: tells its observers, after it changed. Called without
    /// any lock held: the observers are user code.
    func saveErrorChanged() {
        registrar.withMutation(of: self, keyPath: \.self) {}
        for observer in saveErrorObservers.withLock(WeakStatisticsObserver.live) { observer.statisticsChanged() }
    }
}
