/// One binding's way into its target: every value, in order, unless the binding lies on a loop of
/// bindings; there, latest value wins, so that a storm of bindings cannot fill the target's
/// delivery queue (semantics 3 and 24).
///
/// A binding that is not on a loop (``BindingGraph``) writes each value into the target as its
/// source's handler gets it, in the source's version order, and owes the room its write takes in
/// the target's queue as any handler's write does: a slow target holds back its source's
/// deliverer, and so the source's writers, instead of losing values.
///
/// On a loop, a forwarded value is parked here, replacing an older parked one, and a call is
/// queued in the target's delivery order, unless one is already queued: when the target's
/// deliverer reaches it, the call writes the newest parked value through the target's
/// ``BindingClock``. So a binding has at most one call and one change of its own waiting in the
/// target's queue, however fast its source changes, and the thread that forwards never waits for
/// room there (the room its write would owe is forgiven): a write into a container of a storm
/// waits only for the writes made into it before, and a binding's own writes cannot hold up its
/// source's deliverer. A change delivered ``staleAfter`` or more versions behind its source's
/// newest is not forwarded at all: newer ones follow it, and each stale value the target took
/// would be one more change for the storm to deliver and send back. Once the source stops
/// changing, the target holds its last value, or a newer one of its own.
///
/// A binding that joins or leaves a loop switches between the two ways: the clock's stamps keep
/// a parked value from replacing a newer one written the other way.
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

    /// How many newer versions of its source make a change stale on a loop (see the type's doc).
    static var staleAfter: UInt64 { 256 }

    private let slot = LockedBox(Slot())
    private let target: BindingTarget<Value>
    /// The binding's place in the ``BindingGraph``; `nil` when its source has no clock, and so
    /// cannot be reached from the target through bindings.
    private let edge: BindingGraph.Edge?

    /// A forwarder from a source whose container's clock is `sourceClock` into `target`.
    init(from sourceClock: BindingClock?, into target: BindingTarget<Value>) {
        self.target = target
        self.edge = sourceClock.map { BindingGraph.shared.add(from: $0.id, to: target.clock.id) }
    }

    /// Writes `value`, forwarded from a write stamped `stamp` that `newerVersions` newer versions
    /// of the source followed, into the target now; or, on a loop of bindings, parks it unless it
    /// is stale or a newer one is parked, and queues the call that writes it unless one is queued.
    func offer(_ value: Value, stamped stamp: UInt64, newerVersions: UInt64) {
        guard edge?.isInLoop.load(ordering: .relaxed) == true else { return target.write(value, stamp) }
        guard newerVersions < Self.staleAfter else { return }
        let mustQueue = slot.withLock { slot in
            if slot.parked.map({ $0.stamp < stamp }) ?? true { slot.parked = Parked(value: value, stamp: stamp) }
            defer { slot.isQueued = true }
            return !slot.isQueued
        }
        guard mustQueue else { return }
        let context = DeliveryContext.current
        let owed = context.owedCount
        target.queueCall(context) { self.writeParked() }
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
        let context = DeliveryContext.current
        let owed = context.owedCount
        target.write(parked.value, parked.stamp)
        context.forgiveOwedRoom(since: owed)
    }
}

/// Where a binding writes: a container's whole value, or a part of it that a writable projection
/// names, with the container's ``BindingClock``.
///
/// `Sendable` by hand: its closures capture only the container, its clock and a key path, all of
/// which may be used from any thread (the container and the clock guard themselves with locks).
@usableFromInline
struct BindingTarget<Value>: @unchecked Sendable {
    /// The clock of the container written.
    let clock: BindingClock
    /// Queues a call in the container's delivery order, from the thread whose context is given.
    let queueCall: (DeliveryContext, _ call: @escaping () -> Void) -> Void
    /// Writes a value forwarded from a write with the stamp given, unless the container's newest
    /// write is newer.
    let write: (Value, _ stamp: UInt64) -> Void

    /// The whole value of `target`.
    init(_ target: State<Value>) {
        let clock = BindingClock.of(target)
        self.init(queueingIn: target, clock: clock) { value, stamp in
            clock.forward(stamped: stamp, into: target, unlessAlready: { target.isEqual?($0, value) ?? false }) {
                $0 = value
            }
        }
    }

    /// The part at `path` of `root`.
    init<Root>(_ root: State<Root>, at path: WritableKeyPath<Root, Value>) where Value: Equatable {
        let clock = BindingClock.of(root)
        self.init(queueingIn: root, clock: clock) { value, stamp in
            clock.forward(stamped: stamp, into: root, unlessAlready: { $0[keyPath: path] == value }) {
                $0[keyPath: path] = value
            }
        }
    }

    private init<Root>(queueingIn root: State<Root>, clock: BindingClock, write: @escaping (Value, UInt64) -> Void) {
        self.clock = clock
        queueCall = { context, call in
            root.lock.lock()
            root.scheduleAndUnlock(.initialValue(depth: context.depth, origin: context.id, deliver: call), in: context)
        }
        self.write = write
    }
}
