// StateKit's operators. The only file that declares one.
//
// `~>` (assign or mutate) reuses the standard library's declaration
// (`infix operator ~> : DefaultPrecedence`); declaring it again would make every use in client
// code ambiguous. It binds as tightly as DefaultPrecedence: a compound right-hand side needs
// parentheses (`count ~> (a + b)`, `name ~> (typed ?? "")`), while `count ~> -7` and
// `count ~> f(x)` work as written.
//
// `<~` (bind) is StateKit's own and binds tighter than assignment, like ReactiveSwift's.

/// Assigns `newValue` to `state` (the seed's operator); equal values change nothing.
///
/// ```swift
/// appRating ~> 4
/// appRating ~> nil
/// count ~> (count.value + 1)   // parentheses: `~>` has DefaultPrecedence
/// ```
@inlinable
public func ~> <Value>(state: State<Value>, newValue: Value) {
    state.modify(newValue)
}

/// Assigns `newValue` to `state`, comparing with `==`: equal values change nothing.
@inlinable
public func ~> <Value: Equatable>(state: State<Value>, newValue: Value) {
    state.modify(newValue)
}

/// Mutates `state` in place, atomically, as one change: `modify` with `body`.
///
/// ```swift
/// cart ~> { $0.items.append(item) }
/// ```
@inlinable
public func ~> <Value>(state: State<Value>, body: (inout Value) -> Void) {
    state.modify(body)
}

/// Writes `newValue` through a projection to its container, as one change; equal values change nothing.
///
/// ```swift
/// app.user.name ~> "Tim"
/// ```
public func ~> <Value: Equatable>(projection: MutableObserved<Value>, newValue: Value) {
    projection.modify(newValue)
}

/// Mutates the projected part in place, atomically, as one change of its container.
///
/// ```swift
/// app.user.tags ~> { $0.insert("admin") }
/// ```
public func ~> <Value>(projection: MutableObserved<Value>, body: (inout Value) -> Void) {
    projection.modify(body)
}

/// `<~` binds tighter than assignment, so `let s = a <~ b` keeps the binding's subscription.
precedencegroup StateBindingPrecedence {
    associativity: right
    higherThan: AssignmentPrecedence
}

/// Binds a target to a source: the target takes the source's current value at once, then every
/// new one, until the returned subscription is cancelled or released.
infix operator <~ : StateBindingPrecedence

/// Binds `target` to `source`: copies the source's current value into the target now, then each
/// change.
///
/// The binding keeps the target alive and lasts as long as the returned token.
///
/// A one-way binding hands the target every value of the source, in the source's version order,
/// none dropped: a subscriber of the target sees each one. A target slower than its source holds
/// back the source's writers (every delivery queue is bounded) rather than lose values.
///
/// Bindings that loop back (`a <~ b` and `b <~ a`, or a cycle `y <~ x`, `z <~ y`, `x <~ z`) settle
/// instead, whatever threads write into them: each binding of the loop forwards the latest value
/// (values that arrive while its previous write waits in the target's queue replace each other, so
/// a storm never fills a queue), and once writers stop, every container of the loop holds the
/// newest write's value within a second. For every binding, a target does not take a value older
/// than its own newest write from elsewhere: it keeps that write until the source changes again.
/// Bindings of projections follow the same rules.
///
/// ```swift
/// let binding = settings.theme <~ systemTheme
/// ```
///
/// - Returns: The binding's subscription.
public func <~ <Value: Sendable>(target: State<Value>, source: MonitoredState<Value>) -> Subscription {
    BindingClock.bind(BindingTarget(target), to: source)
}

/// Binds `target` to the projection `source` (see `<~` for containers).
public func <~ <Value: Sendable>(target: State<Value>, source: Observed<Value>) -> Subscription {
    BindingClock.bind(BindingTarget(target), to: source.projection)
}

/// Binds the writable projection `target` to `source` (see `<~` for containers; a projection of
/// an element of a collection takes every value, in order).
public func <~ <Value: Equatable & Sendable>(target: MutableObserved<Value>, source: MonitoredState<Value>)
    -> Subscription
{
    guard let target = target.writable.bindingTarget else { return source.subscribe { target.modify($0) } }
    return BindingClock.bind(target, to: source)
}

/// Binds the writable projection `target` to the projection `source` (see `<~` for containers; a
/// projection of an element of a collection takes every value, in order).
public func <~ <Value: Equatable & Sendable>(target: MutableObserved<Value>, source: Observed<Value>) -> Subscription {
    guard let target = target.writable.bindingTarget else { return source.subscribe { target.modify($0) } }
    return BindingClock.bind(target, to: source.projection)
}

/// Binds `target` to an `AsyncSequence`: writes each element into the target as it arrives, until
/// the sequence ends or the returned subscription is cancelled or released.
///
/// The elements are read by a task of their own, so the sequence may be anything asynchronous: a
/// stream of server events, `NotificationCenter` notifications mapped to values, another
/// container's ``MonitoredState/values``. Equal values change nothing (when `Value` is
/// `Equatable`). If the sequence throws, the binding ends and a
/// ``StateDiagnostic/Kind/bindingFailed`` diagnostic names the target's key.
///
/// A container's or projection's `values` (newest value buffered, the default) binds as the
/// container or projection itself does: every value, or the latest on a loop of bindings, so
/// `a <~ b.values; b <~ a.values` settles as `a <~ b; b <~ a` does. Other sequences carry no
/// order of writes: a loop through them is cut by the chain limit, not settled.
///
/// ```swift
/// let unreadCount = MonitoredState(0, key: "unreadCount")
/// let feed = AsyncStream<Int> { continuation in
///     continuation.yield(3)
///     continuation.finish()
/// }
/// let binding = unreadCount <~ feed
/// ```
///
/// - Returns: The binding's subscription; it is no longer active once the sequence has ended.
public func <~ <Value: Sendable, Source: AsyncSequence & Sendable>(target: State<Value>, source: Source) -> Subscription
where Source.Element == Value {
    if let bind = (source as? StateStream<Value>)?.bind { return bind(BindingTarget(target)) }
    return SequenceBinding.start(source, targetKey: target.key) { target.modify($0) }
}

/// Binds the writable projection `target` to an `AsyncSequence` (see `<~` for containers).
public func <~ <Value: Equatable & Sendable, Source: AsyncSequence & Sendable>(
    target: MutableObserved<Value>,
    source: Source
) -> Subscription where Source.Element == Value {
    if let bind = (source as? StateStream<Value>)?.bind, let bindingTarget = target.writable.bindingTarget {
        return bind(bindingTarget)
    }
    return SequenceBinding.start(source, targetKey: target.key) { target.modify($0) }
}
