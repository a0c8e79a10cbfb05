import Dispatch

/// What a subscriber has beyond a value handler called on the delivering thread: the projection
/// group it belongs to, what to call when its container goes away, a queue, what it keeps alive.
@usableFromInline
class SubscriberOptions: @unchecked Sendable {
    /// The subscriber's link (see ``SubscriptionEntry/linkOrOptions``).
    @usableFromInline
    let link: SubscriberLink
    /// The subscriber's start version, when it is too large for ``SubscriptionEntry/state``.
    @usableFromInline
    let startVersion: UInt64
    /// The projection group the subscriber belongs to, or `nil` for a container's own subscribers.
    @usableFromInline
    weak let group: ProjectionGroupBase?
    /// Called if the container goes away while the subscriber is live.
    let onOwnerReleased: (@Sendable () -> Void)?
    /// `nil` delivers synchronously on the delivering thread.
    @usableFromInline
    let queue: DispatchQueue?
    /// Whether ``queue`` is set: a delivery reads this, since comparing the queue with `nil`
    /// retained and released it.
    @usableFromInline
    let hasQueue: Bool
    /// What the subscriber keeps alive for as long as it lives: a derived state's engine, which a
    /// subscription to it keeps (as a Combine `AnyCancellable` keeps its chain), or which watches
    /// a source through it (``Subscriber/Handler/sourceChanged(_:)``).
    @usableFromInline
    let keptAlive: AnyObject?

    @usableFromInline
    init(
        link: SubscriberLink,
        startVersion: UInt64,
        group: __shared ProjectionGroupBase?,
        onOwnerReleased: (@Sendable () -> Void)?,
        queue: DispatchQueue?,
        keptAlive: AnyObject?
    ) {
        self.link = link
        self.startVersion = startVersion
        self.group = group
        self.onOwnerReleased = onOwnerReleased
        self.queue = queue
        self.hasQueue = queue != nil
        self.keptAlive = keptAlive
    }
}
