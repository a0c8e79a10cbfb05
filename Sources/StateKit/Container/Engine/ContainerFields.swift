/// The fields of a container that its lock guards.
///
/// They live behind an `UnsafeMutablePointer` rather than as class stored properties: Swift checks
/// every access to a class's stored `var` for exclusivity at run time, which cost more than the
/// lock itself on the write path. The lock already makes each access exclusive. (The delivery
/// claim, which a deliverer releases without the lock, is not here but in the container object.)
///
/// `value` comes last: every field before it has a size that does not depend on `Value`, so its
/// offset is fixed, and code that is not specialised for `Value` (subscribing, cancelling,
/// queueing) reaches it without looking up the struct's generic metadata (measured: ~300
/// instructions a lookup, ~20 lookups per subscribe and cancel).
@usableFromInline
struct ContainerFields<Value> {
    @usableFromInline
    var version: UInt64 = 0
    /// Whether a change has anyone to tell (subscribers, projections, listeners, a hook, a write
    /// observer or a change tally); kept equal to `hasListeners || tally.isOn` by
    /// ``audienceChanged()``.
    @usableFromInline
    var hasAudience = false
    /// Counts changes for a poller when on; see ``ChangeTally``.
    @usableFromInline
    var tally = ChangeTally()
    /// Whether some subscriber wants ``StateChange`` records (old value, timestamp); kept equal
    /// to `audience.changeSubscriberCount > 0`.
    @usableFromInline
    var wantsChangeRecords = false
    /// Checks each write before it lands; see ``MonitoredState/init(_:key:validator:)``.
    @usableFromInline
    var validator: (@Sendable (_ current: Value, _ proposed: Value) throws -> Void)?
    /// Whether ``State/didModify()`` is overridden and must run as a hook after each change.
    @usableFromInline
    var runsHook = false
    @usableFromInline
    var audience = Audience<Value>()
    var projectionIndex: [AnyKeyPath: ProjectionGroup<Value>] = [:]
    /// The ``ElementNode``s, by the path of their collection.
    var elementNodes: [AnyKeyPath: ProjectionGroup<Value>] = [:]
    /// The containers of a shared cell whose ``State/didModify()`` runs as a hook after each
    /// change, whichever of the cell's containers delivers it; see ``State/init(sharing:key:)``.
    var hookedMembers: [WeakContainer<Value>] = []
    /// Runs for every change on the writing thread, under the lock, before the write returns, in
    /// version order; registered by a layer that must see a change before its writer returns (a
    /// synced container's durable outbox logs it there). It must not touch the container.
    @usableFromInline
    var writeObserver: ((StateChange<Value>) -> Void)?
    /// Who delivers, and what waits to be delivered.
    @usableFromInline
    var delivery = DeliveryStateMachine<Value>()
    @usableFromInline
    var value: Value

    @usableFromInline
    init(value: Value) {
        self.value = value
    }
}

extension UnsafeMutablePointer {
    /// A new container's fields, holding `value`.
    static func makeFields<Value>(_ value: Value) -> Self where Pointee == ContainerFields<Value> {
        let fields = allocate(capacity: 1)
        fields.initialize(to: ContainerFields(value: value))
        return fields
    }
}

extension State {
    @inlinable
    var storedValue: Value {
        _read { yield fields.pointee.value }
        _modify { yield &fields.pointee.value }
    }

    @inlinable
    var storedVersion: UInt64 {
        get { fields.pointee.version }
        set { fields.pointee.version = newValue }
    }

    /// The address of the version, the first field, for code that reads it without being
    /// specialised for `Value` (a derived state's leaves, a transaction's commit). Read it with
    /// the lock held.
    @inlinable
    var versionField: UnsafePointer<UInt64> {
        assert(MemoryLayout<ContainerFields<Value>>.offset(of: \.version) == 0)
        return UnsafeRawPointer(fields).assumingMemoryBound(to: UInt64.self)
    }

    @inlinable
    var hasAudience: Bool {
        get { fields.pointee.hasAudience }
        set { fields.pointee.hasAudience = newValue }
    }

    /// ``hasAudience``, read under the lock. A method of the container, so that the lock is
    /// reached from a guaranteed reference: taken as `container.lock` from elsewhere, the lock
    /// object is retained and released around each call.
    final var hasAudienceNow: Bool {
        lock.lock()
        defer { lock.unlock() }
        return hasAudience
    }

    @inlinable
    var wantsChangeRecords: Bool {
        get { fields.pointee.wantsChangeRecords }
        set { fields.pointee.wantsChangeRecords = newValue }
    }

