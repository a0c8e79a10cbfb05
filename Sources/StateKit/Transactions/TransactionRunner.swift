#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// Runs ``withStateTransaction(_:)``'s body, which keeps what it returns.
///
/// Not generic, so that nothing here handles a value of an unknown type: the inlinable
/// ``withStateTransaction(_:)`` keeps the body's result, in code specialised for it.
///
/// A body that throws after reading values that have since changed may have thrown because what
/// it read was inconsistent: it runs again, as a commit that fails does. Only an error thrown by a
/// body whose reads were all current is rethrown.
///
/// The thread's log is used unretained: the thread's slot keeps it, and only a transaction that
/// starts inside this one's commit replaces it there, keeping it alive meanwhile (a retain and a
/// release of the log would be two atomic operations a transaction).
@usableFromInline
func runTransaction(_ body: () throws -> Void) rethrows {
    let log = TransactionLog.unretainedOfThisThread
    if log._withUnsafeGuaranteedRef({ $0.isOpen }) {
        let checkpoint = log._withUnsafeGuaranteedRef { $0.checkpoint() }
        do {
            return try body()
        } catch {
            log._withUnsafeGuaranteedRef { $0.rollBack(to: checkpoint) }
            throw error
        }
    }
    if log._withUnsafeGuaranteedRef({ $0.isInUse }) {
        // A handler of this thread's committing transaction starts one of its own.
        let outer = log.takeUnretainedValue()
        let inner = TransactionLog()
        TransactionLog.installOnThisThread(inner)
        defer { TransactionLog.installOnThisThread(outer) }
        return try run(body, in: .passUnretained(inner))
    }
    return try run(body, in: log)
}

/// Runs an outermost transaction in `log` until it commits, or until its body throws with its
/// reads current.
private func run(_ body: () throws -> Void, in log: Unmanaged<TransactionLog>) rethrows {
    log._withUnsafeGuaranteedRef { $0.open() }
    defer { log._withUnsafeGuaranteedRef { $0.close() } }
    var attempt = 0
    while true {
        do {
            try body()
            if log._withUnsafeGuaranteedRef({ $0.commit() }) { return }
        } catch {
            if log._withUnsafeGuaranteedRef({ $0.isCurrent() }) { throw error }
        }
        log._withUnsafeGuaranteedRef { $0.removeAll() }
        attempt += 1
        backOff(attempt)
    }
}

/// Lets competing transactions commit before running a body again: a yield at first, then
/// sleeps that grow to a millisecond, so that bodies re-run against each other do not livelock.
private func backOff(_ attempt: Int) {
    if attempt < 4 {
        sched_yield()
    } else {
        usleep(UInt32(min(1 << min(attempt - 4, 10), 1_000)))
    }
}
