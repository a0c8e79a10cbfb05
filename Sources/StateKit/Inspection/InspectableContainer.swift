import Foundation

/// A container as a tool that shows it sees it, whatever its value type: ``State`` conforms.
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// for container in InspectionRegistry.shared.containers {
///     let reading = container.readTally(clearing: true)
///     print(container.key, reading.version, reading.value)
/// }
/// ```
///
/// - Note: All operations on `InspectableContainer` are thread-safe.
package protocol InspectableContainer: AnyObject {
    /// The container's key.
    var key: String { get }
    /// The name of its value type, as Swift prints it.
    var valueTypeName: String { get }
    /// The identity of its cell: two containers of one persisted key share it.
    var cellIdentity: ObjectIdentifier { get }
    /// Whether its ``ChangeTally`` is on.
    var countsChanges: Bool { get set }
    /// Reads the value and version, and what the tally counted since the last reading that
    /// cleared it; clears the tally when `clearing` is `true`.
    func readTally(clearing: Bool) -> TallyReading
}

/// A container's value and version, read at one moment, with the origins of the changes its
/// ``ChangeTally`` counted since the reading before.
package struct TallyReading {
    /// The value (a copy, boxed).
    package let value: Any
    /// The version of `value`.
    package let version: UInt64
    /// The origins of the changes counted since the last reading, in ``ChangeOrigin``'s order;
    /// empty when none were counted.
    package let origins: [ChangeOrigin]
    /// The origin of the last change counted, if any.
    package let lastOrigin: ChangeOrigin?
    /// How many subscribers and projection groups the container holds.
    package let subscriberCount: Int
}

extension State: InspectableContainer {
    package var valueTypeName: String {
        String(describing: Value.self)
    }

    package var cellIdentity: ObjectIdentifier {
        cellID
    }

    package var countsChanges: Bool {
        get { lock.withLock { fields.pointee.tally.isOn } }
        set {
            lock.withLock {
                fields.pointee.tally = ChangeTally()
                fields.pointee.tally.isOn = newValue
                fields.pointee.audienceChanged()
            }
        }
    }

    package func readTally(clearing: Bool) -> TallyReading {
        lock.lock()
        let value = storedValue
        let version = storedVersion
        let tally = fields.pointee.tally
        if clearing { fields.pointee.tally.seen = 0 }
        let count = audience.subscribers.count + audience.projections.count
        lock.unlock()
        return TallyReading(
            value: value,
            version: version,
            origins: ChangeOrigin.origins(in: tally.seen),
            lastOrigin: tally.seen == 0 ? nil : tally.last,
            subscriberCount: count)
    }
}
