import Dispatch
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

/// A token for a subscription: keep it to keep receiving, cancel or release it to stop.
///
/// A subscription cancels itself when the token is deallocated, so handlers live exactly as long
/// as their owner keeps the token. Tokens are `Hashable`, so an owner can keep many in a
/// `Set<Subscription>`:
///
/// ```swift
/// var subscriptions = Set<Subscription>()
/// counter.subscribe { print("count is \($0)") }.store(in: &subscriptions)
/// ```
///
/// After ``cancel()`` returns, the handler is not called again (a call already running on another
/// thread finishes), and the container drops the handler and everything it captured.
///
/// - Note: All operations on `Subscription` are thread-safe.
public final class Subscription: Hashable, @unchecked Sendable {
    /// The subscriber, retained, until the subscription is cancelled.
    @usableFromInline
    let entry: Atomic<UnsafeMutableRawPointer?>
    /// How many ``isActive`` calls are reading the subscriber; ``cancel()`` releases it only when
    /// none is. The token keeps no reference to its container: the subscriber's link reaches it.
    @usableFromInline
    let readers = Atomic<Int>(0)

    /// A token for `entry`.
    @inlinable
    init(_ entry: SubscriptionEntry) {
        self.entry = Atomic(Unmanaged.passRetained(entry).toOpaque())
    }

    /// A subscription that was never live: what subscribing to a container already gone gives.
    init() {
        self.entry = Atomic(nil)
    }

    deinit {
        cancel()
    }

    /// Stops the subscription. Calling it more than once does nothing.
    public func cancel() {
        // A load first: a token cancelled by hand is cancelled again by its `deinit`, and the
        // load spares that second call an atomic exchange.
        guard entry.load(ordering: .relaxed) != nil,
            let pointer = entry.exchange(nil, ordering: .sequentiallyConsistent)
        else { return }
        let entry = Unmanaged<SubscriptionEntry>.fromOpaque(pointer)
        // Borrowed: `takeUnretainedValue()` retained and released it around the call.
        entry._withUnsafeGuaranteedRef { $0.cancel() }
        if readers.load(ordering: .sequentiallyConsistent) != 0 { waitForReaders() }
        entry.release()
    }

    /// Waits until no ``isActive`` that loaded the subscriber before ``cancel()`` took it is still
    /// reading it: a few loads, unless the reading thread was preempted; then this one sleeps in
    /// short steps rather than spin, so that the reader gets a core.
    @inline(never)
    private func waitForReaders() {
        var attempts = 0
        while readers.load(ordering: .sequentiallyConsistent) != 0 {
            attempts += 1
            if attempts < 64 { sched_yield() } else { usleep(50) }
        }
    }

    /// Whether the subscription is still live: not cancelled, and its container still exists.
    public var isActive: Bool {
        // Counted before the load, both sequentially consistent, as `cancel()`'s exchange and
        // count are: either this load sees the exchange's `nil`, or that cancel sees this reader.
        readers.add(1, ordering: .sequentiallyConsistent)
        defer { readers.subtract(1, ordering: .releasing) }
        guard let pointer = entry.load(ordering: .sequentiallyConsistent) else { return false }
        return Unmanaged<SubscriptionEntry>.fromOpaque(pointer).takeUnretainedValue().isOwnerLive
    }

    /// Keeps the token in `set`, so the subscription lasts as long as the set holds it.
    public func store(in set: inout Set<Subscription>) {
        set.insert(self)
    }

    /// Tokens are equal only to themselves.
    public static func == (lhs: Subscription, rhs: Subscription) -> Bool {
        lhs === rhs
    }

    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}

/// A subscriber's life: active until cancelled, then removed from its owner.
///
/// Only what every subscriber needs lives here and in ``Subscriber``: a value handler called on
/// the delivering thread needs nothing else. The rest (a projection group, a queue, another kind
/// of handler) is in ``SubscriberOptions``, which most subscribers do without: every field here
/// is allocated, initialised and destroyed with each subscription.
@usableFromInline
class SubscriptionEntry: @unchecked Sendable {
    @usableFromInline
    let active = Atomic<Bool>(true)
    /// Whether ``options`` holds the handler: otherwise it is ``Subscriber/valueHandler``. Beside
    /// `active`, in its padding.
    @usableFromInline
    let handlerIsInOptions: Bool
    /// How the subscriber reaches the container that delivers to it, which it does not keep alive.
    @usableFromInline
    let link: SubscriberLink
    /// The version current when the subscriber joined; it is handed no change at or before it.
    @usableFromInline
    let startVersion: UInt64
    /// What the subscriber has beyond a value handler, if anything.
    @usableFromInline
    let options: SubscriberOptions?

