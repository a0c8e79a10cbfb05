import Observation

/// The observation of one stored value's load and save errors, shared by its containers: a
/// SwiftUI view (or `withObservationTracking`) reading ``PersistedState/saveError`` or
/// ``PersistedState/loadError`` updates when it changes.
///
/// The errors themselves are the cell's ledger's (``CellLedger/saveError``,
/// ``CellLedger/loadError``), read there each time: this only tells their observers when one
/// changed, so a late notice never brings back an error the ledger has cleared.
final class PersistenceStatus: Observable, Sendable {
    private let registrar = ObservationRegistrar()
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

    /// What Observation tracks the load error by.
    private var loadErrorMark: Void { () }

    /// Reads the load error `read` gives (the ledger's), as an observed property: an observer
    /// tracking it hears ``loadErrorChanged()``.
    func loadError(_ read: () -> (any Error)?) -> (any Error)? {
        registrar.access(self, keyPath: \.loadErrorMark)
        return read()
    }

    /// The ledger's load error changed: tells its observers, after it changed. Called without any
    /// lock held: the observers are user code.
    func loadErrorChanged() {
        registrar.withMutation(of: self, keyPath: \.loadErrorMark) {}
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
