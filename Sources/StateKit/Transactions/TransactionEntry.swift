import Foundation
import Synchronization

/// A container as one transaction sees it: the version it saw and whether the body wrote it.
///
/// The values live in ``TypedTransactionEntry``; what the commit does with them comes from the
/// container's ``TransactionOperations``, functions made in code specialised for its value type,
/// so that committing (and the delivery it starts) never runs generic code that looks up type
/// metadata on every change. The container's lock and version are reached directly.
///
/// A thread's log keeps the entries of the containers its last transactions touched, emptied, and
/// reuses them (see ``TransactionLog/addRecent(serial:)``): a transaction over containers the
/// thread touched before allocates nothing. An entry belongs to one thread's log, so its
/// variables skip Swift's run-time exclusivity checks (measured: a quarter of a two-container
/// transaction).
@usableFromInline
class TransactionEntry {
    /// The container; ``retainedContainer`` keeps it alive while a transaction uses the entry.
    @usableFromInline
    unowned(unsafe) let container: AnyObject
    /// The container's ``State/cellID`` (its lock's identity): the containers of one cell are one
    /// entry, and it orders the commit's locks.
    @usableFromInline
    let id: ObjectIdentifier
    /// The container's lock, unretained (the container keeps it), so that taking it retains
    /// nothing.
    @usableFromInline
    let lock: Unmanaged<Lock>
    /// The container's version field; read it with `lock` held.
    @usableFromInline
    let version: UnsafePointer<UInt64>
    /// The container's. Call its functions through ``withOperations(_:)``.
    @usableFromInline
    unowned(unsafe) let operations: TransactionOperations
    /// `operations`' serial: an emptied entry is reused for the container whose operations have
    /// it, and no other (another container may live at a released one's address).
    @usableFromInline
    let serial: UInt64
    /// The container, while a transaction uses the entry.
    @usableFromInline
    @exclusivity(unchecked)
    var retainedContainer: AnyObject?
    /// The container's version when the transaction first touched it; the commit checks that it
    /// is still the version, or runs the body again.
    @usableFromInline
    @exclusivity(unchecked)
    var firstVersion: UInt64 = 0
    /// Whether the container had a validator when the transaction first touched it.
    @usableFromInline
    @exclusivity(unchecked)
    var hasValidator = false
    /// The ``WriteGate`` the container's writes pass, if any (a key shared across processes): the
    /// commit holds it (``TransactionLog/commit()``).
    @usableFromInline
    @exclusivity(unchecked)
    var writeGate: Unmanaged<WriteGate>?
    @usableFromInline
    @exclusivity(unchecked)
    var isWritten = false
    /// Whether the body assigned the container a value before reading it: the transaction has
    /// read nothing of it, so the commit checks no version and compares the working copy with the
    /// value it replaces. ``TransactionOperations/read`` makes it an entry that was read.
    @usableFromInline
    @exclusivity(unchecked)
    var isBlind = false
    /// Whether the body called ``State/didModify()``: a change even if the value compares equal.
    @usableFromInline
    @exclusivity(unchecked)
    var isAnnounced = false
    /// Whether the working copy equals the value first read, when the last write knew: a write of
    /// a whole value compares it at once, with the `==` of code specialised for `Value`; the
    /// commit compares the others.
    @usableFromInline
    @exclusivity(unchecked)
    var knownEquality: Bool?
    /// Set by the commit for the containers it changed.
    @exclusivity(unchecked)
    var isChanged = false
    /// Set by the commit when it took the container's delivery claim, to deliver the change
    /// itself once every lock is released.
    @exclusivity(unchecked)
    var isClaimed = false
    /// Whether the claimed container had projections or listeners when the commit claimed it.
    @usableFromInline
    @exclusivity(unchecked)
    var isClaimedWithOthers = false
    /// Set by the commit when it told Observation `willSet`, so that it tells `didSet` after.
    @usableFromInline
    @exclusivity(unchecked)
    var isObserved = false
    /// Set by the commit when a subscriber wants change records: the typed entry's `replaced`
    /// holds the value the commit replaced, and this the time of the change.
    @usableFromInline
    @exclusivity(unchecked)
    var recordTimestamp: Date?
    /// Set by the commit: the origin of the change it makes (its transaction's).
    @usableFromInline
    @exclusivity(unchecked)
    var origin = ChangeOrigin.local

    /// Calls `body` with the container's operations, borrowed: a function of theirs reached
    /// through the `unowned(unsafe)` reference was copied before each call, a retain and a release.
    @inlinable
    final func withOperations<Result>(_ body: (TransactionOperations) -> Result) -> Result {
        Unmanaged.passUnretained(operations)._withUnsafeGuaranteedRef(body)
    }

    @usableFromInline
    init(container: AnyObject, lock: Lock, version: UnsafePointer<UInt64>, operations: TransactionOperations) {
        self.container = container
        self.id = ObjectIdentifier(lock)
        self.lock = .passUnretained(lock)
        self.version = version
        self.operations = operations
        self.serial = operations.serial
    }

    /// Starts the entry's use by a transaction that first touched the container at `version`.
    @inlinable
    final func begin(
        firstVersion: UInt64, hasValidator: Bool, writeGate: Unmanaged<WriteGate>?, retaining container: AnyObject
    ) {
        self.firstVersion = firstVersion
        self.hasValidator = hasValidator
        self.writeGate = writeGate
        retainedContainer = container
    }

    @inlinable
    final func lockContainer() {
        lock._withUnsafeGuaranteedRef { $0.lock() }
    }

