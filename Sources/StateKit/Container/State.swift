import Foundation

/// A thread-safe container for one piece of state, identified by a key.
///
/// `State` is the seed article's container with its races fixed: reads and writes take a real
/// lock, so a read right after ``modify(_:)-5lmnc`` returns sees the new value, and
/// ``modify(_:)->_`` makes read-modify-write atomic.
///
/// ```swift
/// let appRating = State<Int?>(nil, key: "appRating")
/// appRating.modify(4)
/// appRating ~> nil
/// appRating.modify { $0 = ($0 ?? 0) + 1 }   // atomic, loses nothing under contention
/// ```
///
/// Subclasses override ``didModify()`` to react to every change, as in the article; the override
/// runs after each change, in ``version`` order, never concurrently with itself. To subscribe with
/// closures, attach listeners or project key paths, use ``MonitoredState``.
///
/// > Tip: Derive a new value from the current one with `modify { $0 += 1 }`, not
/// > `modify(value + 1)`: between the read and the write another thread may write, and its
/// > update would be lost.
///
/// - Note: All operations on `State` are thread-safe. `State` is `Sendable` when `Value` is; a
///   subclass must restate that conformance (`extension MyState: @unchecked Sendable {}`).
open class State<Value> {
    /// The key that identifies this state across the application, in diagnostics, storage and sinks.
    public let key: String

    @usableFromInline
    let lock: Lock
    /// Everything the lock guards, behind a pointer so that accesses are not checked for
    /// exclusivity at run time (the lock already makes them exclusive); see ``ContainerFields``.
    @usableFromInline
    let fields: UnsafeMutablePointer<ContainerFields<Value>>
    /// Whether a thread delivers this container's changes; ``DeliveryStateMachine`` decides.
    @usableFromInline
    let deliveryClaim: DeliveryClaim
    /// The hidden container whose lock, fields and delivery claim this one shares, when it is one
    /// of several containers of a persisted key (see ``StoredValue``); `nil` for every other
    /// container, which owns its own.
    let cell: State<Value>?
    /// Whether this container's own ``didModify()`` runs as a hook: it is of a user's subclass.
    /// Set once, in the initialiser.
    @exclusivity(unchecked)
    private(set) var runsOwnHook = false
    /// Whether a change runs this container's hook and no other: it is of a user's subclass and
    /// has a cell of its own. Set once, in the initialiser.
    @usableFromInline
    @exclusivity(unchecked)
    private(set) var runsOnlyOwnHook = false
    /// Whether a transaction may take a value assigned to this container without reading the
    /// container first (see ``assignInTransaction(_:_:unlessAlready:)``): it has no validator and
    /// will never have one. Only initialisers install validators; a cell is shared, and its
    /// containers with it, so they never assign blindly. Set before the container is shared.
    @usableFromInline
    @exclusivity(unchecked)
    final var assignsBlindly = true
    /// What a tool that shows containers reads this one through; see ``InspectionRegistry``. Set
    /// once, by the initialiser.
    @exclusivity(unchecked)
    private(set) var inspectionHandle: InspectionHandle?
    /// `==` when `Value` is `Equatable`: assigning an equal value is then not a change.
    @usableFromInline
    let isEqual: ((Value, Value) -> Bool)?
    /// Whether reads and changes are reported to Observation: true for a ``MonitoredState``; a
    /// plain `State` is not `Observable` and pays nothing for it.
    @usableFromInline
    let isObservable: Bool
    /// Observation's bridge, made on the first read of ``value``: until something has read the
    /// value, nothing can be tracking it, and writes skip the registrar.
    @usableFromInline
    let observation = OnceInstalledReference<ObservationPoint>()
    /// The count of open transactions, which reads and writes check; see ``withStateTransaction(_:)``.
    @usableFromInline
    let openTransactions = OpenTransactions.shared
    /// The key of the threads' delivery contexts, kept here for the same reason: a write reads a
    /// field instead of calling a global's lazy initialiser (measured: ~20 instructions a
    /// delivered write).
    @usableFromInline
    let deliveryKey = DeliveryContext.threadKey
    /// What a transaction's commit does with this container, made when a transaction first
    /// touches it; see ``TransactionOperations``.
    @usableFromInline
    let transactionOperations = OnceInstalledReference<TransactionOperations>()
    /// What this container's subscribers reach it through, made with the first; see
    /// ``SubscriberLink``.
    @usableFromInline
    let installedLink = OnceInstalledReference<SubscriberLink>()

