/// A property stored in a ``MonitoredState``: reading and writing the property go through the
/// container, and `$property` is the container itself.
///
/// ```swift
/// final class CounterModel {
///     @Stateful var count = 0
///     @Stateful(key: "profile.name") var name = "Anonymous"
/// }
///
/// let model = CounterModel()
/// let subscription = model.$count.subscribe { print("count: \($0)") }
/// model.count = 1          // notifies
/// model.$count ~> 2        // the container's operators work on `$count`
/// model.$count.modify { $0 += 1 }
/// ```
///
/// Without a key, the key is the declaration's place, `"<module>/<file>.swift:<line>"`: stable
/// from run to run and easy to find from a diagnostic.
///
/// > Tip: `model.count += 1` reads, then writes: two threads doing it at once can lose an
/// > update. Use `model.$count.modify { $0 += 1 }` to derive from the current value atomically.
///
/// A validator guards the property as it guards a ``MonitoredState``
/// (``MonitoredState/init(_:key:validator:)``). A setter cannot throw, so a write it refuses
/// leaves the value as it was and is reported to ``StateDiagnostics`` as a
/// ``StateDiagnostic/Kind/rejectedWrite`` diagnostic (by default on standard error); call
/// `$property.set(_:)` to get the refusal thrown instead:
///
/// ```swift
/// struct NegativeQuantity: Error {}
///
/// final class CartModel {
///     @Stateful(key: "cart.quantity", validator: { _, proposed in
///         guard proposed >= 0 else { throw NegativeQuantity() }
///     })
///     var quantity = 1
/// }
///
/// let cart = CartModel()
/// cart.quantity = -1              // refused: still 1, and a rejected-write diagnostic
/// try cart.$quantity.set(2)       // throws RejectedWriteError when refused
/// ```
///
/// `@Persisted` and `@Synced` are the same shape for persisted and synced containers.
///
/// - Note: All operations on `Stateful` are thread-safe.
@propertyWrapper
public struct Stateful<Value> {
    /// The container behind the property.
    public let projectedValue: MonitoredState<Value>

    /// Stores the property in a new container identified by `key`.
    public init(wrappedValue: Value, key: String) {
        projectedValue = MonitoredState(wrappedValue, key: key)
    }

    /// Stores the property in a new container identified by `key` whose writes must pass
    /// `validator`.
    ///
    /// - Parameters:
    ///   - wrappedValue: The initial value (the declaration's), which is not validated.
    ///   - key: The container's key.
    ///   - validator: Sees the current and the proposed value and throws to refuse the write; see
    ///     ``MonitoredState/init(_:key:validator:)``. It is not isolated to any actor, even in a
    ///     main-actor class: what it calls must be `nonisolated` too.
    public init(
        wrappedValue: Value,
        key: String,
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        projectedValue = MonitoredState(wrappedValue, key: key, validator: validator)
    }

    /// Stores the property in a new container keyed by the declaration's place in the source.
    public init(wrappedValue: Value, fileID: StaticString = #fileID, line: UInt = #line) {
        self.init(wrappedValue: wrappedValue, key: "\(fileID):\(line)")
    }

    /// Stores the property in an existing container, to share it between models.
    public init(_ container: MonitoredState<Value>) {
        projectedValue = container
    }

    /// The container's current value; setting it is ``State/modify(_:)-5lmnc``.
    public var wrappedValue: Value {
        get { projectedValue.value }
        nonmutating set { projectedValue.modify(newValue) }
    }
}

extension Stateful: Sendable where Value: Sendable {}
