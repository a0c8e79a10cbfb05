import Dispatch

/// A subscriber to values of type `Element`: where its handler runs and what it is handed.
@usableFromInline
final class Subscriber<Element>: SubscriptionEntry, @unchecked Sendable {
    @usableFromInline
    enum Handler {
        case value((Element) -> Void)
        case change((StateChange<Element>) -> Void)
        /// A derived state's watch of one of its sources: told of each change with the object
        /// the subscriber keeps (the derived state's engine, see ``LeafDerivation``) and the
        /// context of the thread delivering it, which it hands its own change to. Handed what it
        /// needs, unretained (the subscriber's options keep it), the function captures nothing, so
        /// a call retains nothing.
        case sourceChanged((Unmanaged<AnyObject>, DeliveryContext) -> Void)
    }

    /// The value handler, or one that does nothing for another kind of handler. A closure in a
    /// non-optional field of its own is called in place; one in an enum's payload or an
    /// `Optional` is copied out first, a retain and a release of what it captures on every call.
    @usableFromInline
    let valueHandler: (Element) -> Void

    @inlinable
    init(
        link: SubscriberLink,
        group: __shared ProjectionGroupBase? = nil,
        startVersion: UInt64,
        queue: DispatchQueue?,
        handler: Handler,
        onOwnerReleased: (@Sendable () -> Void)? = nil,
        keeping keptAlive: AnyObject? = nil
    ) {
        if case .value(let body) = handler {
            self.valueHandler = body
        } else {
            self.valueHandler = { _ in }
        }
        if queue == nil, case .value = handler {
            if group == nil && onOwnerReleased == nil && keptAlive == nil
                && startVersion <= SubscriptionEntry.largestPackedVersion
            {
                super.init(link: link, startVersion: startVersion)
            } else {
                super.init(
                    options: SubscriberOptions(
                        link: link, startVersion: startVersion, group: group, onOwnerReleased: onOwnerReleased,
                        queue: nil, keptAlive: keptAlive),
                    handlerIsInOptions: false)
            }
        } else {
            super.init(
                options: HandlerOptions(
                    link: link, startVersion: startVersion, handler: handler, group: group,
                    onOwnerReleased: onOwnerReleased, queue: queue, keptAlive: keptAlive),
                handlerIsInOptions: true)
        }
    }

    /// The options that hold the handler; only when ``SubscriptionEntry/handlerIsInOptions``.
    @inlinable
    var handlerOptions: HandlerOptions<Element> {
        unsafeDowncast(linkOrOptions, to: HandlerOptions<Element>.self)
    }

    /// Whether this subscriber wants old values and timestamps, not just new values.
    @inlinable
    var wantsChanges: Bool {
        guard handlerIsInOptions else { return false }
        // Unretained: the subscriber keeps its options.
        unowned(unsafe) let options = handlerOptions
        return options.kind == .change
    }

    /// Hands `change` to the handler, on its queue if it has one, if the subscriber is active and
    /// joined before `version` (the change's; `.max` for a first call). For a subscriber whose
    /// ``SubscriptionEntry/state`` is not common (see
    /// ``SubscriptionEntry/isCommon(_:joinedBefore:)``): a delivery calls a common one's
    /// ``valueHandler`` itself. `depth` is the change's place in a chain of handler-triggered
    /// writes; `context` is the delivering thread's.
    ///
    /// Not inlined, so that the delivery loops stay small enough to be inlined in turn.
    @inlinable
    @inline(never)
    func receiveUncommon(
        _ change: () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: () -> DeliveryContext,
        ifJoinedBefore version: UInt64
    ) {
        let state = currentState
        guard isActive(andJoinedBefore: version, state: state) else { return }
        guard state & Self.handlerInOptionsBit != 0 else { return valueHandler(value) }
        // Unretained: the subscriber keeps its options, which a strong local retained and
        // released on every delivery.
        unowned(unsafe) let options = handlerOptions
        guard options.hasQueue else {
            switch options.kind {
            case .change: options.changeHandler(change())
            case .sourceChanged: options.sourceChanged(.passUnretained(options.keptAlive.unsafelyUnwrapped), context())
            case .value: preconditionFailure("a value handler without a queue is called as valueHandler")
            }
            return
        }
        receiveOnQueue(change(), value: value, depth: depth)
    }

    /// Queues the call of a subscriber whose handler runs on a queue.
    @inlinable
    func receiveOnQueue(_ change: @autoclosure () -> StateChange<Element>, value: Element, depth: Int) {
        let options = handlerOptions
        let queue = options.queue.unsafelyUnwrapped
        let call: () -> Void
        switch options.kind {
        case .value: call = { [valueHandler] in valueHandler(value) }
        case .change:
            let record = change()
            call = { [options] in options.changeHandler(record) }
        case .sourceChanged:
            call = { [options] in
                options.sourceChanged(.passUnretained(options.keptAlive.unsafelyUnwrapped), .current)
            }
        }
        enqueue(call, on: queue, depth: depth)
    }

    /// ``receiveUncommon(_:value:depth:in:ifJoinedBefore:)`` for any subscriber, for code
    /// not specialised for `Element` (a projection group's, a new subscriber's first call): it
    /// calls a value handler without mentioning `StateChange`, whose metadata such code otherwise
    /// looks up on every call, whatever the handler (measured: ~330 instructions a subscriber;
    /// 1,000 subscribers to one projection went from 458,419 to 98,461 instructions a write).
    @usableFromInline
    func receiveInGenericCode(
        _ change: @autoclosure () -> StateChange<Element>,
        value: Element,
        depth: Int,
        in context: @autoclosure () -> DeliveryContext,
        ifJoinedBefore version: UInt64
    ) {
        guard !Self.isCommon(currentState, joinedBefore: version) else { return valueHandler(value) }
        receiveUncommon(change, value: value, depth: depth, in: context, ifJoinedBefore: version)
    }

    @usableFromInline
    func enqueue(_ call: @escaping () -> Void, on queue: DispatchQueue, depth: Int) {
        let delivery = UncheckedSendable(call)
        let recentKeys = DeliveryContext.current.recentKeys
        queue.async { [self] in
            guard isActive else { return }
            DeliveryContext.current.run(atDepth: depth, recentKeys: recentKeys) { delivery.value() }
        }
    }
}
