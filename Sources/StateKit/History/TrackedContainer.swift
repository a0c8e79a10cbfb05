/// A container a ``StateHistory`` tracks, with its value type erased so that one history tracks
/// containers of different types.
struct TrackedContainer {
    let key: String
    let id: ObjectIdentifier
    /// Reads the value (through the open transaction, if any) without registering with Observation.
    let read: () -> Any
    /// Writes a value read by ``read``, throwing the container's validator's refusal.
    let write: (Any) throws -> Void
    /// Subscribes to the container's changes, from the next one on.
    /// Calls its argument with the origin of each change of the container.
    let watch: (@escaping (ChangeOrigin) -> Void) -> Subscription

    init<Value>(_ container: MonitoredState<Value>) {
        key = container.key
        id = container.cellID
        read = { container.untrackedValue }
        write = { try container.set($0 as! Value) }
        watch = { changed in
            container.addSubscriber(
                queue: nil, handler: .change { change in changed(change.origin) }, sendsCurrentValue: false)
        }
    }
}

/// The tracked containers' values and versions at one moment.
struct HistorySnapshot {
    var values: [Any]
    var versions: [UInt64]

    /// Reads every tracked container in one read-only transaction: a consistent snapshot.
    static func take(of containers: [TrackedContainer]) -> HistorySnapshot {
        withStateTransaction {
            let values = containers.map { $0.read() }
            let log = TransactionLog.current!.takeUnretainedValue()
            return HistorySnapshot(values: values, versions: containers.map { log.firstVersion(of: $0.id)! })
        }
    }
}

/// One undoable step: the containers it changed, with their values before and after it.
struct HistoryStep {
    struct Change {
        let index: Int
        let before: Any
        let after: Any
    }

    let changes: [Change]
}
