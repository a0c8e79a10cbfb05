/// Everyone a container tells about a change. Copied under the lock, read outside it.
@usableFromInline
struct Audience<Value> {
    @usableFromInline
    var subscribers: ContiguousArray<Subscriber<Value>> = []
    @usableFromInline
    var projections: ContiguousArray<ProjectionGroup<Value>> = []
    @usableFromInline
    var listeners: ContiguousArray<WeakListener> = []
    /// Subscribers that want ``StateChange`` records (old value, timestamp).
    var changeSubscriberCount = 0

    var isEmpty: Bool {
        subscribers.isEmpty && !hasProjectionsOrListeners
    }

    @inlinable
    var hasProjectionsOrListeners: Bool {
        !projections.isEmpty || !listeners.isEmpty
    }
}

/// A listener held weakly, as the seed's `NSHashTable.weakObjects()` did.
@usableFromInline
struct WeakListener {
    weak var listener: (any StateListener)?
}
