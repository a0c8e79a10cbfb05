import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Bionic)
import Bionic
#endif

/// Where the writes of a container that a binding joins stand in one order of all such writes, so
/// that bindings which loop back settle (semantics 24).
///
/// Every write of such a container gets a stamp from one process-wide counter, under the
/// container's lock, by the write observer the clock installs; a binding's own write takes the
/// stamp of the write it forwards instead. A binding applies a forwarded value only when its stamp
/// is newer than the stamp of the target's newest write: an older one lost the race to a write made
/// since, and is dropped. Once writers stop, every container of a two-way binding or a cycle of
/// bindings holds the value of the newest write in that order, however the deliveries interleaved.
///
/// The stamps are guarded by the clock's own lock, taken inside the container's lock, never the
/// other way round.
@usableFromInline
final class BindingClock: Sendable {
    /// The stamp of every write a binding may forward, process-wide.
    private static let counter = Atomic<UInt64>(0)
    /// The ``id`` of the newest clock.
    private static let lastID = Atomic<UInt64>(0)
    /// The clocks installed, one per container (or shared cell), held weakly: the container's
    /// write observer holds its clock.
    private static let clocks = LockedBox([ObjectIdentifier: WeakClock]())

    private struct Stamps {
        /// The stamp of the container's newest write.
        var newest: UInt64 = 0
        /// The container's newest version.
        var newestVersion: UInt64 = 0
        /// The stamp a binding's write on `thread` is about to take.
        var forwarding: (thread: pthread_t, stamp: UInt64)?
        /// The stamps of recent versions, at `version % recent.count`: at least every version
        /// still queued for delivery, so that a binding's handler, which runs when the version is
        /// delivered, finds the stamp of each (``note(version:stamp:queued:)``).
        var recent = [(version: UInt64, stamp: UInt64)](repeating: (0, 0), count: 256)

        /// Keeps `stamp` for `version`, the newest, written while `queued` deliveries wait in the
        /// container's queue.
        ///
        /// Every version not yet delivered is queued, or the one being delivered, so the oldest
        /// whose handlers may still run is at most `queued + 1` versions older. The ring grows to
        /// hold that many, as the queue, which is bounded, grows: a binding's handler that lagged
        /// further behind than a fixed ring dropped the change, and a one-way binding lost values.
        mutating func note(version: UInt64, stamp: UInt64, queued: Int) {
            newest = max(newest, stamp)
            newestVersion = max(newestVersion, version)
            if queued + 2 > recent.count {
                var count = recent.count * 2
                while count < queued + 2 { count *= 2 }
                var grown = [(version: UInt64, stamp: UInt64)](repeating: (0, 0), count: count)
                for entry in recent {
                    let index = Int(entry.version % UInt64(count))
                    if grown[index].version <= entry.version { grown[index] = entry }
                }
                recent = grown
            }
            recent[Int(version % UInt64(recent.count))] = (version, stamp)
        }
    }

    private struct WeakClock {
        weak var clock: BindingClock?
    }

    private let stamps = LockedBox(Stamps())
    /// The container's identity in the ``BindingGraph``: a number never handed out twice (an
    /// address would be, to a clock made after this one is freed).
    let id = lastID.add(1, ordering: .relaxed).newValue

    private init() {}

    /// A stamp newer than every one handed out so far.
    static func newStamp() -> UInt64 {
        counter.add(1, ordering: .relaxed).newValue
    }

    /// The clock of `container`, installed with its write observer the first time a binding joins
    /// it; its current value counts as written now.
    static func of<Value>(_ container: State<Value>) -> BindingClock {
        let id = ObjectIdentifier(container.deliveryClaim)
        return clocks.withLock { table in
            if let clock = table[id]?.clock { return clock }
            if table.count >= 64 && table.count.isMultiple(of: 64) { table = table.filter { $0.value.clock != nil } }
            let clock = BindingClock()
            // The fields, not the container: a shared cell's are the cell's, which outlive any
            // one of its containers, and they are read only under the lock, by the observer.
            let fields = container.fields
            container.lock.withLock {
                clock.noteWrite(version: container.storedVersion, queued: 0)
                let earlier = container.writeObserver
                container.writeObserver = { change in
                    earlier?(change)
                    clock.noteWrite(version: change.version, queued: fields.pointee.delivery.queue.count)
                }
            }
            table[id] = WeakClock(clock: clock)
            return clock
        }
    }

