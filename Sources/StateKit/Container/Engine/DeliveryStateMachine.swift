import Dispatch
import Synchronization

/// Who delivers a container's changes, what waits for delivery, and who goes next.
///
/// One thread at a time delivers a container (it holds the ``DeliveryClaim``). Every event below
/// happens under the container's lock except ``DeliveryClaim/finishUnlessQueued()``, which a
/// deliverer with nothing queued uses to let go with one compare-exchange instead of taking the
/// lock again on every delivered write. Events return what the caller must do; the caller does it
/// after unlocking.
///
/// States (the claim is an atomic so that it can be released without the lock):
///
/// | state      | claim               | queue     |
/// | ---------- | ------------------- | --------- |
/// | idle       | `free`              | empty     |
/// | delivering | `claimed`           | empty     |
/// | backlogged | `claimedWithQueue`  | not empty, or subscriber lists retired |
///
/// Transitions:
///
/// | state      | event                                        | next       | action                                   |
/// | ---------- | -------------------------------------------- | ---------- | ---------------------------------------- |
/// | idle       | ``DeliveryClaim/take(withQueue:)`` (the fast path of a write outside handlers) | delivering | deliver it now, on the writer's thread |
/// | idle       | ``schedule(_:isInsideHandler:claim:)``, outside| delivering | ``Scheduling/deliverNow``                |
/// | idle (let go meanwhile) | ``schedule(_:isInsideHandler:claim:)`` | backlogged | ``Scheduling/deliverQueue`` or ``Scheduling/deliverAfterCurrentDelivery`` |
/// | idle       | ``schedule(_:isInsideHandler:claim:)``, inside | backlogged | ``Scheduling/deliverAfterCurrentDelivery`` |
/// | delivering | ``schedule(_:isInsideHandler:claim:)``         | backlogged | ``Scheduling/queued`` or ``Scheduling/queuedAtLimit`` |
/// | backlogged | ``schedule(_:isInsideHandler:claim:)``         | backlogged | ``Scheduling/queued`` or ``Scheduling/queuedAtLimit`` |
/// | delivering | ``DeliveryClaim/finishUnlessQueued()``        | idle       | none (no lock taken)                     |
/// | backlogged | ``next(for:isOverflow:claim:)``, head is the caller's | delivering or backlogged | ``Next/deliver(_:wakingWriters:)`` |
/// | backlogged | ``next(for:isOverflow:claim:)``, head is another's  | backlogged | ``Next/handOff(_:)``: the overflow deliverer takes over |
/// | backlogged | ``next(for:isOverflow:claim:)`` by the overflow deliverer | delivering or backlogged | ``Next/deliver(_:wakingWriters:)`` |
/// | delivering or backlogged | ``retire(_:claim:)`` (the audience changes) | backlogged | none: the deliverer comes for the list with ``takeRetired()`` before it lets go |
///
/// The rules this encodes (see the "Delivery semantics" article):
/// - A writer delivers its own change and the chain its own handlers write, never changes other
///   threads queued after it: when the head of the queue is another thread's, the claim goes to
///   the container's *overflow deliverer*, a job on a serial queue of the container's own that
///   delivers the backlog in order and lets go when it is empty. So a writer's work is bounded by what it caused.
/// - A write made outside any handler while another thread delivers is queued and returns at
///   once, unless more than ``pendingLimit`` items are queued and a change of the writer's own is
///   already past that limit: then it waits until the deliverer has taken the queue down to
///   ``resumeLimit``, or has delivered the writer's own earlier changes (backpressure), so memory
///   stays bounded when handlers are slower than writers, and a writer into a container that
///   others keep at the limit does not wait for them. It waits only for changes made before its own.
/// - A write made inside a handler never waits: it is queued and delivered after the current
///   delivery, so handler chains across containers cannot deadlock. Such writes may take the
///   queue past the limit, by at most what the running handlers write.
///
/// A writer can still be made to wait by a handler of the change ahead of it. So a handler that
/// blocks on another thread (`DispatchQueue.main.sync`) while that thread writes the same
/// container deadlocks only when the queue is already at its limit; below it the writer returns.
@usableFromInline
struct DeliveryStateMachine<Value> {
    /// How many queued deliveries make a writer outside a handler wait. 8 KB values keep the
    /// backlog of one container under 9 MB.
    @usableFromInline
    static var pendingLimit: Int { 1_024 }
    /// How short the queue must get before waiting writers go on: 7/8 of the limit. Resuming at
    /// the limit itself made every contended write block (8 threads making 800,000 changes took 4x
    /// as long); resuming at half made a waiting writer wait for up to 512 deliveries (over 250 ms
    /// with a 20 µs handler under ThreadSanitizer). At 7/8 a writer waits for at most 128.
    @usableFromInline
    static var resumeLimit: Int { pendingLimit - pendingLimit / 8 }

