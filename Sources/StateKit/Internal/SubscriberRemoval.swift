/// How a container takes a cancelled subscriber out of its audience, made in code specialised for
/// its value type.
///
/// A cancel reaches its container through ``SubscriberOwner``, in code not specialised for the
/// value type, where the removal looked up the generic metadata of the audience and its arrays
/// (measured: ~1,500 of the ~3,100 instructions of a cancel). ``MonitoredState/subscribe(_:)``
/// is specialised where an app calls it, so its first call installs one of these, made there,
/// and every later cancel calls it. Until then (a container with only projections, say), cancels
/// run the unspecialised removal.
@usableFromInline
final class SubscriberRemoval: Sendable {
    /// Removes the subscriber from the container, which is the first argument.
    let remove: @Sendable (AnyObject, SubscriptionEntry) -> Void

    @usableFromInline
    init(_ remove: @escaping @Sendable (AnyObject, SubscriptionEntry) -> Void) {
        self.remove = remove
    }
}
