#if canImport(os)
import os
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// A mutual-exclusion lock over heap storage: `os_unfair_lock` on Darwin, `pthread_mutex_t` elsewhere.
///
/// StateKit guards every container with this rather than `Synchronization.Mutex`, which
/// ThreadSanitizer cannot see on Linux (it reports false races), and rather than a concurrent
/// `DispatchQueue`, whose barrier-async writes let a reader see the old value. Modelled on
/// swift-nio's `NIOLock`. Debug builds use an error-checking mutex on Linux, so re-entering a
/// container's lock (writing to a container from inside its own `modify` body) traps instead of hanging.
@usableFromInline
final class Lock {
    #if canImport(os)
    @usableFromInline
    let mutex: UnsafeMutablePointer<os_unfair_lock>
    #else
    @usableFromInline
    let mutex: UnsafeMutablePointer<pthread_mutex_t>
    #endif

    @usableFromInline
    init() {
        #if canImport(os)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: os_unfair_lock())
        #else
        mutex = .allocate(capacity: 1)
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        #if DEBUG
        pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ERRORCHECK))
        #endif
        let error = pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
        precondition(error == 0, "pthread_mutex_init failed: \(error)")
        #endif
    }

    deinit {
        #if canImport(os)
        mutex.deinitialize(count: 1)
        #else
        let error = pthread_mutex_destroy(mutex)
        precondition(error == 0, "pthread_mutex_destroy failed: \(error)")
        #endif
        mutex.deallocate()
    }

    @inlinable
    func lock() {
        #if canImport(os)
        os_unfair_lock_lock(mutex)
        #else
        let error = pthread_mutex_lock(mutex)
        precondition(
            error == 0,
            "StateKit: lock re-entered or broken (pthread_mutex_lock: \(error)); "
                + "a container must not be written from inside its own modify body")
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(os)
        os_unfair_lock_unlock(mutex)
        #else
        let error = pthread_mutex_unlock(mutex)
        precondition(error == 0, "pthread_mutex_unlock failed: \(error)")
        #endif
    }

    /// Runs `body` while holding the lock.
    @inlinable
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

extension Lock: @unchecked Sendable {}
