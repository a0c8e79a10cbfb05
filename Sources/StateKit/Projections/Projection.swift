import Dispatch

/// What an ``Observed`` value looks at: a whole container, or one key path of it.
@usableFromInline
protocol Projection<Value>: Sendable {
    associatedtype Value
    var key: String { get }
    func read() -> Value
    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription
    func appending<Part: Equatable>(_ path: KeyPath<Value, Part>) -> any Projection<Part>
    /// Whether ``read()`` already registers with the container's own Observation registrar (a
    /// view of the whole container), so the ``Observed`` needs no registrar of its own.
    var readsAreTracked: Bool { get }
    /// Reads as ``read()`` does, without registering the read with Observation: what a derived
    /// state's computation reads.
    func readUntracked() -> Value
    /// A number that changes exactly when the projected value changes (a container's or a derived
    /// state's version), for a derived state's early cutoff; `nil` when the projection has none
    /// (a key path of a container, whose container's version moves with other parts too).
    var changeStamp: (() -> UInt64)? { get }
    /// The ``BindingClock`` of the container whose writes make this projection's changes, so
    /// that a binding from it forwards each value with the stamp of its write (semantics 24);
    /// `nil` when there is none to use, and a binding stamps each change as a write made then.
    var bindingClock: BindingClock? { get }
    /// A projection of the element at `index` of this value, a collection of type `Elements`
    /// (which is `Value`). A projection of a container's key path makes one that joins the
    /// path's ``ElementNode``; others append the subscript to their path.
    func element<Elements: RandomAccessCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any Projection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable
}

extension Projection {
    var readsAreTracked: Bool { false }

    var changeStamp: (() -> UInt64)? { nil }

    var bindingClock: BindingClock? { nil }

    func readUntracked() -> Value { read() }

    func element<Elements: RandomAccessCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any Projection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable {
        let path: KeyPath<Elements, Elements.Element> = \Elements.[index]
        return appending(path as! KeyPath<Value, Elements.Element>)
    }
}

/// A projection that writes through to its container.
@usableFromInline
protocol WritableProjection<Value>: Projection {
    func assign(_ newValue: Value) -> RejectedWriteError?
    func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result
    func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result
    func appending<Part: Equatable>(writable path: WritableKeyPath<Value, Part>) -> any WritableProjection<Part>
    /// Where a binding writes into this part, through its container's ``BindingClock``; `nil`
    /// when a binding writes it with ``assign(_:)``, every value in order.
    var bindingTarget: BindingTarget<Value>? { get }
    /// A writable projection of the element at `index` of this value, a collection of type
    /// `Elements` (which is `Value`); see ``Projection/element(at:scan:)``.
    func writableElement<Elements: RandomAccessCollection & MutableCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any WritableProjection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable
}

extension WritableProjection {
    var bindingTarget: BindingTarget<Value>? { nil }

    func writableElement<Elements: RandomAccessCollection & MutableCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any WritableProjection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable {
        let path: WritableKeyPath<Elements, Elements.Element> = \Elements.[index]
        return appending(writable: path as! WritableKeyPath<Value, Elements.Element>)
    }
}

/// A writable projection that reads, subscribes and projects further through the read-only
/// projection of the same part that it keeps, and adds only the writes.
protocol ReadOnlyBackedProjection<Value>: WritableProjection {
    associatedtype ReadOnly: Projection<Value>
    var readOnly: ReadOnly { get }
}

extension ReadOnlyBackedProjection {
    @inline(__always)
    var key: String { readOnly.key }

    var bindingClock: BindingClock? { readOnly.bindingClock }

    @inline(__always)
    func read() -> Value { readOnly.read() }

    @inline(__always)
    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        readOnly.subscribe(
            queue: queue, handler: handler, sendsCurrentValue: sendsCurrentValue, onRootReleased: onRootReleased)
    }

    @inline(__always)
    func appending<Part: Equatable>(_ path: KeyPath<Value, Part>) -> any Projection<Part> {
        readOnly.appending(path)
    }
}

/// A read-only view of a whole container: its own subscribers, no comparison.
struct WholeProjection<Root>: Projection, @unchecked Sendable {
    let root: MonitoredState<Root>

    var key: String { root.key }

    var bindingClock: BindingClock? { BindingClock.of(root) }

    var readsAreTracked: Bool { true }

    var changeStamp: (() -> UInt64)? { { [root] in root.version } }

    func read() -> Root { root.value }

    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Root>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        root.addSubscriber(
            queue: queue, handler: handler, sendsCurrentValue: sendsCurrentValue, onContainerReleased: onRootReleased)
    }

    func appending<Part: Equatable>(_ path: KeyPath<Root, Part>) -> any Projection<Part> {
        KeyPathProjection(root: root, path: path)
    }
}

/// One key path of a container, told only when its part changes.
struct KeyPathProjection<Root, Value: Equatable>: Projection, @unchecked Sendable {
    let root: MonitoredState<Root>
    let reader: PartReader<Root, Value>

    init(root: MonitoredState<Root>, path: KeyPath<Root, Value>) {
        self.root = root
        self.reader = PartReader(path)
    }

    var path: KeyPath<Root, Value> { reader.keyPath }

    var key: String { root.key + pathSuffix(path) }

    var bindingClock: BindingClock? { BindingClock.of(root) }

