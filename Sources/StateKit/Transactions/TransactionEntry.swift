/// A container as one transaction sees it: the version it saw and whether the body wrote it.
///
/// The values live in ``TypedTransactionEntry``; what the commit does with them comes as
/// functions made where the container was first touched, in code specialised for its value
/// type, so that committing (and the delivery it starts) never runs generic code that looks up
/// type metadata on every change.
///
/// An entry belongs to one thread's log, so its variables skip Swift's run-time exclusivity
/// checks (measured: a quarter of a two-container transaction's instructions).
@usableFromInline
class TransactionEntry {
    /// The container, kept alive until the transaction ends.
    @usableFromInline
    let container: any TransactionParticipant
    /// The container's version when the transaction first touched it; the commit checks that it
    /// is still the version, or runs the body again.
    @usableFromInline
    let firstVersion: UInt64
    @usableFromInline
    @exclusivity(unchecked)
    var isWritten = false
    /// Whether the body called ``State/didModify()``: a change even if the value compares equal.
    @usableFromInline
    @exclusivity(unchecked)
    var isAnnounced = false
    /// Set by the commit for the containers it changed.
    @exclusivity(unchecked)
    var isChanged = false
    @usableFromInline
    let operations: TransactionOperations

    @usableFromInline
    init(container: any TransactionParticipant, firstVersion: UInt64, operations: TransactionOperations) {
        self.container = container
        self.firstVersion = firstVersion
        self.operations = operations
    }
}

/// A container's entry with its values: the one it read first and the body's working copy.
@usableFromInline
final class TypedTransactionEntry<Value>: TransactionEntry {
    @usableFromInline
    let original: Value
    @usableFromInline
    @exclusivity(unchecked)
    var working: Value
    /// The value the commit replaced, kept for change records when a subscriber wants them.
    @usableFromInline
    @exclusivity(unchecked)
    var replaced: Value?

    @inlinable
    init(container: State<Value>, firstVersion: UInt64, value: Value, operations: TransactionOperations) {
        original = value
        working = value
        super.init(container: container, firstVersion: firstVersion, operations: operations)
    }
}

/// What the commit does with a container's entry, specialised for its value type.
@usableFromInline
struct TransactionOperations {
    /// Whether the working copy equals the value first read (always `false` for a `Value` that is
    /// not `Equatable`, or when the body called `didModify()`).
    let isUnchanged: (TransactionEntry) -> Bool
    /// Stores the working copy as one new version. Called with the container's lock held.
    let applyLocked: (TransactionEntry) -> Void
    /// Hands the change `applyLocked` made to the dispatcher, and unlocks the container.
    let publishAndUnlock: (TransactionEntry, DeliveryContext) -> Void
    /// Puts the working copy back to the value first read (a nested body's write is undone).
    let revert: (TransactionEntry) -> Void
    /// Saves the working copy, for a nested body: the result puts it back.
    let checkpoint: (TransactionEntry) -> () -> Void

    @usableFromInline
    init(
        isUnchanged: @escaping (TransactionEntry) -> Bool,
        applyLocked: @escaping (TransactionEntry) -> Void,
        publishAndUnlock: @escaping (TransactionEntry, DeliveryContext) -> Void,
        revert: @escaping (TransactionEntry) -> Void,
        checkpoint: @escaping (TransactionEntry) -> () -> Void
    ) {
        self.isUnchanged = isUnchanged
        self.applyLocked = applyLocked
        self.publishAndUnlock = publishAndUnlock
        self.revert = revert
        self.checkpoint = checkpoint
    }
}
