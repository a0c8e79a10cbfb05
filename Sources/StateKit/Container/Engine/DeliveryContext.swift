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

/// A container whose pending changes a thread has promised to deliver, with the function that
/// delivers them.
///
/// The function is made where the write was scheduled, in code specialised for the container's
/// value type, so draining the trampoline runs specialised code too (through a protocol witness
/// it ran the generic dispatcher, which looked up generic metadata for every queued type).
@usableFromInline
struct PendingDelivery {
    let container: AnyObject
    let deliver: (AnyObject, DeliveryContext) -> Void

    @usableFromInline
    init(container: AnyObject, deliver: @escaping (AnyObject, DeliveryContext) -> Void) {
        self.container = container
        self.deliver = deliver
    }
}

/// A follow-up a subscriber computed while a container was delivered (a derived state's change,
/// say), that the container's delivery hands on as soon as its own handlers have run; see
/// ``DeliveryContext/holdFollowUp(of:deliver:)``.
///
/// The subscriber is not retained: the container's subscriber list keeps it alive, and the
/// delivery's claim keeps that list until it hands the follow-up on (``UnretainedSubscribers``).
@usableFromInline
struct HeldFollowUp {
    let subscriber: Unmanaged<AnyObject>
    let deliver: (AnyObject, DeliveryContext) -> Void

    @usableFromInline
    init(subscriber: AnyObject, deliver: @escaping (AnyObject, DeliveryContext) -> Void) {
        self.subscriber = .passUnretained(subscriber)
        self.deliver = deliver
    }
}

/// Per-thread delivery bookkeeping: the trampoline that keeps handler-triggered writes flat.
///
/// A write made inside a handler must not deliver recursively (a 10,000-step chain of
/// handler-triggered writes would overflow the stack), so while a thread is delivering, a write it
/// makes to a container nobody is delivering claims that container and queues it here; the
/// outermost delivery on the thread drains the queue. `depth` counts how many handler-triggered
/// writes led to the change being delivered, which is how update cycles are caught.
///
/// A context is a pointer to its thread's fields, which the thread-specific slot owns and frees
/// when the thread exits: handing it around touches no reference count, and only its own thread
/// ever reads or writes it, so accesses skip run-time exclusivity checks.
@usableFromInline
struct DeliveryContext {
    @usableFromInline
    struct Fields {
        /// This thread's identity; see ``DeliveryContext/id``.
        @usableFromInline
        let id: ID
        @usableFromInline
        var isDelivering = false
        @usableFromInline
        var depth = 0
        var containerRunningHook: ObjectIdentifier?
        @usableFromInline
        var recentKeys: [String] = []
        @usableFromInline
        var queue = FIFOQueue<PendingDelivery>()
        @usableFromInline
        var heldFollowUp: HeldFollowUp?
        /// Set while several containers are delivered as one step (a transaction's commit), so
        /// that follow-ups wait for all of them (through the queue).
        @usableFromInline
        var postponesFollowUps = false
        /// Room that handlers' writes to containers past their limit owe: waited for once the
        /// outermost delivery has ended, when the thread holds no container's claim.
        @usableFromInline
        var owedWaits: [(roomForMore: DispatchSemaphore, claim: DeliveryClaim)] = []
    }

    /// Identifies a thread's context, so a deliverer can tell the deliveries its own thread
    /// queued from those of others: a number never handed out twice. (Not the context's address:
    /// a thread's context is freed when it ends, and the allocator hands that address to a thread
    /// started later, which then took the ended thread's queued changes for its own.)
    @usableFromInline
    typealias ID = UInt64

    /// The identity the newest context took.
    private static let lastID = Atomic<ID>(0)

    @usableFromInline
    let fields: UnsafeMutablePointer<Fields>

    @usableFromInline
    init(fields: UnsafeMutablePointer<Fields>) {
        self.fields = fields
    }

    /// This thread's identity among deliverers.
    @inlinable
    var id: ID { fields.pointee.id }

    /// Whether this thread is running handlers right now.
    @inlinable
    var isDelivering: Bool {
        get { fields.pointee.isDelivering }
        nonmutating set { fields.pointee.isDelivering = newValue }
    }

    /// The chain depth of the change whose handlers are running.
    @inlinable
    var depth: Int {
        get { fields.pointee.depth }
        nonmutating set { fields.pointee.depth = newValue }
    }

    /// The container whose `didModify()` hook is running on this thread, if any.
    @usableFromInline
    var containerRunningHook: ObjectIdentifier? {
        get { fields.pointee.containerRunningHook }
        nonmutating set { fields.pointee.containerRunningHook = newValue }
    }