    @inlinable
    final func unlockContainer() {
        lock._withUnsafeGuaranteedRef { $0.unlock() }
    }

    /// The container's version now.
    final var currentVersion: UInt64 {
        lockContainer()
        defer { unlockContainer() }
        return version.pointee
    }
}

/// A container's entry with its values: the one it read first and the body's working copy.
///
/// The values are optional only so that a spare entry holds none (``TransactionOperations/recycle``
/// empties it): while in use, they are always there.
@usableFromInline
final class TypedTransactionEntry<Value>: TransactionEntry {
    @usableFromInline
    @exclusivity(unchecked)
    var originalSlot: Value?
    @usableFromInline
    @exclusivity(unchecked)
    var workingSlot: Value?
    @usableFromInline
    @exclusivity(unchecked)
    var replacedSlot: Value?
    /// The subscribers of the change the commit delivers itself, read with its claim (see
    /// ``TransactionEntry/isClaimed``); empty otherwise.
    @usableFromInline
    @exclusivity(unchecked)
    var claimedSubscribers = UnretainedSubscribers<Value>()

    @inlinable
    init(container: State<Value>, operations: TransactionOperations) {
        super.init(container: container, lock: container.lock, version: container.versionField, operations: operations)
    }

    /// The value the transaction first read.
    @inlinable
    var original: Value { originalSlot.unsafelyUnwrapped }

    /// The body's working copy.
    @inlinable
    var working: Value {
        get { workingSlot.unsafelyUnwrapped }
        set { workingSlot = newValue }
    }

    /// The value the commit replaced, when a subscriber wants change records (see
    /// ``TransactionEntry/recordTimestamp``).
    @inlinable
    var replaced: Value? {
        recordTimestamp == nil ? nil : replacedSlot
    }
}

/// What the commit does with a container's entries, specialised for its value type.
///
/// Made once per container, on its first transaction, and shared by its entries (copying the
/// functions into each entry cost a retain and a release of each).
@usableFromInline
final class TransactionOperations {
    /// Observation's `willSet` (`true`) or `didSet` (`false`) around a commit that writes it.
    /// - Returns: Whether the container is observed.
    let tellObservation: (TransactionEntry, _ isBefore: Bool) -> Bool
    /// Stores the working copy as one new version, unless it equals the value first read
    /// (`Equatable` values only) and the body did not call `didModify()`. Called with the
    /// container's lock held.
    /// - Returns: Whether it stored it.
    let applyLocked: (TransactionEntry) -> Bool
    /// Hands the change `applyLocked` made to the dispatcher and unlocks the container; or, when
    /// `mayClaim` and nobody delivers the container, takes its delivery claim, as a plain write's
    /// fast path does, for ``deliverClaimed``.
    /// - Returns: Whether it took the claim.
    let publishAndUnlock: (TransactionEntry, DeliveryContext, _ mayClaim: Bool) -> Bool
    /// Delivers the change `publishAndUnlock` claimed (the entry's working copy, at the version
    /// after `firstVersion`), then what handlers queued meanwhile.
    let deliverClaimed: (TransactionEntry, DeliveryContext) -> Void
    /// Puts the working copy back to the value first read (a nested body's write is undone).
    let revert: (TransactionEntry) -> Void
    /// Reads the container's value and version into a blind entry (see
    /// ``TransactionEntry/isBlind``), as its first touch would have.
    let read: (TransactionEntry) -> Void
    /// Saves the working copy, for a nested body: the result puts it back.
    let checkpoint: (TransactionEntry) -> () -> Void
    /// Empties an entry whose transaction ended, so that it keeps no value alive; `nil` for
    /// values that hold no reference.
    let empty: ((TransactionEntry) -> Void)?
    /// Unique among every container's operations, for as long as the process runs.
    @usableFromInline
    let serial = nextOperationsSerial.add(1, ordering: .relaxed).newValue

    @usableFromInline
    init(
        tellObservation: @escaping (TransactionEntry, _ isBefore: Bool) -> Bool,
        applyLocked: @escaping (TransactionEntry) -> Bool,
        publishAndUnlock: @escaping (TransactionEntry, DeliveryContext, _ mayClaim: Bool) -> Bool,
        deliverClaimed: @escaping (TransactionEntry, DeliveryContext) -> Void,
        revert: @escaping (TransactionEntry) -> Void,
        read: @escaping (TransactionEntry) -> Void,
        checkpoint: @escaping (TransactionEntry) -> () -> Void,
        empty: ((TransactionEntry) -> Void)?
    ) {
        self.tellObservation = tellObservation
        self.applyLocked = applyLocked
        self.publishAndUnlock = publishAndUnlock
        self.deliverClaimed = deliverClaimed
        self.revert = revert
        self.read = read
        self.checkpoint = checkpoint
        self.empty = empty
    }

    /// Empties `entry` and lets go of its container, for the log to keep it.
    func recycle(_ entry: TransactionEntry) {
        // Moved out rather than copied: each retain and release of a container with weak
        // references costs about 200 instructions.
        var container: AnyObject?
        empty?(entry)
        entry.isWritten = false
        entry.isBlind = false
        entry.isAnnounced = false
        entry.knownEquality = nil
        entry.isChanged = false
        entry.isClaimed = false
        entry.isClaimedWithOthers = false
        entry.isObserved = false
        entry.recordTimestamp = nil
        swap(&container, &entry.retainedContainer)
        withExtendedLifetime(container) {}
    }
}

/// The last ``TransactionOperations/serial`` given out.
private let nextOperationsSerial = Atomic<UInt64>(0)
