import Dispatch
import Foundation

/// Dispatching: how a change becomes handler calls, in order, without recursion, with bounded
/// work per writer. The decisions are ``DeliveryStateMachine``'s; this file carries them out.
///
/// - A write made while nobody delivers the container is delivered by its writer, right away.
/// - A write made while another thread delivers is queued for that deliverer; the writer returns
///   at once, or, when ``DeliveryStateMachine/pendingLimit`` deliveries are queued, waits until the
///   queue is below it. A deliverer delivers only what its own thread queued (its handlers'
///   writes); when the next queued change is another thread's, the container's overflow
///   deliverer, a job on a serial queue of its own, takes over the backlog.
/// - Handlers run outside the lock. A write made inside a handler is queued, on its own container
///   or, through the thread's ``DeliveryContext``, on another one, and delivered after the current
///   delivery: no recursion, no stack growth.
/// - Each queued change remembers its chain depth; a change past
///   ``StateDiagnostics/maximumChainDepth`` is written but not delivered, which ends a cycle.
extension State {
    /// Delivers the change at the current version.
    ///
    /// The common case (nobody delivering, not inside a handler, no hook, no write observer) is
    /// delivered right here, specialised in the client; everything else goes through
    /// ``scheduleChangeAndUnlock(oldValue:announcedByHand:origin:in:)``.
    ///
    /// - Parameter scope: For a write confined to the part of one projection group, that group:
    ///   delivered here, the change is evaluated only by the groups whose part may overlap it (see
    ///   ``ProjectionGroup/evaluate(_:at:version:timestamp:depth:origin:within:)``). A queued
    ///   change is evaluated by every group.
    @inlinable
    final func publishAndUnlock(
        oldValue: Value?, announcedByHand: Bool = false, origin: ChangeOrigin = .local,
        scope: ProjectionGroupBase? = nil
    ) {
        if fields.pointee.tally.isOn && countChangeLocked(origin) {
            lock.unlock()
            return
        }
        let context = DeliveryContext.current(key: deliveryKey)
        guard !context.isDelivering && mayClaimLocked else {
            scheduleChangeAndUnlock(oldValue: oldValue, announcedByHand: announcedByHand, origin: origin, in: context)
            return
        }
        deliveryClaim.take()
        let change = PendingChange(
            oldValue: oldValue,
            newValue: storedValue,
            version: storedVersion,
            timestamp: wantsChangeRecords ? Date() : nil,
            depth: 0,
            isAnnouncedByHand: announcedByHand,
            origin: context.id,
            changeOrigin: origin
        )
        // Only the subscriber list is read when there is nobody else, and without a retain: each
        // array copied out of the lock is a retain and a release on every write. Written out, as
        // `claimedAudienceLocked` is: returning the pair cost this path 32 instructions.
        let subscribers = UnretainedSubscribers(audience.subscribers)
        let others = audience.hasProjectionsOrListeners ? audience : nil
        lock.unlock()
        context.beginOutermost()
        notify(change, subscribers: subscribers, others: others, scope: scope, in: context)
        finishDelivery(in: context)
        context.endOutermost()
    }

    /// Counts the change at the current version in the ``ChangeTally``, and returns whether the
    /// tally is all the audience, so that there is nothing more to do. Call it with the lock held,
    /// when the tally is on. Not inlined: only an inspected container runs it.
    @inlinable @inline(never)
    final func countChangeLocked(_ origin: ChangeOrigin) -> Bool {
        fields.pointee.tally.count(origin)
        return fields.pointee.tally.isAlone
    }

    /// Whether a thread that is not delivering may take the claim and deliver the change at the
    /// current version itself: nobody delivers the container, and it has no hook or write
    /// observer (which the state machine's path serves). Call it with the lock held.
    @inlinable
    final var mayClaimLocked: Bool {
        deliveryClaim.isFree && !runsHook && writeObserver == nil
    }

