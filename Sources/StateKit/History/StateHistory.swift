import Observation

/// Undo and redo across containers: each change, or transaction, of the tracked containers is one
/// step.
///
/// ```swift
/// let title = MonitoredState("Draft", key: "title")
/// let tags = MonitoredState<Set<String>>([], key: "tags")
/// let history = StateHistory(tracking: title, tags, limit: 100)
///
/// title ~> "Final"                      // one step
/// withStateTransaction {                // one step
///     title ~> "Published"
///     tags ~> { $0.insert("news") }
/// }
/// history.undo()                        // title "Final", tags [] again, as one transaction
/// history.redo()                        // title "Published", tags ["news"]
/// ```
///
/// - ``undo()`` restores the values from before the last step as one transaction, ``redo()``
///   re-applies it; the changes they make are not new steps (their ``StateChange/origin`` is
///   ``ChangeOrigin/undo`` or ``ChangeOrigin/redo``).
/// - Only local changes are steps. A value that came from outside, ``ChangeOrigin/remote`` (a
///   remote-sync sink's pull or lost conflict) or ``ChangeOrigin/external`` (another process), is
///   never a step, and is never reverted: the steps that change its container are dropped, from
///   both the undo and the redo stack.
///   On a key shared across processes, an undo that runs before another process's change has
///   reached this process brings that change in and restores the step's value over it, as a new
///   change that every process reads.
/// - A new change after an undo clears the steps ``redo()`` would re-apply.
/// - Only the last `limit` steps are kept; older ones are forgotten.
/// - ``canUndo`` and ``canRedo`` are observable: reading them in `withObservationTracking` (or a
///   SwiftUI view) tracks them.
///
/// The history learns of a step when its changes are delivered, and records the tracked values
/// as they are then (read as one snapshot). Changes made by other threads while it records one
/// step may join that step, and a change that lands while ``undo()`` or ``redo()`` is applying
/// joins theirs, so is not a step of its own.
///
/// - Complexity: Recording a step reads every tracked container, O(*n*) for *n* containers, and
///   forgetting the oldest step is O(`limit`).
/// - Note: All operations on `StateHistory` are thread-safe. It holds its containers; they hold
///   nothing of it beyond its subscriptions to them, which end when it is released.
public final class StateHistory {
    /// Whether there are steps to undo or redo.
    struct Availability: Equatable {
        var canUndo = false
        var canRedo = false
    }

    /// What the history has recorded: the tracked values as it last saw them, and the steps.
    struct Record {
        var last: HistorySnapshot
        var undoSteps: [HistoryStep] = []
        var redoSteps: [HistoryStep] = []
    }

    let containers: [TrackedContainer]
    private let limit: Int
    let record: LockedBox<Record>
    /// Set once, by `init`.
    private var watches: [Subscription] = []
    private let availability: MonitoredState<Availability>

    /// Starts recording the changes of `containers` as steps, keeping the last `limit`.
    ///
    /// - Parameters:
    ///   - containers: The containers to track; their current values are the starting point.
    ///   - limit: How many steps to keep; at least 1.
    public init<each Value>(tracking containers: repeat MonitoredState<each Value>, limit: Int = 100) {
        precondition(limit >= 1, "StateHistory: limit must be at least 1, not \(limit)")
        var tracked: [TrackedContainer] = []
        for container in repeat each containers { tracked.append(TrackedContainer(container)) }
        self.containers = tracked
        self.limit = limit
        self.record = LockedBox(Record(last: HistorySnapshot.take(of: tracked)))
        self.availability = MonitoredState(
            Availability(), key: "history(\(tracked.map(\.key).joined(separator: ", ")))")
        InspectionRegistry.shared.remove(availability)
        watches = tracked.indices.map { index in
            tracked[index].watch { [weak self] origin in
                if origin == .remote || origin == .external {
                    self?.tookOutsideChange(of: index)
                } else {
                    self?.containersChanged()
                }
            }
        }
        InspectionRegistry.shared.add(self)
    }

    /// Whether ``undo()`` has a step to undo.
    public var canUndo: Bool {
        availability.value.canUndo
    }

    /// Whether ``redo()`` has a step to re-apply.
    public var canRedo: Bool {
        availability.value.canRedo
    }

