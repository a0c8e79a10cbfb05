extension Observed {
    /// A derived state computed from this projection by `transform`.
    ///
    /// ```swift
    /// let initials = app.user.name.map { $0.prefix(1) }
    /// ```
    public func map<Derived: Equatable>(_ transform: @escaping @Sendable (Value) -> Derived) -> DerivedState<Derived> {
        DerivedState(key: key + ".map", self, compute: transform)
    }

    /// The projection of ``removingDuplicates(by:)``: a derived node's.
    func deduplicated(by isDuplicate: @escaping @Sendable (Value, Value) -> Bool) -> any Projection<Value> {
        DerivedProjection(node: dedupNode(by: isDuplicate))
    }

    /// A node that passes this value on, holding it while `isDuplicate` says new values match it.
    func dedupNode(by isDuplicate: @escaping @Sendable (Value, Value) -> Bool) -> DerivedNode<Value> {
        let projection = self.projection
        return DerivedNode(
            key: key + ".removingDuplicates", inputs: projection.watchedByDerivation, isDuplicate: isDuplicate
        ) { projection.readUntracked() }
    }
}

extension MonitoredState {
    /// A derived state computed from this container's value by `transform`.
    ///
    /// ```swift
    /// let doubled = counter.map { $0 * 2 }
    /// ```
    @inlinable
    public func map<Derived: Equatable>(_ transform: @escaping @Sendable (Value) -> Derived) -> DerivedState<Derived> {
        DerivedState(key: key + ".map", self, compute: transform)
    }

    /// A view of this container's value that holds it until `isDuplicate` says a new value
    /// differs from the one it holds (see ``Observed/removingDuplicates(by:)``).
    public func removingDuplicates(by isDuplicate: @escaping @Sendable (Value, Value) -> Bool) -> Observed<Value> {
        readOnly.removingDuplicates(by: isDuplicate)
    }
}
