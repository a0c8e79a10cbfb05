import Dispatch
import Foundation

/// The change dispatcher: how a write becomes a notification, in order, without recursion.
///
/// Rules (see the "Delivery semantics" article):
/// - A write updates the value and version under the lock, so a read after it returns sees it.
/// - One thread at a time delivers a container (``DeliveryClaim``). A write made while another
///   thread delivers is queued in `pending` and delivered by that thread, in version order; the
///   writer returns at once and never waits for another thread's handlers.
/// - Handlers run outside the lock. A write made inside a handler is queued, on its own container
///   or, through the thread's ``DeliveryContext``, on another one, and delivered after the current
///   delivery: no recursion, no stack growth.
/// - Each queued change remembers its chain depth; a change past
///   ``StateDiagnostics/maximumChainDepth`` is written but not delivered, which ends a cycle.
extension State: PendingDelivery, SubscriberOwner {
    /// Applies `body` to the value as one change, unless `isUnchanged` says the value already is
    /// what `body` would make it: assigning an equal value is not a change.
    ///
    /// For an observable container, Observation's `willSet` runs between the check and the write,
    /// outside the lock (its `onChange` may read the container), so the check is made again after
    /// it; `didSet` follows the write and its delivery.
    /// - Returns: The validator's refusal, if it refused.
    @inlinable
    final func write(
        unlessAlready isUnchanged: (Value) -> Bool,
        _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        lock.lock()
        if isUnchanged(storedValue) {
            lock.unlock()
            return nil
        }
        var rejection: RejectedWriteError?
        guard let observation = observation.unretained else {
            writeLocked(rejection: &rejection, body)
            return rejection
        }
        lock.unlock()
        observation._withUnsafeGuaranteedRef { $0.willSet() }
        defer { observation._withUnsafeGuaranteedRef { $0.didSet() } }
        lock.lock()
        if isUnchanged(storedValue) {
            lock.unlock()
            return nil
        }
        writeLocked(rejection: &rejection, body)
        return rejection
    }

    /// Applies `body` to the value as one change, always (see ``State/modify(_:)->_``), between
    /// Observation's `willSet` and `didSet` for an observable container.
    @inlinable
    final func mutate<Result>(
        rejection: inout RejectedWriteError?,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        let observation = self.observation.unretained
        observation?._withUnsafeGuaranteedRef { $0.willSet() }
        defer { observation?._withUnsafeGuaranteedRef { $0.didSet() } }
        lock.lock()
        return try writeLocked(rejection: &rejection, body)
    }

    /// Applies `body` to the value as one change, validating it first when there is a validator.
    ///
    /// Called with the lock held; returns (or rethrows) with it released. A rejected change leaves
    /// value and version as they were and sets `rejection`. Inlinable so that the common case (no
    /// validator) is specialised for the client's `Value`.
    @inlinable
    final func writeLocked<Result>(
        rejection: inout RejectedWriteError?,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        if validator == nil && !isObserved {
            defer {
                storedVersion &+= 1
                lock.unlock()
            }
            return try body(&storedValue)
        }
        if validator != nil {
            var proposed = storedValue
            let result: Result
            do {
                result = try body(&proposed)
            } catch {
                lock.unlock()
                throw error
            }
            rejection = commitValidatedLocked(proposed)
            return result
        }
        let oldValue = recordsChanges ? storedValue : nil
        let result: Result
        do {
            result = try body(&storedValue)
        } catch {
            commitLocked(oldValue: oldValue)
            throw error
        }
        commitLocked(oldValue: oldValue)
        return result
    }

    /// Stores `proposed` if the validator accepts it. Called with the lock held; releases it.
    @usableFromInline
    final func commitValidatedLocked(_ proposed: Value) -> RejectedWriteError? {
        do {
            try validator?(storedValue, proposed)
        } catch {
            lock.unlock()
            return RejectedWriteError(key: key, reason: error)
        }
        let oldValue = recordsChanges ? storedValue : nil
        storedValue = proposed
        commitLocked(oldValue: oldValue)
        return nil
    }

    /// Counts the change just made and publishes it. Called with the lock held; releases it.
    @inlinable
    final func commitLocked(oldValue: Value?) {
        storedVersion &+= 1
        if isObserved {
            publishLocked(oldValue: oldValue)
        } else {
            lock.unlock()
        }
    }

