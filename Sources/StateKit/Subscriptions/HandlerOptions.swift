import Dispatch

/// ``SubscriberOptions`` with a handler other than a value handler on the delivering thread.
///
/// Each kind of handler has a non-optional field of its own, set to one that does nothing for
/// the other kinds: a closure in such a field is called in place, while one in an enum's payload
/// is copied out first, a retain and a release of what it captures on every call.
@usableFromInline
final class HandlerOptions<Element>: SubscriberOptions, @unchecked Sendable {
    @usableFromInline
    enum Kind {
        /// A value handler on a queue; the handler is ``Subscriber/valueHandler``.
        case value
        case change
        case sourceChanged
    }

    @usableFromInline
    let kind: Kind
    @usableFromInline
    let changeHandler: (StateChange<Element>) -> Void
    @usableFromInline
    let sourceChanged: (Unmanaged<AnyObject>, DeliveryContext) -> Void

    @usableFromInline
    init(
        link: SubscriberLink,
        startVersion: UInt64,
        handler: Subscriber<Element>.Handler,
        group: __shared ProjectionGroupBase?,
        onOwnerReleased: (@Sendable () -> Void)?,
        queue: DispatchQueue?,
        keptAlive: AnyObject?
    ) {
        switch handler {
        case .value:
            kind = .value
            changeHandler = { _ in }
            sourceChanged = { _, _ in }
        case .change(let body):
            kind = .change
            changeHandler = body
            sourceChanged = { _, _ in }
        case .sourceChanged(let body):
            kind = .sourceChanged
            changeHandler = { _ in }
            sourceChanged = body
        }
        super.init(
            link: link, startVersion: startVersion, group: group, onOwnerReleased: onOwnerReleased, queue: queue,
            keptAlive: keptAlive)
    }
}
