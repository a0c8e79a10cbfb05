import Dispatch

/// A ``State`` that tells others about its changes: closure subscriptions, key-path projections,
/// async sequences, and the seed article's weak ``StateListener``s.
///
/// ```swift
/// let counter = MonitoredState(0, key: "counter")
/// let subscription = counter.subscribe { print("count: \($0)") }   // prints "count: 0"
/// counter.modify { $0 += 1 }                                       // prints "count: 1"
/// ```
///
/// ## Where and when handlers run
/// A synchronous subscriber runs on a thread that writes: the writer's own, or, when another
/// thread is already delivering this container, that thread or the container's overflow
/// deliverer (so a write may return before its handlers ran). A write delivers at most its own
/// change and what its handlers write, and waits only when over 1,024 deliveries are queued (see
/// <doc:DeliverySemantics>). Each subscriber sees changes in ``State/version`` order, never an older value
/// after a newer one, and once writes stop, the last value it saw is the current value. Handlers
/// run outside the container's lock: they may read it and write to it or to other containers;
/// such a write is delivered after the current delivery finishes. Use
/// ``subscribe(on:_:)`` or ``subscribeOnMain(_:)`` to run handlers on a queue or the main actor.
///
/// When `Value` is `Equatable`, assigning an equal value is not a change and notifies nobody.
///
/// - Note: All operations on `MonitoredState` are thread-safe.
@dynamicMemberLookup
open class MonitoredState<Value>: State<Value> {
    /// Creates a container holding `defaultValue`, identified by `key`.
    public override init(_ defaultValue: Value, key: String) {
        super.init(defaultValue, key: key, isObservable: true)
    }

    /// Creates a container whose writes must pass `validator`.
    ///
    /// The validator sees the current and the proposed value and throws to refuse the write; the
    /// value and version then stay as they were. Throwing writes (``set(_:)``, ``update(_:)``)
    /// rethrow the refusal as ``RejectedWriteError``; the others (``State/modify(_:)-5lmnc``, `~>`)
    /// report it to ``StateDiagnostics``. Use it to guard the transitions of an enum state machine:
    ///
    /// ```swift
    /// let player = MonitoredState(PlayerState.idle, key: "player") { current, proposed in
    ///     guard current.canMove(to: proposed) else { throw InvalidTransition(from: current, to: proposed) }
    /// }
    /// ```
    ///
    /// - Warning: The validator runs under the container's lock: keep it pure and fast.
    public init(
        _ defaultValue: Value,
        key: String,
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        super.init(defaultValue, key: key, isObservable: true)
        self.validator = validator
    }

    /// Creates one of the containers of a shared `cell` (a persisted key's), or, without one (after
    /// a key conflict), a container of its own that keeps its value in memory only.
    init(_ defaultValue: Value, key: String, joining cell: State<Value>?) {
        if let cell {
            super.init(sharing: cell, key: key)
        } else {
            super.init(defaultValue, key: key, isObservable: true)
        }
    }

    /// Makes `validator` guard every later write, for subclasses whose initialisers take one.
    ///
    /// A persisted container shares one cell with the other containers of its key, so its
    /// validator guards writes through all of them, as well as any validator they already have.
    final func installValidator(
        _ validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        lock.withLock {
            if cell != nil, let earlier = self.validator {
                self.validator = { current, proposed in
                    try earlier(current, proposed)
                    try validator(current, proposed)
                }
            } else {
                self.validator = validator
            }
        }
    }

    /// Replaces the value, throwing ``RejectedWriteError`` if the validator refuses;
    /// equal values change nothing.
    public func set(_ newValue: Value) throws {
        let isUnchanged = { self.isEqual?($0, newValue) ?? false }
        if let rejection = assign(newValue, unlessAlready: isUnchanged) {
            throw rejection
        }
    }

