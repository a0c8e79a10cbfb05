/// A property stored in a ``SyncedState``: every change of the property goes to its sinks, and
/// `$property` is the container.
///
/// ```swift
/// final class CartModel {
///     @Synced(key: "cart.items", sinks: [LoggingSink()]) var items: [String] = []
/// }
///
/// let model = CartModel()
/// model.items.append("Book")       // one change, sent to the logging sink
/// await model.$items.flush()
/// ```
///
/// - Note: All operations on `Synced` are thread-safe.
@propertyWrapper
public struct Synced<Value: Sendable>: Sendable {
    /// The container behind the property.
    public let projectedValue: SyncedState<Value>

    /// Stores the property in a new container identified by `key`, forwarding changes to `sinks`.
    public init(wrappedValue: Value, key: String, sinks: [any StateSink<Value>]) {
        projectedValue = SyncedState(wrappedValue, key: key, sinks: sinks)
    }

    /// A property whose value is stored for `key` in `storage`, and whose changes are saved
    /// there and sent to `sinks`; see ``SyncedState/init(_:key:storage:previousKeys:sinks:)-(_,_,_,_,[StateSink<Value>])``.
    ///
    /// ```swift
    /// final class Cart {
    ///     @Synced(key: "cart", storage: .file(directory), sinks: [LoggingSink()]) var items: [String] = []
    /// }
    /// ```
    public init(wrappedValue: Value, key: String, storage: any StateStorage, sinks: [any StateSink<Value>])
    where Value: Codable {
        projectedValue = SyncedState(wrappedValue, key: key, storage: storage, sinks: sinks)
    }

    /// A property whose changes go to `sinks`, with writes guarded by `validator` (see
    /// ``SyncedState/init(_:key:sinks:validator:)``); a refused write through the setter is
    /// reported as ``StateDiagnostic/Kind/rejectedWrite`` and reaches no sink.
    public init(
        wrappedValue: Value,
        key: String,
        sinks: [any StateSink<Value>],
        validator: @escaping @Sendable (_ current: Value, _ proposed: Value) throws -> Void
    ) {
        projectedValue = SyncedState(wrappedValue, key: key, sinks: sinks, validator: validator)
    }

    /// Stores the property in an existing container, to share it between models.
    public init(_ container: SyncedState<Value>) {
        projectedValue = container
    }

    /// The container's current value; setting it is ``State/modify(_:)-5lmnc``.
    public var wrappedValue: Value {
        get { projectedValue.value }
        nonmutating set { projectedValue.modify(newValue) }
    }
}
