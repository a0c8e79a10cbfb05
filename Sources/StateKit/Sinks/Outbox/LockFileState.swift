import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whether an ``OutboxLog``'s lock file is closed yet, for the ``OutboxLogRegistry`` entry that
/// outlives the log: a weak reference to the log reads `nil` as its `deinit` starts, before the
/// `deinit` has closed the file and let go of its `flock`.
final class LockFileState: Sendable {
    private let closed = Atomic<Bool>(false)

    /// Whether the log closed its lock file.
    var isClosed: Bool {
        closed.load(ordering: .acquiring)
    }

    /// Called by the log's `deinit` once the lock file is closed.
    func markClosed() {
        closed.store(true, ordering: .releasing)
    }

    /// Waits until the lock file is closed: a released log's `deinit` is running, and closing two
    /// files is all it has left to do. Gives up after `limit`, and the `flock` that follows then
    /// reports the file as held.
    func waitUntilClosed(limit: Duration = .seconds(5)) {
        let deadline = ContinuousClock.now + limit
        while !isClosed && ContinuousClock.now < deadline { usleep(100) }
    }
}