    /// Mutates the value as one change, throwing ``RejectedWriteError`` if the validator refuses
    /// (the value then stays as it was) and rethrowing what `body` throws.
    @discardableResult
    public func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
        var rejection: RejectedWriteError?
        let result = try mutate(rejection: &rejection, body)
        if let rejection { throw rejection }
        return result
    }

    // MARK: Listeners

    /// Attaches a listener, held weakly: it is told of every change until it is deallocated.
    public func attach(listener: any StateListener) {
        let inCell = cell != nil
        lock.withLock {
            audience.listeners.removeAll {
                $0.isReleased || ($0.listener === listener && $0.isAttached(to: self, inCell: inCell))
            }
            audience.listeners.append(
                WeakListener(listener: listener, container: inCell ? self : nil, isViaCell: inCell))
            audienceChangedLocked()
        }
    }

    /// Detaches a listener: it is not told of later changes (a call already queued on its
    /// ``StateListener/stateListenerQueue`` still runs).
    public func detach(listener: any StateListener) {
        let inCell = cell != nil
        lock.withLock {
            audience.listeners.removeAll {
                $0.isReleased || ($0.listener === listener && $0.isAttached(to: self, inCell: inCell))
            }
            audienceChangedLocked()
        }
    }

    /// The listeners attached and still alive.
    public var allListeners: [any StateListener] {
        let inCell = cell != nil
        return lock.withLock {
            audience.listeners.filter { $0.isAttached(to: self, inCell: inCell) }.compactMap(\.listener)
        }
    }

    // MARK: Subscriptions

    /// Calls `handler` with the current value now, then with each new value, on the thread that
    /// delivers the change.
    ///
    /// The first call is immediate unless another thread is delivering this container, in which
    /// case it is queued behind that delivery, so it never arrives after a newer value.
    ///
    /// - Returns: A token; the subscription lasts until it is cancelled or released.
    @inlinable
    public final func subscribe(_ handler: @escaping @Sendable (Value) -> Void) -> Subscription {
        installSubscriberRemoval()
        return addSubscriber(queue: nil, handler: .value(handler), sendsCurrentValue: true)
    }

    /// Calls `handler` with the current value, then with each new value, asynchronously on
    /// `queue` (which should be serial, to keep the order).
    @inlinable
    public final func subscribe(on queue: DispatchQueue, _ handler: @escaping @Sendable (Value) -> Void)
        -> Subscription
    where Value: Sendable {
        installSubscriberRemoval()
        return addSubscriber(queue: queue, handler: .value(handler), sendsCurrentValue: true)
    }

    /// Calls a main-actor `handler` with the current value, then with each new value, on the main
    /// queue, so UI code can capture what it likes.
    ///
    /// It is the way for main-actor code to update itself: a ``subscribe(_:)`` handler is
    /// `@Sendable` and may run on any thread, so `subscribe { [weak self] in self?.title = $0 }`
    /// does not compile in a main-actor class, while this does:
    ///
    /// ```swift
    /// @MainActor
    /// final class ScoreViewModel {
    ///     let score = MonitoredState(0, key: "score")
    ///     var label = ""
    ///     var subscription: Subscription?
    ///
    ///     func start() {
    ///         subscription = score.subscribeOnMain { [weak self] in self?.label = "Score: \($0)" }
    ///     }
    /// }
    /// ```
    ///
    /// > Important: Handlers run only while something services the main queue: an app's run loop,
    /// > `dispatchMain()` or `RunLoop.main.run()` in a command-line tool, an async test. A
    /// > command-line tool that never does, or that blocks the main thread waiting, is never called
    /// > (even for the current value). Use ``subscribe(_:)`` or ``subscribe(on:_:)`` there.
    @inlinable
    public final func subscribeOnMain(_ handler: @escaping @MainActor (Value) -> Void) -> Subscription
    where Value: Sendable {
        installSubscriberRemoval()
        return addSubscriber(queue: .main, handler: .value(mainActorHandler(handler)), sendsCurrentValue: true)
    }

    /// Calls `handler` with each change (old value, new value, version, timestamp), from the next
    /// change on, on the thread that delivers it.
    ///
    /// Old values are kept only while such a subscriber exists.
    @inlinable
    public final func subscribeChanges(_ handler: @escaping @Sendable (StateChange<Value>) -> Void) -> Subscription {
        installSubscriberRemoval()
        return addSubscriber(queue: nil, handler: .change(handler), sendsCurrentValue: false)
    }

    /// Calls `handler` with each change asynchronously on `queue` (which should be serial).
    @inlinable
    public final func subscribeChanges(
        on queue: DispatchQueue,
        _ handler: @escaping @Sendable (StateChange<Value>) -> Void
    ) -> Subscription where Value: Sendable {
        installSubscriberRemoval()
        return addSubscriber(queue: queue, handler: .change(handler), sendsCurrentValue: false)
    }

    // MARK: Projections

    /// A read-only view of this container, to hand to code that may watch but not change it.
    public var readOnly: Observed<Value> {
        Observed(WholeProjection(root: self))
    }

    /// A projection of the part at `path`, told only when that part changes.
    ///
    /// > Warning: A path with an index (`\.items[0]`) traps, as `Array`'s subscript does, when a
    /// > write removes that index: on the writing thread, inside the write. Project elements of a
    /// > collection of `Identifiable` values by identity instead: `state.items[id: id]`.
    ///
    /// > Tip: For many elements of one collection (a list whose rows each watch their own), write
    /// > `state.items[i]` rather than `state.observe(\.items[i])`: element projections share one
    /// > read of the collection per change, where each path through a subscript is applied on its
    /// > own. A key path shows none of its parts, so `observe` cannot tell the collection from the
    /// > index.
    public func observe<Part: Equatable>(_ path: KeyPath<Value, Part>) -> Observed<Part> {
        Observed(KeyPathProjection(root: self, path: path))
    }

    /// A writable projection of the part at `path`: writes go through to this container.
    public func observe<Part: Equatable>(_ path: WritableKeyPath<Value, Part>) -> MutableObserved<Part> {
        MutableObserved(WritableKeyPathProjection(root: self, path: path))
    }

    /// `state.member` is `state.observe(\.member)`.
    public subscript<Part: Equatable>(dynamicMember path: KeyPath<Value, Part>) -> Observed<Part> {
        observe(path)
    }

    /// `state.member` is `state.observe(\.member)`, writable when the member is.
    public subscript<Part: Equatable>(dynamicMember path: WritableKeyPath<Value, Part>) -> MutableObserved<Part> {
        observe(path)
    }
}

