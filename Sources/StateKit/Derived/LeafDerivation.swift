import Foundation

/// How a derived state whose sources are all containers computes: it reads every source under
/// its lock at once, so the values are what the containers held at one moment, and computes only
/// if one of their versions moved.
///
/// The reading, the computation and the publication run in code made where the derived state is
/// created (``DerivedNode/overContainers(key:_:isDuplicate:compute:)`` is inlinable), specialised
/// for the sources' and the value's types: a change of a source costs the sources' locks, the
/// computation, and a write with its delivery, with no generic code in between.
///
/// The sources' locks are taken in the order a transaction's commit takes them (by container
/// identity), under the storage's lock, which orders computations and publications: the
/// storage's versions follow the order of computation. A new value is delivered by the thread
/// that computed it once the lock is released, as a plain write is: at once outside any
/// delivery; from inside one, after it, without going through the storage's queue. Computed
/// because a source changed, it is handed on by the source's delivery once the source's handlers
/// have run (unless something is queued on the thread already); otherwise it goes through the
/// thread's trampoline. If someone else is delivering the storage, the change is queued for them.
@usableFromInline
final class LeafDerivation<Value>: @unchecked Sendable {
    /// Reads the sources under their locks and, if a version differs from the one in
    /// `versions` (which it updates, one per source), computes the value; `nil` otherwise.
    @usableFromInline
    typealias Read = (_ versions: UnsafeMutablePointer<UInt64>) -> Value?

    @usableFromInline
    let storage: MonitoredState<Value>
    /// The storage's lock, kept here too: taken as `storage.lock`, the lock object was retained
    /// and released around every `lock()` and `unlock()` (measured: two atomic pairs and ~50
    /// instructions a change).
    @usableFromInline
    let lock: Lock
    @usableFromInline
    let observation: DerivedObservation
    @usableFromInline
    let read: Read
    @usableFromInline
    let isDuplicate: (Value, Value) -> Bool
    /// The sources' versions the published value was computed from, one per source; guarded by
    /// the storage's lock.
    @usableFromInline
    let versions: UnsafeMutablePointer<UInt64>
    /// A change whose delivery this derivation claimed from inside a delivery, with the audience
    /// it goes to, until it is delivered after that delivery; only the claim's holder uses them.
    @usableFromInline
    @exclusivity(unchecked)
    var claimedChange: PendingChange<Value>?
    @usableFromInline
    @exclusivity(unchecked)
    var claimedSubscribers = UnretainedSubscribers<Value>()
    @usableFromInline
    @exclusivity(unchecked)
    var claimedOthers: Audience<Value>?

    /// Computes the first value, which `storage` is made with. Made inside a transaction, the
    /// value comes from `evaluate` (the transaction's view) and the versions are left unknown,
    /// so the first read outside computes it again.
    @usableFromInline
    init(
        sourceCount: Int,
        read: @escaping Read,
        evaluate: () -> Value,
        isDuplicate: @escaping (Value, Value) -> Bool,
        makeStorage: (Value) -> MonitoredState<Value>,
        observation: DerivedObservation
    ) {
        versions = .allocate(capacity: sourceCount)
        versions.initialize(repeating: .max, count: sourceCount)
        let value = isTransactionOpenOnThisThread ? evaluate() : read(versions)!
        self.read = read
        self.isDuplicate = isDuplicate
        self.storage = makeStorage(value)
        self.lock = storage.lock
        self.observation = observation
    }

    deinit {
        versions.deallocate()
    }

    /// The current value: the published one if no source moved since it was computed, or a new
    /// one, which is then published.
    @inlinable
    func current() -> Value {
        lock.lock()
        return refreshAndUnlock()
    }

    /// A source changed, and `context`'s thread is delivering it. With subscribers, compute now;
    /// otherwise only tell Observation that the value may have changed (as an `@Observable`
    /// computed property's stored inputs do) and compute when it is read.
    @inlinable
    func inputChanged(in context: DeliveryContext) {
        lock.lock()
        guard storage.hasAudience else {
            lock.unlock()
            observation.tellChanged()
            return
        }
        _ = refreshAndUnlock(sourceDelivery: context)
    }

