#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// A container whose pending changes a thread has promised to deliver.
@usableFromInline
protocol PendingDelivery: AnyObject {
    func deliverPending(in context: DeliveryContext)
}

/// Per-thread delivery bookkeeping: the trampoline that keeps handler-triggered writes flat.
///
/// A write made inside a handler must not deliver recursively (a 10,000-step chain of
/// handler-triggered writes would overflow the stack), so while a thread is delivering, a write it
/// makes to a container nobody is delivering claims that container and queues it here; the
/// outermost delivery on the thread drains the queue. `depth` counts how many handler-triggered
/// writes led to the change being delivered, which is how update cycles are caught.
@usableFromInline
final class DeliveryContext {
    /// The context's fields, behind a pointer so that accesses skip run-time exclusivity checks
    /// (only its own thread ever touches a context).
    @usableFromInline
    struct Fields {
        @usableFromInline
        var isDelivering = false
        @usableFromInline
        var depth = 0
        var hookTarget: ObjectIdentifier?
        var recentKeys: [String] = []
        var queue: [any PendingDelivery] = []
        var head = 0
    }

    @usableFromInline
    let fields: UnsafeMutablePointer<Fields>

    init() {
        fields = .allocate(capacity: 1)
        fields.initialize(to: Fields())
    }

    deinit {
        fields.deinitialize(count: 1)
        fields.deallocate()
    }

    /// Whether this thread is running handlers right now.
    @inlinable
    var isDelivering: Bool {
        get { fields.pointee.isDelivering }
        set { fields.pointee.isDelivering = newValue }
    }

    /// The chain depth of the change whose handlers are running.
    @inlinable
    var depth: Int {
        get { fields.pointee.depth }
        set { fields.pointee.depth = newValue }
    }

    /// The container whose `didModify()` hook is running on this thread, if any.
    var hookTarget: ObjectIdentifier? {
        get { fields.pointee.hookTarget }
        set { fields.pointee.hookTarget = newValue }
    }

    /// Keys of the changes delivered most recently near the cycle limit, for the cycle diagnostic.
    var recentKeys: [String] {
        _read { yield fields.pointee.recentKeys }
        _modify { yield &fields.pointee.recentKeys }
    }

    private var queue: [any PendingDelivery] {
        _read { yield fields.pointee.queue }
        _modify { yield &fields.pointee.queue }
    }

    private var head: Int {
        get { fields.pointee.head }
        set { fields.pointee.head = newValue }
    }

    private static let threadKey: pthread_key_t = {
        var key = pthread_key_t()
        let error = pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<DeliveryContext>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<DeliveryContext>.fromOpaque(pointer).release() }
            #endif
        }
        precondition(error == 0, "pthread_key_create failed: \(error)")
        return key
    }()

    /// The calling thread's context, created on first use.
    @usableFromInline
    static var current: DeliveryContext {
        if let pointer = pthread_getspecific(threadKey) {
            return Unmanaged<DeliveryContext>.fromOpaque(pointer).takeUnretainedValue()
        }
        let context = DeliveryContext()
        pthread_setspecific(threadKey, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    /// Queues a container this thread has claimed; the outermost delivery drains it.
    func enqueue(_ container: any PendingDelivery) {
        queue.append(container)
    }

    /// Marks this thread as delivering; ``endOutermost()`` must follow.
    @usableFromInline
    func beginOutermost() {
        isDelivering = true
        depth = 0
    }

    /// Drains every container that handlers claimed during the outermost delivery, in the order
    /// they were claimed, then marks this thread as no longer delivering.
    @usableFromInline
    func endOutermost() {
        while head < queue.count {
            let next = queue[head]
            head += 1
            next.deliverPending(in: self)
            if head >= 1024 && head * 2 >= queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }
        if !queue.isEmpty {
            queue.removeAll(keepingCapacity: queue.count <= 64)
            head = 0
        }
        if !recentKeys.isEmpty { recentKeys.removeAll() }
        depth = 0
        isDelivering = false
    }

    /// Runs one handler call at `depth`, as the outermost delivery if this thread has none.
    @usableFromInline
    func run(atDepth depth: Int, _ body: () -> Void) {
        if isDelivering {
            let saved = self.depth
            self.depth = depth
            body()
            self.depth = saved
        } else {
            beginOutermost()
            self.depth = depth
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
