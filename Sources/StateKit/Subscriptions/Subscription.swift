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
    /// The subscriber's address, retained until the subscription is cancelled, and in the low
    /// bits (an object's address is a multiple of 8) how many ``isActive`` calls are reading it:
    /// ``cancel()`` releases the subscriber only when none is. One word, so that a kept token is
    /// as small as a token can be. The token keeps no reference to its container: the
    /// subscriber's link reaches it.
    @usableFromInline
    let entry: Atomic<UInt>

    /// The bits of ``entry`` that count readers.
    @usableFromInline
    static var readerBits: UInt { 7 }

    /// A token for `entry`.
    @inlinable
    init(_ entry: SubscriptionEntry) {
        let address = UInt(bitPattern: Unmanaged.passRetained(entry).toOpaque())
        assert(address & Self.readerBits == 0, "StateKit: a subscriber's address has no room to count readers")
        self.entry = Atomic(address)
    }

    /// A subscription that was never live: what subscribing to a container already gone gives.
    init() {
        self.entry = Atomic(0)
    }

    deinit {
        cancel()
    }

    /// Stops the subscription. Calling it more than once does nothing.
    public func cancel() {
        // A load first: a token cancelled by hand is cancelled again by its `deinit`, and the
        // load spares that second call an atomic operation.
        var word = entry.load(ordering: .relaxed)
        while true {
            guard word & ~Self.readerBits != 0 else { return }
            let (exchanged, original) = entry.compareExchange(
                expected: word, desired: word & Self.readerBits, ordering: .acquiringAndReleasing)
            if exchanged { break }
            word = original
        }
        let subscriber = Unmanaged<SubscriptionEntry>.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.readerBits)!)
        // Borrowed: `takeUnretainedValue()` retained and released it around the call.
        subscriber._withUnsafeGuaranteedRef { $0.cancel() }
        // Readers that counted themselves before the exchange may still read the subscriber;
        // none can count itself after it.
        if word & Self.readerBits != 0 { waitForReaders() }
        subscriber.release()
    }

    /// Waits until no ``isActive`` that counted itself before ``cancel()`` took the subscriber is
    /// still reading it: a few loads, unless the reading thread was preempted; then this one
    /// sleeps in short steps rather than spin, so that the reader gets a core.
    @inline(never)
    private func waitForReaders() {
        var attempts = 0
        while entry.load(ordering: .acquiring) != 0 {
            attempts += 1
            if attempts < 64 { sched_yield() } else { usleep(50) }
        }
    }

    /// Whether the subscription is still live: not cancelled, and its container still exists.
    public var isActive: Bool {
        guard let subscriber = beginReading() else { return false }
        defer { endReading() }
        return subscriber._withUnsafeGuaranteedRef { $0.isOwnerLive }
    }

    /// The subscriber, counted as read until ``endReading()``, or `nil` once cancelled.
    func beginReading() -> Unmanaged<SubscriptionEntry>? {
        var word = entry.load(ordering: .relaxed)
        while true {
            guard word & ~Self.readerBits != 0 else { return nil }
            if word & Self.readerBits == Self.readerBits {
                // As many readers as the bits count: wait for one to finish.
                sched_yield()
                word = entry.load(ordering: .relaxed)
                continue
            }
            let (exchanged, original) = entry.compareExchange(
                expected: word, desired: word + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            word = original
        }
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.readerBits)!)
    }

    /// Ends a read that ``beginReading()`` began.
    func endReading() {
        entry.subtract(1, ordering: .releasing)
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
/// is allocated, initialised and destroyed with each subscription, so a subscriber with no options
/// is three words and its handler.
@usableFromInline
class SubscriptionEntry: @unchecked Sendable {
    /// The version current when the subscriber joined, in the low bits, and above it three
    /// flags: ``inactiveBit``, ``handlerInOptionsBit``, and ``largeVersionBit`` when the version
    /// does not fit (the options then hold it). Laid out so that one comparison with a change's
    /// version tells that an active subscriber with a value handler joined before it (see
    /// ``isCommon(_:joinedBefore:)``). Only ``cancel()`` changes it.
    @usableFromInline
    let state: Atomic<UInt64>
    /// The subscriber's ``SubscriberLink``; or, if it has options, its ``SubscriberOptions``,
    /// which hold the link. One field, not two, since most subscribers have no options.
    @usableFromInline
    let linkOrOptions: AnyObject

    @usableFromInline
    static var inactiveBit: UInt64 { 1 << 63 }
    @usableFromInline
    static var handlerInOptionsBit: UInt64 { 1 << 62 }
    @usableFromInline
    static var largeVersionBit: UInt64 { 1 << 61 }
    /// The largest start version ``state`` holds; a larger one needs options.
    @usableFromInline
    static var largestPackedVersion: UInt64 { largeVersionBit - 1 }

    /// A subscriber with no options that joined at `startVersion`, which must be at most
    /// ``largestPackedVersion``.
    @usableFromInline
    init(link: SubscriberLink, startVersion: UInt64) {
        linkOrOptions = link
        state = Atomic(startVersion)
    }

    /// A subscriber with `options`, which hold its link and, if it joined at a version larger
    /// than ``largestPackedVersion``, that version.
    @usableFromInline
    init(options: SubscriberOptions, handlerIsInOptions: Bool) {
        linkOrOptions = options
        var state =
            options.startVersion > Self.largestPackedVersion
            ? Self.largeVersionBit | Self.largestPackedVersion : options.startVersion
        if handlerIsInOptions { state |= Self.handlerInOptionsBit }
        self.state = Atomic(state)
    }

    /// ``state`` now, as a delivery reads it.
    @inlinable
    final var currentState: UInt64 {
        state.load(ordering: .acquiring)
    }

    /// Whether `state`, a subscriber's ``state``, says it is active, with a value handler on the
    /// delivering thread, and joined before `version`: the common case, in one comparison. A
    /// delivery then calls ``Subscriber/valueHandler`` itself, and
    /// ``Subscriber/receiveUncommon(_:value:depth:in:ifJoinedBefore:)`` otherwise.
    @inlinable
    static func isCommon(_ state: UInt64, joinedBefore version: UInt64) -> Bool {
        // A state below both has no flag set, and a start version below `version`.
        state < min(version, largeVersionBit)
    }

    /// Whether the subscriber, whose ``state`` is `state`, is active and joined before
    /// `version`: it is handed no change at or before the version current when it joined.
    @inlinable
    final func isActive(andJoinedBefore version: UInt64, state: UInt64) -> Bool {
        guard state & Self.inactiveBit == 0 else { return false }
        guard state & Self.largeVersionBit != 0 else { return state & Self.largestPackedVersion < version }
        return unsafeOptions.startVersion < version
    }

    /// Whether the subscriber has options: ``linkOrOptions`` is not the link.
    @inlinable
    final var hasOptions: Bool {
        ObjectIdentifier(type(of: linkOrOptions)) != ObjectIdentifier(SubscriberLink.self)
    }

    /// What the subscriber has beyond a value handler, if anything.
    @inlinable
    final var options: SubscriberOptions? {
        hasOptions ? unsafeOptions : nil
    }

    /// The options; only when the subscriber has them.
    @inlinable
    final var unsafeOptions: SubscriberOptions {
        unsafeDowncast(linkOrOptions, to: SubscriberOptions.self)
    }

    /// Whether ``options`` holds the handler: otherwise it is ``Subscriber/valueHandler``.
    @inlinable
    final var handlerIsInOptions: Bool {
        state.load(ordering: .relaxed) & Self.handlerInOptionsBit != 0
    }

    /// Calls `body` with the link through which the subscriber reaches the container that
    /// delivers to it (which it does not keep alive), borrowed: a link returned from a property
    /// was retained and released around each use.
    final func withLink<Result>(_ body: (SubscriberLink) -> Result) -> Result {
        let link: Unmanaged<SubscriberLink> =
            hasOptions
            ? .passUnretained(unsafeOptions.link)
            : .passUnretained(unsafeDowncast(linkOrOptions, to: SubscriberLink.self))
        return link._withUnsafeGuaranteedRef(body)
    }

    /// The projection group this subscriber belongs to, or `nil` for the container's own subscribers.
    @inlinable
    final var group: ProjectionGroupBase? {
        guard hasOptions else { return nil }
        // Unretained: the subscriber keeps its options.
        unowned(unsafe) let options = unsafeOptions
        return options.group
    }

    /// Tells the subscriber its container is gone; called once, from the container's `deinit`.
    final func ownerReleased() {
        guard isActive, let onOwnerReleased = options?.onOwnerReleased else { return }
        onOwnerReleased()
    }

    @inlinable
    final var isActive: Bool {
        currentState & Self.inactiveBit == 0
    }

    /// Whether the container that delivers to this subscriber has not been released.
    final var isOwnerLive: Bool {
        withLink { $0.isOwnerLive }
    }

    /// Called once, by the token whose exchange took the subscriber, so a load and a store are
    /// enough here: nothing else changes ``state``.
    final func cancel() {
        state.store(state.load(ordering: .relaxed) | Self.inactiveBit, ordering: .releasing)
        withLink { $0.remove(self) }
    }
}

/// What a subscriber has beyond a value handler called on the delivering thread: the projection
/// group it belongs to, what to call when its container goes away, a queue, what it keeps alive.
@usableFromInline
class SubscriberOptions: @unchecked Sendable {
    /// The subscriber's link (see ``SubscriptionEntry/linkOrOptions``).
    @usableFromInline
    let link: SubscriberLink
    /// The subscriber's start version, when it is too large for ``SubscriptionEntry/state``.
    @usableFromInline
    let startVersion: UInt64
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
        link: SubscriberLink,
        startVersion: UInt64,
        group: __shared ProjectionGroupBase?,
        onOwnerReleased: (@Sendable () -> Void)?,
        queue: DispatchQueue?,
        keptAlive: AnyObject?
    ) {
        self.link = link
        self.startVersion = startVersion
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
        link: SubscriberLink,
        startVersion: UInt64,
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
        super.init(
            link: link, startVersion: startVersion, group: group, onOwnerReleased: onOwnerReleased, queue: queue,
            keptAlive: keptAlive)
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
            if group == nil && onOwnerReleased == nil && keptAlive == nil
                && startVersion <= SubscriptionEntry.largestPackedVersion
            {
                super.init(link: link, startVersion: startVersion)
            } else {
                super.init(
                    options: SubscriberOptions(
                        link: link, startVersion: startVersion, group: group, onOwnerReleased: onOwnerReleased,
                        queue: nil, keptAlive: keptAlive),
                    handlerIsInOptions: false)
            }
        } else {
            super.init(
                options: HandlerOptions(
                    link: link, startVersion: startVersion, handler: handler, group: group,
                    onOwnerReleased: onOwnerReleased, queue: queue, keptAlive: keptAlive),
                handlerIsInOptions: true)
        }
    }

    /// The options that hold the handler; only when ``SubscriptionEntry/handlerIsInOptions``.
    @inlinable
    var handlerOptions: HandlerOptions<Element> {
        unsafeDowncast(linkOrOptions, to: HandlerOptions<Element>.self)
    }

    /// Whether this subscriber wants old values and timestamps, not just new values.
    @inlinable
    var wantsChanges: Bool {
        guard handlerIsInOptions else { return false }
        // Unretained: the subscriber keeps its options.
        unowned(unsafe) let options = handlerOptions
        return options.kind == .change
    }

    /// Hands `change` to the handler, on its queue if it has one, if the subscriber is active and
    /// joined before `version` (the change's; `.max` for a first call). For a subscriber whose
    /// ``SubscriptionEntry/state`` is not common (see
    /// ``SubscriptionEntry/isCommon(_:joinedBefore:)``): a delivery calls a common one's
    /// ``valueHandler`` itself. `depth` is the change's place in a chain of handler-triggered
    /// writes; `context` is the delivering thread's.
    ///
    /// Not inlined, so that the delivery loops stay small enough to be inlined in turn.
    @inlinable
    @inline(never)
    func receiveUncommon(
        _ change: () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: () -> DeliveryContext,
        ifJoinedBefore version: UInt64
    ) {
        let state = currentState
        guard isActive(andJoinedBefore: version, state: state) else { return }
        guard state & Self.handlerInOptionsBit != 0 else { return valueHandler(value) }
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

    /// ``receiveUncommon(_:value:depth:in:ifJoinedBefore:)`` for any subscriber, for code
    /// not specialised for `Element` (a projection group's, a new subscriber's first call): it
    /// calls a value handler without mentioning `StateChange`, whose metadata such code otherwise
    /// looks up on every call, whatever the handler (measured: ~330 instructions a subscriber;
    /// 1,000 subscribers to one projection went from 458,419 to 98,461 instructions a write).
    @usableFromInline
    func receiveInGenericCode(
        _ change: @autoclosure () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: @autoclosure () -> DeliveryContext,
        ifJoinedBefore version: UInt64
    ) {
        guard !Self.isCommon(currentState, joinedBefore: version) else { return valueHandler(value) }
        receiveUncommon(change, value: value, depth: depth, in: context, ifJoinedBefore: version)
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
