import Dispatch

/// The element at one position of a collection in a container (`state.cells[i]`), told only
/// when that element changes.
///
/// Its subscriptions join the collection's ``ElementNode``, so a change reads the collection once
/// for all its positions. Derived states and projections of the element's parts use the same part
/// as one key path (`\.cells[i]`).
struct ElementProjection<Root, Elements: RandomAccessCollection>: Projection, @unchecked Sendable
where Elements.Element: Equatable, Elements.Index: Hashable {
    let root: MonitoredState<Root>
    let parent: PartReader<Root, Elements>
    let index: Elements.Index
    let scan: ElementScan<Elements>
    let whole: KeyPathProjection<Root, Elements.Element>

    init(
        root: MonitoredState<Root>, parent: KeyPath<Root, Elements>, index: Elements.Index, scan: ElementScan<Elements>
    ) {
        self.root = root
        self.parent = PartReader(parent)
        self.index = index
        self.scan = scan
        self.whole = KeyPathProjection(root: root, path: parent.appending(path: \Elements.[index]))
    }

    var key: String { whole.key }

    func read() -> Elements.Element { scan.element(root.read(parent), index) }

    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Elements.Element>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        root.addSubscriber(
            toElementAt: index, of: parent, scan: scan, queue: queue, handler: handler,
            sendsCurrentValue: sendsCurrentValue, onRootReleased: onRootReleased)
    }

    func appending<Part: Equatable>(_ path: KeyPath<Elements.Element, Part>) -> any Projection<Part> {
        whole.appending(path)
    }
}

/// The element at one position of a writable collection in a container: a write through it
/// (`state.cells[k] ~> v`) is confined to that element, so only the projections that can see it
/// are evaluated (see ``State/write(unlessAlready:confinedTo:_:)``).
struct WritableElementProjection<Root, Elements: RandomAccessCollection & MutableCollection>:
    ReadOnlyBackedProjection, @unchecked Sendable
where Elements.Element: Equatable, Elements.Index: Hashable {
    let path: WritableKeyPath<Root, Elements>
    let readOnly: ElementProjection<Root, Elements>

    init(
        root: MonitoredState<Root>, parent: WritableKeyPath<Root, Elements>, index: Elements.Index,
        scan: ElementScan<Elements>
    ) {
        self.path = parent
        self.readOnly = ElementProjection(root: root, parent: parent, index: index, scan: scan)
    }

    var root: MonitoredState<Root> { readOnly.root }

    var index: Elements.Index { readOnly.index }

    func appending<Part: Equatable>(
        writable path: WritableKeyPath<Elements.Element, Part>
    ) -> any WritableProjection<Part> {
        WritableKeyPathProjection<Root, Part>(
            root: root, path: self.path.appending(path: \Elements.[index]).appending(path: path))
    }

    func assign(_ newValue: Elements.Element) -> RejectedWriteError? {
        root.assign(newValue, toElementAt: index, of: path, reader: readOnly.parent, scan: readOnly.scan)
    }

    func modify<Result>(_ body: (inout Elements.Element) throws -> Result) rethrows -> Result {
        let (path, index) = (self.path, self.index)
        return try root.modify { try body(&$0[keyPath: path][index]) }
    }

    func update<Result>(_ body: (inout Elements.Element) throws -> Result) throws -> Result {
        let (path, index) = (self.path, self.index)
        return try root.update { try body(&$0[keyPath: path][index]) }
    }
}

extension State {
    /// Subscribes to the element at `index` of the collection `reader` reads, joining that
    /// collection's ``ElementNode``.
    func addSubscriber<Elements: RandomAccessCollection>(
        toElementAt index: Elements.Index,
        of reader: PartReader<Value, Elements>,
        scan: ElementScan<Elements>,
        queue: DispatchQueue?,
        handler: Subscriber<Elements.Element>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription where Elements.Element: Equatable, Elements.Index: Hashable {
        let context = DeliveryContext.current
        let link = subscriberLink
        lock.lock()
        let current = scan.element(reader.read(storedValue), index)
        let node: ElementNode<Value, Elements>
        if let existing = fields.pointee.elementNodes[reader.keyPath] {
            node = unsafeDowncast(existing, to: ElementNode<Value, Elements>.self)
        } else {
            node = ElementNode(path: reader.keyPath, scan: scan, rootKey: key, version: storedVersion, lock: lock)
            fields.pointee.elementNodes[reader.keyPath] = node
            audience.projections.append(node)
        }
        let child = node.childLocked(at: index, current: current, version: storedVersion)
        let subscriber = Subscriber(
            link: link.takeUnretainedValue(), group: child, startVersion: storedVersion, queue: queue,
            handler: handler, onOwnerReleased: onRootReleased)
        child.subscribers.append(subscriber)
        return subscriptionAndUnlock(subscriber, current: current, sendsCurrentValue: sendsCurrentValue, in: context)
    }

    /// Writes `newValue` at `index` of the collection at `path`, unless the element is already
    /// equal, as one change of the whole value whose scope is that element's position.
    func assign<Elements: RandomAccessCollection & MutableCollection>(
        _ newValue: Elements.Element,
        toElementAt index: Elements.Index,
        of path: WritableKeyPath<Value, Elements>,
        reader: PartReader<Value, Elements>,
        scan: ElementScan<Elements>
    ) -> RejectedWriteError? where Elements.Element: Equatable, Elements.Index: Hashable {
        write(
            unlessAlready: { scan.element(reader.read($0), index) == newValue },
            confinedTo: {
                guard let node = fields.pointee.elementNodes[path] else { return nil }
                return unsafeDowncast(node, to: ElementNode<Value, Elements>.self).scopeLocked(ofWriteAt: index)
            }
        ) { $0[keyPath: path][index] = newValue }
    }
}
