import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// How many transactions are open on any thread. While it is zero, reads and writes skip the
/// thread-local look-up.
///
/// Each container holds a reference to the one shared counter, so that the check on the read
/// and write paths is two loads, not a call to a global's lazy-initialising accessor (measured:
/// the global cost 12 instructions a read, the field 2 to 3).
@usableFromInline
final class OpenTransactions: Sendable {
    @usableFromInline
    let count = Atomic<Int>(0)

    static let shared = OpenTransactions()

    private init() {}
}

extension State {
    /// Whether some thread has a transaction open (the calling one may not).
    @inlinable
    var isAnyTransactionOpen: Bool {
        openTransactions.count.load(ordering: .relaxed) != 0
    }
}

/// A container as a transaction sees it: the value it read first, the working copy its writes
/// made, and the version it saw, type-erased so that one log holds containers of any value type.
struct TransactionEntry {
    let container: any TransactionParticipant
    /// The container's version when the transaction first touched it; the commit checks that it
    /// is still the version, or runs the body again.
    let firstVersion: UInt64
    let original: Any
    var working: Any
    var isWritten = false
    /// Whether the body called ``State/didModify()``: a change even if the value compares equal.
    var isAnnounced = false
    /// The value the commit replaced, kept for change records when a subscriber wants them.
    var replaced: Any?
}

/// A container that can take part in a transaction; ``State`` is the one implementation.
protocol TransactionParticipant: AnyObject {
    /// Takes the container's lock, for the commit.
    func lockForCommit()
    func unlockAfterCommit()
    /// The current version. Call it with the lock held.
    var versionLocked: UInt64 { get }
    /// Whether `working` equals `original` (always `false` for a `Value` that is not `Equatable`).
    func isUnchanged(_ entry: TransactionEntry) -> Bool
    /// Stores the entry's working copy as one new version. Call it with the lock held.
    func applyLocked(_ entry: inout TransactionEntry)
    /// Hands the change ``applyLocked(_:)`` made to the dispatcher, and unlocks.
    func publishCommittedAndUnlock(_ entry: TransactionEntry, in context: DeliveryContext)
    /// Observation's `willSet` and `didSet`, around a commit that writes the container.
    func willCommit()
    func didCommit()
}

/// The containers one thread's open transaction has touched, with their working copies.
///
/// Reads and writes made inside the body go to the log, not the containers; the commit applies
/// them all at once under every touched container's lock (see ``commit()``).
@usableFromInline
final class TransactionLog {
    var entries: [ObjectIdentifier: TransactionEntry] = [:]

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        let error = pthread_key_create(&key, nil)
        precondition(error == 0, "pthread_key_create failed: \(error)")
        return key
    }()

    /// The calling thread's open transaction, if any. The outermost ``withStateTransaction(_:)``
    /// owns the log; the thread-specific slot holds it unretained, and is cleared before it ends.
    @usableFromInline
    static var current: TransactionLog? {
        guard let pointer = pthread_getspecific(threadKey) else { return nil }
        return Unmanaged<TransactionLog>.fromOpaque(pointer).takeUnretainedValue()
    }

    static func install(_ log: TransactionLog?) {
        pthread_setspecific(threadKey, log.map { Unmanaged.passUnretained($0).toOpaque() })
    }

    /// Undoes what a nested body wrote: containers it touched first are kept as reads (so the
    /// commit still checks that what the outer body may have seen is current), with their
    /// working copies back at the value they were read with.
    func rollBack(to saved: [ObjectIdentifier: TransactionEntry]) {
        for (id, entry) in entries {
            if let before = saved[id] {
                entries[id] = before
            } else {
                var reverted = entry
                reverted.working = entry.original
                reverted.isWritten = false
                entries[id] = reverted
            }
        }
    }

    /// Applies every write, or none if a touched container changed since the body read it.
    ///
    /// Locks every touched container in one global order (object address), so commits that
    /// touch the same containers cannot deadlock; checks each version; stores every working copy
    /// that differs from its start as one new version; then hands each change to the dispatcher
    /// while this thread counts as delivering, so that nothing is delivered before every lock is
    /// released, and delivers them after, with the log already uninstalled: handlers read and
    /// write the containers, not the finished transaction's working copies.
    /// - Returns: `false` if a container changed since it was read: nothing was applied.
    func commit() -> Bool {
        var touched = entries.sorted { $0.key < $1.key }.map(\.value)
        let writes = touched.filter(\.isWritten)
        for entry in writes { entry.container.willCommit() }
        defer { for entry in writes { entry.container.didCommit() } }
        for entry in touched { entry.container.lockForCommit() }
        guard touched.allSatisfy({ $0.container.versionLocked == $0.firstVersion }) else {
            for entry in touched.reversed() { entry.container.unlockAfterCommit() }
            return false
        }
        var changed = [Bool](repeating: false, count: touched.count)
        for index in touched.indices
        where touched[index].isWritten && !touched[index].container.isUnchanged(touched[index]) {
            touched[index].container.applyLocked(&touched[index])
            changed[index] = true
        }
        let context = DeliveryContext.current
        let isOutermostDelivery = !context.isDelivering
        if isOutermostDelivery {
            context.beginOutermost()
            // Scheduling from inside a delivery counts a change as one handler-triggered step
            // (depth + 1); the transaction's changes start a chain, at depth 0.
            context.depth = -1
        }
        for index in touched.indices {
            if changed[index] {
                touched[index].container.publishCommittedAndUnlock(touched[index], in: context)
            } else {
                touched[index].container.unlockAfterCommit()
            }
        }
        // Handlers run outside the transaction: what they read and write is the containers'.
        TransactionLog.install(nil)
        if isOutermostDelivery { context.endOutermost() }
        return true
    }
}

extension TransactionLog {
    /// Whether every container the body touched is still at the version it read.
    func isCurrent() -> Bool {
        for entry in entries.values {
            entry.container.lockForCommit()
            let version = entry.container.versionLocked
            entry.container.unlockAfterCommit()
            if version != entry.firstVersion { return false }
        }
        return true
    }
}
