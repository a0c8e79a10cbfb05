/// One binding's way into its target, latest value wins, so that a storm of bindings cannot fill
/// the target's delivery queue (semantics 3 and 24).
///
/// A forwarded value is parked here, replacing an older parked one, and a call is queued in the
/// target's delivery order, unless one is already queued: when the target's deliverer reaches
/// it, the call writes the newest parked value through the target's ``BindingClock``. So a
/// binding has at most one call and one change of its own waiting in the target's queue, however
/// fast its source changes, and the thread that forwards never waits for room there (the room
/// its write would owe is forgiven): a write into a container of a storm waits only for the
/// writes made into it before, and a binding's own writes cannot hold up its source's deliverer.
/// Once the source stops changing, the target holds its last value, or a newer one of its own.
final class BindingForwarder<Value: Sendable>: Sendable {
    private struct Parked {
        var value: Value
        var stamp: UInt64
    }

    private struct Slot {
        /// The newest value forwarded and not yet written.
        var parked: Parked?
        /// Whether a call that writes it is queued in the target's delivery order.
        var isQueued = false
    }

    private let slot = LockedBox(Slot())
    private let target: State<Value>
    private let clock: BindingClock

    /// A forwarder into `target`, whose clock is `clock`.
    init(into target: State<Value>, clock: BindingClock) {
        self.target = target
        self.clock = clock
    }

    /// Parks `value`, forwarded from a write stamped `stamp`, unless a newer one is parked, and
    /// queues the call that writes it unless one is queued.
    func offer(_ value: Value, stamped stamp: UInt64) {
        let mustQueue = slot.withLock { slot in
            if slot.parked.map({ $0.stamp < stamp }) ?? true { slot.parked = Parked(value: value, stamp: stamp) }
            defer { slot.isQueued = true }
            return !slot.isQueued
        }
        guard mustQueue else { return }
        let context = DeliveryContext.current(key: target.deliveryKey)
        let owed = context.owedCount
        target.lock.lock()
        target.scheduleAndUnlock(
            .initialValue(depth: context.depth, origin: context.id) { self.writeParked() }, in: context)
        context.forgiveOwedRoom(since: owed)
    }

    /// Writes the parked value into the target; called by the target's deliverer.
    private func writeParked() {
        let parked = slot.withLock { slot in
            slot.isQueued = false
            defer { slot.parked = nil }
            return slot.parked
        }
        guard let parked else { return }
        let context = DeliveryContext.current(key: target.deliveryKey)
        let owed = context.owedCount
        clock.forward(parked.value, stamped: parked.stamp, into: target)
        context.forgiveOwedRoom(since: owed)
    }
}
