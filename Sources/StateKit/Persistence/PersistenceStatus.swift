import Observation

/// The load and save errors of one stored value, shared by its containers and observable: a
/// SwiftUI view (or `withObservationTracking`) reading ``PersistedState/saveError`` updates when
/// it changes.
final class PersistenceStatus: Observable, @unchecked Sendable {
    private let registrar = ObservationRegistrar()
    private let lock = Lock()
    private var currentLoadError: (any Error)?
    private var currentSaveError: (any Error)?

    /// Why the stored value could not be used: unreadable storage, or bytes that do not decode
    /// (on load, or written outside later); `nil` once a value is read again.
    var loadError: (any Error)? {
        get {
            registrar.access(self, keyPath: \.loadError)
            return lock.withLock { currentLoadError }
        }
        set {
            guard lock.withLock({ currentLoadError != nil || newValue != nil }) else { return }
            registrar.withMutation(of: self, keyPath: \.loadError) {
                lock.withLock { currentLoadError = newValue }
            }
        }
    }

    /// Why the newest value is not in storage; `nil` once a save succeeds.
    var saveError: (any Error)? {
        get {
            registrar.access(self, keyPath: \.saveError)
            return lock.withLock { currentSaveError }
        }
        set {
            guard lock.withLock({ currentSaveError != nil || newValue != nil }) else { return }
            registrar.withMutation(of: self, keyPath: \.saveError) {
                lock.withLock { currentSaveError = newValue }
            }
        }
    }
}