    /// Stamps the write that made `version`, while `queued` deliveries wait in the container's
    /// queue: a binding's on this thread takes the stamp it forwards, any other a new one. Called
    /// under the container's lock.
    private func noteWrite(version: UInt64, queued: Int) {
        stamps.withLock { stamps in
            if let forwarding = stamps.forwarding, pthread_equal(forwarding.thread, pthread_self()) != 0 {
                stamps.forwarding = nil
                stamps.note(version: version, stamp: forwarding.stamp, queued: queued)
            } else {
                stamps.note(version: version, stamp: Self.newStamp(), queued: queued)
            }
        }
    }

    /// The stamp of the write that made `version`, and how many versions the container has made
    /// since; `nil` when `version` was delivered long ago.
    func stamp(of version: UInt64) -> (stamp: UInt64, newerVersions: UInt64)? {
        stamps.withLock { stamps in
            let entry = stamps.recent[Int(version % UInt64(stamps.recent.count))]
            guard entry.version == version && entry.stamp != 0 else { return nil }
            return (entry.stamp, stamps.newestVersion &- version)
        }
    }

    /// Applies `body`, a value forwarded from a write stamped `stamp`, to `target`, whose clock
    /// this is, unless the target's newest write is newer. A value that `isEqualNow` says the
    /// target already holds is not written, but counts as that write from now on.
    func forward<Root>(
        stamped stamp: UInt64, into target: State<Root>, unlessAlready isEqualNow: (Root) -> Bool,
        _ body: (inout Root) -> Void
    ) {
        let thread = pthread_self()
        // Runs under the target's lock, right before the write (again after Observation's
        // willSet, when observed): what it decides holds for the write that follows.
        let rejection = target.write(
            unlessAlready: { current in
                self.stamps.withLock { stamps in
                    let isOlder = stamp <= stamps.newest
                    let isEqual = !isOlder && isEqualNow(current)
                    if isEqual { stamps.newest = stamp }
                    guard isOlder || isEqual else {
                        stamps.forwarding = (thread, stamp)
                        return false
                    }
                    if let forwarding = stamps.forwarding, pthread_equal(forwarding.thread, thread) != 0 {
                        stamps.forwarding = nil
                    }
                    return true
                }
            }, body)
        guard let rejection else { return }
        stamps.withLock { stamps in
            if let forwarding = stamps.forwarding, pthread_equal(forwarding.thread, thread) != 0 {
                stamps.forwarding = nil
            }
        }
        rejection.report()
    }
}

extension BindingClock {
    /// `target <~ source` for containers: forwards the source's current value at once, as a write
    /// made now, then each change with the stamp of the write that made it.
    static func bind<Value: Sendable>(_ target: BindingTarget<Value>, to source: MonitoredState<Value>) -> Subscription
    {
        bind(target, clock: of(source)) { handler in
            source.addSubscriber(queue: nil, handler: handler, sendsCurrentValue: true)
        }
    }

    /// `target <~ source` for a projection: as for containers when the projection's container has
    /// a clock (``Projection/bindingClock``), and with each change stamped as a write made now
    /// otherwise.
    static func bind<Value: Sendable>(_ target: BindingTarget<Value>, to source: any Projection<Value>) -> Subscription
    {
        bind(target, clock: source.bindingClock) { handler in
            source.subscribe(queue: nil, handler: handler, sendsCurrentValue: true, onRootReleased: nil)
        }
    }

    /// Subscribes to a source whose container's clock is `sourceClock` with a handler that
    /// forwards into `target`.
    private static func bind<Value: Sendable>(
        _ target: BindingTarget<Value>, clock sourceClock: BindingClock?,
        subscribe: (Subscriber<Value>.Handler) -> Subscription
    ) -> Subscription {
        let forwarder = BindingForwarder(from: sourceClock, into: target)
        let isFirstCall = LockedBox(true)
        return subscribe(
            .change { change in
                let isFirst = isFirstCall.withLock { isFirst in
                    defer { isFirst = false }
                    return isFirst
                }
                guard let sourceClock, !isFirst else {
                    return forwarder.offer(change.newValue, stamped: newStamp(), newerVersions: 0)
                }
                guard let (stamp, newerVersions) = sourceClock.stamp(of: change.version) else { return }
                forwarder.offer(change.newValue, stamped: stamp, newerVersions: newerVersions)
            })
    }
}
