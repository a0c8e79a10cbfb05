import Dispatch

/// What an ``Observed`` backed by a ``DerivedNode`` looks at: the node's whole value.
///
/// Reading brings the node up to date; subscribing subscribes to the node's storage, whose
/// subscribers, projections and async sequences then serve the derived value. A live subscription
/// keeps the node (and so its sources) alive, as a Combine `AnyCancellable` keeps its chain:
/// `a.map { $0 * 2 }.subscribe { … }` lasts as long as its token.
struct DerivedProjection<Value>: Projection, DerivationSource, @unchecked Sendable {
    let node: DerivedNode<Value>

    var key: String { node.storage.key }

    /// The node registers reads with its own Observation registrar.
    var readsAreTracked: Bool { true }

    var derivationInputs: [DerivationInput] { node.inputs }

    /// The node's version after bringing it up to date: it moves only when the value changed.
    var changeStamp: (() -> UInt64)? { { [node] in node.version } }

    func read() -> Value {
        node.registerAccess()
        return node.current()
    }

    func readUntracked() -> Value { node.current() }

    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        node.subscribe { storage in
            storage.addSubscriber(
                queue: queue, handler: handler, sendsCurrentValue: sendsCurrentValue,
                onContainerReleased: onRootReleased, keeping: node)
        }
    }

    func appending<Part: Equatable>(_ path: KeyPath<Value, Part>) -> any Projection<Part> {
        DerivedPartProjection(node: node, part: KeyPathProjection(root: node.storage, path: path))
    }
}

/// A key path of a derived value: a projection of the node's storage that brings the node up to
/// date before it reads or subscribes.
struct DerivedPartProjection<Root, Value: Equatable>: Projection, DerivationSource, @unchecked Sendable {
    let node: DerivedNode<Root>
    let part: KeyPathProjection<Root, Value>

    var key: String { part.key }

    var derivationInputs: [DerivationInput] { node.inputs }

    func read() -> Value {
        if isTransactionOpenOnThisThread { return node.current()[keyPath: part.path] }
        _ = node.current()
        return part.read()
    }

    func subscribe(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onRootReleased: (@Sendable () -> Void)?
    ) -> Subscription {
        node.subscribe { storage in
            storage.addSubscriber(
                to: part.path, queue: queue, handler: handler, sendsCurrentValue: sendsCurrentValue,
                onRootReleased: onRootReleased, keeping: node)
        }
    }

    func appending<Part: Equatable>(_ path: KeyPath<Value, Part>) -> any Projection<Part> {
        DerivedPartProjection<Root, Part>(
            node: node, part: KeyPathProjection(root: node.storage, path: part.path.appending(path: path)))
    }
}

extension DerivedNode {
    /// Subscribes to the storage with `addSubscriber`, bringing the value up to date before (so
    /// the first call carries the current value) and after (so a change that found no subscriber
    /// yet, and was left for later, is computed now).
    func subscribe(_ addSubscriber: (MonitoredState<Value>) -> Subscription) -> Subscription {
        _ = current()
        let subscription = addSubscriber(storage)
        _ = current()
        return subscription
    }
}
