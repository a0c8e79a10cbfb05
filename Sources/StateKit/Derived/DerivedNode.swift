import Foundation

/// The engine behind a ``DerivedState`` and a ``Observed/removingDuplicates(by:)`` view: it
/// computes the value from its sources, and publishes each new value to a container of its own,
/// whose subscribers, projections and async sequences are the derived value's.
///
/// It watches the containers at the root of its sources (its *leaves*, see ``DerivationInput``)
/// and computes in one of two ways:
/// - ``LeafDerivation``, when every source is a container: it reads them all at one moment, under
///   their locks, and is made in the caller's code, specialised for the value types;
/// - ``PulledDerivation``, when a source is a derived state or a key path: it reads the sources'
///   current values, pulling derived ones up to date, and keeps a result only if no leaf moved
///   meanwhile.
///
/// Either way the value is glitch-free (what the sources held at one moment), computed once per
/// change of the leaves (with subscribers when a leaf changes, a transaction being one change;
/// without, when read), and published in the order it was computed. A result equal to the last
/// one (by `isDuplicate`) notifies nobody.
@usableFromInline
final class DerivedNode<Value>: @unchecked Sendable {
    enum Engine {
        case leaves(LeafDerivation<Value>)
        case pulled(PulledDerivation<Value>)
    }

    /// Holds the published value; its version is the derived value's version.
    let storage: MonitoredState<Value>
    /// What the node watches: the leaves' containers, or the key paths of them its sources project.
    let inputs: [DerivationInput]
    /// Observation's bridge for reads of the derived value.
    let observation: DerivedObservation
    /// Computes the value from a transaction's view of the sources (inside a transaction, which
    /// may still be undone, the value is neither kept nor published).
    private let evaluate: () -> Value
    let engine: Engine
    /// The node's subscriptions to its inputs; they end with the node.
    private var watches: [Subscription] = []

    /// A node over `inputs` that computes as `PulledDerivation` does.
    ///
    /// - Parameter stamps: One per source, when every source has a ``Projection/changeStamp``: the
    ///   node then computes again only when one of them moved (early cutoff).
    init(
        key: String,
        inputs: [DerivationInput],
        stamps: [() -> UInt64]? = nil,
        isDuplicate: @escaping (Value, Value) -> Bool,
        evaluate: @escaping () -> Value
    ) {
        let inputs = inputs.removingRepeatedInputs()
        let observation = DerivedObservation()
        var storage: MonitoredState<Value>?
        let pulled = PulledDerivation(
            inputs: inputs, stamps: stamps, isDuplicate: isDuplicate, evaluate: evaluate,
            makeStorage: { value in
                storage = MonitoredState(value, key: key)
                InspectionRegistry.shared.remove(storage!)
                return storage!
            },
            observation: observation)
        self.storage = storage!
        self.inputs = inputs
        self.observation = observation
        self.evaluate = evaluate
        self.engine = .pulled(pulled)
        watchInputs { [weak self] in self?.inputChanged() }
    }

    /// A node over containers that computes as `LeafDerivation` does; see
    /// ``overContainers(key:_:isDuplicate:compute:)``.
    @usableFromInline
    init(
        key: String,
        inputs: [DerivationInput],
        evaluate: @escaping () -> Value,
        makeEngine: (_ makeStorage: (Value) -> MonitoredState<Value>, DerivedObservation) -> LeafDerivation<Value>
    ) {
        let inputs = inputs.removingRepeatedInputs()
        let observation = DerivedObservation()
        var storage: MonitoredState<Value>?
        let leaves = makeEngine(
            { value in
                storage = MonitoredState(value, key: key)
                InspectionRegistry.shared.remove(storage!)
                return storage!
            }, observation)
        self.storage = storage!
        self.inputs = inputs
        self.observation = observation
        self.evaluate = evaluate
        self.engine = .leaves(leaves)
    }

    /// Subscribes `changed` to every input, for as long as the node lives.
    private func watchInputs(_ changed: @escaping () -> Void) {
        watches = inputs.map { input in input.watch(changed) }
    }

    /// Keeps `watches` for as long as the node lives: what a node made over containers does with
    /// the subscriptions it makes, once made, with a function specialised for its types.
    @usableFromInline
    func keep(watches: [Subscription]) {
        self.watches = watches
    }

    /// A node computed by `compute` from `sources` (containers, projections or derived states),
    /// as `PulledDerivation` does.
    @usableFromInline
    static func overSources<each Source: StateSource>(
        key: String,
        _ sources: repeat each Source,
        compute: @escaping (repeat (each Source).Value) -> Value
    ) -> DerivedNode where Value: Equatable {
        let projections = (repeat (each sources).readOnly.projection)
        var inputs: [DerivationInput] = []
        var stamps: [() -> UInt64]? = []
        for projection in repeat each projections {
            inputs += projection.watchedByDerivation
            if let stamp = projection.changeStamp { stamps?.append(stamp) } else { stamps = nil }
        }
        return DerivedNode(key: key, inputs: inputs, stamps: stamps, isDuplicate: ==) {
            compute(repeat (each projections).readUntracked())
        }
    }

    /// The current value: the cached one if no leaf changed since it was computed, or a new one,
    /// which is then published. Inside a transaction the value is computed from the transaction's
    /// view of the sources and neither cached nor published: the transaction may still be undone.
    func current() -> Value {
        if isTransactionOpenOnThisThread { return evaluate() }
        switch engine {
        case .leaves(let leaves): return leaves.current()
        case .pulled(let pulled): return pulled.current()
        }
    }

    /// The version of the published value, after bringing it up to date.
    var version: UInt64 {
        _ = current()
        return storage.version
    }

    /// Registers a read with the `withObservationTracking` scope running on this thread, if any.
    func registerAccess() {
        observation.registerAccess()
    }

    /// A leaf changed. With subscribers, compute now; otherwise only tell Observation that the
    /// value may have changed (as an `@Observable` computed property's stored inputs do) and
    /// compute when it is read.
    private func inputChanged() {
        let isWatched = storage.hasAudienceNow
        if isWatched {
            _ = current()
        } else {
            observation.tellChanged()
        }
    }
}

/// Whether the calling thread is inside ``withStateTransaction(_:)``.
var isTransactionOpenOnThisThread: Bool {
    OpenTransactions.shared.mayBeOpen && TransactionLog.current != nil
}
