import Dispatch

/// A live, read-only view of part of a container: one key path of its value.
///
/// Get one with ``MonitoredState/observe(_:)->Observed<Part>`` or with member syntax
/// (`app.user.name` is `app.observe(\.user.name)`). A projection notifies only when its own part
/// changed (`==`): writes elsewhere in the state, or writes that leave its part equal, call none
/// of its handlers.
///
/// ```swift
/// let name = app.user.name              // Observed<String>
/// let subscription = name.subscribe { print("name is now \($0)") }
/// ```
///
/// Like a SwiftUI `Binding`, a projection is a view of its container: holding it keeps the
/// container alive, and the container keeps nothing of it beyond its live subscriptions. All
/// projections of one key path share one evaluation per change.
///
/// - Note: All operations on `Observed` are thread-safe. Handlers run as the container's do
///   (see ``MonitoredState``).
@dynamicMemberLookup
public class Observed<Value> {
    @usableFromInline
    let projection: any Projection<Value>
    /// Observation's bridge, made on the first read; see `Observed+Observation.swift`.
    let tracking = ProjectionTracking()

    @usableFromInline
    init(_ projection: any Projection<Value>) {
        self.projection = projection
    }

    /// The container's key followed by the projected path, such as `"app.user.name"`.
    public var key: String { projection.key }

    /// The current value of the projected part.
    public var value: Value {
        if !projection.readsAreTracked { observationPoint().access() }
        return projection.read()
    }

    /// Calls `handler` with the current value now, then with each new value of this part, on the
    /// thread that delivers the change.
    ///
    /// - Returns: A token; the subscription lasts until it is cancelled or released.
    public func subscribe(_ handler: @escaping @Sendable (Value) -> Void) -> Subscription {
        projection.subscribe(queue: nil, handler: .value(handler), sendsCurrentValue: true, onRootReleased: nil)
    }

    /// Calls `handler` with the current value, then with each new value, asynchronously on
    /// `queue` (which should be serial, to keep the order).
    public func subscribe(on queue: DispatchQueue, _ handler: @escaping @Sendable (Value) -> Void) -> Subscription
    where Value: Sendable {
        projection.subscribe(queue: queue, handler: .value(handler), sendsCurrentValue: true, onRootReleased: nil)
    }

    /// Calls a main-actor `handler` with the current value, then with each new value, on the main queue.
    public func subscribeOnMain(_ handler: @escaping @MainActor (Value) -> Void) -> Subscription
    where Value: Sendable {
        projection.subscribe(
            queue: .main, handler: .value(mainActorHandler(handler)), sendsCurrentValue: true, onRootReleased: nil)
    }

    /// Calls `handler` with each change of this part (old value, new value, the container's
    /// version), from the next change on.
    public func subscribeChanges(_ handler: @escaping @Sendable (StateChange<Value>) -> Void) -> Subscription {
        projection.subscribe(queue: nil, handler: .change(handler), sendsCurrentValue: false, onRootReleased: nil)
    }

    /// A projection of `path` within this part.
    public func observe<Part: Equatable>(_ path: KeyPath<Value, Part>) -> Observed<Part> {
        Observed<Part>(projection.appending(path))
    }

    /// `observed.member` is `observed.observe(\.member)`.
    public subscript<Part: Equatable>(dynamicMember path: KeyPath<Value, Part>) -> Observed<Part> {
        observe(path)
    }

    /// A view of this value that holds it until `isDuplicate` says a new value differs from the
    /// one it holds: a custom equality for projected values.
    ///
    /// ```swift
    /// let items = cart.items.removingDuplicates { $0.count == $1.count }   // told of size changes
    /// ```
    public func removingDuplicates(by isDuplicate: @escaping @Sendable (Value, Value) -> Bool) -> Observed<Value> {
        Observed(deduplicated(by: isDuplicate))
    }
}

extension Observed: @unchecked Sendable where Value: Sendable {}

extension Observed where Value: Sendable {
    /// The current value, then each new value, as an `AsyncSequence`; a slow consumer gets the
    /// newest value (see ``StateStream/Buffering/latest``).
    public var values: StateStream<Value> {
        values(buffering: .latest)
    }

    /// The current value, then each new value, buffered as `buffering` says.
    public func values(buffering: StateStream<Value>.Buffering) -> StateStream<Value> {
        let projection = UncheckedSendable(projection)
        let bind: @Sendable (BindingTarget<Value>) -> Subscription = { target in
            BindingClock.bind(target, to: projection.value)
        }
        return StateStream(buffering: buffering, bind: bind) { handler, finish in
            projection.value.subscribe(
                queue: nil, handler: .value(handler), sendsCurrentValue: true, onRootReleased: finish)
        }
    }

    /// Every change of this part, in order, as an `AsyncSequence` (unbounded buffer).
    public var changes: StateStream<StateChange<Value>> {
        let projection = UncheckedSendable(projection)
        return StateStream(buffering: .unbounded) { handler, finish in
            projection.value.subscribe(
                queue: nil, handler: .change(handler), sendsCurrentValue: false, onRootReleased: finish)
        }
    }
}

/// A projection that can also be written: writes go through to the container as one change of
/// its whole value, atomically, with one new version.
///
/// Projections of writable key paths of a container are `MutableObserved`; projections of
/// read-only paths (computed properties) are plain ``Observed``, so writing them does not compile.
///
/// ```swift
/// app.user.name ~> "Tim"               // one change of `app`
/// app.user.visits.modify { $0 += 1 }   // atomic read-modify-write of one part
/// ```
public final class MutableObserved<Value>: Observed<Value> {
    @usableFromInline
    let writable: any WritableProjection<Value>

    @usableFromInline
    init(_ writable: any WritableProjection<Value>) {
        self.writable = writable
        super.init(writable)
    }

    /// Writes `newValue` through to the container, unless `Value` is `Equatable` and the part is
    /// already equal. A validator's rejection is reported as a diagnostic.
    public func modify(_ newValue: Value) where Value: Equatable {
        writable.assign(newValue)?.report()
    }

    /// Mutates the part in place, atomically, as one change of the container.
    @discardableResult
    public func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try writable.modify(body)
    }

    /// Writes `newValue` through to the container, throwing ``RejectedWriteError`` if its
    /// validator refuses; equal values change nothing.
    public func set(_ newValue: Value) throws where Value: Equatable {
        if let rejection = writable.assign(newValue) { throw rejection }
    }

    /// Mutates the part as one change of the container, throwing ``RejectedWriteError`` if its
    /// validator refuses (the value then stays as it was).
    @discardableResult
    public func update<Result>(_ body: (inout Value) throws -> Result) throws -> Result {
        try writable.update(body)
    }

    /// A writable projection of `path` within this part.
    public func observe<Part: Equatable>(_ path: WritableKeyPath<Value, Part>) -> MutableObserved<Part> {
        MutableObserved<Part>(writable.appending(writable: path))
    }

    /// `observed.member` is `observed.observe(\.member)`, writable when the member is.
    public subscript<Part: Equatable>(dynamicMember path: WritableKeyPath<Value, Part>) -> MutableObserved<Part> {
        observe(path)
    }
}

extension MutableObserved: @unchecked Sendable where Value: Sendable {}

/// Wraps a main-actor handler for delivery on the main queue.
@usableFromInline
func mainActorHandler<Value: Sendable>(_ handler: @escaping @MainActor (Value) -> Void) -> @Sendable (Value) -> Void {
    { value in MainActor.assumeIsolated { handler(value) } }
}
