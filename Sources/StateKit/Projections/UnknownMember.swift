/// What member syntax gives for a name that is neither a member of a container or projection nor
/// an `Equatable` property of its value: a misspelling such as `state.subscibe { }`.
///
/// It is unavailable, as is the `subscript(dynamicMember:)` that returns it, so a misspelt member
/// fails to compile with a message that names StateKit's API (see `MonitoredState+Habits.swift`)
/// instead of "cannot call value of non-function type 'Observed<Part>'". It accepts any call and
/// any further member, so that the message reaches the first misspelt name of a chain.
@available(*, unavailable)
@dynamicMemberLookup
public struct UnknownMember<Value> {
    /// A call with no arguments, such as `state.flsh()`.
    @discardableResult
    public func callAsFunction() -> Self { fatalError("unavailable") }

    /// A call with a closure, such as `state.subscibe { print($0) }` or `state.modfy { $0 += 1 }`:
    /// `inout` takes both.
    @discardableResult
    public func callAsFunction(_ body: (inout Value) throws -> Void) rethrows -> Self { fatalError("unavailable") }

    /// A call with other arguments.
    ///
    /// Its `Any` parameters make this the costlier reading of an expression that has another
    /// unavailable one (`model.$cart.items.append(item)` is reported as writing a part, not as a
    /// misspelt `append`).
    @discardableResult
    public func callAsFunction(_ arguments: Any...) -> Self { fatalError("unavailable") }

    /// A further member, such as `subscribe` in `state.removeDuplicats().subscribe { _ in }`.
    public subscript(dynamicMember member: String) -> Self { fatalError("unavailable") }
}