extension MonitoredState: @unchecked Sendable where Value: Sendable {}

extension MonitoredState where Value: Sendable {
    /// The current value, then each new value, as an `AsyncSequence`; a slow consumer gets the
    /// newest value (see ``StateStream/Buffering/latest``).
    ///
    /// ```swift
    /// for await count in counter.values { print(count) }
    /// ```
    public var values: StateStream<Value> {
        values(buffering: .latest)
    }

    /// The current value, then each new value, buffered as `buffering` says.
    ///
    /// The sequence does not keep the container alive: iterating ends when it is deallocated.
    public func values(buffering: StateStream<Value>.Buffering) -> StateStream<Value> {
        let bind: @Sendable (BindingTarget<Value>) -> Subscription = { [weak self] target in
            guard let self else { return Subscription() }
            return BindingClock.bind(target, to: self)
        }
        return StateStream(buffering: buffering, bind: bind) { [weak self] handler, finish in
            guard let self else {
                finish()
                return Subscription()
            }
            return addSubscriber(
                queue: nil, handler: .value(handler), sendsCurrentValue: true, onContainerReleased: finish)
        }
    }

    /// Every change, in order, as an `AsyncSequence` (unbounded buffer); it ends when the
    /// container is deallocated.
    public var changes: StateStream<StateChange<Value>> {
        StateStream(buffering: .unbounded) { [weak self] handler, finish in
            guard let self else {
                finish()
                return Subscription()
            }
            return addSubscriber(
                queue: nil, handler: .change(handler), sendsCurrentValue: false, onContainerReleased: finish)
        }
    }
}
