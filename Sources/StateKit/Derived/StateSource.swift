/// Something a ``DerivedState`` can be computed from: a ``MonitoredState`` (of any subclass), an
/// ``Observed`` projection, or another ``DerivedState``.
///
/// A source hands out a read-only ``Observed`` view of itself; the derived state reads the view and
/// watches the containers behind it.
public protocol StateSource<Value>: AnyObject {
    /// The type of the source's value.
    associatedtype Value

    /// The source's key: a container's key, or a projection's (`"app.user.name"`).
    var key: String { get }

    /// A read-only view of the source.
    var readOnly: Observed<Value> { get }
}

extension MonitoredState: StateSource {}

extension Observed: StateSource {
    /// This projection, typed as read-only.
    public var readOnly: Observed<Value> { self }
}
