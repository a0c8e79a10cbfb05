/// A read-only value computed from containers, projections or other derived states, never seen
/// half-updated.
///
/// ```swift
/// let price = MonitoredState(10, key: "price")
/// let quantity = MonitoredState(2, key: "quantity")
/// let total = DerivedState(key: "total", price, quantity) { price, quantity in price * quantity }
/// let subscription = total.subscribe { print("total: \($0)") }   // prints "total: 20"
/// withStateTransaction {
///     price.modify(12)
///     quantity.modify(3)
/// }                                                              // prints "total: 36", once
/// ```
///
/// A derived state is an ``Observed`` value: it has ``Observed/value``, ``version``,
/// ``Observed/key``, ``Observed/subscribe(_:)`` and the other subscription forms, projections
/// (`total.observe(\.x)` and member syntax), ``Observed/values``, Observation support, and
/// StateKitTesting's `record()`. ``MonitoredState/map(_:)`` and ``Observed/map(_:)`` (on
/// projections and derived states) make one from a single source.
///
/// - **Glitch-free.** Its value is always computed from values its sources held at one moment:
///   in a diamond (`b = a.map { $0 * 2 }`, `c = a.map { $0 * 3 }`,
///   `d = DerivedState(b, c) { $0 + $1 }`), `d` never combines an old `b` with a new `c`.
/// - **Computed once per change of its inputs' values.** With subscribers, it computes once per
///   committed change of its sources (a transaction is one change); without, at most once per
///   change, when read. A result equal to the last one notifies nobody and keeps the version, and
///   a derived state whose sources are containers and derived states computes again only when one
///   of them changed (early cutoff, at any depth): with `parity = a.map { $0 % 2 }` and
///   `text = parity.map { $0 == 0 ? "even" : "odd" }`, writing `a` from 7 to 9 computes `parity`
///   (still 1) and not `text`. A source that is a key path of a container counts as changed when
///   its container changes.
/// - **Ordered.** Under concurrent writers, the versions a subscriber sees strictly increase, and
///   the last value it sees is the current one.
/// - **Lifetime.** Holding a derived state (or a live subscription to it) keeps its sources
///   alive; its sources keep nothing of it beyond its subscriptions to them, which end with it.
///
/// It computes by re-reading its sources' current values: from containers, under all their locks
/// at once; through derived states and key paths, keeping a result only if none of the
/// containers behind them changed meanwhile. See <doc:Transactions> for how this fits with
/// transactions.
///
/// - Note: All operations on `DerivedState` are thread-safe. The computation runs on the thread
///   that writes a source (with subscribers) or that reads the value (without), one at a time:
///   keep it pure and fast, and do not read the derived state itself from inside it.
public final class DerivedState<Value: Equatable>: Observed<Value> {
    let node: DerivedNode<Value>

    @usableFromInline
    init(node: DerivedNode<Value>) {
        self.node = node
        super.init(DerivedProjection(node: node))
    }

    /// Creates a derived state named `key`, computed by `compute` from the values of `sources`.
    ///
    /// ```swift
    /// let price = MonitoredState(10, key: "price")
    /// let quantity = MonitoredState(2, key: "quantity")
    /// let total = DerivedState(key: "total", price, quantity) { $0 * $1 }
    /// ```
    ///
    /// - Parameters:
    ///   - key: The key that names it in diagnostics and recorders.
    ///   - sources: Containers, projections or derived states.
    ///   - compute: Computes the value from the sources' values, in the order given.
    ///
    /// Inlinable: a derived state whose sources are all containers computes and publishes in code
    /// specialised for their types, made where it is created.
    @inlinable
    public convenience init<each Source: StateSource>(
        key: String,
        _ sources: repeat each Source,
        compute: @escaping @Sendable (repeat (each Source).Value) -> Value
    ) {
        self.init(
            node: DerivedNode.overContainers(key: key, repeat each sources, isDuplicate: ==, compute: compute)
                ?? DerivedNode.overSources(key: key, repeat each sources, compute: compute))
    }

    /// Creates a derived state computed by `compute` from the values of `sources`, named after
    /// them (`"derived(price, quantity)"`).
    ///
    /// ```swift
    /// let price = MonitoredState(10, key: "price")
    /// let quantity = MonitoredState(2, key: "quantity")
    /// let total = DerivedState(price, quantity) { price, quantity in price * quantity }
    /// ```
    @inlinable
    public convenience init<each Source: StateSource>(
        _ sources: repeat each Source,
        compute: @escaping @Sendable (repeat (each Source).Value) -> Value
    ) {
        var keys: [String] = []
        for source in repeat each sources { keys.append(source.key) }
        self.init(key: "derived(\(keys.joined(separator: ", ")))", repeat each sources, compute: compute)
    }

    /// How many times the value has changed: 0 for the first computed value, plus one per change.
    public var version: UInt64 {
        node.version
    }

    /// A derived state of this one that holds its value until `isDuplicate` says a new value
    /// differs from the one it holds.
    ///
    /// ```swift
    /// let total = counter.map { $0 * 3 }
    /// let bucket = total.removingDuplicates { $0 / 10 == $1 / 10 }   // changes by tens
    /// ```
    public override func removingDuplicates(
        by isDuplicate: @escaping @Sendable (Value, Value) -> Bool
    ) -> DerivedState<Value> {
        DerivedState(node: dedupNode(by: isDuplicate))
    }
}

extension DerivedState: @unchecked Sendable where Value: Sendable {}
