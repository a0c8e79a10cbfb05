/// Every live container and ``StateHistory`` of the process, for a tool that shows them (the
/// `StateKitInspector` module's `StateInspector`).
///
/// A container joins when it is created, through an ``InspectionHandle`` that holds nothing of
/// it, and its handle is dropped after it is released, so a tool started late still finds the
/// containers made before it. Joining costs a container's creation one small allocation and an
/// append under the registry's lock, and its release one lock and unlock; reads and writes never
/// touch the registry. StateKit's hidden containers (a persisted key's cell, a sync status, a
/// history's availability, a derived state's storage) are taken off the list: the first three are
/// views of what the list shows, and a tally would make a derived state compute each change as
/// soon as it happens instead of when read.
///
/// While a tool counts changes (from ``beginCounting()`` to its ``endCounting()``), every listed
/// container, and each one created after, has its ``ChangeTally`` on, which puts its writes on
/// the path of a container with an audience; when the last tool stops, the tallies are turned off
/// and writes pay nothing again.
///
/// <!-- no-check: package API, which the examples' package cannot see -->
/// ```swift
/// InspectionRegistry.shared.beginCounting()
/// for handle in InspectionRegistry.shared.handles { print(handle.key) }
/// InspectionRegistry.shared.endCounting()
/// ```
///
/// Locks: the registry's lock is never held while a container's lock is taken (a container may
/// be created inside another's `modify`, holding that one's lock); ``beginCounting()`` and
/// ``endCounting()`` take a lock of their own around theirs, so that they follow each other.
///
/// - Note: All operations on `InspectionRegistry` are thread-safe.
package final class InspectionRegistry: Sendable {
    /// What the registry's lock guards.
    private struct Entries {
        var handles: [InspectionHandle] = []
        var histories: [WeakHistory] = []
        /// The count of entries at which released ones are next dropped: twice the live ones at
        /// the last pruning, so that appends stay amortised O(1).
        var pruneAt = 64
        /// How many tools count changes now.
        var counters = 0

        mutating func pruneIfDue() {
            guard handles.count + histories.count >= pruneAt else { return }
            handles.removeAll { !$0.isListed }
            histories.removeAll { $0.history == nil }
            pruneAt = max(64, 2 * (handles.count + histories.count))
        }
    }

    /// The process's registry, which every container joins.
    package static let shared = InspectionRegistry()

    private let entries = LockedBox(UncheckedSendable(Entries()))
    /// Orders ``beginCounting()`` and ``endCounting()``.
    private let counting = Lock()

    private init() {}

    /// The handles of the listed containers, in the order they were created; a released
    /// container's handle may still be among them, and reads nothing.
    package var handles: [InspectionHandle] {
        entries.withLock { $0.value.handles.filter(\.isListed) }
    }

    /// The live histories, in the order they were created.
    package var histories: [StateHistory] {
        entries.withLock { $0.value.histories.compactMap(\.history) }
    }

    /// Turns on the ``ChangeTally`` of every listed container, and of each one listed later,
    /// until the matching ``endCounting()``. Tools may count at the same time.
    package func beginCounting() {
        counting.withLock {
            let handles = entries.withLock { entries in
                entries.value.counters += 1
                return entries.value.counters == 1 ? entries.value.handles : []
            }
            for handle in handles { handle.setCountsChanges(true) }
        }
    }

    /// Ends a ``beginCounting()``; the last to end turns the tallies off.
    package func endCounting() {
        counting.withLock {
            let handles = entries.withLock { entries in
                precondition(entries.value.counters > 0, "InspectionRegistry: endCounting without beginCounting")
                entries.value.counters -= 1
                return entries.value.counters == 0 ? entries.value.handles : []
            }
            for handle in handles { handle.setCountsChanges(false) }
        }
    }

    /// Lists `container` and returns its handle, counting its changes if a tool counts them.
    func add<Value>(_ container: State<Value>) -> InspectionHandle {
        let handle = TypedInspectionHandle(container)
        let isCounting = entries.withLock { entries in
            entries.value.pruneIfDue()
            entries.value.handles.append(handle)
            return entries.value.counters > 0
        }
        // Under the counting lock, as a tool's begin and end: an end that ran meanwhile has
        // turned the tallies off, so this one stays off; an end after this one sees it listed.
        if isCounting {
            counting.withLock {
                if entries.withLock({ $0.value.counters > 0 }) { handle.setCountsChanges(true) }
            }
        }
        return handle
    }

    /// Lists `history`.
    func add(_ history: StateHistory) {
        entries.withLock { entries in
            entries.value.pruneIfDue()
            entries.value.histories.append(WeakHistory(history: history))
        }
    }

    /// Takes one of StateKit's hidden containers off the list.
    func remove<Value>(_ container: State<Value>) {
        guard let handle = container.inspectionHandle else { return }
        entries.withLock { entries in
            entries.value.handles.removeAll { $0 === handle }
        }
        handle.setCountsChanges(false)
    }
}

/// A history held weakly by the registry.
private struct WeakHistory {
    weak var history: StateHistory?
}
