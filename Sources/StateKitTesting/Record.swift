import StateKit

extension MonitoredState where Value: Sendable {
    /// Starts recording this container's values: the current value, then each new one.
    ///
    /// ```swift
    /// let counts = counter.record()
    /// counter.modify { $0 += 1 }
    /// #expect(counts.values == [0, 1])
    /// ```
    ///
    /// - Returns: A recorder that records until it is cancelled or released.
    public func record() -> StateRecorder<Value> {
        StateRecorder(key: key, elementName: "values") { subscribe($0) }
    }

    /// Starts recording this container's changes (old value, new value, version), from the next
    /// change on.
    ///
    /// - Returns: A recorder that records until it is cancelled or released.
    public func recordChanges() -> StateRecorder<StateChange<Value>> {
        StateRecorder(key: key, elementName: "changes") { subscribeChanges($0) }
    }
}

extension Observed where Value: Sendable {
    /// Starts recording this projection's values: the current value, then each new one. Writes
    /// elsewhere in the container, and writes that leave this part equal, record nothing.
    ///
    /// ```swift
    /// let names = app.user.name.record()
    /// app.user.age ~> 42           // another part: not recorded
    /// app.user.name ~> "Tim"
    /// #expect(names.values == ["Ann", "Tim"])
    /// ```
    ///
    /// - Returns: A recorder that records until it is cancelled or released.
    public func record() -> StateRecorder<Value> {
        StateRecorder(key: key, elementName: "values") { subscribe($0) }
    }

    /// Starts recording this projection's changes, from the next change on.
    ///
    /// - Returns: A recorder that records until it is cancelled or released.
    public func recordChanges() -> StateRecorder<StateChange<Value>> {
        StateRecorder(key: key, elementName: "changes") { subscribeChanges($0) }
    }
}