    /// What waits for the deliverer, in version order.
    @usableFromInline
    var queue = FIFOQueue<PendingItem<Value>>()
    /// Writers waiting for room, each with the count of ``delivered`` at which it goes on even if
    /// the queue is still above ``resumeLimit`` (see ``registerWaitingWriter(isInsideHandler:)``).
    @usableFromInline
    var waitingWriters: [(roomForMore: DispatchSemaphore, until: UInt64)] = []
    /// How many items the deliverers have taken from the queue while writers waited.
    @usableFromInline
    var delivered: UInt64 = 0
    /// Subscriber lists the audience replaced while the claim was held, kept for the claim's holder,
    /// which may be reading them unretained (``UnretainedSubscribers``).
    @usableFromInline
    var retiredSubscribers: [ContiguousArray<Subscriber<Value>>] = []
    /// Where the overflow deliverer runs; made on the first hand-off. A private serial queue, not
    /// a global one: it gets a thread even when every thread of the global pool is blocked (on
    /// Linux that pool is as wide as the machine, and writers waiting at the limit would starve
    /// the deliverer they wait for).
    @usableFromInline
    var overflowQueue: DispatchQueue?

    init() {}

    /// What a scheduled delivery asks of the thread that scheduled it.
    @usableFromInline
    enum Scheduling {
        /// The caller holds the claim and the item was not queued: deliver it now, then what
        /// its own handlers queue.
        case deliverNow
        /// The caller holds the claim (the deliverer let go while it queued): deliver the queue now.
        case deliverQueue
        /// The caller holds the claim but is inside a handler: queue the container on the thread's
        /// trampoline, to deliver after the current delivery.
        case deliverAfterCurrentDelivery
        /// Another thread delivers it; the caller returns.
        case queued
        /// Another thread delivers it, and the queue is at its limit: wait on the semaphore.
        case queuedAtLimit(DispatchSemaphore)
        /// Another thread delivers it, the queue is past its limit, and the caller is inside a
        /// handler, which must not wait: the thread waits on the semaphore once its outermost
        /// delivery has ended (``DeliveryContext/owe(_:in:)``), so a handler that forwards changes to
        /// a slower container holds back the writers that made them.
        case queuedOverLimit(DispatchSemaphore)
    }

    /// What a deliverer does next, having found items queued.
    @usableFromInline
    enum Next {
        /// Deliver this item; then signal the writers that were waiting for room.
        case deliver(PendingItem<Value>, wakingWriters: [DispatchSemaphore])
        /// The queue emptied in the meantime: let go (with ``DeliveryClaim/finishUnlessQueued()``).
        case retry
        /// The head is another thread's: start the overflow deliverer on this queue; it now holds
        /// the claim.
        case handOff(DispatchQueue)
    }

