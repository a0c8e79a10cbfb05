import Synchronization

/// A container as a tool that shows it sees it, whatever its value type, without holding it: the
/// registry keeps one handle per container.
///
/// The handle never touches the container object, only its lock and fields, and only while the
/// container is alive: the container's `deinit` marks the handle released under the container's
/// lock before anything is freed, and every read checks the mark under the same lock. So a tool
/// reading a container that is being released reads nothing, and containers keep their reference
/// counts inline (a weak reference would move them to a side table and make every retain of a
/// container slower).
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// for handle in InspectionRegistry.shared.handles {
///     if let reading = handle.readTally(clearing: false) { print(handle.key, reading.version) }
/// }
/// ```
///
/// - Note: All operations on `InspectionHandle` are thread-safe.
package class InspectionHandle: @unchecked Sendable {
    /// The container's key.
    package let key: String
    /// Its value type.
    let valueType: Any.Type
    /// The name of its value type, as Swift prints it: made when a tool asks, since printing a
    /// type's name costs more than making the container.
    package var valueTypeName: String { String(describing: valueType) }
    /// The identity of its cell: two containers of one persisted key share it.
    package let cellIdentity: ObjectIdentifier
    /// The container's lock, which guards ``isAlive``'s changes and every read.
    let lock: Lock
    /// Cleared under ``lock`` when the container is released; read without it only to prune.
    let isAlive = Atomic(true)
    /// Set once, by the container's initialiser, before the handle is listed: reads what a
    /// persisted or synced container adds (see ``InspectionDetails``), under the lock, and returns
    /// the reading to finish after unlocking.
    var detailsReader: (() -> () -> InspectionDetails)?

    init(key: String, valueType: Any.Type, cellIdentity: ObjectIdentifier, lock: Lock) {
        self.key = key
        self.valueType = valueType
        self.cellIdentity = cellIdentity
        self.lock = lock
    }

    /// Whether the container is alive; a hint, for pruning.
    var isListed: Bool {
        isAlive.load(ordering: .relaxed)
    }

    /// Marks the container released. Called by its `deinit`.
    func containerReleased() {
        lock.withLock { isAlive.store(false, ordering: .relaxed) }
    }

    /// Reads the value and version, and what the tally counted since the last reading that
    /// cleared it (clearing it when `clearing` is `true`); `nil` once the container is released.
    package func readTally(clearing: Bool) -> TallyReading? {
        nil
    }

    /// Turns the container's ``ChangeTally`` on or off, resetting it.
    func setCountsChanges(_ isOn: Bool) {}

    /// What a persisted or synced container adds; `nil` for others, or once released.
    package func details() -> InspectionDetails? {
        let finish = lock.withLock { isAlive.load(ordering: .relaxed) ? detailsReader?() : nil }
        return finish?()
    }
}

/// The handle of a container of `Value`: reaches its fields through their address.
final class TypedInspectionHandle<Value>: InspectionHandle, @unchecked Sendable {
    /// The container's fields; valid while ``InspectionHandle/isAlive`` is set, read under the lock.
    private let fields: UnsafeMutablePointer<ContainerFields<Value>>

    init(_ container: State<Value>) {
        fields = container.fields
        super.init(
            key: container.key, valueType: Value.self, cellIdentity: container.cellID,
            lock: container.lock)
    }

    override func readTally(clearing: Bool) -> TallyReading? {
        lock.lock()
        guard isAlive.load(ordering: .relaxed) else {
            lock.unlock()
            return nil
        }
        let value = fields.pointee.value
        let version = fields.pointee.version
        let tally = fields.pointee.tally
        if clearing { fields.pointee.tally.seen = 0 }
        let count = fields.pointee.audience.subscribers.count + fields.pointee.audience.projections.count
        lock.unlock()
        return TallyReading(
            value: value,
            version: version,
            origins: ChangeOrigin.origins(in: tally.seen),
            lastOrigin: tally.seen == 0 ? nil : tally.last,
            subscriberCount: count)
    }

    override func setCountsChanges(_ isOn: Bool) {
        lock.withLock {
            guard isAlive.load(ordering: .relaxed) else { return }
            fields.pointee.tally = ChangeTally()
            fields.pointee.tally.isOn = isOn
            fields.pointee.audienceChanged()
        }
    }
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

/// What a persisted or synced container adds to what every container shows.
package struct InspectionDetails {
    /// Where the value is stored, such as `"FileStateStorage file:///…"`; `nil` when not stored.
    package var storageLocation: String?
    /// Whether the container saves its changes.
    package var isPersisting = false
    /// Why the stored value could not be used, if it could not.
    package var loadError: (any Error)?
    /// Why the newest value is not in storage, if it is not.
    package var saveError: (any Error)?
    /// A synced container's status with its sinks.
    package var syncStatus: SyncStatus?
}
