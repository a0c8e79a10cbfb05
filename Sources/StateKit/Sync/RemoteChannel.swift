/// A remote-sync sink's way into its container: read it, and apply remote values that the
/// container does not send back to the sink.
///
/// The channel holds its container weakly (the container owns the sink that owns the channel);
/// once the container is gone, reads return `nil` and writes do nothing.
///
/// - Note: All operations on `RemoteChannel` are thread-safe.
public final class RemoteChannel<Value: Sendable>: @unchecked Sendable {
    /// The key of the container.
    public let key: String
    private let lock = Lock()
    private weak var state: SyncedState<Value>?
    private var remoteVersions: [UInt64] = []

    /// How many remote versions are remembered for ``isRemote(_:)``.
    static var rememberedVersions: Int { 64 }

    init(state: SyncedState<Value>) {
        self.key = state.key
        self.state = state
    }

    private var container: SyncedState<Value>? {
        lock.withLock { state }
    }

    /// The container's value and version, read together; `nil` once the container is gone.
    public var current: (value: Value, version: UInt64)? {
        guard let state = container else { return nil }
        return state.lock.withLock { (state.storedValue, state.storedVersion) }
    }

    /// Writes `value`, which came from the remote copy, into the container as one change marked
    /// remote, and returns the change's version.
    ///
    /// With `ifVersion`, the write happens only if the container is still at that version, so a
    /// local change made meanwhile is never overwritten silently: the sink sees `nil` and resolves
    /// the conflict instead. The container's validator applies as to any write.
    ///
    /// - Parameters:
    ///   - value: The remote value.
    ///   - ifVersion: The version the container must still be at; `nil` to write unconditionally.
    /// - Returns: The version of the change, or `nil` when nothing was written: the container is
    ///   gone, has moved past `ifVersion`, or its validator refused (reported as for any write).
    @discardableResult
    public func applyRemote(_ value: Value, ifVersion: UInt64? = nil) -> UInt64? {
        guard let state = container else { return nil }
        var version: UInt64?
        let rejection = state.write(
            unlessAlready: { _ in
                // Runs under the container's lock, right before the write (again after
                // Observation's willSet, when observed): the last answer is the one that counts.
                let isCurrent = ifVersion.map { state.storedVersion == $0 } ?? true
                let previous = version
                version = isCurrent ? state.storedVersion &+ 1 : nil
                lock.withLock {
                    if let previous { remoteVersions.removeAll { $0 == previous } }
                    if let version { remember(version) }
                }
                return !isCurrent
            },
            { $0 = value }
        )
        guard let rejection else { return version }
        if let version { lock.withLock { remoteVersions.removeAll { $0 == version } } }
        rejection.report()
        return nil
    }

    /// Mutates the container's value as one local change (sent on to every sink, this one
    /// included), such as the result of merging a remote value into it, and returns its version.
    ///
    /// - Returns: The version of the change, or `nil` when the container is gone or its validator
    ///   refused (reported as for any write).
    @discardableResult
    public func modify(_ body: (inout Value) -> Void) -> UInt64? {
        guard let state = container else { return nil }
        var version: UInt64?
        let rejection = state.write(
            unlessAlready: { _ in
                version = state.storedVersion &+ 1
                return false
            },
            body
        )
        guard let rejection else { return version }
        rejection.report()
        return nil
    }

    /// Whether `change` is one this channel applied with ``applyRemote(_:ifVersion:)``: a value
    /// that came from the remote copy and must not be sent back to it.
    public func isRemote(_ change: StateChange<Value>) -> Bool {
        lock.withLock { remoteVersions.contains(change.version) }
    }

    /// Called with `lock` held.
    private func remember(_ version: UInt64) {
        if !remoteVersions.contains(version) { remoteVersions.append(version) }
        if remoteVersions.count > Self.rememberedVersions { remoteVersions.removeFirst() }
    }
}
