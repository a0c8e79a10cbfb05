/// Holds back the handlers of the writes a thread makes while it holds a lock of its own, until it
/// has released that lock, as a transaction's commit does.
///
/// Between ``begin()`` and ``end()`` the thread counts as delivering, so each write is queued on
/// it and its handlers run at ``end()`` (or, if the thread was already delivering, after the
/// current delivery). A handler may then read or write whatever the lock guarded without
/// deadlocking, and the writes made under the lock keep their order.
struct DeferredDelivery {
    private let context: DeliveryContext
    private let isOutermost: Bool

    private init(context: DeliveryContext, isOutermost: Bool) {
        self.context = context
        self.isOutermost = isOutermost
    }

    /// Starts holding back deliveries on this thread.
    static func begin() -> DeferredDelivery {
        let context = DeliveryContext.current
        let isOutermost = !context.isDelivering
        if isOutermost {
            context.beginOutermost()
            // A change scheduled while delivering counts as one handler-triggered step; these
            // start a chain.
            context.depth = -1
        }
        return DeferredDelivery(context: context, isOutermost: isOutermost)
    }

    /// Runs the handlers held back, unless an outer delivery on this thread will.
    func end() {
        if isOutermost { context.endOutermost() }
    }
}