    /// Queues `item`, or makes the thread that made it the deliverer.
    /// Call it with the lock held.
    @inlinable
    @inline(__always)
    mutating func schedule(
        _ item: PendingItem<Value>,
        isInsideHandler: Bool,
        claim: DeliveryClaim
    ) -> Scheduling {
        if claim.isFree {
            if !isInsideHandler {
                claim.take()
                return .deliverNow
            }
            queue.append(item)
            claim.take(withQueue: true)
            return .deliverAfterCurrentDelivery
        }
        queue.append(item)
        if !claim.markQueued() {
            // The deliverer let go between our look and our queueing: the queue is ours alone.
            claim.take(withQueue: true)
            return isInsideHandler ? .deliverAfterCurrentDelivery : .deliverQueue
        }
        guard queue.count > Self.pendingLimit,
            let roomForMore = registerWaitingWriter(isInsideHandler: isInsideHandler)
        else { return .queued }
        return isInsideHandler ? .queuedOverLimit(roomForMore) : .queuedAtLimit(roomForMore)
    }

    /// The rest of ``schedule(_:isInsideHandler:claim:)`` when the item just queued took the queue
    /// past ``pendingLimit``: registers its writer among ``waitingWriters`` and returns the
    /// semaphore it waits on, or returns `nil` when it need not wait.
    ///
    /// A writer outside handlers waits for its own share only, and only when a change of its own
    /// queued earlier is still past the limit: until the deliverer has taken the queue down to
    /// ``resumeLimit``, or has delivered the writer's own earlier changes, whichever comes first.
    /// So a writer into a container that another thread's writes keep at the limit returns at once
    /// (it waited for 128 deliveries, over a second on a busy machine, issue 43), as does one whose
    /// earlier change has moved within the limit (it waited for 128 deliveries at each write into
    /// a binding storm); the queue stays bounded: past the limit, each thread has at most two
    /// changes of its own, or waits. A write inside a handler owes the wait until the queue is down
    /// to ``resumeLimit`` (``Scheduling/queuedOverLimit(_:)``).
    ///
    /// It reads the writer from the newest item, the one just queued, and leaves making the
    /// ``Scheduling`` to the inlined caller: taking the item's origin, or returning a ``Scheduling``
    /// made out of line, made every scheduled change pay for this path (measured: the hook path
    /// copied the item in more pieces and released a ``Scheduling`` after switching on it).
    @usableFromInline
    mutating func registerWaitingWriter(isInsideHandler: Bool) -> DispatchSemaphore? {
        var until = UInt64.max
        if !isInsideHandler {
            let origin = queue.last!.origin
            let ownAhead = queue.countThroughLast(ofFirst: queue.count - 1) { $0.origin == origin }
            guard ownAhead > Self.pendingLimit else { return nil }
            until = delivered + UInt64(ownAhead)
        }
        let semaphore = DispatchSemaphore(value: 0)
        waitingWriters.append((semaphore, until))
        return semaphore
    }

    /// Keeps `subscribers`, the list a change to the audience is about to replace, alive and
    /// unchanged while the claim's holder may read it, and makes the holder come for it before it
    /// lets go. Call it with the lock held.
    @inlinable
    mutating func retire(_ subscribers: ContiguousArray<Subscriber<Value>>, claim: DeliveryClaim) {
        guard !claim.isFree, claim.markQueued() else { return }
        retiredSubscribers.append(subscribers)
    }

    /// Hands the claim's holder the lists retired since it last asked, to release once it has
    /// unlocked. Call it with the lock held, before ``next(for:isOverflow:claim:)``.
    @inlinable
    mutating func takeRetired() -> [ContiguousArray<Subscriber<Value>>] {
        guard !retiredSubscribers.isEmpty else { return [] }
        var retired: [ContiguousArray<Subscriber<Value>>] = []
        swap(&retired, &retiredSubscribers)
        return retired
    }

