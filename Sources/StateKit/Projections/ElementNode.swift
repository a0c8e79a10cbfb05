import Foundation

/// The projections of the elements of one collection in a container (`state.cells[i]`): a tree of
/// one parent path and its watched positions.
///
/// A change reads the collection once, then compares each watched position with a typed
/// subscript (``ElementScan``), where a group per key path applied `\.cells[i]` through the
/// runtime for each projection (about 2,300 instructions each). A write through one position
/// (``State/write(unlessAlready:confinedTo:_:)``) compares that position only.
///
/// The container's lock guards ``children`` and ``childAtIndex``; each child's `last` is touched
/// only by the thread delivering the container.
final class ElementNode<Root, Elements: RandomAccessCollection>: ProjectionGroup<Root>
where Elements.Element: Equatable, Elements.Index: Hashable {
    let reader: PartReader<Root, Elements>
    unowned let lock: Lock
    let scan: ElementScan<Elements>
    /// Whether a write through one position changes nothing else in the container's value: true
    /// when the path is a chain of stored struct properties and the collection is a value.
    let confinesWrites: Bool
    var children: ContiguousArray<ElementGroup<Elements>> = []
    var childAtIndex: [Elements.Index: ElementGroup<Elements>] = [:]

    init(
        path: KeyPath<Root, Elements>, scan: ElementScan<Elements>, rootKey: String, version: UInt64, lock: Lock
    ) {
        let reader = PartReader(path)
        self.reader = reader
        self.scan = scan
        self.lock = lock
        // A write through a computed path, or into a collection that is an object, may change other
        // positions too (a setter may sort; another reference may see the object).
        self.confinesWrites = reader.storedRange != nil && !(Elements.self is AnyObject.Type)
        super.init(path: path, rootKey: rootKey, createdVersion: version, storedRange: reader.storedRange)
    }

    override var isElementNode: Bool { true }

    override var isEmptyLocked: Bool { children.isEmpty }

    override func removeLocked(_ entry: SubscriptionEntry) {
        entry.group?.removeLocked(entry)
    }

    override func removeChildLocked(_ child: ProjectionGroupBase) {
        let child = unsafeDowncast(child, to: ElementGroup<Elements>.self)
        guard childAtIndex[child.index] === child else { return }
        childAtIndex[child.index] = nil
        let moved = children.removeLast()
        if moved !== child {
            children[child.position] = moved
            moved.position = child.position
        }
    }

    override func ownerReleased() {
        for child in children { child.ownerReleased() }
    }

    override func removeReleasedOwnersLocked() -> [SubscriptionEntry] {
        var released: [SubscriptionEntry] = []
        for child in children {
            released += child.removeReleasedOwnersLocked()
            if child.isEmptyLocked { removeChildLocked(child) }
        }
        return released
    }

    /// The position at `index`, made if there is none yet. Call it with the container's lock held.
    func childLocked(at index: Elements.Index, current: Elements.Element, version: UInt64) -> ElementGroup<Elements> {
        if let child = childAtIndex[index] { return child }
        let child = ElementGroup<Elements>(
            node: self, index: index, current: current, version: version, position: children.count)
        children.append(child)
        childAtIndex[index] = child
        return child
    }

    /// The scope of a write through the position at `index` (see ``State/write(unlessAlready:confinedTo:_:)``): that
    /// position, or the node itself when nobody watches it. Call it with the container's lock held.
    func scopeLocked(ofWriteAt index: Elements.Index) -> ProjectionGroupBase? {
        guard confinesWrites else { return nil }
        return childAtIndex[index] ?? self
    }

    override func evaluate(
        _ root: Root, at address: UnsafePointer<Root>, version: UInt64, timestamp: Date?, depth: Int,
        origin: ChangeOrigin
    ) {
        lock.lock()
        let children = self.children
        lock.unlock()
        let elements = reader.read(root, at: address)
        children.withUnsafeBufferPointer { children in
            scan.compare(elements, children, version, timestamp, depth, origin)
        }
    }

    override func evaluate(
        _ root: Root, at address: UnsafePointer<Root>, version: UInt64, timestamp: Date?, depth: Int,
        origin: ChangeOrigin, within scope: ProjectionGroupBase
    ) {
        if scope === self { return }
        guard let child = scope as? ElementGroup<Elements>, child.nodeID == ObjectIdentifier(self) else {
            return super.evaluate(
                root, at: address, version: version, timestamp: timestamp, depth: depth, origin: origin, within: scope)
        }
        let elements = reader.read(root, at: address)
        withUnsafePointer(to: child) { child in
            scan.compare(elements, UnsafeBufferPointer(start: child, count: 1), version, timestamp, depth, origin)
        }
    }
}