    @usableFromInline
    init(
        link: SubscriberLink,
        startVersion: UInt64,
        options: SubscriberOptions? = nil,
        handlerIsInOptions: Bool = false
    ) {
        self.handlerIsInOptions = handlerIsInOptions
        self.link = link
        self.startVersion = startVersion
        self.options = options
    }

    /// The projection group this subscriber belongs to, or `nil` for the container's own subscribers.
    @inlinable
    final var group: ProjectionGroupBase? {
        options?.group
    }

    /// Tells the subscriber its container is gone; called once, from the container's `deinit`.
    final func ownerReleased() {
        guard isActive, let onOwnerReleased = options?.onOwnerReleased else { return }
        onOwnerReleased()
    }

    @inlinable
    final var isActive: Bool {
        active.load(ordering: .acquiring)
    }

    /// Whether the container that delivers to this subscriber has not been released.
    final var isOwnerLive: Bool {
        link.isOwnerLive
    }

    /// Called once, by the token whose exchange took the subscriber, so a store is enough here:
    /// a second exchange was one of a cancel's locked instructions.
    final func cancel() {
        active.store(false, ordering: .releasing)
        link.remove(self)
    }
}

/// What a subscriber has beyond a value handler called on the delivering thread: the projection
/// group it belongs to, what to call when its container goes away, a queue, what it keeps alive.
@usableFromInline
class SubscriberOptions: @unchecked Sendable {
    /// The projection group the subscriber belongs to, or `nil` for a container's own subscribers.
    @usableFromInline
    weak let group: ProjectionGroupBase?
    /// Called if the container goes away while the subscriber is live.
    let onOwnerReleased: (@Sendable () -> Void)?
    /// `nil` delivers synchronously on the delivering thread.
    @usableFromInline
    let queue: DispatchQueue?
    /// Whether ``queue`` is set: a delivery reads this, since comparing the queue with `nil`
    /// retained and released it.
    @usableFromInline
    let hasQueue: Bool
    /// What the subscriber keeps alive for as long as it lives: a derived state's engine, which a
    /// subscription to it keeps (as a Combine `AnyCancellable` keeps its chain), or which watches
    /// a source through it (``Subscriber/Handler/sourceChanged(_:)``).
    @usableFromInline
    let keptAlive: AnyObject?

    @usableFromInline
    init(
        group: __shared ProjectionGroupBase?,
        onOwnerReleased: (@Sendable () -> Void)?,
        queue: DispatchQueue?,
        keptAlive: AnyObject?
    ) {
        self.group = group
        self.onOwnerReleased = onOwnerReleased
        self.queue = queue
        self.hasQueue = queue != nil
        self.keptAlive = keptAlive
    }
}

/// ``SubscriberOptions`` with a handler other than a value handler on the delivering thread.
///
/// Each kind of handler has a non-optional field of its own, set to one that does nothing for
/// the other kinds: a closure in such a field is called in place, while one in an enum's payload
/// is copied out first, a retain and a release of what it captures on every call.
@usableFromInline
final class HandlerOptions<Element>: SubscriberOptions, @unchecked Sendable {
    @usableFromInline
    enum Kind {
        /// A value handler on a queue; the handler is ``Subscriber/valueHandler``.
        case value
        case change
        case sourceChanged
    }

    @usableFromInline
    let kind: Kind
    @usableFromInline
    let changeHandler: (StateChange<Element>) -> Void
    @usableFromInline
    let sourceChanged: (Unmanaged<AnyObject>, DeliveryContext) -> Void

    @usableFromInline
    init(
        handler: Subscriber<Element>.Handler,
        group: __shared ProjectionGroupBase?,
        onOwnerReleased: (@Sendable () -> Void)?,
        queue: DispatchQueue?,
        keptAlive: AnyObject?
    ) {
        switch handler {
        case .value:
            kind = .value
            changeHandler = { _ in }
            sourceChanged = { _, _ in }
        case .change(let body):
            kind = .change
            changeHandler = body
            sourceChanged = { _, _ in }
        case .sourceChanged(let body):
            kind = .sourceChanged
            changeHandler = { _ in }
            sourceChanged = body
        }
        super.init(group: group, onOwnerReleased: onOwnerReleased, queue: queue, keptAlive: keptAlive)
    }
}

/// A subscriber to values of type `Element`: where its handler runs and what it is handed.
@usableFromInline
final class Subscriber<Element>: SubscriptionEntry, @unchecked Sendable {
    @usableFromInline
    enum Handler {
        case value((Element) -> Void)
        case change((StateChange<Element>) -> Void)
        /// A derived state's watch of one of its sources: told of each change with the object
        /// the subscriber keeps (the derived state's engine, see ``LeafDerivation``) and the
        /// context of the thread delivering it, which it hands its own change to. Handed what it
        /// needs, unretained (the subscriber's options keep it), the function captures nothing, so
        /// a call retains nothing.
        case sourceChanged((Unmanaged<AnyObject>, DeliveryContext) -> Void)
    }

