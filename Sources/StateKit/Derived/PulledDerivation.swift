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
/// ## Once per change of its inputs' values (early cutoff)
/// Reading a derived source brings it up to date (or returns its cached value if its leaves have
/// not moved), so each node of a chain computes at most once per change of its leaves. When every
/// source has a change stamp (a container's or a derived state's version, which moves only when
/// its value changed), a node whose leaves moved first brings its sources up to date and compares
/// their stamps with those it last computed from: if none moved, it keeps its value without
/// computing, as incremental-computation engines' early cutoff does. In `b = a / 10`,
/// `c = b * 2`, a change of `a` from 11 to 12 computes `b` (still 1) and not `c`.
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
    /// The sources' change stamps, when every source has one; see "early cutoff" above.
    private let stamps: [() -> UInt64]?
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
    /// The sources' stamps `cached` was computed from, when `hasComputedStamps` (known at one
    /// moment), and the stamps being compared; only the computing thread touches them.
    private var computedStamps: [UInt64]
    private var stampScratch: [UInt64]
    private var hasComputedStamps = false

    /// Computes the first value, which `storage` must be made with.
    init(
        inputs: [DerivationInput],
        stamps: [() -> UInt64]?,
        isDuplicate: @escaping (Value, Value) -> Bool,
        evaluate: @escaping () -> Value,
        makeStorage: (Value) -> MonitoredState<Value>,
        observation: DerivedObservation
    ) {
        var seen = Set<ObjectIdentifier>()
        self.leaves = inputs.map(\.leaf).filter { seen.insert($0.cellID).inserted }
        self.leafVersions = leaves.map(\.versionReader)
        self.evaluate = evaluate
        self.stamps = stamps
        self.computedStamps = Array(repeating: 0, count: stamps?.count ?? 0)
        self.stampScratch = computedStamps
        self.isDuplicate = isDuplicate
        var versions = leafVersions.map(\.current)
        var leavesMoved = false
        let value = Self.consistentValue(
            leaves: leaves, leafVersions: leafVersions, versions: &versions, leavesMoved: &leavesMoved,
            evaluate: evaluate)
        // Made inside a transaction, the value may include writes that are yet to commit: the first
        // read outside computes it again.
        self.versions = isTransactionOpenOnThisThread ? versions.map { _ in .max } : versions
        self.scratch = versions
        self.computingVersions = versions
        self.cached = value
        self.storage = makeStorage(value)
        self.observation = observation
        if !isTransactionOpenOnThisThread {
            hasComputedStamps = readStamps(into: &computedStamps, atVersions: versions)
        }
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
        // Early cutoff: the stamps of the sources now, compared with those `cached` came from.
        // In a local, like `computing`: reading them pulls the chain below.
        var stampsNow: [UInt64] = []
        swap(&stampsNow, &stampScratch)
        var hasStamps = false
        if hasComputedStamps {
            hasStamps = readStamps(into: &stampsNow, atVersions: computing)
            if hasStamps && stampsNow == computedStamps {
                swap(&stampsNow, &stampScratch)
                condition.lock()
                finishComputing(versions: &computing)
                defer { condition.unlock() }
                return cached
            }
        }
        var leavesMoved = false
        let value = Self.consistentValue(
            leaves: leaves, leafVersions: leafVersions, versions: &computing, leavesMoved: &leavesMoved,
            evaluate: evaluate)
        if stamps != nil {
            // The stamps read before computing are those of the value computed, unless a leaf moved.
            if !hasStamps || leavesMoved { hasStamps = readStamps(into: &stampsNow, atVersions: computing) }
            swap(&computedStamps, &stampsNow)
            hasComputedStamps = hasStamps
        }
        swap(&stampsNow, &stampScratch)
        condition.lock()
        finishComputing(versions: &computing)
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
        let isWatched = storage.hasAudienceNow
        let delivery = DeferredDelivery.begin()
        storage.modify { $0 = value }
        condition.unlock()
        if isWatched { observation.tellChanged() }
        delivery.end()
    }

    /// Ends a computation (with the lock held): records the leaves' versions it was made from and
    /// wakes the threads waiting for it.
    private func finishComputing(versions computing: inout [UInt64]) {
        isComputing = false
        condition.broadcast()
        swap(&versions, &computing)
        computingVersions = computing
    }

    /// Reads the sources' stamps, bringing derived sources up to date, into `buffer`; returns
    /// whether the leaves are still at `versions` afterwards (so the stamps are of one moment, the
    /// one the versions name). `false` without stamps.
    private func readStamps(into buffer: inout [UInt64], atVersions versions: [UInt64]) -> Bool {
        guard let stamps else { return false }
        for index in stamps.indices { buffer[index] = stamps[index]() }
        for index in leafVersions.indices where leafVersions[index].current != versions[index] { return false }
        return true
    }

    private func readVersions(into buffer: inout [UInt64]) {
        for index in leafVersions.indices { buffer[index] = leafVersions[index].current }
    }

    /// Computes a value that the sources held at one moment, leaving the leaves' versions it was
    /// computed from in `versions` (which holds the versions read before the call); `leavesMoved`
    /// is set if they are not those it was given.
    private static func consistentValue(
        leaves: [any DerivationLeaf],
        leafVersions: [VersionReader],
        versions: inout [UInt64],
        leavesMoved: inout Bool,
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
            leavesMoved = true
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
