import Foundation

/// The engine behind a ``DerivedState`` and a ``Observed/removingDuplicates(by:)`` view: it
/// computes the value from its sources, caches it, and publishes each new value to a container of
/// its own, whose subscribers, projections and async sequences are the derived value's.
///
/// ## Glitch-free by re-reading, not by ordering
/// A node never combines values pushed to it. It watches the containers at the root of its sources
/// (its *leaves*) and, when one changes, computes again from the sources' *current* values, one
/// thread at a time, keeping the leaves' versions it computed from. A result is kept only if no
/// leaf's version moved while it was computed (read the versions, compute, read them again), so it
/// is what the sources held at one moment: in a diamond, `d` sees `b` and `c` both from the same
/// `a`, never one old and one new. After two attempts lost to concurrent writers, the node computes
/// inside a read-only ``withStateTransaction(_:)``, a consistent snapshot by construction.
///
/// ## Once per change
/// Other derived states a node reads are pulled, not pushed: reading one brings it up to date (or
/// returns its cached value if its leaves have not moved), so each node of a chain computes at
/// most once per change of its leaves. A node that nobody subscribes to computes only when it is
/// read; one with subscribers computes when a leaf changes (a transaction is one change, so once
/// per transaction). A result equal to the last one (by `isDuplicate`) notifies nobody.
///
/// ## Order and locks
/// One thread computes at a time (others wait for its result), each from versions no older than
/// the last, and new values are written to the storage container under the node's lock, so the
/// storage's versions follow the order of computation and its dispatcher delivers them in that
/// order. The write is made while the thread counts as delivering (as a transaction's commit
/// does), so no handler runs while the node's lock is held. The computation itself runs without
/// it: pulling a chain of 1,000 derived states holds one node's lock at a time, not 1,000 (which
/// ThreadSanitizer, tracking at most 64 locks held per thread, would stop at). Pulling is
/// recursive, one level per link of a chain.
final class DerivedNode<Value>: @unchecked Sendable {
    /// Holds the published value; its version is the derived value's version.
    let storage: MonitoredState<Value>
    /// What the node watches: the leaves' containers, or the key paths of them its sources project.
    let inputs: [DerivationInput]
    /// Observation's bridge for reads of the derived value, made on the first read.
    let observation = OnceInstalledReference<ObservationPoint>()
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
    /// The node's subscriptions to its inputs; they hold the node weakly.
    private var watches: [Subscription] = []

    init(
        key: String,
        inputs: [DerivationInput],
        isDuplicate: @escaping (Value, Value) -> Bool,
        evaluate: @escaping () -> Value
    ) {
        let inputs = inputs.removingRepeatedInputs()
        var seen = Set<ObjectIdentifier>()
        self.inputs = inputs
        self.leaves = inputs.map(\.leaf).filter { seen.insert(ObjectIdentifier($0)).inserted }
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
        self.storage = MonitoredState(value, key: key)
        watches = inputs.map { input in input.watch { [weak self] in self?.inputChanged() } }
    }

    /// The current value: the cached one if no leaf changed since it was computed, or a new one,
    /// which is then published.
    ///
    /// The computation runs without the node's lock held, so that pulling a chain of derived
    /// states holds one lock at a time, not one per link; a thread that finds another computing
    /// waits for its result. Inside a transaction the value is computed from the transaction's
    /// view of the sources and neither cached nor published: the transaction may still be undone.
    func current() -> Value {
        if isTransactionOpenOnThisThread { return evaluate() }
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

    /// The version of the published value, after bringing it up to date.
    var version: UInt64 {
        _ = current()
        return storage.version
    }

    /// Registers a read with the `withObservationTracking` scope running on this thread, if any.
    func registerAccess() {
        if let point = observation.unretained {
            point._withUnsafeGuaranteedRef { $0.access() }
        } else {
            observation.install(ObservationPoint()).access()
        }
    }

    /// A leaf changed. With subscribers, compute now; otherwise only tell Observation that the
    /// value may have changed (as an `@Observable` computed property's stored inputs do) and
    /// compute when it is read.
    private func inputChanged() {
        storage.lock.lock()
        let isWatched = storage.hasAudience
        storage.lock.unlock()
        if isWatched {
            _ = current()
        } else if let point = observation.unretained {
            point._withUnsafeGuaranteedRef {
                $0.willSet()
                $0.didSet()
            }
        }
    }

    /// Writes `value` to the storage as one change and releases the node's lock; its subscribers
    /// run after the lock is released (after the current delivery, inside a handler).
    ///
    /// Observation is told here only while the node has subscribers: without, it was told when the
    /// leaf changed (see ``inputChanged()``), and telling it again from the read that computes the
    /// value (often the read in its own `onChange`) would fire the same tracking twice.
    private func publishAndUnlock(_ value: Value) {
        storage.lock.lock()
        let isWatched = storage.hasAudience
        storage.lock.unlock()
        let delivery = DeferredDelivery.begin()
        storage.modify { $0 = value }
        condition.unlock()
        if isWatched, let point = observation.unretained {
            point._withUnsafeGuaranteedRef {
                $0.willSet()
                $0.didSet()
            }
        }
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
                versions[index] = log.firstVersion(of: ObjectIdentifier(leaves[index]))!
            }
            return value
        }
    }
}

/// Whether the calling thread is inside ``withStateTransaction(_:)``.
var isTransactionOpenOnThisThread: Bool {
    OpenTransactions.shared.count.load(ordering: .relaxed) != 0 && TransactionLog.current != nil
}
