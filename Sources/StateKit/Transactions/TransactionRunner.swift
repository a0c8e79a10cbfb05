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
func runTransaction<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    if let log = TransactionLog.current {
        let checkpoint = log.checkpoint()
        do {
            return try body()
        } catch {
            log.rollBack(to: checkpoint)
            throw error
        }
    }
    let log = TransactionLog()
    OpenTransactions.shared.count.add(1, ordering: .relaxed)
    TransactionLog.install(log)
    defer {
        TransactionLog.install(nil)
        OpenTransactions.shared.count.subtract(1, ordering: .relaxed)
    }
    var attempt = 0
    while true {
        do {
            let result = try body()
            if log.commit() { return result }
        } catch {
            if log.isCurrent() { throw error }
        }
        log.removeAll()
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