    /// Restores the tracked containers' values from before the last step, as one transaction.
    ///
    /// If a container's validator refuses a value, nothing changes, the step stays, and the
    /// refusal is reported to ``StateDiagnostics``.
    ///
    /// - Returns: Whether a step was undone.
    @discardableResult
    public func undo() -> Bool {
        move(from: \.undoSteps, to: \.redoSteps, applying: \.before)
    }

    /// Re-applies the last step undone, as one transaction.
    ///
    /// - Returns: Whether a step was redone.
    @discardableResult
    public func redo() -> Bool {
        move(from: \.redoSteps, to: \.undoSteps, applying: \.after)
    }

    /// A tracked container changed: record what changed since the last snapshot as one step.
    private func containersChanged() {
        let delivery = DeferredDelivery.begin()
        record.withLock { record in
            let now = HistorySnapshot.take(of: containers)
            var changes: [HistoryStep.Change] = []
            for index in containers.indices where now.versions[index] != record.last.versions[index] {
                changes.append(
                    HistoryStep.Change(index: index, before: record.last.values[index], after: now.values[index]))
            }
            if !changes.isEmpty {
                record.undoSteps.append(HistoryStep(changes: changes))
                if record.undoSteps.count > limit { record.undoSteps.removeFirst() }
                record.redoSteps.removeAll()
                record.last = now
                publishAvailability(of: record)
            }
        }
        delivery.end()
    }

    /// A tracked container took a value from outside (a remote copy, another process): never a
    /// step, and no step may revert it, so the undo and redo steps that change the container are
    /// dropped.
    private func tookOutsideChange(of index: Int) {
        let delivery = DeferredDelivery.begin()
        record.withLock { record in
            let now = HistorySnapshot.take(of: containers)
            if now.versions[index] != record.last.versions[index] {
                record.last.values[index] = now.values[index]
                record.last.versions[index] = now.versions[index]
                record.undoSteps.removeAll { step in step.changes.contains { $0.index == index } }
                record.redoSteps.removeAll { step in step.changes.contains { $0.index == index } }
                publishAvailability(of: record)
            }
        }
        delivery.end()
    }

    private func move(
        from source: WritableKeyPath<Record, [HistoryStep]>,
        to destination: WritableKeyPath<Record, [HistoryStep]>,
        applying side: KeyPath<HistoryStep.Change, Any>
    ) -> Bool {
        let delivery = DeferredDelivery.begin()
        defer { delivery.end() }
        return record.withLock { record in
            guard let step = record[keyPath: source].last else { return false }
            // The versions the step's containers had when the transaction that moves them committed.
            var firstVersions: [UInt64] = []
            do {
                try withStateTransaction {
                    TransactionLog.current!.takeUnretainedValue().origin = side == \.before ? .undo : .redo
                    for change in step.changes { try containers[change.index].write(change[keyPath: side]) }
                    let log = TransactionLog.current!.takeUnretainedValue()
                    firstVersions = step.changes.map { log.firstVersion(of: containers[$0.index].id)! }
                }
            } catch let rejection as RejectedWriteError {
                rejection.report()
                return false
            } catch {
                preconditionFailure("StateHistory: unexpected error \(error)")
            }
            record[keyPath: source].removeLast()
            record[keyPath: destination].append(step)
            // The transaction's changes are delivered after `delivery.end()`: by then this snapshot
            // includes them, so they are not recorded as a step. A write another thread made after
            // the commit is not the undo's: the snapshot keeps the undo's own result for that
            // container, so the write is recorded as a step of its own (and clears the redo steps)
            // instead of being folded into the undo, where a redo would overwrite it.
            var snapshot = HistorySnapshot.take(of: containers)
            for (change, firstVersion) in zip(step.changes, firstVersions)
            where snapshot.versions[change.index] > firstVersion &+ 1 {
                snapshot.versions[change.index] = firstVersion &+ 1
                snapshot.values[change.index] = change[keyPath: side]
            }
            record.last = snapshot
            publishAvailability(of: record)
            return true
        }
    }

    /// Publishes whether `record` has steps to undo and redo; called inside `record`'s lock.
    private func publishAvailability(of record: Record) {
        availability.modify(Availability(canUndo: !record.undoSteps.isEmpty, canRedo: !record.redoSteps.isEmpty))
    }
}

/// Sendable by hand: the tracked containers' type-erased closures and values (`Any`) are not
/// `Sendable` types, since a ``MonitoredState``'s value need not be. After `init`, the history calls
/// them, and touches the values, only inside `record`'s lock.
extension StateHistory: @unchecked Sendable {}

extension StateHistory: Observable {}