    func read() -> Value { root.read(reader) }

    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        root.addSubscriber(
            to: path, queue: queue, handler: handler, sendsCurrentValue: sendsCurrentValue,
            onRootReleased: onRootReleased)
    }

    func appending<Part: Equatable>(_ path: KeyPath<Value, Part>) -> any Projection<Part> {
        KeyPathProjection<Root, Part>(root: root, path: self.path.appending(path: path))
    }

    func element<Elements: RandomAccessCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any Projection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable {
        ElementProjection(root: root, parent: path as! KeyPath<Root, Elements>, index: index, scan: scan)
    }
}

/// One writable key path of a container.
struct WritableKeyPathProjection<Root, Value: Equatable>: ReadOnlyBackedProjection, @unchecked Sendable {
    let root: MonitoredState<Root>
    let path: WritableKeyPath<Root, Value>
    let readOnly: KeyPathProjection<Root, Value>

    init(root: MonitoredState<Root>, path: WritableKeyPath<Root, Value>) {
        self.root = root
        self.path = path
        self.readOnly = KeyPathProjection(root: root, path: path)
    }

    var bindingTarget: BindingTarget<Value>? { BindingTarget(root, at: path) }

    func appending<Part: Equatable>(writable path: WritableKeyPath<Value, Part>) -> any WritableProjection<Part> {
        WritableKeyPathProjection<Root, Part>(root: root, path: self.path.appending(path: path))
    }

    func element<Elements: RandomAccessCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any Projection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable {
        readOnly.element(at: index, scan: scan)
    }

    func writableElement<Elements: RandomAccessCollection & MutableCollection>(
        at index: Elements.Index, scan: ElementScan<Elements>
    ) -> any WritableProjection<Elements.Element> where Elements.Element: Equatable, Elements.Index: Hashable {
        WritableElementProjection(
            root: root, parent: path as! WritableKeyPath<Root, Elements>, index: index, scan: scan)
    }

    func assign(_ newValue: Value) -> RejectedWriteError? {
        root.assign(newValue, at: path)
    }

    func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try root.modify { try body(&$0[keyPath: path]) }
    }

    func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
        try root.update { try body(&$0[keyPath: path]) }
    }
}

/// `".user.name"` for `\App.user.name`: what a projection adds to its container's key.
///
/// The runtime describes a computed property or a subscript as `<computed 0x7f… (Int)>`, an
/// address that changes from run to run; the key says `<computed Int>` instead, so that errors
/// and diagnostics read the same in every run.
func pathSuffix(_ path: AnyKeyPath) -> String {
    var text = String(describing: path)
    if text.hasPrefix("\\") { text.removeFirst() }
    let rootName = String(describing: type(of: path).rootType)
    if text.hasPrefix(rootName) { text.removeFirst(rootName.count) }
    return text.replacing(/<computed 0x[0-9a-fA-F]+ \((.*?)\)>/) { "<computed \($0.output.1)>" }
}

extension State {
    /// The part of the current value that `reader` reads.
    func read<Part>(_ reader: PartReader<Value, Part>) -> Part {
        if let log = openTransactionLog { return reader.read(transactionalValue(in: log)) }
        lock.lock()
        defer { lock.unlock() }
        return reader.read(storedValue)
    }

    /// Writes `newValue` at `path` as one change of the whole value, unless the part is already equal.
    ///
    /// The group of `path`, if it has one, is the change's scope (see ``State/write(unlessAlready:confinedTo:_:)``).
    func assign<Part: Equatable>(_ newValue: Part, at path: WritableKeyPath<Value, Part>) -> RejectedWriteError? {
        write(unlessAlready: { $0[keyPath: path] == newValue }, confinedTo: { projectionIndex[path] }) {
            $0[keyPath: path] = newValue
        }
    }

    /// Subscribes to the part at `path`, joining the group of projections that share it.
    func addSubscriber<Part: Equatable>(
        to path: KeyPath<Value, Part>,
        queue: DispatchQueue?,
        handler: Subscriber<Part>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)? = nil,
        keeping keptAlive: AnyObject? = nil
    ) -> Subscription {
        let context = DeliveryContext.current
        let link = subscriberLink
        lock.lock()
        let current = storedValue[keyPath: path]
        let group: KeyPathGroup<Value, Part>
        if let existing = projectionIndex[path] {
            group = unsafeDowncast(existing, to: KeyPathGroup<Value, Part>.self)
        } else {
            group = KeyPathGroup(keyPath: path, rootKey: key, current: current, version: storedVersion, lock: lock)
            projectionIndex[path] = group
            audience.projections.append(group)
        }
        let subscriber = Subscriber(
            link: link.takeUnretainedValue(), group: group, startVersion: storedVersion, queue: queue, handler: handler,
            onOwnerReleased: onRootReleased, keeping: keptAlive)
        group.subscribers.append(subscriber)
        return subscriptionAndUnlock(subscriber, current: current, sendsCurrentValue: sendsCurrentValue, in: context)
    }

    /// Ends a projection's subscribe, called with the lock held once `subscriber` is in its group:
    /// makes its token and hands it `current` if asked, in order with any delivery in progress.
    func subscriptionAndUnlock<Part>(
        _ subscriber: Subscriber<Part>, current: Part, sendsCurrentValue: Bool, in context: DeliveryContext
    ) -> Subscription {
        audienceChangedLocked()
        let subscription = Subscription(subscriber)
        if sendsCurrentValue {
            scheduleInitialValueAndUnlock(current, to: subscriber, in: context)
        } else {
            lock.unlock()
        }
        return subscription
    }
}
