import Foundation

/// The subscribers of one projection group: a key path's (``KeyPathGroup``) or an element
/// position's (``ElementGroup``).
///
/// The container's lock guards the list; a delivery copies it under the lock and tells the copy
/// (``tell(_:replacing:of:version:timestamp:depth:origin:)``) after unlocking.
@usableFromInline
struct GroupSubscribers<Part> {
    var list: ContiguousArray<Subscriber<Part>> = []

    @inline(__always)
    var isEmpty: Bool { list.isEmpty }

    @inline(__always)
    mutating func append(_ subscriber: Subscriber<Part>) {
        list.append(subscriber)
    }

    @inline(__always)
    mutating func remove(_ entry: SubscriptionEntry) {
        list.removeAll { $0 === entry }
    }

    /// Tells every subscriber that the root container is gone.
    @inline(__always)
    func ownerReleased() {
        for subscriber in list { subscriber.ownerReleased() }
    }

    /// Removes the subscribers whose container was released and returns them.
    @inline(__always)
    mutating func removeReleasedOwners() -> [SubscriptionEntry] {
        let released = list.filter { !$0.isOwnerLive }
        if !released.isEmpty { list.removeAll { !$0.isOwnerLive } }
        return Array(released)
    }

    /// Hands each subscriber the change of `group`'s part from `oldPart` to `part`.
    func tell(
        _ part: Part, replacing oldPart: Part, of group: ProjectionGroupBase, version: UInt64, timestamp: Date?,
        depth: Int, origin: ChangeOrigin
    ) {
        for subscriber in list {
            subscriber.receiveInGenericCode(
                StateChange(
                    key: group.key, oldValue: oldPart, newValue: part, version: version,
                    timestamp: timestamp ?? Date(), origin: origin),
                value: part,
                depth: depth,
                in: .current,
                ifJoinedBefore: version
            )
        }
    }
}
