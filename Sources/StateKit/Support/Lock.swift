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

/// A mutual-exclusion lock: `os_unfair_lock` on Darwin; elsewhere an atomic state word and a
/// semaphore that only contended threads touch.
///
/// Uncontended, `lock()` is one compare-and-swap and `unlock()` one exchange, inlined into the
/// caller, where a `pthread_mutex_t` cost two calls and ~55 instructions a pair on every read and
/// write. Contended, a thread spins briefly, then marks the lock contended and sleeps on the
/// semaphore; `unlock()` posts it only when the lock was marked. A woken thread competes for the
/// lock again rather than being handed it, as a `pthread_mutex_t`'s waiter does: a hand-over
/// would make every writer of a busy container wait for a sleeping thread to be scheduled (a
/// lock convoy). ThreadSanitizer sees both halves: the atomic operations are compiled into
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
    /// 0 free, 1 taken, 2 taken and a thread may be asleep waiting for it.
    @usableFromInline
    let state = Atomic<UInt32>(0)
    /// Where waiting threads sleep; posted by an `unlock()` that finds the lock marked contended.
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
        if !state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { lockContended() }
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
        if state.exchange(0, ordering: .releasing) == 2 { wakeOne() }
        #endif
    }

    #if !canImport(os)
    /// Takes the lock from another thread: spins while it may be released soon, then sleeps until
    /// an `unlock()` wakes a waiter, and competes for it again each time.
    @usableFromInline
    func lockContended() {
        for _ in 0..<64 {
            if state.load(ordering: .relaxed) == 0,
                state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged
            {
                return
            }
        }
        // Taken as 2 even when no one else waits: the unlock then posts once for nothing, and a
        // later waiter's sleep returns at once and it tries again.
        while state.exchange(2, ordering: .acquiring) != 0 {
            while sem_wait(waiters) != 0 {
                precondition(errno == EINTR, "sem_wait failed: \(errno)")
            }
        }
    }

    /// Wakes one thread waiting for the lock, to compete for it.
    @usableFromInline
    func wakeOne() {
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
