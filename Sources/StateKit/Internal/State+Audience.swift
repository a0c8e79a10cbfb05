import Dispatch
import Foundation

/// The audience: adding and removing subscribers, and keeping the fast-path flags in step with it.
extension State: SubscriberOwner {
    /// Adds a subscriber and, if asked, hands it the current value, in order with any delivery
    /// in progress.
    ///
    /// Inlinable, so that ``MonitoredState/subscribe(_:)`` runs it specialised for the value type:
    /// unspecialised, looking up generic metadata was about half of what it cost.
    ///
    /// - Parameter onContainerReleased: Called once if the container is deallocated while the
    ///   subscription is live (async sequences finish with it).
    @inlinable
    final func addSubscriber(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool,
        onContainerReleased: (@Sendable () -> Void)? = nil,
        keeping keptAlive: AnyObject? = nil
    ) -> Subscription {
        let context = DeliveryContext.current(key: deliveryKey)
        lock.lock()
        let subscriber = Subscriber(
            owner: self, startVersion: storedVersion, queue: queue, handler: handler,
            onOwnerReleased: onContainerReleased, keeping: keptAlive)
        if subscriber.wantsChanges { audience.changeSubscriberCount += 1 }
        let subscription = Subscription(subscriber)
        // The list takes the reference made here rather than a retained copy (an atomic pair a
        // subscribe); the token, which nobody else has yet, keeps the subscriber alive after.
        let kept = Unmanaged.passUnretained(subscriber)
        audience.subscribers.append(consume subscriber)
        audienceChangedLocked()
        if sendsCurrentValue {
            kept._withUnsafeGuaranteedRef { scheduleInitialValueAndUnlock(storedValue, to: $0, in: context) }
        } else {
            lock.unlock()
        }
        return subscription
    }

    /// Queues (or makes) the first call of a new subscriber.
    @inlinable
    final func scheduleInitialValueAndUnlock<Element>(
        _ current: Element,
        to subscriber: Subscriber<Element>,
        in context: DeliveryContext
    ) {
        let version = storedVersion
        if !context.isDelivering && mayClaimLocked {
            // Nobody delivers the container: this thread takes the claim and makes the call now,
            // as an uncontended write delivers its change, with no closure to queue. A value
            // handler is called in place: the subscriber is live, its token not handed out yet.
            // The key is read only if the handler wants a change record (it is a `let`): copied
            // before the call, it was retained and released on every subscribe.
            deliveryClaim.take()
            lock.unlock()
            context.beginOutermost()
            context.depth = 0
            if subscriber.handlerIsInOptions {
                subscriber.receiveInGenericCode(
                    StateChange(
                        key: self.key, oldValue: current, newValue: current, version: version, timestamp: Date()),
                    value: current,
                    depth: 0,
                    in: context
                )
            } else {
                subscriber.valueHandler(current)
            }
            finishDelivery(in: context)
            context.endOutermost()
            return
        }
        let depth = context.isDelivering ? context.depth : 0
        let key = self.key
        let deliver = {
            subscriber.receiveInGenericCode(
                StateChange(key: key, oldValue: current, newValue: current, version: version, timestamp: Date()),
                value: current,
                depth: depth,
                in: context
            )
        }
        scheduleAndUnlock(.initialValue(depth: depth, origin: context.id, deliver: deliver), in: context)
    }

    /// Installs the container's ``SubscriberRemoval`` unless it has one. Called where the code
    /// is specialised for `Value`, so that the removal is too.
    @inlinable
    final func installSubscriberRemoval() {
        if subscriberRemoval.unretained != nil { return }
        _ = subscriberRemoval.install(
            SubscriberRemoval { owner, entry in unsafeDowncast(owner, to: State.self).removeSubscriber(entry) })
    }

    @usableFromInline
    func remove(_ entry: SubscriptionEntry) {
        guard let removal = subscriberRemoval.unretained else { return removeSubscriber(entry) }
        removal._withUnsafeGuaranteedRef { $0.remove(self, entry) }
    }

    /// Takes `entry` out of the audience: what ``remove(_:)`` does, inlinable so that
    /// ``SubscriberRemoval`` runs it specialised for the value type.
    @inlinable
    final func removeSubscriber(_ entry: SubscriptionEntry) {
        lock.lock()
        defer { lock.unlock() }
        if let group = entry.group {
            removeLocked(entry, from: group)
        } else if let index = audience.subscribers.firstIndex(where: { $0 === entry }) {
            if audience.subscribers[index].wantsChanges { audience.changeSubscriberCount -= 1 }
            audience.subscribers.remove(at: index)
        }
        audienceChangedLocked()
        checkInvariantsLocked()
    }

    /// Takes `entry` out of its projection group, and the group out of the audience if it was
    /// the last. Called with the lock held.
    @usableFromInline
    final func removeLocked(_ entry: SubscriptionEntry, from group: ProjectionGroupBase) {
        group.removeLocked(entry)
        if group.isEmptyLocked {
            projectionIndex[group.path] = nil
            audience.projections.removeAll { $0 === group }
        }
    }

    /// Recomputes the fast-path flags after the audience changed. Called with the lock held.
    @inlinable
    final func audienceChangedLocked() {
        hasAudience = runsHook || !audience.isEmpty
        wantsChangeRecords = audience.changeSubscriberCount > 0
    }

    /// Checks, in debug builds, that the delivery claim matches the queue and that the fast-path
    /// flags match the audience. Called with the lock held.
    @usableFromInline
    final func checkInvariantsLocked() {
        #if DEBUG
        fields.pointee.delivery.checkInvariants(claim: deliveryClaim)
        precondition(hasAudience == (runsHook || !audience.isEmpty), "'\(key)': hasAudience is stale")
        precondition(
            wantsChangeRecords == (audience.changeSubscriberCount > 0), "'\(key)': wantsChangeRecords is stale")
        precondition(
            audience.changeSubscriberCount == audience.subscribers.count { $0.wantsChanges },
            "'\(key)': change subscribers miscounted")
        #endif
    }

    /// Tells every live subscription that the container is going away. Called from `deinit`, when
    /// no other thread can hold a reference.
    final func endSubscriptions() {
        for subscriber in audience.subscribers { subscriber.ownerReleased() }
        for group in audience.projections { group.ownerReleased() }
    }

    /// Ends the subscriptions made through this container, which is being released while the
    /// other containers of its cell live on: theirs go on, its own (whose owner reads `nil` now)
    /// are removed and told, as ``endSubscriptions()`` tells a container's own.
    final func endReleasedSubscriptions() {
        lock.lock()
        audience.listeners.removeAll { $0.isReleased }
        guard audience.subscribers.contains(where: { $0.owner == nil }) || !audience.projections.isEmpty else {
            audienceChangedLocked()
            lock.unlock()
            return
        }
        var released: [SubscriptionEntry] = []
        audience.subscribers.removeAll { subscriber in
            guard subscriber.owner == nil else { return false }
            if subscriber.wantsChanges { audience.changeSubscriberCount -= 1 }
            released.append(subscriber)
            return true
        }
        for group in audience.projections {
            released += group.removeReleasedOwnersLocked()
            if group.isEmptyLocked { projectionIndex[group.path] = nil }
        }
        audience.projections.removeAll { $0.isEmptyLocked }
        audienceChangedLocked()
        lock.unlock()
        for subscriber in released { subscriber.ownerReleased() }
    }
}
