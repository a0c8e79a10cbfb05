/// Every live container and ``StateHistory`` of the process, held weakly, for a tool that shows
/// them (the `StateKitInspector` module's `StateInspector`).
///
/// A container joins when it is created and leaves when it is released, so a tool started late
/// still finds the containers made before it. Joining costs a container's creation a weak
/// reference and an append under the registry's lock; reads and writes never touch the registry.
/// StateKit's hidden containers (a persisted key's cell, a sync status, a history's availability)
/// are taken off the list: they are views of what the list already shows.
///
/// While a tool counts changes (from ``beginCounting()`` to its ``endCounting()``), every listed
/// container, and each one created after, has its ``ChangeTally`` on, which puts its writes on
/// the path of a container with an audience; when the last tool stops, the tallies are turned off
/// and writes pay nothing again. Derived states are not listed: a tally would make them compute
/// each change as soon as it happens instead of when read.
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// InspectionRegistry.shared.beginCounting()
/// for container in InspectionRegistry.shared.containers { print(container.key) }
/// InspectionRegistry.shared.endCounting()
/// ```
///
/// - Note: All operations on `InspectionRegistry` are thread-safe.
package final class InspectionRegistry: Sendable {
    /// What the registry's lock guards. Its lock is taken before a container's, never after.
    private struct Entries {
        var containers: [WeakInspectable] = []
        var histories: [WeakHistory] = []
        /// The count of entries at which released ones are next dropped: twice the live ones at
        /// the last pruning, so that appends stay amortised O(1).
        var pruneAt = 64
        /// How many tools count changes now.
        var counters = 0

        mutating func prune() {
            containers.removeAll { $0.container == nil }
            histories.removeAll { $0.history == nil }
            pruneAt = max(64, 2 * (containers.count + histories.count))
        }
    }

    /// The process's registry, which every container joins.
    package static let shared = InspectionRegistry()

    private let entries = LockedBox(UncheckedSendable(Entries()))

    private init() {}

    /// The live, listed containers, in the order they were created.
    package var containers: [any InspectableContainer] {
        entries.withLock { $0.value.containers.compactMap(\.container) }
    }

    /// The live histories, in the order they were created.
    package var histories: [StateHistory] {
        entries.withLock { $0.value.histories.compactMap(\.history) }
    }

    /// Turns on the ``ChangeTally`` of every listed container, and of each one listed later,
    /// until the matching ``endCounting()``. Tools may count at the same time.
    package func beginCounting() {
        entries.withLock { entries in
            entries.value.counters += 1
            guard entries.value.counters == 1 else { return }
            for entry in entries.value.containers { entry.container?.countsChanges = true }
        }
    }

    /// Ends a ``beginCounting()``; the last to end turns the tallies off.
    package func endCounting() {
        entries.withLock { entries in
            precondition(entries.value.counters > 0, "InspectionRegistry: endCounting without beginCounting")
            entries.value.counters -= 1
            guard entries.value.counters == 0 else { return }
            for entry in entries.value.containers { entry.container?.countsChanges = false }
        }
    }

    /// Lists `container`, counting its changes if a tool counts them.
    func add(_ container: any InspectableContainer) {
        entries.withLock { entries in
            if entries.value.containers.count + entries.value.histories.count >= entries.value.pruneAt {
                entries.value.prune()
            }
            entries.value.containers.append(WeakInspectable(container: container))
            if entries.value.counters > 0 { container.countsChanges = true }
        }
    }

    /// Lists `history`.
    func add(_ history: StateHistory) {
        entries.withLock { entries in
            if entries.value.containers.count + entries.value.histories.count >= entries.value.pruneAt {
                entries.value.prune()
            }
            entries.value.histories.append(WeakHistory(history: history))
        }
    }

    /// Takes one of StateKit's hidden containers off the list.
    func remove(_ container: AnyObject) {
        entries.withLock { entries in
            entries.value.containers.removeAll { $0.container === container }
        }
        (container as? any InspectableContainer)?.countsChanges = false
    }
}

/// A container held weakly by the registry.
private struct WeakInspectable {
    weak var container: (any InspectableContainer)?
}

/// A history held weakly by the registry.
private struct WeakHistory {
    weak var history: StateHistory?
}