/// One watched position of an ``ElementNode``: its projections' subscribers and the element they
/// last saw.
@usableFromInline
final class ElementGroup<Elements: RandomAccessCollection>: ProjectionGroupBase
where Elements.Element: Equatable {
    @usableFromInline
    let index: Elements.Index
    /// The node's identity, for a write's scope (see ``ElementNode``), which compares it without
    /// reaching the node.
    let nodeID: ObjectIdentifier
    weak var node: ProjectionGroupBase?
    unowned let lock: Lock
    /// Where it is in its node's ``ElementNode/children``; guarded by the lock.
    var position: Int
    var subscribers = GroupSubscribers<Elements.Element>()
    /// Touched only by the thread delivering the container, one at a time (see ``KeyPathGroup``).
    @usableFromInline
    @exclusivity(unchecked)
    var last: Elements.Element

    init<Root>(
        node: ElementNode<Root, Elements>, index: Elements.Index, current: Elements.Element, version: UInt64,
        position: Int
    ) where Elements.Index: Hashable {
        self.index = index
        self.nodeID = ObjectIdentifier(node)
        self.node = node
        self.lock = node.lock
        self.position = position
        self.last = current
        // The whole path only names the position in changes' keys; it is no group's index key.
        super.init(
            path: node.reader.keyPath.appending(path: \Elements.[index]), rootKey: node.rootKey,
            createdVersion: version, storedRange: node.storedRange)
    }

    override var elementNode: ProjectionGroupBase? { node }

    override var isEmptyLocked: Bool { subscribers.isEmpty }

    override func removeLocked(_ entry: SubscriptionEntry) { subscribers.remove(entry) }

    override func ownerReleased() { subscribers.ownerReleased() }

    override func removeReleasedOwnersLocked() -> [SubscriptionEntry] { subscribers.removeReleasedOwners() }

    /// Records that the element is now `element`, and tells the subscribers. Not inlined into the
    /// scan's loop, which runs it only for a position that changed.
    @usableFromInline
    @inline(never)
    func changed(to element: Elements.Element, version: UInt64, timestamp: Date?, depth: Int, origin: ChangeOrigin) {
        let oldElement = last
        last = element
        lock.lock()
        let subscribers = self.subscribers
        lock.unlock()
        subscribers.tell(
            element, replacing: oldElement, of: self, version: version, timestamp: timestamp, depth: depth,
            origin: origin)
    }
}

/// Compares the watched positions of an ``ElementNode`` with the collection: a function made where
/// the element's type is known (the client's code, which calls the inlinable subscript that makes a
/// projection of an element), so that the loop reads and compares elements without generic
/// metadata or value witnesses.
@usableFromInline
struct ElementScan<Elements: RandomAccessCollection>: @unchecked Sendable where Elements.Element: Equatable {
    @usableFromInline
    let compare:
        (
            _ elements: Elements, _ children: UnsafeBufferPointer<ElementGroup<Elements>>, _ version: UInt64,
            _ timestamp: Date?, _ depth: Int, _ origin: ChangeOrigin
        ) -> Void
    /// The element at a position. Called from code not specialised for `Elements`, the
    /// collection's own subscript reads through a coroutine whose frame is allocated on each call.
    @usableFromInline
    let element: (_ elements: Elements, _ index: Elements.Index) -> Elements.Element

    @inlinable
    init() {
        element = { $0[$1] }
        compare = { elements, children, version, timestamp, depth, origin in
            for child in children where child.createdVersion < version {
                let element = elements[child.index]
                if element != child.last {
                    child.changed(to: element, version: version, timestamp: timestamp, depth: depth, origin: origin)
                }
            }
        }
    }
}
