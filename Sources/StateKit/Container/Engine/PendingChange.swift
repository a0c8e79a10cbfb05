import Foundation

/// A change waiting to be delivered, as recorded by the write that made it.
@usableFromInline
struct PendingChange<Value> {
    /// Kept only when a subscriber wants old values (copying it otherwise would make in-place
    /// edits of large values O(n)).
    @usableFromInline
    var oldValue: Value?
    @usableFromInline
    var newValue: Value
    @usableFromInline
    var version: UInt64
    /// Taken only when a subscriber wants timestamps.
    @usableFromInline
    var timestamp: Date?
    /// How many handler-triggered writes led here (0 for a write made outside any handler).
    @usableFromInline
    var depth: Int
    /// A change announced by calling `didModify()` by hand: the override already ran.
    @usableFromInline
    var isAnnouncedByHand: Bool
    /// The thread that made it (its context; see ``DeliveryContext/id``).
    @usableFromInline
    var origin: DeliveryContext.ID
    /// Where the change came from (``StateChange/origin``).
    @usableFromInline
    var changeOrigin: ChangeOrigin

    @inlinable
    init(
        oldValue: Value?,
        newValue: Value,
        version: UInt64,
        timestamp: Date?,
        depth: Int,
        isAnnouncedByHand: Bool,
        origin: DeliveryContext.ID,
        changeOrigin: ChangeOrigin
    ) {
        self.oldValue = oldValue
        self.newValue = newValue
        self.version = version
        self.timestamp = timestamp
        self.depth = depth
        self.isAnnouncedByHand = isAnnouncedByHand
        self.origin = origin
        self.changeOrigin = changeOrigin
    }
}

/// Something a container's deliverer must do, in order, with the thread whose write or
/// subscription made it (a deliverer delivers what its own thread queued and hands on the rest).
@usableFromInline
enum PendingItem<Value> {
    /// Deliver a change to everyone.
    case change(PendingChange<Value>)
    /// Hand a new subscriber the value current when it subscribed, or run another call in the
    /// container's delivery order (a binding's write, see ``BindingForwarder``).
    case initialValue(depth: Int, origin: DeliveryContext.ID, deliver: () -> Void)

    /// The thread that queued it.
    @inlinable
    var origin: DeliveryContext.ID {
        switch self {
        case .change(let change): change.origin
        case .initialValue(_, let origin, _): origin
        }
    }
}
