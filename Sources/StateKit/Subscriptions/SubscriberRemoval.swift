/// How a container takes a cancelled subscriber out of its audience, made in code specialised for
/// its value type.
///
/// A cancel reaches its container's audience through ``SubscriberLink``, made with the first
/// subscriber. Made in code not specialised for the value type (a projection's subscribe), its
/// removal looks up the generic metadata of the audience and its arrays (measured: ~1,500 of the
/// ~3,100 instructions of a cancel). ``MonitoredState/subscribe(_:)`` is specialised where an app
/// calls it, so its first call installs one of these in the link, and every later cancel calls
/// it. Until then (a container with only projections, say), cancels run the unspecialised removal.
///
/// Unchecked `Sendable`: the removal reaches the container's fields, which it is only called to
/// touch with the container's lock held.
@usableFromInline
final class SubscriberRemoval: @unchecked Sendable {
    /// Removes the subscriber from the container's audience; called with its lock held.
    let remove: (SubscriptionEntry) -> Void

    @usableFromInline
    init(_ remove: @escaping (SubscriptionEntry) -> Void) {
        self.remove = remove
    }
}