    /// Creates a container holding `defaultValue`, identified by `key`.
    ///
    /// - Parameters:
    ///   - defaultValue: The initial value.
    ///   - key: A key unique across the application; it names the state in diagnostics and is
    ///     what persisted and synced containers store and send it under.
    public init(_ defaultValue: Value, key: String) {
        self.key = key
        self.lock = Lock()
        self.fields = .makeFields(defaultValue)
        self.deliveryClaim = DeliveryClaim()
        self.cell = nil
        self.isEqual = equality(for: Value.self)
        self.isObservable = false
        setUpHook()
    }

    /// Creates a container that reports reads and changes to Observation; ``MonitoredState``'s.
    init(_ defaultValue: Value, key: String, isObservable: Bool) {
        self.key = key
        self.lock = Lock()
        self.fields = .makeFields(defaultValue)
        self.deliveryClaim = DeliveryClaim()
        self.cell = nil
        self.isEqual = equality(for: Value.self)
        self.isObservable = isObservable
        setUpHook()
    }

    /// Creates an observable container that is another view of `cell`: one lock, one value, one
    /// version, one list of subscribers and one delivery, so that a write through any container
    /// of the cell is atomic against all, and every subscriber hears each change once.
    init(sharing cell: State<Value>, key: String) {
        self.key = key
        self.lock = cell.lock
        self.fields = cell.fields
        self.deliveryClaim = cell.deliveryClaim
        self.cell = cell
        self.isEqual = cell.isEqual
        self.isObservable = true
        assignsBlindly = false
        // One registrar for the cell, so a write through any container reaches what tracks another.
        _ = observation.install(cell.installObservationPoint())
        runsOwnHook = !isStateKitType(type(of: self))
        if runsOwnHook { joinHooks() }
        inspectionHandle = InspectionRegistry.shared.add(self)
    }

    private func setUpHook() {
        runsOwnHook = !isStateKitType(type(of: self))
        runsOnlyOwnHook = runsOwnHook
        runsHook = runsOwnHook
        hasAudience = runsHook
        inspectionHandle = InspectionRegistry.shared.add(self)
    }

    deinit {
        inspectionHandle?.containerReleased()
        if cell != nil {
            endReleasedSubscriptions()
        } else {
            installedLink.unretained?._withUnsafeGuaranteedRef { $0.ownerReleased() }
            endSubscriptions()
            fields.deinitialize(count: 1)
            fields.deallocate()
        }
    }

    /// The identity of the container's cell: its own, or the one it shares with the other
    /// containers of its persisted key. Transactions, derived states and histories know a
    /// container by it, so two containers of one cell are one to them.
    @inlinable
    final var cellID: ObjectIdentifier {
        ObjectIdentifier(lock)
    }

    /// Whether `type` is one of StateKit's own containers, whose ``didModify()`` needs no hook call;
    /// StateKit's subclasses add themselves.
    func isStateKitType(_ type: AnyClass) -> Bool {
        type == State<Value>.self || type == MonitoredState<Value>.self
    }

    /// The current value.
    @inlinable
    public final var value: Value {
        registerAccessIfObservable()
        if let log = openTransactionLog { return transactionalValue(in: log) }
        lock.lock()
        defer { lock.unlock() }
        return storedValue
    }