    /// Lets go of the claim after delivering a change, or first delivers what its handlers
    /// queued meanwhile. Call it without the lock, while `context` is delivering.
    @inlinable
    final func finishDelivery(in context: DeliveryContext) {
        if !deliveryClaim.finishUnlessQueued() {
            deliverQueued(in: context)
        }
    }

    /// Hands `change` to the subscribers, then to the projections and listeners of `others`,
    /// then hands on the follow-up one of the subscribers computed, such as a derived state's change (see
    /// ``DeliveryContext/holdFollowUp(of:deliver:)``). The subscribers stay alive until the
    /// caller lets go of the claim, or of its copy of the list. `scope`: see
    /// ``publishAndUnlock(oldValue:announcedByHand:origin:scope:)``.
    @inlinable
    final func notify(
        _ change: PendingChange<Value>,
        subscribers: UnretainedSubscribers<Value>,
        others: Audience<Value>?,
        scope: ProjectionGroupBase? = nil,
        in context: DeliveryContext
    ) {
        // Read before the loop: a handler takes its value by address, and the loop copied the
        // whole change, for every subscriber, to pass `change.newValue`'s.
        let newValue = change.newValue
        let version = change.version
        for index in 0..<subscribers.count {
            subscribers[index]._withUnsafeGuaranteedRef { subscriber in
                if SubscriptionEntry.isCommon(subscriber.currentState, joinedBefore: version) {
                    subscriber.valueHandler(newValue)
                } else {
                    deliverUncommon(change, to: subscriber, in: context)
                }
            }
        }
        if let others {
            notifyProjectionsAndListeners(change, audience: others, scope: scope)
        }
        context.deliverHeldFollowUp()
    }

    /// Hands `change` to a subscriber whose state is not common (see
    /// ``SubscriptionEntry/isCommon(_:joinedBefore:)``). Not inlined, so that
    /// ``notify(_:subscribers:others:in:)``'s loop does not build the arguments of its call for
    /// every subscriber, common or not.
    @inlinable
    @inline(never)
    final func deliverUncommon(
        _ change: PendingChange<Value>, to subscriber: Subscriber<Value>, in context: DeliveryContext
    ) {
        subscriber.receiveUncommon(
            { record(of: change) }, value: change.newValue, depth: change.depth, in: { context },
            ifJoinedBefore: change.version)
    }

    /// The public record of `change`.
    @inlinable
    final func record(of change: PendingChange<Value>) -> StateChange<Value> {
        StateChange(
            key: key,
            oldValue: change.oldValue ?? change.newValue,
            newValue: change.newValue,
            version: change.version,
            timestamp: change.timestamp ?? Date(),
            origin: change.changeOrigin
        )
    }

    /// Not inlined into ``notify(_:subscribers:others:in:)``, whose every call would otherwise
    /// keep registers for it: write1 cost 3 instructions more when it was.
    @inlinable @inline(never)
    final func notifyProjectionsAndListeners(
        _ change: PendingChange<Value>, audience: Audience<Value>, scope: ProjectionGroupBase?
    ) {
        if !audience.projections.isEmpty {
            withUnsafePointer(to: change.newValue) { address in
                if let scope {
                    for group in audience.projections where group.createdVersion < change.version {
                        group.evaluate(
                            change.newValue, at: address, version: change.version, timestamp: change.timestamp,
                            depth: change.depth, origin: change.changeOrigin, within: scope)
                    }
                    return
                }
                for group in audience.projections where group.createdVersion < change.version {
                    group.evaluate(
                        change.newValue, at: address, version: change.version, timestamp: change.timestamp,
                        depth: change.depth, origin: change.changeOrigin)
                }
            }
        }
        if !audience.listeners.isEmpty {
            notify(audience.listeners, depth: change.depth)
        }
    }

