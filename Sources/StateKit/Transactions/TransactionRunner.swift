#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// ``withStateTransaction(_:)``'s body, with typed throws so that it can catch the body's error,
/// decide whether to run it again, and rethrow it.
///
/// A body that throws after reading values that have since changed may have thrown because what
/// it read was inconsistent: it runs again, as a commit that fails does. Only an error thrown by a
/// body whose reads were all current is rethrown.
///
/// The thread's log is used unretained: the thread's slot keeps it, and only a transaction that
/// starts inside this one's commit replaces it there, keeping it alive meanwhile (a retain and a
/// release of the log would be two atomic operations a transaction).
func runTransaction<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
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
private func run<R, E: Error>(_ body: () throws(E) -> R, in log: Unmanaged<TransactionLog>) throws(E) -> R {
    log._withUnsafeGuaranteedRef { $0.open() }
    defer { log._withUnsafeGuaranteedRef { $0.close() } }
    var attempt = 0
    while true {
        do {
            let result = try body()
            if log._withUnsafeGuaranteedRef({ $0.commit() }) { return result }
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
