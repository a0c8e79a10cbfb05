import Synchronization

/// A subscriber's life: active until cancelled, then removed from its owner.
///
/// Only what every subscriber needs lives here and in ``Subscriber``: a value handler called on
/// the delivering thread needs nothing else. The rest (a projection group, a queue, another kind
/// of handler) is in ``SubscriberOptions``, which most subscribers do without: every field here
/// is allocated, initialised and destroyed with each subscription, so a subscriber with no options
/// is three words and its handler.
@usableFromInline
class SubscriptionEntry: @unchecked Sendable {
    /// The version current when the subscriber joined, in the low bits, and above it three
    /// flags: ``inactiveBit``, ``handlerInOptionsBit``, and ``largeVersionBit`` when the version
    /// does not fit (the options then hold it). Laid out so that one comparison with a change's
    /// version tells that an active subscriber with a value handler joined before it (see
    /// ``isCommon(_:joinedBefore:)``). Only ``cancel()`` changes it.
    @usableFromInline
    let state: Atomic<UInt64>
    /// The subscriber's ``SubscriberLink``; or, if it has options, its ``SubscriberOptions``,
    /// which hold the link. One field, not two, since most subscribers have no options.
    @usableFromInline
    let linkOrOptions: AnyObject

    @usableFromInline
    static var inactiveBit: UInt64 { 1 << 63 }
    @usableFromInline
    static var handlerInOptionsBit: UInt64 { 1 << 62 }
    @usableFromInline
    static var largeVersionBit: UInt64 { 1 << 61 }
    /// The largest start version ``state`` holds; a larger one needs options.
    @usableFromInline
    static var largestPackedVersion: UInt64 { largeVersionBit - 1 }

    /// A subscriber with no options that joined at `startVersion`, which must be at most
    /// ``largestPackedVersion``.
    @usableFromInline
    init(link: SubscriberLink, startVersion: UInt64) {
        linkOrOptions = link
        state = Atomic(startVersion)
    }

    /// A subscriber with `options`, which hold its link and, if it joined at a version larger
    /// than ``largestPackedVersion``, that version.
    @usableFromInline
    init(options: SubscriberOptions, handlerIsInOptions: Bool) {
        linkOrOptions = options
        var state =
            options.startVersion > Self.largestPackedVersion
            ? Self.largeVersionBit | Self.largestPackedVersion : options.startVersion
        if handlerIsInOptions { state |= Self.handlerInOptionsBit }
        self.state = Atomic(state)
    }

    /// ``state`` now, as a delivery reads it.
    @inlinable
    final var currentState: UInt64 {
        state.load(ordering: .acquiring)
    }

    /// Whether `state`, a subscriber's ``state``, says it is active, with a value handler on the
    /// delivering thread, and joined before `version`: the common case, in one comparison. A
    /// delivery then calls ``Subscriber/valueHandler`` itself, and
    /// ``Subscriber/receiveUncommon(_:value:depth:in:ifJoinedBefore:)`` otherwise.
    @inlinable
    static func isCommon(_ state: UInt64, joinedBefore version: UInt64) -> Bool {
        // A state below both has no flag set, and a start version below `version`.
        state < min(version, largeVersionBit)
    }

    /// Whether the subscriber, whose ``state`` is `state`, is active and joined before
    /// `version`: it is handed no change at or before the version current when it joined.
    @inlinable
    final func isActive(andJoinedBefore version: UInt64, state: UInt64) -> Bool {
        guard state & Self.inactiveBit == 0 else { return false }
        guard state & Self.largeVersionBit != 0 else { return state & Self.largestPackedVersion < version }
        return unsafeOptions.startVersion < version
    }

    /// Whether the subscriber has options: ``linkOrOptions`` is not the link.
    @inlinable
    final var hasOptions: Bool {
        ObjectIdentifier(type(of: linkOrOptions)) != ObjectIdentifier(SubscriberLink.self)
    }

    /// What the subscriber has beyond a value handler, if anything.
    @inlinable
    final var options: SubscriberOptions? {
        hasOptions ? unsafeOptions : nil
    }

    /// The options; only when the subscriber has them.
    @inlinable
    final var unsafeOptions: SubscriberOptions {
        unsafeDowncast(linkOrOptions, to: SubscriberOptions.self)
    }

    /// Whether ``options`` holds the handler: otherwise it is ``Subscriber/valueHandler``.
    @inlinable
    final var handlerIsInOptions: Bool {
        state.load(ordering: .relaxed) & Self.handlerInOptionsBit != 0
    }

    /// Calls `body` with the link through which the subscriber reaches the container that
    /// delivers to it (which it does not keep alive), borrowed: a link returned from a property
    /// was retained and released around each use.
    final func withLink<Result>(_ body: (SubscriberLink) -> Result) -> Result {
        let link: Unmanaged<SubscriberLink> =
            hasOptions
            ? .passUnretained(unsafeOptions.link)
            : .passUnretained(unsafeDowncast(linkOrOptions, to: SubscriberLink.self))
        return link._withUnsafeGuaranteedRef(body)
    }

    /// The projection group this subscriber belongs to, or `nil` for the container's own subscribers.
    @inlinable
    final var group: ProjectionGroupBase? {
        guard hasOptions else { return nil }
        // Unretained: the subscriber keeps its options.
        unowned(unsafe) let options = unsafeOptions
        return options.group
    }

    /// Tells the subscriber its container is gone; called once, from the container's `deinit`.
    final func ownerReleased() {
        guard isActive, let onOwnerReleased = options?.onOwnerReleased else { return }
        onOwnerReleased()
    }

    @inlinable
    final var isActive: Bool {
        currentState & Self.inactiveBit == 0
    }

    /// Whether the container that delivers to this subscriber has not been released.
    final var isOwnerLive: Bool {
        withLink { $0.isOwnerLive }
    }

    /// Called once, by the token whose exchange took the subscriber, so a load and a store are
    /// enough here: nothing else changes ``state``.
    final func cancel() {
        state.store(state.load(ordering: .relaxed) | Self.inactiveBit, ordering: .releasing)
        withLink { $0.remove(self) }
    }
}
