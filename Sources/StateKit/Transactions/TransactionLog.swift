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

/// How many transactions are open on any thread, and the key of each thread's
/// ``TransactionLog``. While none is, reads and writes skip the thread-local look-up.
///
/// One thread, the first whose log claims it, counts its transactions in a word of its own,
/// ``ownersCount``, with plain stores: only it writes the word. Every other thread counts its
/// transactions in ``othersCount``, with an atomic add and subtract (measured: those two are
/// 11 ns of a two-container transaction's 139). A thread reads the counts only to learn whether
/// its own transaction may be open, which its own writes tell it, so a stale count on another
/// thread costs that thread a look-up, never a wrong answer.
///
/// Each container holds a reference to the one shared instance, so that the check on the read
/// and write paths is a few loads, not a call to a global's lazy-initialising accessor
/// (measured: the global cost 12 instructions a read, the field 2 to 3), and so is the key a write
/// inside a transaction looks its log up with (a static's cost ~30 instructions a write).
@usableFromInline
final class OpenTransactions: Sendable {
    /// How many transactions are open on threads other than the owner of ``ownersCount``.
    @usableFromInline
    let othersCount = Atomic<Int>(0)
    /// How many transactions are open on the thread that owns this count; written by that thread
    /// only.
    @usableFromInline
    let ownersCount = Atomic<Int>(0)
    /// Whether a thread owns ``ownersCount``; its log gives it back when the thread exits.
    private let isOwned = Atomic<Bool>(false)
    /// The key of each thread's log, which the thread's slot keeps alive.
    @usableFromInline
    let logKey: pthread_key_t

    /// Whether a transaction may be open on the calling thread: `false` while none is open on
    /// any thread.
    @inlinable
    var mayBeOpen: Bool {
        ownersCount.load(ordering: .relaxed) | othersCount.load(ordering: .relaxed) != 0
    }

    static let shared = OpenTransactions()

    /// ``shared``, or counts of their own for tests.
    init() {
        var key = pthread_key_t()
        let error = pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<TransactionLog>.fromOpaque(pointer).release()
            #else
            guard let pointer else { return }
            Unmanaged<TransactionLog>.fromOpaque(pointer).release()
            #endif
        }
        precondition(error == 0, "pthread_key_create failed: \(error)")
        logKey = key
    }

    /// Makes the calling thread the owner of ``ownersCount``, unless another thread is.
    /// - Returns: Whether it is now.
    func claimOwnersCount() -> Bool {
        isOwned.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
    }

    /// Gives ``ownersCount`` back, for another thread to claim; its owner's last call.
    func releaseOwnersCount() {
        isOwned.store(false, ordering: .relaxed)
    }

    /// Counts a transaction opening (`1`) or closing (`-1`) on the calling thread, which owns
    /// ``ownersCount`` if `isOwner`.
    func count(_ change: Int, isOwner: Bool) {
        if isOwner {
            ownersCount.store(ownersCount.load(ordering: .relaxed) + change, ordering: .relaxed)
        } else {
            othersCount.add(change, ordering: .relaxed)
        }
    }
}

extension State {
    /// The calling thread's open transaction, if any, unretained (see ``TransactionLog/current``):
    /// three loads while no thread has a transaction open.
    @inlinable
    var openTransactionLog: Unmanaged<TransactionLog>? {
        guard openTransactions.mayBeOpen else { return nil }
        return TransactionLog.current(key: openTransactions.logKey)
    }
}