    /// Set only by initialisers, before the container is shared: a container that has one never
    /// assigns blindly in a transaction (see ``assignsBlindly``).
    @inlinable
    var validator: (@Sendable (_ current: Value, _ proposed: Value) throws -> Void)? {
        get { fields.pointee.validator }
        set {
            if assignsBlindly { assignsBlindly = false }
            fields.pointee.validator = newValue
        }
    }

    @inlinable
    var runsHook: Bool {
        get { fields.pointee.runsHook }
        set { fields.pointee.runsHook = newValue }
    }

    /// Every change to the audience goes through `_modify`, which first retires the subscriber
    /// list when someone holds the claim and may be reading it unretained
    /// (``UnretainedSubscribers``).
    @inlinable
    var audience: Audience<Value> {
        _read { yield fields.pointee.audience }
        _modify {
            if !deliveryClaim.isFree { retireSubscribersLocked() }
            yield &fields.pointee.audience
        }
    }

    /// Not inlined into every change of the audience: it runs only while someone delivers.
    @inlinable @inline(never)
    final func retireSubscribersLocked() {
        fields.pointee.delivery.retire(fields.pointee.audience.subscribers, claim: deliveryClaim)
    }

    var projectionIndex: [AnyKeyPath: ProjectionGroup<Value>] {
        _read { yield fields.pointee.projectionIndex }
        _modify { yield &fields.pointee.projectionIndex }
    }

    /// Set under the lock; a write observer makes every change one to tell (``hasAudience``).
    @inlinable
    var writeObserver: ((StateChange<Value>) -> Void)? {
        get { fields.pointee.writeObserver }
        set {
            fields.pointee.writeObserver = newValue
            fields.pointee.audienceChanged()
        }
    }
}

/// The audience's bookkeeping, on the fields themselves: a cancel reaches them through the
/// container's ``SubscriberLink`` without touching the container (see there).
extension ContainerFields {
    /// Recomputes the fast-path flags after the audience changed. Called with the lock held.
    @inlinable
    mutating func audienceChanged() {
        let hasListeners = runsHook || !audience.isEmpty || writeObserver != nil
        hasAudience = hasListeners || tally.isOn
        tally.isAlone = tally.isOn && !hasListeners
        wantsChangeRecords = audience.changeSubscriberCount > 0
    }

    /// Keeps the list of subscribers a delivery in progress may read before the audience changes.
    @inlinable
    mutating func retireSubscribers(claim: DeliveryClaim) {
        if !claim.isFree { delivery.retire(audience.subscribers, claim: claim) }
    }

    /// Takes a cancelled subscriber out of the audience. Called with the lock held.
    @inlinable
    mutating func removeSubscriber(_ entry: SubscriptionEntry, claim: DeliveryClaim, key: String) {
        if let group = entry.group {
            removeSubscriber(entry, from: group, claim: claim)
        } else if let index = audience.subscribers.firstIndex(where: { $0 === entry }) {
            retireSubscribers(claim: claim)
            // The entry, not the list's element: reading that retained and released it.
            if unsafeDowncast(entry, to: Subscriber<Value>.self).wantsChanges { audience.changeSubscriberCount -= 1 }
            audience.subscribers.remove(at: index)
        }
        audienceChanged()
        checkInvariants(claim: claim, key: key)
    }

    /// Takes `entry` out of its projection group, and the group out of the audience if it was
    /// the last (for a position of an ``ElementNode``: the position out of its node, and the node
    /// out of the audience if that was its last). Called with the lock held.
    @usableFromInline
    mutating func removeSubscriber(_ entry: SubscriptionEntry, from group: ProjectionGroupBase, claim: DeliveryClaim) {
        group.removeLocked(entry)
        guard group.isEmptyLocked else { return }
        var emptied = group
        if let node = group.elementNode {
            node.removeChildLocked(group)
            guard node.isEmptyLocked else { return }
            elementNodes[node.path] = nil
            emptied = node
        } else {
            projectionIndex[group.path] = nil
        }
        retireSubscribers(claim: claim)
        audience.projections.removeAll { $0 === emptied }
    }

    /// Checks, in debug builds, that the delivery claim matches the queue and that the fast-path
    /// flags match the audience. Called with the lock held.
    @usableFromInline
    func checkInvariants(claim: DeliveryClaim, key: @autoclosure () -> String) {
        #if DEBUG
        delivery.checkInvariants(claim: claim)
        precondition(
            hasAudience == (runsHook || !audience.isEmpty || writeObserver != nil || tally.isOn),
            "'\(key())': hasAudience is stale")
        precondition(
            wantsChangeRecords == (audience.changeSubscriberCount > 0), "'\(key())': wantsChangeRecords is stale")
        precondition(
            audience.changeSubscriberCount == audience.subscribers.count { $0.wantsChanges },
            "'\(key())': change subscribers miscounted")
        #endif
    }
}