    /// How many changes the container has seen: 0 for the initial value, plus one per change.
    @inlinable
    public final var version: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return storedVersion
    }

    /// Replaces the value, unless `Value` is `Equatable` and `newValue` equals it.
    ///
    /// Assigning an equal value is not a change: no new version, nobody notified. When the
    /// container has a validator that rejects the value, the value stays as it was and a
    /// ``StateDiagnostic/Kind/rejectedWrite`` diagnostic is reported (use
    /// ``MonitoredState/set(_:)`` to get the error thrown instead).
    @inlinable
    public final func modify(_ newValue: Value) {
        let rejection = assign(newValue, unlessAlready: { self.isEqual?($0, newValue) ?? false })
        rejection?.report()
    }

    /// Mutates the value in place, atomically, as one change, and returns what `body` returns.
    ///
    /// The body runs under the container's lock, so no other write can come between its read and
    /// its write: `counter.modify { $0 += 1 }` from many threads loses nothing. Every call is one
    /// change (a new version, everyone notified), even if the body leaves the value as it was; no
    /// copy is kept just to compare, so in-place edits of large values stay cheap.
    ///
    /// ```swift
    /// let id = todos.modify { list in
    ///     list.append(Todo(title: "Ship"))
    ///     return list.count
    /// }
    /// ```
    ///
    /// - Warning: Keep the body short, and do not read or write this container from inside it:
    ///   the lock is not re-entrant.
    /// - Parameter body: Mutates the value. If it throws, the error is rethrown. Without a
    ///   validator, whatever it changed before throwing stays, announced as a change, so observers
    ///   never miss a mutation; with a validator (``MonitoredState/init(_:key:validator:)``) the
    ///   body works on a copy, and a throwing body changes nothing.
    /// - Returns: What `body` returns.
    @inlinable
    @discardableResult
    public final func modify<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        var rejection: RejectedWriteError?
        defer { rejection?.report() }
        return try mutate(rejection: &rejection, body)
    }

    /// Announces a change; override it to react to every change.
    ///
    /// This is the seed's extension point. StateKit calls an override after every change, in
    /// ``version`` order, never concurrently with itself for one container; `value` read inside it
    /// is at least as new as the change being announced.
    ///
    /// Call it yourself after mutating a reference-type value in place, which the container
    /// cannot see: it records a change (a new version) and notifies everyone.
    ///
    /// > Important: An override must call `super.didModify()`. When StateKit calls the override
    /// > after a change, `super` adds nothing (the change is already announced); but when code
    /// > calls `didModify()` by hand, it is `super` that records and announces the change, so an
    /// > override that does not call it turns that call into nothing but the override's own code.
    ///
    /// ```swift
    /// currentCEO.value.name = "Tim Cook"
    /// currentCEO.didModify()
    /// ```
    open func didModify() {
        if DeliveryContext.current.containerRunningHook == ObjectIdentifier(self) { return }
        if let log = openTransactionLog { return announceInTransaction(log) }
        let observation = self.observation.unretained
        observation?._withUnsafeGuaranteedRef { $0.willSet() }
        defer { observation?._withUnsafeGuaranteedRef { $0.didSet() } }
        lock.lock()
        storedVersion &+= 1
        guard hasAudience else {
            lock.unlock()
            return
        }
        publishAndUnlock(oldValue: wantsChangeRecords ? storedValue : nil, announcedByHand: true)
    }
}

extension State: @unchecked Sendable where Value: Sendable {}

extension State where Value: Equatable {
    /// Replaces the value, unless `newValue` equals it: then nothing changes and nobody is notified.
    ///
    /// The same as the unconstrained ``modify(_:)-5lmnc``, specialised to compare with `==` directly.
    @inlinable
    public func modify(_ newValue: Value) {
        let rejection = assign(newValue, unlessAlready: { $0 == newValue })
        rejection?.report()
    }
}

extension State: CustomStringConvertible {
    /// `State(key: value)`.
    public var description: String {
        "\(type(of: self))(\(key): \(value))"
    }
}

/// `==` for `Value` if it is `Equatable`, found once per container rather than on every write.
@usableFromInline
func equality<Value>(for type: Value.Type) -> ((Value, Value) -> Bool)? {
    guard let equatable = type as? any Equatable.Type else { return nil }
    return equatable.equality(as: type)
}

/// Whether `lhs == rhs`, for a `Value` known to be `Equatable`.
///
/// In code specialised for `Value`, the cast and the call fold into the type's own `==`: no
/// closure, whose context each call would retain and release (two atomic operations). In
/// unspecialised code, it casts on each call.
@inlinable
func areEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool {
    guard let equatable = Value.self as? any Equatable.Type else {
        preconditionFailure("\(Value.self) is not Equatable")
    }
    return equatable.isEqual(lhs, rhs)
}

extension Equatable {
    /// `==` for `Value`, which is `Self`. The closure runs unspecialised, so it compares through
    /// one pointer cast (measured: comparing two `Int`s through nested `withUnsafePointer` and
    /// `withMemoryRebound` calls cost 435 instructions, this 180).
    fileprivate static func equality<Value>(as: Value.Type) -> (Value, Value) -> Bool {
        { lhs, rhs in isEqual(lhs, rhs) }
    }

    /// `lhs == rhs`, for `Value`, which is `Self`.
    @inlinable
    static func isEqual<Value>(_ lhs: Value, _ rhs: Value) -> Bool {
        var (lhs, rhs) = (lhs, rhs)
        return equal(&lhs, &rhs)
    }

    @inlinable
    static func equal<Value>(_ lhs: UnsafePointer<Value>, _ rhs: UnsafePointer<Value>) -> Bool {
        UnsafeRawPointer(lhs).assumingMemoryBound(to: Self.self).pointee
            == UnsafeRawPointer(rhs).assumingMemoryBound(to: Self.self).pointee
    }
}
