import Observation

/// The load and save errors of one stored value, shared by its containers and observable: a
/// SwiftUI view (or `withObservationTracking`) reading ``PersistedState/saveError`` updates when
/// it changes.
final class PersistenceStatus: Observable, Sendable {
    private struct Errors {
        var load: (any Error)?
        var save: (any Error)?
    }

    private let registrar = ObservationRegistrar()
    private let errors = LockedBox(Errors())
    /// Called after the save error changed (a synced container's status monitors).
    private let saveErrorObservers = LockedBox<[@Sendable () -> Void]>([])

    /// Calls `observer` each time ``saveError`` changes, after it changed.
    func onSaveErrorChange(_ observer: @escaping @Sendable () -> Void) {
        saveErrorObservers.withLock { $0.append(observer) }
    }

    /// Why the stored value could not be used: unreadable storage, or bytes that do not decode
    /// (on load, or written outside later); `nil` once a value is read again.
    var loadError: (any Error)? {
        get {
            registrar.access(self, keyPath: \.loadError)
            return errors.withLock { $0.load }
        }
        set {
            guard errors.withLock({ $0.load != nil || newValue != nil }) else { return }
            registrar.withMutation(of: self, keyPath: \.loadError) {
                errors.withLock { $0.load = newValue }
            }
        }
    }

    /// Why the newest value is not in storage; `nil` once a save succeeds.
    var saveError: (any Error)? {
        get {
            registrar.access(self, keyPath: \.saveError)
            return errors.withLock { $0.save }
        }
        set {
            guard errors.withLock({ $0.save != nil || newValue != nil }) else { return }
            registrar.withMutation(of: self, keyPath: \.saveError) {
                errors.withLock { $0.save = newValue }
            }
            for observer in saveErrorObservers.withLock({ $0 }) { observer() }
        }
    }
}