/// The containers one thread's open transaction has touched, with their working copies.
///
/// Reads and writes made inside the body go to the log, not the containers; the commit applies
/// them all at once under every touched container's lock (see ``commit()``). Each thread keeps
/// one log for its transactions, emptied after each, with the entries of the last containers
/// they touched, so a transaction over containers the thread touched before allocates nothing.
@usableFromInline
final class TransactionLog {
    /// The entries, in the order the body first touched them; in the order of their locks during
    /// the commit. Held unmanaged (the log retains each once) in storage of the log's own, so
    /// that adding, iterating and emptying touch no reference count and check no uniqueness.
    @exclusivity(unchecked)
    private var storage = UnsafeMutablePointer<Unmanaged<TransactionEntry>>.allocate(capacity: 8)
    @exclusivity(unchecked)
    private var capacity = 8
    @exclusivity(unchecked)
    private var count = 0
    /// Where each container's entry is in `entries`, once there are too many to search; its
    /// storage is kept from one transaction to the next, as the entries' is.
    @exclusivity(unchecked)
    private var positions: [ObjectIdentifier: Int] = [:]
    /// Emptied entries of containers the thread's transactions touched lately, for the next to
    /// reuse (see ``addRecent(serial:)``); retained, at most ``recentCapacity``.
    @exclusivity(unchecked)
    private var recent = UnsafeMutablePointer<Unmanaged<TransactionEntry>>.allocate(capacity: recentCapacity)
    @exclusivity(unchecked)
    private var recentCount = 0
    /// The recent entry to let go of when a full cache keeps another.
    @exclusivity(unchecked)
    private var nextEviction = 0
    /// Whether a body runs: reads and writes on this thread go to the log.
    @usableFromInline
    @exclusivity(unchecked)
    var isOpen = false
    /// Whether a transaction uses the log, from its body to the end of its commit's deliveries
    /// (a handler that starts a transaction then gets a log of its own).
    @exclusivity(unchecked)
    private(set) var isInUse = false
    /// Whether an entry's container has a ``WriteGate`` (a key shared across processes), for the
    /// commit to hold.
    @usableFromInline
    @exclusivity(unchecked)
    var hasWriteGates = false
    /// The origin of the transaction's changes: ``ChangeOrigin/local`` unless the body that runs
    /// it says otherwise (``StateHistory``'s undo and redo).
    @exclusivity(unchecked)
    var origin = ChangeOrigin.local
    /// The receipts of writes made in the body, which the commit gives their versions. Touched
    /// only by the log's own thread, as the entries are.
    @exclusivity(unchecked)
    private var receiptSlots: [TransactionReceiptSlot] = []

    /// Where the log's transactions are counted.
    let openTransactions: OpenTransactions
    /// The delivery context of the log's thread, kept from the first commit on, so that a commit
    /// looks up no thread-specific slot.
    @exclusivity(unchecked)
    private var keptDeliveryContext: DeliveryContext?

    private var deliveryContext: DeliveryContext {
        if let keptDeliveryContext { return keptDeliveryContext }
        if DeliveryContext.threadExitHook.unretained == nil {
            _ = DeliveryContext.threadExitHook.install(ThreadExitHook(Self.forgetDeliveryContextOfThisThread))
        }
        let context = DeliveryContext.current
        keptDeliveryContext = context
        return context
    }

    /// Makes the calling thread's log forget the delivery context it kept, which is being freed:
    /// the thread is exiting, and its slots are freed in an order nobody chooses.
    static func forgetDeliveryContextOfThisThread() {
        guard let pointer = pthread_getspecific(OpenTransactions.shared.logKey) else { return }
        Unmanaged<TransactionLog>.fromOpaque(pointer)._withUnsafeGuaranteedRef { $0.keptDeliveryContext = nil }
    }

    /// Whether the log's thread counts its transactions in ``OpenTransactions/ownersCount``.
    let ownsOwnersCount: Bool

    /// Makes a log for the calling thread; its first claims ``OpenTransactions/ownersCount`` if
    /// no thread has it.
    init(isThreadsFirst: Bool = false, countedIn openTransactions: OpenTransactions = .shared) {
        self.openTransactions = openTransactions
        ownsOwnersCount = isThreadsFirst && openTransactions.claimOwnersCount()
    }

    deinit {
        removeAll()
        storage.deallocate()
        for entry in UnsafeMutableBufferPointer(start: recent, count: recentCount) { entry.release() }
        recent.deallocate()
        if ownsOwnersCount { openTransactions.releaseOwnersCount() }
    }

    private var entries: UnsafeMutableBufferPointer<Unmanaged<TransactionEntry>> {
        UnsafeMutableBufferPointer(start: storage, count: count)
    }