    /// The deliverer's next step after ``DeliveryClaim/finishUnlessQueued()`` found items queued. Call it with
    /// the lock held.
    ///
    /// - Parameters:
    ///   - origin: The delivering thread. It delivers items it made itself (its handlers' writes,
    ///     its first calls), and hands the rest to the overflow deliverer.
    ///   - isOverflow: Whether the caller is the overflow deliverer, which delivers every item.
    ///   - claim: The container's claim, which the caller holds.
    @inlinable
    mutating func next(for origin: DeliveryContext.ID, isOverflow: Bool, claim: DeliveryClaim) -> Next {
        guard !queue.isEmpty else {
            claim.take()
            return .retry
        }
        guard isOverflow || queue.firstSatisfies({ $0.origin == origin }) else {
            if overflowQueue == nil { overflowQueue = DispatchQueue(label: "StateKit.overflow-delivery") }
            return .handOff(overflowQueue!)
        }
        let head = queue.popFirst()!
        if queue.isEmpty { claim.take() }
        guard !waitingWriters.isEmpty else { return .deliver(head, wakingWriters: []) }
        delivered += 1
        var woken: [DispatchSemaphore] = []
        if queue.count <= Self.resumeLimit {
            woken = waitingWriters.map(\.roomForMore)
            waitingWriters.removeAll()
        } else if waitingWriters.contains(where: { $0.until <= delivered }) {
            woken = waitingWriters.filter { $0.until <= delivered }.map(\.roomForMore)
            waitingWriters.removeAll { $0.until <= delivered }
        }
        return .deliver(head, wakingWriters: woken)
    }

    /// Checks that the claim matches the queue (debug builds only). Call it with the lock held.
    @inlinable
    func checkInvariants(claim: DeliveryClaim) {
        #if DEBUG
        let state = claim.state.load(ordering: .acquiring)
        precondition(
            (state == DeliveryClaim.claimedWithQueue) == (!queue.isEmpty || !retiredSubscribers.isEmpty),
            "delivery claim \(state) does not match a queue of \(queue.count) and "
                + "\(retiredSubscribers.count) retired lists")
        precondition(
            waitingWriters.isEmpty || state == DeliveryClaim.claimedWithQueue, "writers wait on an idle container")
        #endif
    }
}

/// The delivery claim: whether a thread delivers the container, and whether deliveries are queued.
///
/// Its transitions are ``DeliveryStateMachine``'s, made under the container's lock, except
/// ``finishUnlessQueued()``, which a deliverer with nothing queued uses without the lock. It lives
/// in an object of its own beside the state machine rather than inside it: the machine's events
/// are mutations of its value, and ThreadSanitizer would count each as a write of the claim's
/// bytes, racing with the lock-free `finishUnlessQueued()`. An object, like ``Lock``, so that the
/// containers of one persisted key share it with their cell.
@usableFromInline
final class DeliveryClaim: @unchecked Sendable {
    @usableFromInline
    static var free: UInt8 { 0 }
    @usableFromInline
    static var claimed: UInt8 { 1 }
    @usableFromInline
    static var claimedWithQueue: UInt8 { 2 }

    @usableFromInline
    let state = Atomic<UInt8>(0)
    /// Whether the container's overflow deliverer is waiting, between two items of its backlog,
    /// for room in a container its handlers forwarded to; see
    /// ``DeliveryContext/waitForOwedRoom(deliveringFrom:)``.
    let isWaitingForRoom = Atomic<Bool>(false)

    init() {}

    /// Whether nobody delivers the container (the machine is idle). Call it with the lock held.
    @inlinable
    var isFree: Bool {
        state.load(ordering: .acquiring) == Self.free
    }

    /// Makes the caller the deliverer, or records that the queue emptied. Call it with the lock held.
    @inlinable
    func take(withQueue: Bool = false) {
        state.store(withQueue ? Self.claimedWithQueue : Self.claimed, ordering: .releasing)
    }

    /// Records that an item was queued for the deliverer. Call it with the lock held.
    ///
    /// - Returns: `false` if the deliverer let go meanwhile (the claim is free).
    @usableFromInline
    func markQueued() -> Bool {
        let (exchanged, original) = state.compareExchange(
            expected: Self.claimed,
            desired: Self.claimedWithQueue,
            ordering: .acquiringAndReleasing
        )
        return exchanged || original != Self.free
    }

    /// Delivering → idle, unless something was queued. Called by the deliverer without the lock.
    ///
    /// - Returns: `false` if items are queued: the caller still holds the claim and must ask the
    ///   state machine what is next.
    @inlinable
    func finishUnlessQueued() -> Bool {
        state.compareExchange(expected: Self.claimed, desired: Self.free, ordering: .acquiringAndReleasing).exchanged
    }
}
