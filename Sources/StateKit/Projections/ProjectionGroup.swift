import Foundation

/// The bookkeeping a container keeps for one projected key path while it has subscribers.
///
/// All projections of one key path on one container share a group, so the path is read and
/// compared once per change however many `Observed` values look at it. The container's lock
/// guards the subscriber list; `last` is touched only by the thread delivering the container.
@usableFromInline
class ProjectionGroupBase {
    let path: AnyKeyPath
    /// The container's key.
    let rootKey: String
    /// The key of the group's part, which its changes carry. Built on first use: describing a key
    /// path costs a symbol lookup.
    final private(set) lazy var key = rootKey + pathSuffix(path)
    /// The container's version when the group was made; older changes are not its business.
    @usableFromInline
    let createdVersion: UInt64
    /// The bytes of the container's value that the group's part occupies, when its path is a
    /// chain of stored struct properties (`nil` otherwise). A write confined to bytes disjoint
    /// from these cannot change the part: see ``isUnchanged(by:)``.
    let storedRange: Range<Int>?

    init(path: AnyKeyPath, rootKey: String, createdVersion: UInt64, storedRange: Range<Int>?) {
        self.path = path
        self.rootKey = rootKey
        self.createdVersion = createdVersion
        self.storedRange = storedRange
    }

    /// Whether the group is an ``ElementNode``, which the container indexes apart from the groups
    /// of key paths (its path is its collection's, which a group of that key path may share).
    var isElementNode: Bool { false }

    /// Whether a write that changed only the part of `scope` (see ``State/write(unlessAlready:confinedTo:_:)``) leaves
    /// this group's part as it was: their stored bytes are known and do not overlap.
    final func isUnchanged(by scope: ProjectionGroupBase) -> Bool {
        guard let mine = storedRange, let written = scope.storedRange else { return false }
        return !mine.overlaps(written)
    }

    var isEmptyLocked: Bool { fatalError("abstract") }

    func removeLocked(_ entry: SubscriptionEntry) { fatalError("abstract") }

    /// Tells every subscriber that the root container is gone.
    func ownerReleased() { fatalError("abstract") }

    /// Removes the subscribers whose container was released (one of a shared cell's, while the
    /// others live) and returns them. Call it with the container's lock held.
    func removeReleasedOwnersLocked() -> [SubscriptionEntry] { fatalError("abstract") }

    /// The ``ElementNode`` this group is a position of, if it is one.
    var elementNode: ProjectionGroupBase? { nil }

    /// Takes an emptied position out of this ``ElementNode``. Call it with the container's lock held.
    func removeChildLocked(_ child: ProjectionGroupBase) { fatalError("not an element node") }
}

/// A projection group for a container of `Root`.
@usableFromInline
class ProjectionGroup<Root>: ProjectionGroupBase {
    /// Reads the group's part of `root`, found at `address`, and, if it changed, tells the
    /// group's subscribers. The value is borrowed, so that a thousand groups share one copy.
    @usableFromInline
    func evaluate(
        _ root: Root, at address: UnsafePointer<Root>, version: UInt64, timestamp: Date?, depth: Int,
        origin: ChangeOrigin
    ) {
        fatalError("abstract")
    }

    /// ``evaluate(_:at:version:timestamp:depth:origin:)`` for a change that a write through a
    /// projection confined to the part of `scope` (see ``State/write(unlessAlready:confinedTo:_:)``): a group whose
    /// part lies elsewhere is left alone.
    @usableFromInline
    func evaluate(
        _ root: Root, at address: UnsafePointer<Root>, version: UInt64, timestamp: Date?, depth: Int,
        origin: ChangeOrigin, within scope: ProjectionGroupBase
    ) {
        if isUnchanged(by: scope) { return }
        evaluate(root, at: address, version: version, timestamp: timestamp, depth: depth, origin: origin)
    }
}

/// The group of projections of `path`.
final class KeyPathGroup<Root, Part: Equatable>: ProjectionGroup<Root> {
    let reader: PartReader<Root, Part>
    unowned let lock: Lock
    var subscribers = GroupSubscribers<Part>()
    /// Touched only by the thread delivering the container, one at a time, so it needs no
    /// run-time exclusivity check (which cost more than the comparison).
    @exclusivity(unchecked)
    private var last: Part

    init(keyPath: KeyPath<Root, Part>, rootKey: String, current: Part, version: UInt64, lock: Lock) {
        let reader = PartReader(keyPath)
        self.reader = reader
        self.last = current
        self.lock = lock
        super.init(path: keyPath, rootKey: rootKey, createdVersion: version, storedRange: reader.storedRange)
    }

    override var isEmptyLocked: Bool { subscribers.isEmpty }

    override func removeLocked(_ entry: SubscriptionEntry) { subscribers.remove(entry) }

    override func ownerReleased() { subscribers.ownerReleased() }

    override func removeReleasedOwnersLocked() -> [SubscriptionEntry] { subscribers.removeReleasedOwners() }

    override func evaluate(
        _ root: Root, at address: UnsafePointer<Root>, version: UInt64, timestamp: Date?, depth: Int,
        origin: ChangeOrigin
    ) {
        let part = reader.read(root, at: address)
        if part == last { return }
        let oldPart = last
        last = part
        lock.lock()
        let subscribers = self.subscribers
        lock.unlock()
        subscribers.tell(
            part, replacing: oldPart, of: self, version: version, timestamp: timestamp, depth: depth,
            origin: origin)
    }
}
