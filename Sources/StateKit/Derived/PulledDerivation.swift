import Foundation

/// How a derived state with derived states or key paths among its sources computes: by reading
/// its sources' current values, pulling the derived ones up to date, one thread at a time.
///
/// ## Glitch-free by re-reading, not by ordering
/// It never combines values pushed to it. It keeps the versions of the containers at the root of
/// its sources (its *leaves*) that it computed from, and, when one moved, computes again from the
/// sources' *current* values. A result is kept only if no leaf's version moved while it was
/// computed (read the versions, compute, read them again), so it is what the sources held at one
/// moment: in a diamond, `d` sees `b` and `c` both from the same `a`, never one old and one new.
/// After two attempts lost to concurrent writers, it computes inside a read-only
/// ``withStateTransaction(_:)``, a consistent snapshot by construction.
///
/// ## Once per change
/// Reading a derived source brings it up to date (or returns its cached value if its leaves have
/// not moved), so each node of a chain computes at most once per change of its leaves.
///
/// ## Order and locks
/// One thread computes at a time (others wait for its result), each from versions no older than
/// the last, and new values are written to the storage container under the lock, so the
/// storage's versions follow the order of computation and its dispatcher delivers them in that
/// order. The write is made while the thread counts as delivering (as a transaction's commit
/// does), so no handler runs while the lock is held. The computation itself runs without it:
/// pulling a chain of 1,000 derived states holds one lock at a time, not 1,000 (which
/// ThreadSanitizer, tracking at most 64 locks held per thread, would stop at). Pulling is
/// recursive, one level per link of a chain.
final class PulledDerivation<Value>: @unchecked Sendable {
    private let storage: MonitoredState<Value>
    private let observation: DerivedObservation
    private let leaves: [any DerivationLeaf]
    /// The leaves' versions, read without generic code.
    private let leafVersions: [VersionReader]
    private let evaluate: () -> Value
    private let isDuplicate: (Value, Value) -> Bool
    /// Guards the fields below; computations run outside it, one at a time (see ``current()``).
    private let condition = NSCondition()
    /// The published value.
    private var cached: Value
    /// The leaves' versions that `cached` was computed from.
    private var versions: [UInt64]
    /// Versions being compared, kept to spare an allocation per change.
    private var scratch: [UInt64]
    /// Whether a thread is computing a new value; others wait for it rather than compute too.
    private var isComputing = false
    /// The versions the computing thread works with; only that thread touches them.
    private var computingVersions: [UInt64]

    /// Computes the first value, which `storage` must be made with.
    init(
        inputs: [DerivationInput],
        isDuplicate: @escaping (Value, Value) -> Bool,
        evaluate: @escaping () -> Value,
        makeStorage: (Value) -> MonitoredState<Value>,
        observation: DerivedObservation
    ) {
        var seen = Set<ObjectIdentifier>()
        self.leaves = inputs.map(\.leaf).filter { seen.insert($0.cellID).inserted }
        self.leafVersions = leaves.map(\.versionReader)
        self.evaluate = evaluate
        self.isDuplicate = isDuplicate
        var versions = leafVersions.map(\.current)
        let value = Self.consistentValue(
            leaves: leaves, leafVersions: leafVersions, versions: &versions, evaluate: evaluate)
        // Made inside a transaction, the value may include writes that are yet to commit: the first
        // read outside computes it again.
        self.versions = isTransactionOpenOnThisThread ? versions.map { _ in .max } : versions
        self.scratch = versions
        self.computingVersions = versions
        self.cached = value
        self.storage = makeStorage(value)
        self.observation = observation
    }

    /// The current value: the cached one if no leaf changed since it was computed, or a new one,
    /// which is then published.
    ///
    /// The computation runs without the lock held, so that pulling a chain of derived states
    /// holds one lock at a time, not one per link; a thread that finds another computing waits
    /// for its result.
    func current() -> Value {
        condition.lock()
        while true {
            readVersions(into: &scratch)
            if scratch == versions {
                defer { condition.unlock() }
                return cached
            }
            if !isComputing { break }
            condition.wait()
        }
        isComputing = true
        // Derived states this computation brings up to date publish their new values; their
        // handlers wait until this node has published too, so that one reading this node does
        // not wait for a computation running on its own thread.
        let delivery = DeferredDelivery.begin()
        defer { delivery.end() }
        // Moved to a local: an `inout` access to a stored property held across `evaluate`, which
        // pulls the derived states before this one, made every link of a chain check its access
        // against all the links' (measured: 77% of a 1,000-link update).
        var computing: [UInt64] = []
        swap(&computing, &computingVersions)
        for index in scratch.indices { computing[index] = scratch[index] }
        condition.unlock()
        let value = Self.consistentValue(
            leaves: leaves, leafVersions: leafVersions, versions: &computing, evaluate: evaluate)
        condition.lock()
        isComputing = false
        condition.broadcast()
        swap(&versions, &computing)
        computingVersions = computing
        if isDuplicate(cached, value) {
            defer { condition.unlock() }
            return cached
        }
        cached = value
        publishAndUnlock(value)
        return value
    }

    /// Writes `value` to the storage as one change and releases the lock; its subscribers run
    /// after the lock is released (after the current delivery, inside a handler).
    ///
    /// Observation is told here only while the node has subscribers: without, it was told when the
    /// leaf changed (see ``DerivedNode/inputChanged()``), and telling it again from the read that
    /// computes the value (often the read in its own `onChange`) would fire the same tracking
    /// twice.
    private func publishAndUnlock(_ value: Value) {
        storage.lock.lock()
        let isWatched = storage.hasAudience
        storage.lock.unlock()
        let delivery = DeferredDelivery.begin()
        storage.modify { $0 = value }
        condition.unlock()
        if isWatched { observation.tellChanged() }
        delivery.end()
    }

    private func readVersions(into buffer: inout [UInt64]) {
        for index in leafVersions.indices { buffer[index] = leafVersions[index].current }
    }

    /// Computes a value that the sources held at one moment, leaving the leaves' versions it was
    /// computed from in `versions` (which holds the versions read before the call).
    private static func consistentValue(
        leaves: [any DerivationLeaf],
        leafVersions: [VersionReader],
        versions: inout [UInt64],
        evaluate: () -> Value
    ) -> Value {
        for _ in 0..<2 {
            let value = evaluate()
            var isStill = true
            for index in leafVersions.indices {
                let version = leafVersions[index].current
                if version != versions[index] {
                    isStill = false
                    versions[index] = version
                }
            }
            if isStill { return value }
        }
        return withStateTransaction {
            for leaf in leaves { leaf.touchValue() }
            let value = evaluate()
            let log = TransactionLog.current!.takeUnretainedValue()
            for index in leaves.indices {
                versions[index] = log.firstVersion(of: leaves[index].cellID)!
            }
            return value
        }
    }
}
