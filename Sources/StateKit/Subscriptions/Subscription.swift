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
    /// none is. The token keeps no reference to its container: a weak one (a side-table count to
    /// raise and lower) was about 15% of what a kept subscription cost.
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
        entry.takeUnretainedValue().cancel()
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
        return Unmanaged<SubscriptionEntry>.fromOpaque(pointer).takeUnretainedValue().owner != nil
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

/// Something that holds subscribers and can drop one.
@usableFromInline
protocol SubscriberOwner: AnyObject {
    func remove(_ entry: SubscriptionEntry)
}

/// A subscriber's life: active until cancelled, then removed from its owner.
@usableFromInline
class SubscriptionEntry: @unchecked Sendable {
    @usableFromInline
    let active = Atomic<Bool>(true)
    /// The container that delivers to this subscriber; weak, so tokens never keep containers alive.
    /// A `let`, like `group`: a class `var` costs a run-time exclusivity check on each access
    /// (measured: ~75 instructions, four times a subscribe and cancel).
    @usableFromInline
    weak let owner: (any SubscriberOwner)?
    /// The projection group this subscriber belongs to, or `nil` for the container's own subscribers.
    @usableFromInline
    weak let group: ProjectionGroupBase?
    /// The version current when the subscriber joined; it is handed no change at or before it.
    @usableFromInline
    let startVersion: UInt64
    /// Called if the container goes away while this subscriber is live (a `let`: a class `var`
    /// would cost a run-time exclusivity check on every subscribe).
    let onOwnerReleased: (@Sendable () -> Void)?

    /// `owner` and `group` are borrowed (`__shared`; `borrowing` refuses a weak store): passed
    /// owned, the container would be retained and released around the call, and a container that
    /// has weak references keeps its counts in a side table, where that cost ~200 instructions.
    @usableFromInline
    init(
        owner: __shared any SubscriberOwner,
        group: __shared ProjectionGroupBase? = nil,
        startVersion: UInt64,
        onOwnerReleased: (@Sendable () -> Void)? = nil
    ) {
        self.owner = owner
        self.group = group
        self.startVersion = startVersion
        self.onOwnerReleased = onOwnerReleased
    }

    /// Tells the subscriber its container is gone; called once, from the container's `deinit`.
    final func ownerReleased() {
        guard isActive, let onOwnerReleased else { return }
        onOwnerReleased()
    }

    @inlinable
    final var isActive: Bool {
        active.load(ordering: .acquiring)
    }

    final func cancel() {
        guard active.exchange(false, ordering: .acquiringAndReleasing) else { return }
        owner?.remove(self)
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
        /// needs, unretained (the subscriber keeps it), the function captures nothing, so a call
        /// retains nothing.
        case sourceChanged((Unmanaged<AnyObject>, DeliveryContext) -> Void)
    }

    /// The handler, or `nil` for a value handler without a queue (the common case): that one is
    /// ``valueHandler``.
    @usableFromInline
    let handler: Handler?
    /// A value handler called on the delivering thread, or one that does nothing when
    /// ``handler`` is set. A closure in a non-optional field of its own is called in place; one in
    /// an enum's payload or an `Optional` is copied out first, a retain and a release of what it
    /// captures on every call.
    @usableFromInline
    let valueHandler: (Element) -> Void
    /// `nil` delivers synchronously on the delivering thread.
    @usableFromInline
    let queue: DispatchQueue?

    /// What the subscriber keeps alive for as long as it lives: a derived state's engine, which a
    /// subscription to it keeps (as a Combine `AnyCancellable` keeps its chain), or which watches
    /// a source through it (``Handler/sourceChanged(_:)``).
    @usableFromInline
    let keptAlive: AnyObject?

    @inlinable
    init(
        owner: __shared any SubscriberOwner,
        group: __shared ProjectionGroupBase? = nil,
        startVersion: UInt64,
        queue: DispatchQueue?,
        handler: Handler,
        onOwnerReleased: (@Sendable () -> Void)? = nil,
        keeping keptAlive: AnyObject? = nil
    ) {
        if queue == nil, case .value(let body) = handler {
            self.handler = nil
            self.valueHandler = body
        } else {
            self.handler = handler
            self.valueHandler = { _ in }
        }
        self.queue = queue
        self.keptAlive = keptAlive
        super.init(owner: owner, group: group, startVersion: startVersion, onOwnerReleased: onOwnerReleased)
    }

    /// Whether this subscriber wants old values and timestamps, not just new values.
    @inlinable
    var wantsChanges: Bool {
        if case .change? = handler { return true }
        return false
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
        guard handler != nil else { return valueHandler(value) }
        guard let queue else {
            switch handler {
            case .change(let body)?: body(change())
            case .sourceChanged(let body)?: body(.passUnretained(keptAlive.unsafelyUnwrapped), context())
            case .value, nil: preconditionFailure("a value handler without a queue is valueHandler")
            }
            return
        }
        let call: () -> Void
        switch handler.unsafelyUnwrapped {
        case .value(let body): call = { body(value) }
        case .change(let body):
            let record = change()
            call = { body(record) }
        case .sourceChanged(let body): call = { [self] in body(.passUnretained(keptAlive.unsafelyUnwrapped), .current) }
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
        if handler == nil {
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