    /// The value handler, or one that does nothing for another kind of handler. A closure in a
    /// non-optional field of its own is called in place; one in an enum's payload or an
    /// `Optional` is copied out first, a retain and a release of what it captures on every call.
    @usableFromInline
    let valueHandler: (Element) -> Void

    @inlinable
    init(
        link: SubscriberLink,
        group: __shared ProjectionGroupBase? = nil,
        startVersion: UInt64,
        queue: DispatchQueue?,
        handler: Handler,
        onOwnerReleased: (@Sendable () -> Void)? = nil,
        keeping keptAlive: AnyObject? = nil
    ) {
        if case .value(let body) = handler {
            self.valueHandler = body
        } else {
            self.valueHandler = { _ in }
        }
        if queue == nil, case .value = handler {
            let options =
                group == nil && onOwnerReleased == nil && keptAlive == nil
                ? nil
                : SubscriberOptions(group: group, onOwnerReleased: onOwnerReleased, queue: nil, keptAlive: keptAlive)
            super.init(link: link, startVersion: startVersion, options: options)
        } else {
            let options = HandlerOptions(
                handler: handler, group: group, onOwnerReleased: onOwnerReleased, queue: queue, keptAlive: keptAlive)
            super.init(link: link, startVersion: startVersion, options: options, handlerIsInOptions: true)
        }
    }

    /// The options that hold the handler; only when ``SubscriptionEntry/handlerIsInOptions``.
    @inlinable
    var handlerOptions: HandlerOptions<Element> {
        unsafeDowncast(options.unsafelyUnwrapped, to: HandlerOptions<Element>.self)
    }

    /// Whether this subscriber wants old values and timestamps, not just new values.
    @inlinable
    var wantsChanges: Bool {
        handlerIsInOptions && handlerOptions.kind == .change
    }

    /// Hands `change` to the handler, on its queue if it has one. `depth` is the change's place in
    /// a chain of handler-triggered writes; `context` is the delivering thread's.
    @inlinable
    func receive(
        _ change: @autoclosure () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: @autoclosure () -> DeliveryContext
    ) {
        guard isActive else { return }
        guard handlerIsInOptions else { return valueHandler(value) }
        // Unretained: the subscriber keeps its options, which a strong local retained and
        // released on every delivery.
        unowned(unsafe) let options = handlerOptions
        guard options.hasQueue else {
            switch options.kind {
            case .change: options.changeHandler(change())
            case .sourceChanged: options.sourceChanged(.passUnretained(options.keptAlive.unsafelyUnwrapped), context())
            case .value: preconditionFailure("a value handler without a queue is called as valueHandler")
            }
            return
        }
        receiveOnQueue(change(), value: value, depth: depth)
    }

    /// Queues the call of a subscriber whose handler runs on a queue.
    @inlinable
    func receiveOnQueue(_ change: @autoclosure () -> StateChange<Element>, value: Element, depth: Int) {
        let options = handlerOptions
        let queue = options.queue.unsafelyUnwrapped
        let call: () -> Void
        switch options.kind {
        case .value: call = { [valueHandler] in valueHandler(value) }
        case .change:
            let record = change()
            call = { [options] in options.changeHandler(record) }
        case .sourceChanged:
            call = { [options] in
                options.sourceChanged(.passUnretained(options.keptAlive.unsafelyUnwrapped), .current)
            }
        }
        enqueue(call, on: queue, depth: depth)
    }

    /// ``receive(_:value:depth:in:)``, for code not specialised for `Element` (a projection
    /// group's, a new subscriber's first call): it calls a value handler without mentioning
    /// `StateChange`, whose metadata such code otherwise looks up on every call, whatever the
    /// handler (measured: ~330 instructions a subscriber; 1,000 subscribers to one projection
    /// went from 458,419 to 98,461 instructions a write).
    @usableFromInline
    func receiveInGenericCode(
        _ change: @autoclosure () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: @autoclosure () -> DeliveryContext
    ) {
        if !handlerIsInOptions {
            if isActive { valueHandler(value) }
            return
        }
        receiveOtherwise(change(), value: value, depth: depth, in: context())
    }

    @inline(never)
    private func receiveOtherwise(
        _ change: @autoclosure () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: @autoclosure () -> DeliveryContext
    ) {
        receive(change(), value: value, depth: depth, in: context())
    }

    @usableFromInline
    func enqueue(_ call: @escaping () -> Void, on queue: DispatchQueue, depth: Int) {
        let delivery = UncheckedSendable(call)
        let recentKeys = DeliveryContext.current.recentKeys
        queue.async { [self] in
            guard isActive else { return }
            DeliveryContext.current.run(atDepth: depth, recentKeys: recentKeys) { delivery.value() }
        }
    }
}