    /// Delivers the change at the current version. Called with the lock held; releases it.
    ///
    /// The common case (nobody delivering, not inside a handler, no hook, no write observer) is
    /// delivered right here,
    /// specialised in the client; everything else is queued by `scheduleChangeLocked`.
    @inlinable
    final func publishLocked(oldValue: Value?, announcedByHand: Bool = false) {
        let context = DeliveryContext.current
        guard !deliveryClaim.isClaimed && !context.isDelivering && !runsHook && writeObserver == nil else {
            scheduleChangeLocked(oldValue: oldValue, announcedByHand: announcedByHand, in: context)
            return
        }
        deliveryClaim.take()
        let change = PendingChange(
            oldValue: oldValue,
            newValue: storedValue,
            version: storedVersion,
            timestamp: recordsChanges ? Date() : nil,
            depth: 0,
            isAnnouncedByHand: announcedByHand
        )
        // Only the subscriber list is copied when there is nobody else: each array copied out of
        // the lock is a retain and a release on every write.
        let subscribers = audience.subscribers
        let others = audience.hasProjectionsOrListeners ? audience : nil
        lock.unlock()
        context.beginOutermost()
        notify(change, subscribers: subscribers, others: others)
        if !deliveryClaim.releaseUnlessPending() {
            deliverPending(in: context)
        }
        context.endOutermost()
    }

    /// Hands `change` to the subscribers, then to the projections and listeners of `others`.
    @inlinable
    final func notify(
        _ change: PendingChange<Value>,
        subscribers: ContiguousArray<Subscriber<Value>>,
        others: Audience<Value>?
    ) {
        for subscriber in subscribers where subscriber.startVersion < change.version {
            subscriber.receive(record(of: change), value: change.newValue, depth: change.depth)
        }
        if let others {
            notifyProjectionsAndListeners(change, audience: others)
        }
    }

    /// The public record of `change`.
    @inlinable
    final func record(of change: PendingChange<Value>) -> StateChange<Value> {
        StateChange(
            key: key,
            oldValue: change.oldValue ?? change.newValue,
            newValue: change.newValue,
            version: change.version,
            timestamp: change.timestamp ?? Date()
        )
    }

    @inlinable
    final func notifyProjectionsAndListeners(_ change: PendingChange<Value>, audience: Audience<Value>) {
        if !audience.projections.isEmpty {
            withUnsafePointer(to: change.newValue) { root in
                for group in audience.projections where group.createdVersion < change.version {
                    group.evaluate(root, version: change.version, timestamp: change.timestamp, depth: change.depth)
                }
            }
        }
        if !audience.listeners.isEmpty {
            notify(audience.listeners)
        }
    }

    /// Queues the change at the current version for whoever delivers. Called with the lock held; releases it.
    @inlinable
    final func scheduleChangeLocked(oldValue: Value?, announcedByHand: Bool, in context: DeliveryContext) {
        let change = PendingChange(
            oldValue: oldValue,
            newValue: storedValue,
            version: storedVersion,
            timestamp: recordsChanges ? Date() : nil,
            depth: context.isDelivering ? context.depth + 1 : 0,
            isAnnouncedByHand: announcedByHand
        )
        if let writeObserver { writeObserver(record(of: change)) }
        scheduleLocked(.change(change), in: context)
    }

    /// Delivers `item` now if nobody is delivering this container and this thread is not inside a
    /// handler; otherwise queues it for whoever will. Called with the lock held; releases it.
    @inlinable
    final func scheduleLocked(_ item: PendingItem<Value>, in context: DeliveryContext) {
        if deliveryClaim.isClaimed {
            pending.append(item)
            let isMarked = deliveryClaim.markPending()
            lock.unlock()
            if !isMarked { deliverClaimedQueue(in: context) }
            return
        }
        if context.isDelivering {
            deliveryClaim.take(isPending: true)
            pending.append(item)
            lock.unlock()
            context.enqueue(self)
            return
        }
        deliveryClaim.take()
        let audience = self.audience
        lock.unlock()
        context.beginOutermost()
        perform(item, for: audience, in: context)
        deliverPending(in: context)
        context.endOutermost()
    }

    /// Delivers everything queued for this container, then gives up the right to deliver.
    ///
    /// With nothing queued this is one compare-exchange: no lock, no look at the queue.
    @inlinable
    func deliverPending(in context: DeliveryContext) {
        while !deliveryClaim.releaseUnlessPending() {
            lock.lock()
            let item = pending.popFirst()
            if pending.isEmpty { deliveryClaim.markDrained() }
            let audience = self.audience
            lock.unlock()
            if let item { perform(item, for: audience, in: context) }
        }
    }

    /// Delivers the queue of a container this thread has just come to hold the claim of: now, or
    /// after the current delivery if this thread is inside a handler.
    @usableFromInline
    final func deliverClaimedQueue(in context: DeliveryContext) {
        if context.isDelivering {
            context.enqueue(self)
        } else {
            context.beginOutermost()
            deliverPending(in: context)
            context.endOutermost()
        }
    }