    /// The calling thread's open transaction, if any, unretained: the thread's slot keeps it
    /// alive until the transaction ends.
    ///
    /// Unretained and inlinable, so that a read or write inside a body does not retain and release
    /// the log (each an atomic operation).
    @inlinable
    static func current(key: pthread_key_t) -> Unmanaged<TransactionLog>? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        let log = Unmanaged<TransactionLog>.fromOpaque(pointer)
        return log._withUnsafeGuaranteedRef { $0.isOpen } ? log : nil
    }

    /// ``current(key:)`` where no container is at hand.
    static var current: Unmanaged<TransactionLog>? {
        current(key: OpenTransactions.shared.logKey)
    }

    /// The calling thread's log, made on first use, unretained: the thread-specific slot owns it.
    static var unretainedOfThisThread: Unmanaged<TransactionLog> {
        let key = OpenTransactions.shared.logKey
        if let pointer = pthread_getspecific(key) { return Unmanaged.fromOpaque(pointer) }
        let log = Unmanaged.passRetained(TransactionLog(isThreadsFirst: true))
        pthread_setspecific(key, log.toOpaque())
        return log
    }

    /// Makes `log` the calling thread's log; the slot keeps it and lets go of the one it had.
    static func installOnThisThread(_ log: TransactionLog) {
        let key = OpenTransactions.shared.logKey
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passRetained(log).toOpaque())
        if let previous { Unmanaged<TransactionLog>.fromOpaque(previous).release() }
    }

    /// Starts an outermost transaction's use of the log, counting it open.
    func open() {
        openTransactions.count(1, isOwner: ownsOwnersCount)
        isInUse = true
        isOpen = true
    }

    /// Ends the transaction's use of the log: forgets every entry, which lets go of its
    /// container, and keeps the storage for the next.
    func close() {
        isOpen = false
        removeAll()
        isInUse = false
        origin = .local
        openTransactions.count(-1, isOwner: ownsOwnersCount)
    }

    /// How many entries a log searches one by one before it keeps an index.
    private static var searchLimit: Int { 8 }

    /// The entry of the container `id` identifies, if the body touched it; the log keeps it alive
    /// until the transaction ends.
    @usableFromInline
    func entry(for id: ObjectIdentifier) -> Unmanaged<TransactionEntry>? {
        if entries.count <= Self.searchLimit {
            for entry in entries where entry._withUnsafeGuaranteedRef({ $0.id }) == id {
                return entry
            }
            return nil
        }
        return positions[id].map { entries[$0] }
    }

    /// Adds `entry`, taking over the caller's reference to it.
    @usableFromInline
    @inline(__always)
    func add(_ entry: Unmanaged<TransactionEntry>) {
        if count == capacity {
            let larger = UnsafeMutablePointer<Unmanaged<TransactionEntry>>.allocate(capacity: capacity * 2)
            larger.moveInitialize(from: storage, count: count)
            storage.deallocate()
            storage = larger
            capacity *= 2
        }
        (storage + count).initialize(to: entry)
        count += 1
        if count > Self.searchLimit {
            if positions.isEmpty {
                for (position, entry) in entries.enumerated() {
                    positions[entry._withUnsafeGuaranteedRef { $0.id }] = position
                }
            } else {
                positions[entry._withUnsafeGuaranteedRef { $0.id }] = count - 1
            }
        }
    }

    /// The version `container` had when the body first read it; read now if the body only
    /// assigned it (see ``TransactionEntry/isBlind``).
    func firstVersion(of id: ObjectIdentifier) -> UInt64? {
        entry(for: id)?._withUnsafeGuaranteedRef { entry in
            if entry.isBlind { entry.withOperations { $0.read(entry) } }
            return entry.firstVersion
        }
    }

    /// Forgets every entry, before the body runs again: each lets go of its container and is kept
    /// among the recent ones, holding no value. The receipts of writes that were not committed
    /// say so.
    func removeAll() {
        if !receiptSlots.isEmpty { abandonReceipts(from: 0) }
        for entry in entries {
            entry._withUnsafeGuaranteedRef { entry in entry.withOperations { $0.recycle(entry) } }
            keepRecent(entry)
        }
        count = 0
        hasWriteGates = false
        if !positions.isEmpty { positions.removeAll(keepingCapacity: true) }
    }

    /// How many emptied entries a log keeps.
    private static var recentCapacity: Int { 16 }

    /// Adds the emptied entry made for the container whose operations have `serial`, if the log
    /// kept it: one call on a container's first touch.
    @usableFromInline
    func addRecent(serial: UInt64) -> Unmanaged<TransactionEntry>? {
        guard let entry = takeRecent(serial: serial) else { return nil }
        add(entry)
        return entry
    }

    /// The emptied entry made for the container whose operations have `serial`, if the log kept
    /// it, with the log's reference to it.
    ///
    /// The serial, not the container's identity, says whose it is: a container released since
    /// may have left its address, and its lock's, to a new one.
    @inline(__always)
    private func takeRecent(serial: UInt64) -> Unmanaged<TransactionEntry>? {
        for index in 0..<recentCount where recent[index]._withUnsafeGuaranteedRef({ $0.serial }) == serial {
            let entry = recent[index]
            recentCount -= 1
            recent[index] = recent[recentCount]
            return entry
        }
        return nil
    }

    /// Keeps the emptied `entry`, with the caller's reference, letting go of one kept before if
    /// there are ``recentCapacity`` already.
    private func keepRecent(_ entry: Unmanaged<TransactionEntry>) {
        if recentCount < Self.recentCapacity {
            recent[recentCount] = entry
            recentCount += 1
            return
        }
        recent[nextEviction].release()
        recent[nextEviction] = entry
        nextEviction = (nextEviction + 1) % Self.recentCapacity
    }

    /// What a nested body may undo: each entry's working copy as it is now, and how many there are.
    struct Checkpoint {
        let count: Int
        let receipts: Int
        let restores: [() -> Void]
    }

    func checkpoint() -> Checkpoint {
        Checkpoint(
            count: entries.count,
            receipts: receiptSlots.count,
            restores: entries.map { entry in
                entry._withUnsafeGuaranteedRef { entry in entry.withOperations { $0.checkpoint(entry) } }
            })
    }

    /// Undoes what a nested body wrote: containers it touched first are kept as reads (so the
    /// commit still checks that what the outer body may have seen is current), with their
    /// working copies back at the value they were read with.
    func rollBack(to checkpoint: Checkpoint) {
        for restore in checkpoint.restores { restore() }
        if receiptSlots.count > checkpoint.receipts { abandonReceipts(from: checkpoint.receipts) }
        for entry in entries[checkpoint.count...] {
            entry._withUnsafeGuaranteedRef { entry in
                entry.withOperations { $0.revert(entry) }
                entry.isWritten = false
                entry.isAnnounced = false
            }
        }
    }

    /// Applies every write, or none if a touched container changed since the body read it.
    ///
    /// Locks every touched container in one global order (object address), so commits that
    /// touch the same containers cannot deadlock; checks each version; stores every working copy
    /// that differs from its start as one new version; closes the log, so that handlers read and
    /// write the containers, not the finished transaction's working copies; then releases the
    /// locks and delivers the changes.
    ///
    /// Outside any delivery, the commit delivers each change itself, as a plain write does, when
    /// nobody else delivers the container; the others (a container being delivered, one with a
    /// hook or write observer) go to the dispatcher while this thread counts as delivering, so
    /// that nothing is delivered before every lock is released. Inside a handler, every change
    /// is delivered after the current delivery.
    ///
    /// Containers whose writes pass a ``WriteGate`` (keys shared across processes) are held at
    /// their gates first, entered in ``WriteGate/transactionOrder`` (for a shared key: the other
    /// processes' writes wait, and what they wrote comes in, so a value read before it is not
    /// current); the gates make the changes last together (``WriteGate/commitTogether(_:)``) after
    /// they are applied, and are let go before anything is delivered.
    /// - Returns: `false` if a container changed since it was read: nothing was applied.
    func commit() -> Bool {
        sortByContainer()
        // The loops below touch no reference count.
        let entries = self.entries
        func forEachEntry(_ body: (TransactionEntry) -> Void) {
            for entry in entries { entry._withUnsafeGuaranteedRef(body) }
        }
        var gates: [WriteGate] = []
        if hasWriteGates {
            forEachEntry { entry in
                if let gate = entry.writeGate { gates.append(gate.takeUnretainedValue()) }
            }
            gates.sort { $0.transactionOrder < $1.transactionOrder }
            for gate in gates { gate.enterForTransaction() }
        }
        forEachEntry { entry in
            if entry.isWritten { entry.isObserved = entry.withOperations { $0.tellObservation(entry, true) } }
        }
        defer {
            forEachEntry { entry in
                if entry.isObserved { _ = entry.withOperations { $0.tellObservation(entry, false) } }
            }
        }
        var isCurrent = true
        forEachEntry { entry in
            entry.lockContainer()
            if !entry.isBlind && entry.version.pointee != entry.firstVersion { isCurrent = false }
        }
        guard isCurrent else {
            forEachEntry { $0.unlockContainer() }
            if !gates.isEmpty { leave(gates) }
            return false
        }
        forEachEntry { entry in
            if entry.isWritten { entry.isChanged = entry.withOperations { $0.applyLocked(entry) } }
        }
        if !receiptSlots.isEmpty { settleReceipts() }
        isOpen = false
        let context = deliveryContext
        let isOutermostDelivery = !context.isDelivering
        if isOutermostDelivery {
            context.beginOutermost()
            // Scheduling from inside a delivery counts a change as one handler-triggered step
            // (depth + 1); the transaction's changes start a chain, at depth 0.
            context.depth = -1
        }
        var isAnyClaimed = false
        forEachEntry { entry in
            if entry.isChanged {
                entry.origin = origin
                entry.isClaimed = entry.withOperations { $0.publishAndUnlock(entry, context, isOutermostDelivery) }
                isAnyClaimed = isAnyClaimed || entry.isClaimed
            } else {
                entry.unlockContainer()
            }
        }
        if !gates.isEmpty {
            gates[0].commitTogether(gates)
            for gate in gates { gate.leaveTransaction() }
        }
        if isAnyClaimed {
            context.depth = 0
            // A derived state's handlers run after every container's of the transaction.
            let postponed = context.fields.pointee.postponesFollowUps
            context.fields.pointee.postponesFollowUps = true
            forEachEntry { entry in
                if entry.isClaimed { entry.withOperations { $0.deliverClaimed(entry, context) } }
            }
            context.fields.pointee.postponesFollowUps = postponed
        }
        if isOutermostDelivery { context.endOutermost() }
        return true
    }

    // MARK: Receipts

    /// Gives a write's receipt the version the commit makes (``SyncedState/write(_:)``).
    func addReceiptSlot(_ slot: TransactionReceiptSlot) {
        receiptSlots.append(slot)
    }

    /// Called by the commit, with every container locked and its change applied.
    private func settleReceipts() {
        for slot in receiptSlots {
            let state = entry(for: slot.container)?._withUnsafeGuaranteedRef { entry in
                // The change applied took the version after the one the body read.
                entry.isChanged
                    ? TransactionReceiptSlot.State.committed(entry.firstVersion &+ 1)
                    : .unchanged(entry.firstVersion)
            }
            slot.settle(state ?? .abandoned("its transaction did not write to the container"))
        }
        receiptSlots = []
    }

    private func abandonReceipts(from index: Int) {
        for slot in receiptSlots[index...] {
            slot.settle(.abandoned("its transaction did not commit it (the body threw, or ran again after a conflict)"))
        }
        receiptSlots.removeSubrange(index...)
    }

    /// Lets go of the gates of a commit that applied nothing; what they brought in is delivered
    /// once every gate is let go.
    private func leave(_ gates: [WriteGate]) {
        let context = deliveryContext
        let isOutermostDelivery = !context.isDelivering
        if isOutermostDelivery {
            context.beginOutermost()
            context.depth = -1
        }
        for gate in gates { gate.leaveTransaction() }
        if isOutermostDelivery { context.endOutermost() }
    }

    /// Orders the entries by container address, the order the commit takes their locks in.
    private func sortByContainer() {
        if count < 2 { return }
        let id = { (entry: Unmanaged<TransactionEntry>) in entry._withUnsafeGuaranteedRef { $0.id } }
        if count == 2 {
            if id(storage[1]) < id(storage[0]) { entries.swapAt(0, 1) }
            return
        }
        var entries = self.entries
        entries.sort { id($0) < id($1) }
    }

    /// Whether every container the body touched is still at the version it read.
    func isCurrent() -> Bool {
        entries.allSatisfy { entry in
            entry._withUnsafeGuaranteedRef { $0.isBlind || $0.currentVersion == $0.firstVersion }
        }
    }
}
