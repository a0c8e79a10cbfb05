import Dispatch

/// Runs a container's saves on a serial queue of its own, keeping only the newest pending one.
///
/// Each change schedules a save of the value it produced; while a save runs, newer changes
/// replace the pending save, so a burst of changes costs a few writes, the last one being the
/// newest value. Saves are tagged with the container's version and never go backwards.
final class PersistenceWriter: @unchecked Sendable {
    private let lock = Lock()
    private let queue: DispatchQueue
    private var pending: (@Sendable () -> Void)?
    private var isScheduled = false
    private var lastScheduledVersion: UInt64

    init(label: String, writtenVersion: UInt64) {
        queue = DispatchQueue(label: "StateKit.persistence.\(label)", qos: .utility)
        lastScheduledVersion = writtenVersion
    }

    /// Schedules `save` unless a save of `version` or newer is already scheduled.
    func schedule(version: UInt64, _ save: @escaping @Sendable () -> Void) {
        lock.withLock {
            guard version > lastScheduledVersion else { return }
            lastScheduledVersion = version
            pending = save
            guard !isScheduled else { return }
            isScheduled = true
            queue.async { self.runPending() }
        }
    }

    /// Returns once every save scheduled before the call has run.
    func waitUntilIdle() {
        queue.sync {}
    }

    private func runPending() {
        let save = lock.withLock {
            defer {
                pending = nil
                isScheduled = false
            }
            return pending
        }
        save?()
    }
}
