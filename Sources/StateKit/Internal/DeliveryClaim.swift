import Synchronization

/// Whether a thread delivers a container's changes, and whether changes were queued for it.
///
/// One thread at a time delivers a container. Every transition of the claim happens under the
/// container's lock but one: a deliverer that finished a change while nobody queued another gives
/// the claim up with one compare-exchange (``releaseUnlessPending()``) instead of taking the lock a
/// second time on every delivered write. A writer that queues a change for a deliverer marks the
/// claim (``markPending()``); if the deliverer let go in between, the writer holds the claim from
/// then on and delivers the queue itself, so no queued change is left without a deliverer.
///
/// Under the lock, the claim is ``claimedWithPending`` exactly when changes are queued, so a
/// deliverer with nothing queued lets go without the lock and without looking at the queue.
/// The release and acquire orderings also hand over what one deliverer wrote for the next (a
/// projection group's last part), which the lock handed over before.
@usableFromInline
struct DeliveryClaim: ~Copyable {
    @usableFromInline
    static var free: UInt8 { 0 }
    @usableFromInline
    static var claimed: UInt8 { 1 }
    @usableFromInline
    static var claimedWithPending: UInt8 { 2 }

    @usableFromInline
    let state = Atomic<UInt8>(0)

    init() {}

    /// Whether a thread delivers the container. Call it with the container's lock held.
    @inlinable
    var isClaimed: Bool {
        state.load(ordering: .acquiring) != Self.free
    }

    /// Makes the calling thread the deliverer. Call it with the lock held, after ``isClaimed``
    /// was false.
    ///
    /// - Parameter isPending: Whether the caller queues a change for itself to deliver.
    @inlinable
    func take(isPending: Bool = false) {
        state.store(isPending ? Self.claimedWithPending : Self.claimed, ordering: .releasing)
    }

    /// Tells the deliverer that a change was queued for it. Call it with the lock held, after
    /// ``isClaimed`` was true and the change was queued.
    ///
    /// - Returns: `false` if the deliverer let go meanwhile: the calling thread then holds the
    ///   claim and must deliver the queue.
    @usableFromInline
    func markPending() -> Bool {
        let (exchanged, original) = state.compareExchange(
            expected: Self.claimed,
            desired: Self.claimedWithPending,
            ordering: .acquiringAndReleasing
        )
        if exchanged || original == Self.claimedWithPending { return true }
        take(isPending: true)
        return false
    }

    /// Records that the deliverer took the last queued change. Call it with the lock held.
    @usableFromInline
    func markDrained() {
        state.store(Self.claimed, ordering: .releasing)
    }

    /// Gives the claim up unless a change is queued. Called by the deliverer without the lock.
    ///
    /// - Returns: `false` if changes are queued: the caller still holds the claim and must deliver them.
    @inlinable
    func releaseUnlessPending() -> Bool {
        state.compareExchange(expected: Self.claimed, desired: Self.free, ordering: .acquiringAndReleasing).exchanged
    }
}