    /// Computes the value if a source moved and publishes it, unless `isDuplicate` says it matches
    /// the published one; releases the storage's lock, and delivers the change.
    ///
    /// Called with the storage's lock held, which orders computations and publications: each
    /// computes from versions no older than the last, and the storage's versions follow.
    /// Observation is told here only while the storage has subscribers: without, it was told when
    /// the source changed (see ``inputChanged(in:)``).
    /// - Parameter sourceDelivery: The context of a source's delivery that is calling, if one is,
    ///   which can then hand the change on (``DeliveryContext/holdFollowUp(of:deliver:)``).
    /// - Returns: The value now published.
    @inlinable
    func refreshAndUnlock(sourceDelivery: DeliveryContext? = nil) -> Value {
        let storage = self.storage
        guard let value = read(versions), !isDuplicate(storage.storedValue, value) else {
            defer { lock.unlock() }
            return storage.storedValue
        }
        let oldValue = storage.wantsChangeRecords ? storage.storedValue : nil
        storage.storedValue = value
        storage.storedVersion &+= 1
        guard storage.hasAudience else {
            lock.unlock()
            return value
        }
        let context = sourceDelivery ?? DeliveryContext.current
        guard storage.mayClaimLocked else {
            // Queued for whoever delivers the storage.
            storage.scheduleChangeAndUnlock(oldValue: oldValue, announcedByHand: false, origin: .local, in: context)
            observation.tellChanged()
            return value
        }
        storage.deliveryClaim.take()
        let isDelivering = context.isDelivering
        let change = PendingChange(
            oldValue: oldValue,
            newValue: value,
            version: storage.storedVersion,
            timestamp: oldValue == nil ? nil : Date(),
            // The step of the change that caused it, as a projection's change is: only a
            // handler's write adds a step to a chain.
            depth: isDelivering ? max(context.depth, 0) : 0,
            isAnnouncedByHand: false,
            origin: context.id,
            changeOrigin: .local
        )
        if isDelivering {
            // After the current delivery, as any write made inside a handler is: this thread holds
            // the claim until then, so these are its own.
            claimedChange = change
            claimedSubscribers = UnretainedSubscribers(storage.audience.subscribers)
            if storage.audience.hasProjectionsOrListeners { claimedOthers = storage.audience }
            lock.unlock()
            observation.tellChanged()
            let deliver = { (derivation: AnyObject, context: DeliveryContext) in
                unsafeDowncast(derivation, to: LeafDerivation<Value>.self).deliverClaimed(in: context)
            }
            if sourceDelivery != nil && context.mayHoldFollowUp {
                context.holdFollowUp(of: self, deliver: deliver)
            } else {
                context.enqueue(PendingDelivery(container: self, deliver: deliver))
            }
            return value
        }
        let subscribers = UnretainedSubscribers(storage.audience.subscribers)
        let others = storage.audience.hasProjectionsOrListeners ? storage.audience : nil
        lock.unlock()
        observation.tellChanged()
        context.beginOutermost()
        storage.notify(change, subscribers: subscribers, others: others, in: context)
        storage.finishDelivery(in: context)
        context.endOutermost()
        return value
    }

    /// Delivers the change that ``refreshAndUnlock(sourceDelivery:)`` claimed the storage's
    /// delivery for from inside a delivery, then what was queued for the storage meanwhile.
    @inlinable
    func deliverClaimed(in context: DeliveryContext) {
        let change = claimedChange.unsafelyUnwrapped
        claimedChange = nil
        let subscribers = claimedSubscribers
        claimedSubscribers = UnretainedSubscribers()
        let others = claimedOthers
        claimedOthers = nil
        if change.depth == 0 || storage.admitChainStep(depth: change.depth, version: change.version, in: context) {
            let depth = context.depth
            context.depth = change.depth
            storage.notify(change, subscribers: subscribers, others: others, in: context)
            context.depth = depth
        }
        storage.finishDelivery(in: context)
    }
}

extension State {
    /// The address of the value, for code that reads it with the lock held without being
    /// specialised for `Value` (a derived state's read, made in a parameter pack expansion, looked
    /// up the fields' generic layout on every read).
    @usableFromInline
    final var valueField: UnsafePointer<Value> {
        UnsafePointer(fields.pointer(to: \.value)!)
    }

