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