    /// Schedules the change at the current version with the state machine.
    @inlinable
    final func scheduleChangeAndUnlock(
        oldValue: Value?, announcedByHand: Bool, origin: ChangeOrigin, in context: DeliveryContext
    ) {
        let change = PendingChange(
            oldValue: oldValue,
            newValue: storedValue,
            version: storedVersion,
            timestamp: wantsChangeRecords ? Date() : nil,
            depth: context.isDelivering ? context.depth + 1 : 0,
            isAnnouncedByHand: announcedByHand,
            origin: context.id,
            changeOrigin: origin
        )
        if let writeObserver { writeObserver(record(of: change)) }
        scheduleAndUnlock(.change(change), in: context)
    }

    /// Delivers `item` now, or queues it for whoever delivers, as the state machine decides; see
    /// ``DeliveryStateMachine/Scheduling``.
    @inlinable
    final func scheduleAndUnlock(_ item: PendingItem<Value>, in context: DeliveryContext) {
        let scheduling = fields.pointee.delivery.schedule(
            item, isInsideHandler: context.isDelivering, claim: deliveryClaim)
        fields.pointee.delivery.checkInvariants(claim: deliveryClaim)
        switch scheduling {
        case .deliverNow:
            let (subscribers, others) = claimedAudienceLocked
            lock.unlock()
            context.beginOutermost()
            perform(item, subscribers: subscribers, others: others, in: context)
            deliverQueued(in: context)
            context.endOutermost()
        case .deliverQueue:
            lock.unlock()
            context.beginOutermost()
            deliverQueued(in: context)
            context.endOutermost()
        case .deliverAfterCurrentDelivery:
            lock.unlock()
            context.enqueue(
                PendingDelivery(container: self) { container, context in
                    unsafeDowncast(container, to: State<Value>.self).deliverQueued(in: context)
                })
        case .queued:
            lock.unlock()
        case .queuedAtLimit(let roomForMore):
            lock.unlock()
            roomForMore.wait()
        case .queuedOverLimit(let roomForMore):
            lock.unlock()
            context.owe(roomForMore, in: deliveryClaim)
        }
    }

    /// Delivers what this thread queued for the container it holds the claim of, then lets go,
    /// or hands the rest to the overflow deliverer.
    ///
    /// With nothing queued this is one compare-exchange: no lock, no look at the queue.
    @inlinable
    func deliverQueued(in context: DeliveryContext) {
        while !deliveryClaim.finishUnlessQueued() {
            guard deliverNextQueued(in: context, isOverflow: false) else { return }
        }
    }

    /// Takes the next step the state machine gives a deliverer that found items queued.
    ///
    /// - Returns: `false` if the claim went to the overflow deliverer.
    @inlinable
    final func deliverNextQueued(in context: DeliveryContext, isOverflow: Bool) -> Bool {
        lock.lock()
        // Released as this returns, outside the lock: the claim's holder no longer reads them.
        let retired = fields.pointee.delivery.takeRetired()
        defer { withExtendedLifetime(retired) {} }
        let next = fields.pointee.delivery.next(for: context.id, isOverflow: isOverflow, claim: deliveryClaim)
        checkInvariantsLocked()
        switch next {
        case .retry:
            lock.unlock()
            return true
        case .handOff(let overflowQueue):
            lock.unlock()
            startOverflowDelivery(on: overflowQueue)
            return false
        case .deliver(let item, let wakingWriters):
            let (subscribers, others) = claimedAudienceLocked
            lock.unlock()
            for writer in wakingWriters { writer.signal() }
            perform(item, subscribers: subscribers, others: others, in: context)
            return true
        }
    }

    /// Delivers the backlog other threads queued, on `queue`, until it is empty.
    @usableFromInline
    final func startOverflowDelivery(on queue: DispatchQueue) {
        let container = UncheckedSendable(self)
        queue.async {
            let context = DeliveryContext.current
            context.run(atDepth: 0, recentKeys: []) {
                let claim = container.value.deliveryClaim
                while !claim.finishUnlessQueued() {
                    _ = container.value.deliverNextQueued(in: context, isOverflow: true)
                    // A backlog's handlers may forward every change to a slower container: wait
                    // for its room item by item, not after the whole backlog.
                    context.waitForOwedRoom(deliveringFrom: claim)
                }
                context.waitForOwedRoom(deliveringFrom: claim)
            }
        }
    }

