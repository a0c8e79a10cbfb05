import Synchronization

/// How a subscriber reaches the audience it is in without keeping its container alive: one link
/// a container, made with its first subscriber, which every subscriber holds.
///
/// A weak reference to the container would do the same, but it gives the container a side
/// table: making, loading and destroying the reference were about 40% of a subscribe and cancel,
/// and every retain and release of a container with one costs ~200 instructions instead of an
/// atomic increment. The link keeps the container's lock, and a removal that reaches the
/// container's fields and delivery claim, never the container: a reference to the container
/// copied during a cancel could be its last, and run its `deinit` with the lock held. The
/// container's `deinit` marks the link released, with the lock held, before it frees the fields;
/// a cancel removes its subscriber with that lock held, only while the link is not released.
///
/// Unchecked `Sendable`: the removal touches the container's fields only with `lock` held.
@usableFromInline
final class SubscriberLink: @unchecked Sendable {
    /// The owner's lock, kept by the link so that a cancel can take it after the owner is gone.
    let lock: Lock
    /// Takes a subscriber out of the owner's audience; called with `lock` held while the owner
    /// lives.
    private let removeLocked: (SubscriptionEntry) -> Void
    /// The same removal made in code specialised for the owner's value type, when ``removeLocked``
    /// was made in code that was not (the first subscriber was a projection's, say); see
    /// ``SubscriberRemoval``.
    @usableFromInline
    let specialisedRemoval = OnceInstalledReference<SubscriberRemoval>()
    private let ownerLive = Atomic<Bool>(true)

    @usableFromInline
    init(lock: Lock, removeLocked: @escaping (SubscriptionEntry) -> Void) {
        self.lock = lock
        self.removeLocked = removeLocked
    }

    /// Whether the owner has not been released.
    var isOwnerLive: Bool {
        ownerLive.load(ordering: .acquiring)
    }

    /// Takes `entry` out of its owner's audience, unless the owner is released.
    func remove(_ entry: SubscriptionEntry) {
        lock.lock()
        defer { lock.unlock() }
        guard ownerLive.load(ordering: .relaxed) else { return }
        if let removal = specialisedRemoval.unretained {
            removal._withUnsafeGuaranteedRef { $0.remove(entry) }
        } else {
            removeLocked(entry)
        }
    }

    /// Marks the owner released: from its `deinit`, before it tells or drops its subscribers.
    /// After this returns, no cancel reaches the owner.
    func ownerReleased() {
        lock.lock()
        ownerReleasedLocked()
        lock.unlock()
    }

    /// ``ownerReleased()`` with `lock` already held.
    func ownerReleasedLocked() {
        ownerLive.store(false, ordering: .releasing)
    }
}