    /// Subscribes a derived state's `changed` to the container's changes, from the next one on;
    /// each call is handed `watcher`, which the subscription keeps.
    @usableFromInline
    final func watch(
        by watcher: AnyObject,
        _ changed: @escaping (_ watcher: Unmanaged<AnyObject>, DeliveryContext) -> Void
    ) -> Subscription {
        addSubscriber(queue: nil, handler: .sourceChanged(changed), sendsCurrentValue: false, keeping: watcher)
    }
}

extension StateSource {
    /// The source as the container it is; the caller checked that it is one.
    @inlinable
    var asContainer: State<Value> {
        unsafeDowncast(self, to: State<Value>.self)
    }
}

extension DerivedNode {
    /// A node computed by `compute` from `sources`, if they are all containers; `nil` otherwise.
    ///
    /// Inlinable, so that the functions it makes for the node's ``LeafDerivation`` are specialised
    /// for the sources' and the value's types where the derived state is created.
    @inlinable
    static func overContainers<each Source: StateSource>(
        key: String,
        _ sources: repeat each Source,
        isDuplicate: @escaping (Value, Value) -> Bool,
        compute: @escaping (repeat (each Source).Value) -> Value
    ) -> DerivedNode? {
        for source in repeat each sources {
            guard source is any DerivationLeaf else { return nil }
        }
        return overContainers(key: key, repeat (each sources).asContainer, isDuplicate: isDuplicate, compute: compute)
    }

    /// A node computed by `compute` from `containers`.
    ///
    /// Generic over the values, not the sources: reads of `(each Source).Value` in a pack
    /// expansion looked up the associated type and copied through its value witnesses on every
    /// computation, even specialised.
    @inlinable
    static func overContainers<each Input>(
        key: String,
        _ containers: repeat State<each Input>,
        isDuplicate: @escaping (Value, Value) -> Bool,
        compute: @escaping (repeat each Input) -> Value
    ) -> DerivedNode {
        let containers = (repeat each containers)
        let values = (repeat (each containers).valueField)
        var inputs: [DerivationInput] = []
        var versionFields: [UnsafePointer<UInt64>] = []
        var locks: [(id: ObjectIdentifier, lock: Unmanaged<Lock>)] = []
        for container in repeat each containers {
            inputs.append(container.wholeDerivationInput)
            versionFields.append(container.versionField)
            if !locks.contains(where: { $0.id == container.cellID }) {
                locks.append((container.cellID, .passUnretained(container.lock)))
            }
        }
        // The order of a transaction's commit, so that the two never wait for each other.
        let sortedLocks = locks.sorted { $0.id < $1.id }.map(\.lock)
        // The closure holds the containers, and so their locks and fields.
        let read: LeafDerivation<Value>.Read = { [containers, versionFields] versions in
            for lock in sortedLocks { lock._withUnsafeGuaranteedRef { $0.lock() } }
            var moved = false
            for index in versionFields.indices where versions[index] != versionFields[index].pointee {
                versions[index] = versionFields[index].pointee
                moved = true
            }
            guard moved else {
                for lock in sortedLocks { lock._withUnsafeGuaranteedRef { $0.unlock() } }
                return nil
            }
            let current = (repeat (each values).pointee)
            for lock in sortedLocks { lock._withUnsafeGuaranteedRef { $0.unlock() } }
            return withExtendedLifetime(containers) { compute(repeat each current) }
        }
        let evaluate = { compute(repeat (each containers).untrackedValue) }
        var derivation: LeafDerivation<Value>?
        let node = DerivedNode(key: key, inputs: inputs, evaluate: evaluate) { makeStorage, observation in
            derivation = LeafDerivation(
                sourceCount: versionFields.count, read: read, evaluate: evaluate, isDuplicate: isDuplicate,
                makeStorage: makeStorage, observation: observation)
            return derivation!
        }
        // Made here, so that each change of a source runs code specialised for these types.
        let changed = { (derivation: Unmanaged<AnyObject>, context: DeliveryContext) in
            derivation._withUnsafeGuaranteedRef {
                unsafeDowncast($0, to: LeafDerivation<Value>.self).inputChanged(in: context)
            }
        }
        var watched: Set<ObjectIdentifier> = []
        var watches: [Subscription] = []
        for container in repeat each containers {
            if watched.insert(container.cellID).inserted {
                watches.append(container.watch(by: derivation!, changed))
            }
        }
        node.keep(watches: watches)
        return node
    }
}
