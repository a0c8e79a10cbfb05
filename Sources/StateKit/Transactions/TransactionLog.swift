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

/// A container that can take part in a transaction; ``State`` is the one implementation. What
/// depends on the value type is in the entry's ``TransactionOperations``.
@usableFromInline
protocol TransactionParticipant: AnyObject {
    /// Takes the container's lock, for the commit.
    func lockForCommit()
    func unlockAfterCommit()
    /// The current version. Call it with the lock held.
    var versionLocked: UInt64 { get }
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
    /// In the order the body first touched them.
    @exclusivity(unchecked)
    private(set) var entries: [TransactionEntry] = []
    /// Where each container's entry is in `entries`, once there are too many to search.
    @exclusivity(unchecked)
    private var positions: [ObjectIdentifier: Int] = [:]

    init() {}

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

    /// How many entries a log searches one by one before it keeps an index.
    private static var searchLimit: Int { 8 }

    /// The entry of the container `id` identifies, if the body touched it.
    @usableFromInline
    func entry(for id: ObjectIdentifier) -> TransactionEntry? {
        if entries.count <= Self.searchLimit {
            for entry in entries where ObjectIdentifier(entry.container) == id { return entry }
            return nil
        }
        return positions[id].map { entries[$0] }
    }

    @usableFromInline
    func add(_ entry: TransactionEntry) {
        entries.append(entry)
        if entries.count > Self.searchLimit {
            if positions.isEmpty {
                for (position, entry) in entries.enumerated() {
                    positions[ObjectIdentifier(entry.container)] = position
                }
            } else {
                positions[ObjectIdentifier(entry.container)] = entries.count - 1
            }
        }
    }

    /// The version `container` had when the body first touched it.
    func firstVersion(of id: ObjectIdentifier) -> UInt64? {
        entry(for: id)?.firstVersion
    }

    /// Forgets every entry, before the body runs again.
    func removeAll() {
        entries.removeAll(keepingCapacity: true)
        positions.removeAll()
    }

    /// What a nested body may undo: each entry's working copy as it is now, and how many there are.
    struct Checkpoint {
        let count: Int
        let restores: [() -> Void]
    }

    func checkpoint() -> Checkpoint {
        Checkpoint(count: entries.count, restores: entries.map { $0.operations.checkpoint($0) })
    }

    /// Undoes what a nested body wrote: containers it touched first are kept as reads (so the
    /// commit still checks that what the outer body may have seen is current), with their
    /// working copies back at the value they were read with.
    func rollBack(to checkpoint: Checkpoint) {
        for restore in checkpoint.restores { restore() }
        for entry in entries[checkpoint.count...] {
            entry.operations.revert(entry)
            entry.isWritten = false
            entry.isAnnounced = false
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
        let touched =
            entries.count < 2
            ? entries : entries.sorted { ObjectIdentifier($0.container) < ObjectIdentifier($1.container) }
        for entry in touched where entry.isWritten { entry.container.willCommit() }
        defer { for entry in touched where entry.isWritten { entry.container.didCommit() } }
        for entry in touched { entry.container.lockForCommit() }
        guard touched.allSatisfy({ $0.container.versionLocked == $0.firstVersion }) else {
            for entry in touched.reversed() { entry.container.unlockAfterCommit() }
            return false
        }
        for entry in touched where entry.isWritten && !entry.operations.isUnchanged(entry) {
            entry.operations.applyLocked(entry)
            entry.isChanged = true
        }
        let context = DeliveryContext.current
        let isOutermostDelivery = !context.isDelivering
        if isOutermostDelivery {
            context.beginOutermost()
            // Scheduling from inside a delivery counts a change as one handler-triggered step
            // (depth + 1); the transaction's changes start a chain, at depth 0.
            context.depth = -1
        }
        for entry in touched {
            if entry.isChanged {
                entry.operations.publishAndUnlock(entry, context)
            } else {
                entry.container.unlockAfterCommit()
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
        for entry in entries {
            entry.container.lockForCommit()
            let version = entry.container.versionLocked
            entry.container.unlockAfterCommit()
            if version != entry.firstVersion { return false }
        }
        return true
    }
}
