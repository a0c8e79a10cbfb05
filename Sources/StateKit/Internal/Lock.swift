import Synchronization

#if canImport(os)
import os
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// A mutual-exclusion lock: `os_unfair_lock` on Darwin; elsewhere a count taken with one atomic
/// operation and a semaphore that only contended threads touch (a "benaphore").
///
/// Uncontended, `lock()` and `unlock()` are one atomic add each, inlined into the caller, where a
/// `pthread_mutex_t` cost two calls and ~55 instructions a pair on every read and write.
/// Contended, a thread that finds the lock taken waits on the semaphore, and `unlock()` posts it
/// only when someone waits. ThreadSanitizer sees both: the atomic operations are compiled into
/// StateKit (unlike `Synchronization.Mutex`'s, which it cannot see on Linux and reports false
/// races for) and it intercepts the semaphore. Debug builds on Linux record the owning thread, so
/// re-entering a container's lock (writing to a container from inside its own `modify` body)
/// traps instead of hanging.
@usableFromInline
final class Lock {
    #if canImport(os)
    @usableFromInline
    let mutex: UnsafeMutablePointer<os_unfair_lock>
    #else
    /// Threads holding or waiting for the lock.
    @usableFromInline
    let count = Atomic<Int>(0)
    /// Where waiting threads sleep; posted once per waiter by `unlock()`.
    @usableFromInline
    let waiters: UnsafeMutablePointer<sem_t>
    #if DEBUG && canImport(Glibc)
    /// The thread holding the lock, to trap on re-entry.
    @usableFromInline
    let owner = Atomic<pthread_t>(0)
    #endif
    #endif

    @usableFromInline
    init() {
        #if canImport(os)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: os_unfair_lock())
        #else
        waiters = .allocate(capacity: 1)
        let error = sem_init(waiters, 0, 0)
        precondition(error == 0, "sem_init failed: \(errno)")
        #endif
    }

    deinit {
        #if canImport(os)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
        #else
        sem_destroy(waiters)
        waiters.deallocate()
        #endif
    }

    @inlinable
    func lock() {
        #if canImport(os)
        os_unfair_lock_lock(mutex)
        #else
        #if DEBUG && canImport(Glibc)
        precondition(
            owner.load(ordering: .relaxed) != pthread_self(),
            "StateKit: lock re-entered; a container must not be written from inside its own modify body")
        #endif
        if count.wrappingAdd(1, ordering: .acquiring).oldValue != 0 { waitForTurn() }
        #if DEBUG && canImport(Glibc)
        owner.store(pthread_self(), ordering: .relaxed)
        #endif
        #endif
    }

    @inlinable
    func unlock() {
        #if canImport(os)
        os_unfair_lock_unlock(mutex)
        #else
        #if DEBUG && canImport(Glibc)
        owner.store(0, ordering: .relaxed)
        #endif
        if count.wrappingSubtract(1, ordering: .releasing).oldValue != 1 { handOver() }
        #endif
    }

    #if !canImport(os)
    /// Sleeps until an `unlock()` hands the lock over.
    @usableFromInline
    func waitForTurn() {
        while sem_wait(waiters) != 0 {
            precondition(errno == EINTR, "sem_wait failed: \(errno)")
        }
    }

    /// Wakes one waiting thread, which now holds the lock.
    @usableFromInline
    func handOver() {
        let error = sem_post(waiters)
        precondition(error == 0, "sem_post failed: \(errno)")
    }
    #endif

    /// Runs `body` while holding the lock.
    @inlinable
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock()
        defer { unlock() }
        return try body()
    }
}

extension Lock: @unchecked Sendable {}
