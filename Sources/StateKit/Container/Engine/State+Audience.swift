import Dispatch
import Foundation

/// The audience: adding and removing subscribers, and keeping the fast-path flags in step with it.
extension State {
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
        let link = subscriberLink
        lock.lock()
        let subscriber = Subscriber(
            link: link.takeUnretainedValue(), startVersion: storedVersion, queue: queue, handler: handler,
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
                    in: context,
                    ifJoinedBefore: .max
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
                in: context,
                ifJoinedBefore: .max
            )
        }
        scheduleAndUnlock(.initialValue(depth: depth, origin: context.id, deliver: deliver), in: context)
    }

    /// The link this container's subscribers hold, made with the first, unretained: the
    /// container keeps it (returned retained, it was retained once more for the subscriber). The
    /// removal it makes is specialised for `Value` where this is inlined into code that is.
    @inlinable
    final var subscriberLink: Unmanaged<SubscriberLink> {
        if let link = installedLink.unretained { return link }
        return .passUnretained(
            installedLink.install(SubscriberLink(lock: lock, removeLocked: subscriberRemoval)))
    }

    /// Takes a subscriber out of the audience, with the lock held: what a cancel runs through the
    /// link. It captures the fields, claim and key, never the container (see ``SubscriberLink``).
    @inlinable
    final var subscriberRemoval: (SubscriptionEntry) -> Void {
        { [fields, deliveryClaim, key] entry in
            fields.pointee.removeSubscriber(entry, claim: deliveryClaim, key: key)
        }
    }

    /// Makes the link's removal specialised for `Value`, if the link was made in code that was
    /// not. Called where the code is specialised: after the first call, two loads.
    @inlinable
    final func installSubscriberRemoval() {
        if let link = installedLink.unretained,
            link._withUnsafeGuaranteedRef({ $0.specialisedRemoval.unretained != nil })
        {
            return
        }
        _ = subscriberLink.takeUnretainedValue().specialisedRemoval.install(SubscriberRemoval(subscriberRemoval))
    }

    /// Recomputes the fast-path flags after the audience changed. Called with the lock held.
    @inlinable
    final func audienceChangedLocked() {
        fields.pointee.audienceChanged()
    }

    /// Checks, in debug builds, that the delivery claim matches the queue and that the fast-path
    /// flags match the audience. Called with the lock held.
    @usableFromInline
    final func checkInvariantsLocked() {
        fields.pointee.checkInvariants(claim: deliveryClaim, key: key)
    }

    /// Tells every live subscription that the container is going away. Called from `deinit`, when
    /// no other thread can hold a reference.
    final func endSubscriptions() {
        for subscriber in audience.subscribers { subscriber.ownerReleased() }
        for group in audience.projections { group.ownerReleased() }
    }

    /// Ends the subscriptions made through this container, which is being released while the
    /// other containers of its cell live on: theirs go on, its own (whose link it marks released)
    /// are removed and told, as ``endSubscriptions()`` tells a container's own.
    final func endReleasedSubscriptions() {
        lock.lock()
        installedLink.unretained?._withUnsafeGuaranteedRef { $0.ownerReleasedLocked() }
        let released = removeReleasedLocked()
        audienceChangedLocked()
        lock.unlock()
        for subscriber in released { subscriber.ownerReleased() }
    }

    /// Takes the subscribers of released containers of the cell out of the audience, and the
    /// listeners that are gone. Called with the lock held.
    private func removeReleasedLocked() -> [SubscriptionEntry] {
        audience.listeners.removeAll { $0.isReleased }
        guard audience.subscribers.contains(where: { !$0.isOwnerLive }) || !audience.projections.isEmpty else {
            return []
        }
        var released: [SubscriptionEntry] = []
        audience.subscribers.removeAll { subscriber in
            guard !subscriber.isOwnerLive else { return false }
            if subscriber.wantsChanges { audience.changeSubscriberCount -= 1 }
            released.append(subscriber)
            return true
        }
        for group in audience.projections {
            released += group.removeReleasedOwnersLocked()
            guard group.isEmptyLocked else { continue }
            if group.isElementNode {
                fields.pointee.elementNodes[group.path] = nil
            } else {
                projectionIndex[group.path] = nil
            }
        }
        audience.projections.removeAll { $0.isEmptyLocked }
        return released
    }
}