    @inlinable
    final func perform(_ item: PendingItem<Value>, for audience: Audience<Value>, in context: DeliveryContext) {
        switch item {
        case .change(let change):
            deliver(change, to: audience, in: context)
        case .initialValue(let depth, let deliver):
            context.depth = depth
            deliver()
        }
    }

    @inlinable
    final func deliver(_ change: PendingChange<Value>, to audience: Audience<Value>, in context: DeliveryContext) {
        if change.depth > 0 && !admitChainStep(change, in: context) { return }
        context.depth = change.depth
        if runsHook && !change.isAnnouncedByHand {
            let saved = context.hookTarget
            context.hookTarget = ObjectIdentifier(self)
            didModify()
            context.hookTarget = saved
        }
        notify(change, subscribers: audience.subscribers, others: audience)
    }

    /// Whether a handler-triggered change may be delivered, or is the step that closes a cycle.
    @usableFromInline
    final func admitChainStep(_ change: PendingChange<Value>, in context: DeliveryContext) -> Bool {
        let limit = StateDiagnostics.maximumChainDepth
        if change.depth + 16 > limit { context.noteChainStep(key) }
        guard change.depth > limit else { return true }
        var keys: [String] = []
        for key in context.recentKeys where !keys.contains(key) { keys.append(key) }
        if !keys.contains(key) { keys.append(key) }
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .cycle,
                keys: keys,
                message: "containers kept updating each other: \(change.depth) handler-triggered writes in a row "
                    + "exceeded StateDiagnostics.maximumChainDepth (\(limit)); version \(change.version) of '\(key)' "
                    + "was written but not delivered, which ends the cycle"
            )
        )
        return false
    }

    /// Tells the seed's listeners, each on its own queue, as the article's `MonitoredState` did.
    @usableFromInline
    final func notify(_ listeners: ContiguousArray<WeakListener>) {
        let state = UncheckedSendable(self)
        var sawReleased = false
        for entry in listeners {
            guard let listener = entry.listener else {
                sawReleased = true
                continue
            }
            let target = UncheckedSendable(listener)
            listener.stateListenerQueue.async { target.value.stateModified(state.value) }
        }
        if sawReleased {
            lock.withLock {
                audience.listeners.removeAll { $0.listener == nil }
                refreshLocked()
            }
        }
    }

    /// Adds a subscriber and, if asked, hands it the current value, in order with any delivery
    /// in progress.
    final func addSubscriber(
        queue: DispatchQueue?,
        handler: Subscriber<Value>.Handler,
        sendsCurrentValue: Bool
    ) -> Subscription {
        let context = DeliveryContext.current
        lock.lock()
        let subscriber = Subscriber(startVersion: storedVersion, queue: queue, handler: handler)
        subscriber.owner = self
        audience.subscribers.append(subscriber)
        if subscriber.wantsChanges { audience.changeSubscriberCount += 1 }
        refreshLocked()
        let subscription = Subscription(subscriber)
        if sendsCurrentValue {
            scheduleInitialValueLocked(storedValue, to: subscriber, in: context)
        } else {
            lock.unlock()
        }
        return subscription
    }

    /// Queues (or makes) the first call of a new subscriber. Called with the lock held; releases it.
    final func scheduleInitialValueLocked<Element>(
        _ current: Element,
        to subscriber: Subscriber<Element>,
        in context: DeliveryContext
    ) {
        let version = storedVersion
        let key = self.key
        let depth = context.isDelivering ? context.depth : 0
        let deliver = {
            subscriber.receive(
                StateChange(key: key, oldValue: current, newValue: current, version: version, timestamp: Date()),
                value: current,
                depth: depth
            )
        }
        scheduleLocked(.initialValue(depth: depth, deliver: deliver), in: context)
    }

    func remove(_ entry: SubscriptionEntry) {
        lock.lock()
        defer { lock.unlock() }
        if let group = entry.group {
            group.removeLocked(entry)
            if group.isEmptyLocked {
                projectionIndex[group.path] = nil
                audience.projections.removeAll { $0 === group }
            }
        } else if let index = audience.subscribers.firstIndex(where: { $0 === entry }) {
            if audience.subscribers[index].wantsChanges { audience.changeSubscriberCount -= 1 }
            audience.subscribers.remove(at: index)
        }
        refreshLocked()
    }

    /// Recomputes the fast-path flags after the audience changed. Called with the lock held.
    final func refreshLocked() {
        isObserved = runsHook || !audience.isEmpty
        recordsChanges = audience.changeSubscriberCount > 0
    }
}