    /// Keys of the changes delivered most recently near the cycle limit, for the cycle diagnostic.
    var recentKeys: [String] {
        _read { yield fields.pointee.recentKeys }
        nonmutating _modify { yield &fields.pointee.recentKeys }
    }

    private var queue: FIFOQueue<PendingDelivery> {
        _read { yield fields.pointee.queue }
        nonmutating _modify { yield &fields.pointee.queue }
    }

    @usableFromInline
    static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        let error = pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            let fields = pointer.assumingMemoryBound(to: Fields.self)
            #else
            guard let fields = pointer?.assumingMemoryBound(to: Fields.self) else { return }
            #endif
            // A layer that keeps the thread's context (a transaction log does) first forgets it,
            // as what freeing the fields releases may use that layer.
            threadExitHook.current?.run()
            fields.deinitialize(count: 1)
            fields.deallocate()
        }
        precondition(error == 0, "pthread_key_create failed: \(error)")
        return key
    }()

    /// What a thread's exit runs before it frees the thread's context, installed by a layer that
    /// keeps a copy of the context (a transaction log does) so that it forgets it first: the
    /// engine names no such layer.
    static let threadExitHook = OnceInstalledReference<ThreadExitHook>()

    /// The calling thread's context, created on first use.
    @inlinable
    static var current: DeliveryContext {
        current(key: threadKey)
    }

    /// The calling thread's context, given ``threadKey`` (which a container keeps in a field).
    @inlinable
    static func current(key: pthread_key_t) -> DeliveryContext {
        if let pointer = pthread_getspecific(key) {
            return DeliveryContext(fields: pointer.assumingMemoryBound(to: Fields.self))
        }
        return makeCurrent()
    }

    /// Creates the calling thread's context, which it has none of yet.
    @usableFromInline
    static func makeCurrent() -> DeliveryContext {
        let fields = UnsafeMutablePointer<Fields>.allocate(capacity: 1)
        fields.initialize(to: Fields(id: lastID.add(1, ordering: .relaxed).newValue))
        pthread_setspecific(threadKey, fields)
        return DeliveryContext(fields: fields)
    }

    /// Queues a container this thread has claimed; the outermost delivery drains it.
    @usableFromInline
    func enqueue(_ delivery: consuming PendingDelivery) {
        queue.append(consume delivery)
    }

    /// Whether a subscriber that computed a follow-up while a container was delivered may have
    /// that delivery hand it on (``holdFollowUp(of:deliver:)``): only while nothing is queued on
    /// this thread, so it still comes after everything queued before it.
    @inlinable
    var mayHoldFollowUp: Bool {
        fields.pointee.heldFollowUp == nil && fields.pointee.queue.isEmpty
            && !fields.pointee.postponesFollowUps
    }

    /// Keeps a subscriber's follow-up for the container's delivery running on this thread, which
    /// hands it on once the container's handlers have run (``deliverHeldFollowUp()``), where the
    /// queue would have delivered it next: the follow-up costs no queueing, and no retain.
    ///
    /// Call it only from a handler run by a container's ``State/notify(_:subscribers:others:in:)``
    /// (which hands the follow-up on, while the subscriber list it holds keeps `subscriber`
    /// alive), and only if ``mayHoldFollowUp``.
    @inlinable
    func holdFollowUp(of subscriber: AnyObject, deliver: @escaping (AnyObject, DeliveryContext) -> Void) {
        fields.pointee.heldFollowUp = HeldFollowUp(subscriber: subscriber, deliver: deliver)
    }

    /// Hands on the follow-up held during the delivery that is finishing, if any.
    @inlinable
    func deliverHeldFollowUp() {
        if fields.pointee.heldFollowUp != nil { deliverHeld() }
    }

    /// Hands on the held follow-up (the caller checked that there is one).
    @usableFromInline
    func deliverHeld() {
        let held = fields.pointee.heldFollowUp.unsafelyUnwrapped
        fields.pointee.heldFollowUp = nil
        held.subscriber._withUnsafeGuaranteedRef { held.deliver($0, self) }
    }

    /// Marks this thread as delivering; ``endOutermost()`` must follow.
    @usableFromInline
    func beginOutermost() {
        isDelivering = true
        depth = 0
    }

    /// Drains every container that handlers claimed during the outermost delivery, in the order
    /// they were claimed, then marks this thread as no longer delivering.
    @inlinable
    func endOutermost() {
        assert(fields.pointee.heldFollowUp == nil, "a held follow-up was not handed on")
        if fields.pointee.queue.isEmpty && fields.pointee.recentKeys.isEmpty && fields.pointee.owedWaits.isEmpty {
            depth = 0
            isDelivering = false
        } else {
            drainAndEnd()
        }
    }

    @usableFromInline
    func drainAndEnd() {
        while let next = queue.popFirst() {
            next.deliver(next.container, self)
        }
        if !recentKeys.isEmpty { recentKeys.removeAll() }
        depth = 0
        isDelivering = false
        if !fields.pointee.owedWaits.isEmpty { waitForOwedRoom() }
    }

    /// Records that a handler's write on this thread queued a change on a container (whose claim
    /// is `claim`) past its limit; the thread waits for `roomForMore` when its outermost delivery
    /// ends, or, as an overflow deliverer, before its next item.
    @usableFromInline
    func owe(_ roomForMore: DispatchSemaphore, in claim: DeliveryClaim) {
        fields.pointee.owedWaits.append((roomForMore, claim))
    }

    /// How many waits for room this thread owes; see ``forgiveOwedRoom(since:)``.
    var owedCount: Int { fields.pointee.owedWaits.count }

    /// Forgives the waits for room owed since ``owedCount`` was `count`: for a write that adds at
    /// most one change to a container's queue however often it is made (a binding's,
    /// ``BindingForwarder``), so that the queue stays bounded without holding back the thread.
    func forgiveOwedRoom(since count: Int) {
        if fields.pointee.owedWaits.count > count { fields.pointee.owedWaits.removeSubrange(count...) }
    }

    /// Waits for room in every container that this thread's handlers wrote past its limit, now that
    /// it delivers nothing and holds no claim: as a writer outside handlers waits at the limit.
    /// Each container's deliverer frees room by delivering (an overflow deliverer never waits for
    /// long, see ``waitForOwedRoom(deliveringFrom:)``), so the wait ends; a thread that writes
    /// through forwarding handlers is held back by the slowest container it feeds, and no queue
    /// grows without bound.
    private func waitForOwedRoom() {
        var owed: [(roomForMore: DispatchSemaphore, claim: DeliveryClaim)] = []
        swap(&owed, &fields.pointee.owedWaits)
        for debt in owed { debt.roomForMore.wait() }
    }

    /// For a container's overflow deliverer (whose claim is `claim`), between the items of its
    /// backlog: delivers what its handlers queued on this thread, then waits for the room they owe, so that forwarding a backlog to a slower
    /// container is held back item by item. It holds the claim meanwhile, and its serial queue is
    /// the container's only way to deliver a backlog, so it never waits for long: not for a
    /// container whose own overflow deliverer is waiting (handlers forwarding both ways, where
    /// each would wait for the other), and at most 50 ms otherwise; what it does not wait for is
    /// forgiven.
    func waitForOwedRoom(deliveringFrom claim: DeliveryClaim) {
        guard !fields.pointee.owedWaits.isEmpty else { return }
        // First deliver the containers its handlers claimed (queued on this thread): one of them
        // may be the very container it owes room in, which would otherwise wait for this backlog.
        while let next = queue.popFirst() {
            next.deliver(next.container, self)
        }
        var owed: [(roomForMore: DispatchSemaphore, claim: DeliveryClaim)] = []
        swap(&owed, &fields.pointee.owedWaits)
        claim.isWaitingForRoom.store(true, ordering: .releasing)
        for debt in owed where !debt.claim.isWaitingForRoom.load(ordering: .acquiring) {
            _ = debt.roomForMore.wait(timeout: .now() + .milliseconds(50))
        }
        claim.isWaitingForRoom.store(false, ordering: .releasing)
    }

    /// Runs one handler call at `depth`, as the outermost delivery if this thread has none.
    ///
    /// A handler called on a queue (a queue subscriber, a listener) continues the chain of the
    /// change that scheduled it: `depth` and the chain's recent keys travel with the call, so a
    /// cycle through queues is cut, and reported, as one on a single thread is.
    @usableFromInline
    func run(atDepth depth: Int, recentKeys: [String], _ body: () -> Void) {
        if isDelivering {
            let saved = self.depth
            self.depth = depth
            body()
            self.depth = saved
        } else {
            beginOutermost()
            self.depth = depth
            if !recentKeys.isEmpty { self.recentKeys = recentKeys }
            body()
            endOutermost()
        }
    }

    /// Remembers `key` for the cycle diagnostic (only the last few keys of a chain are kept).
    func noteChainStep(_ key: String) {
        if recentKeys.count == 16 { recentKeys.removeFirst() }
        recentKeys.append(key)
    }
}

/// What runs on a thread's exit before its ``DeliveryContext`` is freed; see
/// ``DeliveryContext/threadExitHook``.
final class ThreadExitHook: Sendable {
    let run: @Sendable () -> Void

    init(_ run: @escaping @Sendable () -> Void) {
        self.run = run
    }
}
