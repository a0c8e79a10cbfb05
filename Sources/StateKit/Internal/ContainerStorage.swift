/// The fields of a container that its lock guards.
///
/// They live behind an `UnsafeMutablePointer` rather than as class stored properties: Swift checks
/// every access to a class's stored `var` for exclusivity at run time, which cost more than the
/// lock itself on the write path. The lock already makes each access exclusive.
///
/// `value` comes last: every field before it has a size that does not depend on `Value`, so its
/// offset is fixed, and code that is not specialised for `Value` (subscribing, cancelling,
/// queueing) reaches it without looking up the struct's generic metadata (measured: ~300
/// instructions a lookup, ~20 lookups per subscribe and cancel).
@usableFromInline
struct ContainerStorage<Value> {
    @usableFromInline
    var version: UInt64 = 0
    /// Whether a change has anyone to tell (subscribers, projections, listeners or a hook).
    @usableFromInline
    var isObserved = false
    /// Whether some subscriber wants old values and timestamps.
    @usableFromInline
    var recordsChanges = false
    /// Checks each write before it lands; see ``MonitoredState/init(_:key:validator:)``.
    @usableFromInline
    var validator: (@Sendable (_ current: Value, _ proposed: Value) throws -> Void)?
    /// Whether ``State/didModify()`` is overridden and must run as a hook after each change.
    @usableFromInline
    var runsHook = false
    @usableFromInline
    var audience = Audience<Value>()
    var projectionIndex: [AnyKeyPath: ProjectionGroup<Value>] = [:]
    /// Runs for every change on the writing thread, under the lock, before the write returns, in
    /// version order; set only by ``SyncedState`` for a ``DurableOutbox``, which must log a change
    /// before its writer returns. It must not touch the container.
    @usableFromInline
    var writeObserver: ((StateChange<Value>) -> Void)?
    @usableFromInline
    var pending = PendingQueue<Value>()
    @usableFromInline
    var value: Value

    @usableFromInline
    init(value: Value) {
        self.value = value
    }
}

extension UnsafeMutablePointer {
    /// A new container's storage, holding `value`.
    static func makeStorage<Value>(_ value: Value) -> Self where Pointee == ContainerStorage<Value> {
        let storage = allocate(capacity: 1)
        storage.initialize(to: ContainerStorage(value: value))
        return storage
    }
}

extension State {
    @inlinable
    var storedValue: Value {
        _read { yield guarded.pointee.value }
        _modify { yield &guarded.pointee.value }
    }

    @inlinable
    var storedVersion: UInt64 {
        get { guarded.pointee.version }
        set { guarded.pointee.version = newValue }
    }

    @inlinable
    var isObserved: Bool {
        get { guarded.pointee.isObserved }
        set { guarded.pointee.isObserved = newValue }
    }

    @inlinable
    var recordsChanges: Bool {
        get { guarded.pointee.recordsChanges }
        set { guarded.pointee.recordsChanges = newValue }
    }

    @inlinable
    var validator: (@Sendable (_ current: Value, _ proposed: Value) throws -> Void)? {
        get { guarded.pointee.validator }
        set { guarded.pointee.validator = newValue }
    }

    @inlinable
    var runsHook: Bool {
        get { guarded.pointee.runsHook }
        set { guarded.pointee.runsHook = newValue }
    }

    @inlinable
    var audience: Audience<Value> {
        _read { yield guarded.pointee.audience }
        _modify { yield &guarded.pointee.audience }
    }

    var projectionIndex: [AnyKeyPath: ProjectionGroup<Value>] {
        _read { yield guarded.pointee.projectionIndex }
        _modify { yield &guarded.pointee.projectionIndex }
    }

    @inlinable
    var writeObserver: ((StateChange<Value>) -> Void)? {
        get { guarded.pointee.writeObserver }
        set { guarded.pointee.writeObserver = newValue }
    }

    @inlinable
    var pending: PendingQueue<Value> {
        _read { yield guarded.pointee.pending }
        _modify { yield &guarded.pointee.pending }
    }
}
