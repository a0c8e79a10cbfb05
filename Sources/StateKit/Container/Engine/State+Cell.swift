/// The containers of one persisted key share one cell (``State/init(sharing:key:)``): the hidden
/// container that owns the lock, the fields and the delivery claim. What is still each
/// container's own is here: its ``State/didModify()`` hook and the subscriptions made through it.
extension State {
    /// Runs the ``didModify()`` hook after a change: this container's, or, for a shared cell,
    /// that of every container of the cell that overrides it.
    @inlinable
    final func runHooks(in context: DeliveryContext) {
        // A container of its own runs a hook only as a user's subclass; a cell's hidden
        // container, never, but the cell's containers may.
        guard runsOnlyOwnHook else { return runCellHooks(in: context) }
        let saved = context.containerRunningHook
        context.containerRunningHook = ObjectIdentifier(self)
        didModify()
        context.containerRunningHook = saved
    }

    /// Runs the hooks of the cell's containers that override ``didModify()``.
    @usableFromInline
    final func runCellHooks(in context: DeliveryContext) {
        lock.lock()
        let members = fields.pointee.hookedMembers.compactMap(\.container)
        lock.unlock()
        for member in members { runHook(of: member, in: context) }
    }

    private func runHook(of container: State<Value>, in context: DeliveryContext) {
        let saved = context.containerRunningHook
        context.containerRunningHook = ObjectIdentifier(container)
        container.didModify()
        context.containerRunningHook = saved
    }

    /// Makes this container's ``didModify()`` run after every change of its cell.
    func joinHooks() {
        lock.withLock {
            fields.pointee.hookedMembers.removeAll { $0.container == nil }
            fields.pointee.hookedMembers.append(WeakContainer(container: self))
            runsHook = true
            audienceChangedLocked()
        }
    }
}

/// A weak reference to a container of a shared cell.
struct WeakContainer<Value> {
    weak var container: State<Value>?
}
