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

/// A token for a subscription: keep it to keep receiving, cancel or release it to stop.
///
/// A subscription cancels itself when the token is deallocated, so handlers live exactly as long
/// as their owner keeps the token. Tokens are `Hashable`, so an owner can keep many in a
/// `Set<Subscription>`:
///
/// ```swift
/// var subscriptions = Set<Subscription>()
/// counter.subscribe { print("count is \($0)") }.store(in: &subscriptions)
/// ```
///
/// After ``cancel()`` returns, the handler is not called again (a call already running on another
/// thread finishes), and the container drops the handler and everything it captured.
///
/// - Note: All operations on `Subscription` are thread-safe.
public final class Subscription: Hashable, @unchecked Sendable {
    /// The subscriber's address, retained until the subscription is cancelled, and in the low
    /// bits (an object's address is a multiple of 8) how many ``isActive`` calls are reading it:
    /// ``cancel()`` releases the subscriber only when none is. One word, so that a kept token is
    /// as small as a token can be. The token keeps no reference to its container: the
    /// subscriber's link reaches it.
    @usableFromInline
    let entry: Atomic<UInt>

    /// The bits of ``entry`` that count readers.
    @usableFromInline
    static var readerBits: UInt { 7 }

    /// A token for `entry`.
    @inlinable
    init(_ entry: SubscriptionEntry) {
        let address = UInt(bitPattern: Unmanaged.passRetained(entry).toOpaque())
        assert(address & Self.readerBits == 0, "StateKit: a subscriber's address has no room to count readers")
        self.entry = Atomic(address)
    }

    /// A subscription that was never live: what subscribing to a container already gone gives.
    init() {
        self.entry = Atomic(0)
    }

    deinit {
        cancel()
    }

    /// Stops the subscription. Calling it more than once does nothing.
    public func cancel() {
        // A load first: a token cancelled by hand is cancelled again by its `deinit`, and the
        // load spares that second call an atomic operation.
        var word = entry.load(ordering: .relaxed)
        while true {
            guard word & ~Self.readerBits != 0 else { return }
            let (exchanged, original) = entry.compareExchange(
                expected: word, desired: word & Self.readerBits, ordering: .acquiringAndReleasing)
            if exchanged { break }
            word = original
        }
        let subscriber = Unmanaged<SubscriptionEntry>.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.readerBits)!)
        // Borrowed: `takeUnretainedValue()` retained and released it around the call.
        subscriber._withUnsafeGuaranteedRef { $0.cancel() }
        // Readers that counted themselves before the exchange may still read the subscriber;
        // none can count itself after it.
        if word & Self.readerBits != 0 { waitForReaders() }
        subscriber.release()
    }

    /// Waits until no ``isActive`` that counted itself before ``cancel()`` took the subscriber is
    /// still reading it: a few loads, unless the reading thread was preempted; then this one
    /// sleeps in short steps rather than spin, so that the reader gets a core.
    @inline(never)
    private func waitForReaders() {
        var attempts = 0
        while entry.load(ordering: .acquiring) != 0 {
            attempts += 1
            if attempts < 64 { sched_yield() } else { usleep(50) }
        }
    }

    /// Whether the subscription is still live: not cancelled, and its container still exists.
    public var isActive: Bool {
        guard let subscriber = beginReading() else { return false }
        defer { endReading() }
        return subscriber._withUnsafeGuaranteedRef { $0.isOwnerLive }
    }

    /// The subscriber, counted as read until ``endReading()``, or `nil` once cancelled.
    func beginReading() -> Unmanaged<SubscriptionEntry>? {
        var word = entry.load(ordering: .relaxed)
        while true {
            guard word & ~Self.readerBits != 0 else { return nil }
            if word & Self.readerBits == Self.readerBits {
                // As many readers as the bits count: wait for one to finish.
                sched_yield()
                word = entry.load(ordering: .relaxed)
                continue
            }
            let (exchanged, original) = entry.compareExchange(
                expected: word, desired: word + 1, ordering: .acquiringAndReleasing)
            if exchanged { break }
            word = original
        }
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: word & ~Self.readerBits)!)
    }

    /// Ends a read that ``beginReading()`` began.
    func endReading() {
        entry.subtract(1, ordering: .releasing)
    }

    /// Keeps the token in `set`, so the subscription lasts as long as the set holds it.
    public func store(in set: inout Set<Subscription>) {
        set.insert(self)
    }

    /// Tokens are equal only to themselves.
    public static func == (lhs: Subscription, rhs: Subscription) -> Bool {
        lhs === rhs
    }

    /// Hashes the token's identity.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(self))
    }
}