    /// Who a change delivered by the claim's holder goes to: the subscriber list, read without a
    /// retain (see ``UnretainedSubscribers``), and the audience, copied only if it has projections
    /// or listeners (a copy retains and releases its three arrays). Call it with the lock held,
    /// holding the claim.
    @inlinable
    final var claimedAudienceLocked: (UnretainedSubscribers<Value>, others: Audience<Value>?) {
        (UnretainedSubscribers(audience.subscribers), audience.hasProjectionsOrListeners ? audience : nil)
    }

    @inlinable
    final func perform(
        _ item: PendingItem<Value>,
        subscribers: UnretainedSubscribers<Value>,
        others: Audience<Value>?,
        in context: DeliveryContext
    ) {
        switch item {
        case .change(let change):
            deliver(change, subscribers: subscribers, others: others, in: context)
        case .initialValue(let depth, _, let deliver):
            context.depth = depth
            deliver()
        }
    }

    @inlinable
    final func deliver(
        _ change: PendingChange<Value>,
        subscribers: UnretainedSubscribers<Value>,
        others: Audience<Value>?,
        in context: DeliveryContext
    ) {
        if change.depth > 0 && !admitChainStep(depth: change.depth, version: change.version, in: context) { return }
        context.depth = change.depth
        if runsHook && !change.isAnnouncedByHand { runHooks(in: context) }
        notify(change, subscribers: subscribers, others: others, in: context)
    }

    /// Whether a handler-triggered change may be delivered, or is the step that closes a cycle.
    ///
    /// Takes the change's depth and version, not the change: code that is not specialised for
    /// `Value` would look up `PendingChange<Value>`'s metadata on every call.
    @usableFromInline
    final func admitChainStep(depth: Int, version: UInt64, in context: DeliveryContext) -> Bool {
        let limit = StateDiagnostics.maximumChainDepth
        if depth + 16 > limit { context.noteChainStep(key) }
        guard depth > limit else { return true }
        var keys: [String] = []
        for key in context.recentKeys where !keys.contains(key) { keys.append(key) }
        if !keys.contains(key) { keys.append(key) }
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .cycle,
                keys: keys,
                message: "containers kept updating each other: \(depth) handler-triggered writes in a row "
                    + "exceeded StateDiagnostics.maximumChainDepth (\(limit)); version \(version) of '\(key)' "
                    + "was written but not delivered, which ends the cycle"
            )
        )
        return false
    }

    /// Tells the seed's listeners, each on its own queue, as the article's `MonitoredState` did.
    ///
    /// The call continues the chain of the change (`depth`), so listeners that update each
    /// other's containers are cut off like subscribers that do.
    @usableFromInline
    final func notify(_ listeners: ContiguousArray<WeakListener>, depth: Int) {
        let state = UncheckedSendable(self)
        let recentKeys = DeliveryContext.current.recentKeys
        var sawReleased = false
        for entry in listeners {
            guard let listener = entry.listener, !entry.isReleased else {
                sawReleased = true
                continue
            }
            // A listener attached through one of a cell's containers is told by that container.
            let told = entry.container.map { UncheckedSendable(unsafeDowncast($0, to: State<Value>.self)) } ?? state
            let target = UncheckedSendable(listener)
            listener.stateListenerQueue.async {
                DeliveryContext.current.run(atDepth: depth, recentKeys: recentKeys) {
                    target.value.stateModified(told.value)
                }
            }
        }
        if sawReleased {
            lock.withLock {
                audience.listeners.removeAll { $0.isReleased }
                audienceChangedLocked()
            }
        }
    }
}
