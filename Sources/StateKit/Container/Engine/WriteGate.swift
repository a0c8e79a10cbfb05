/// A gate that every write of a container passes, one at a time, registered by a layer whose
/// writes must also be ordered with writes made outside the process (shared file storage).
///
/// A write through a gate goes: ``enter()`` without the container's lock (it may wait, for another
/// process); the value it returns, if any, replaces the container's as a change of its own
/// (``ChangeOrigin/external``); the body runs under the lock; ``save(_:version:)`` runs without the
/// lock; then, with the lock held again, ``leave(storing:)``, and the change is published after the
/// lock is released. So the gate is never held while handlers run, and a handler may write to
/// the container again. The engine names nothing of what a gate stands for; a subclass does.
///
/// Lock order: the gate, then the container's lock. Nothing holding the container's lock waits
/// for the gate; ``leave(storing:)``, called with it held, only lets go.
///
/// - Note: A gate is entered and left on one thread; subclasses say how they are thread-safe.
@usableFromInline
class WriteGate<Value>: @unchecked Sendable {
    @usableFromInline
    init() {}

    /// Waits until this thread may write, and returns the value written elsewhere since this
    /// process last knew it, if there is one. Called without the container's lock.
    func enter() -> Value? {
        nil
    }

    /// Makes `value`, the container's value at `version`, last elsewhere before it is published.
    /// Called without the container's lock, between ``enter()`` and ``leave(storing:)``.
    func save(_ value: Value, version: UInt64) {}

    /// Lets the next writer in. Called with the container's lock held, at `version`, whose value
    /// is what ``enter()`` returned or what ``save(_:version:)`` was given; must not block.
    func leave(storing version: UInt64) {}
}

/// Writing through a ``WriteGate``: the slow path of every write to a container that has one.
///
/// The gate is entered without the lock, so readers never wait for it. A value it returns (written
/// elsewhere since this process last knew it) replaces the container's first, at a version of its
/// own, so the write's check (`unlessAlready`, a validator, the body) sees the current value; if
/// the write then changes nothing, that outside value is published alone, as an
/// ``ChangeOrigin/external`` change. Otherwise the value it made is saved through the gate
/// without the lock (every other writer of the container is waiting at the gate, so nothing
/// changes it meanwhile; readers see it already), the gate is left with the lock held again, and
/// the change, which includes the outside value, is published as one.
extension State {
    /// ``writeAndUnlock(rejection:origin:unlessAlready:ifUnchanged:_:)`` through `gate`; entered and
    /// left with the lock held.
    ///
    /// - Parameters:
    ///   - isUnchanged: Checked again on the current value once the gate is entered.
    ///   - unchangedResult: What to return when `isUnchanged` then holds (only writes that return
    ///     nothing ask).
    ///   - announcedByHand: For ``didModify()``: the body is empty, and no validator runs.
    @usableFromInline
    @inline(never)
    final func writeThroughGateAndUnlock<Result>(
        _ gate: WriteGate<Value>,
        rejection: inout RejectedWriteError?,
        origin: ChangeOrigin,
        unlessAlready isUnchanged: (Value) -> Bool,
        ifUnchanged unchangedResult: Result?,
        announcedByHand: Bool = false,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        lock.unlock()
        let outside = gate.enter()
        lock.lock()
        // The value subscribers last saw, when an outside value came in first.
        var replaced: Value?
        if let outside {
            replaced = storedValue
            storedValue = outside
            storedVersion &+= 1
        }
        if let unchangedResult, isUnchanged(storedValue) {
            leaveGateAndUnlock(gate, replaced: replaced)
            return unchangedResult
        }
        let oldValue = wantsChangeRecords ? (replaced ?? storedValue) : nil
        let result: Result
        if let validator, !announcedByHand {
            var proposed = storedValue
            do {
                result = try body(&proposed)
            } catch {
                leaveGateAndUnlock(gate, replaced: replaced)
                throw error
            }
            do {
                try validator(storedValue, proposed)
            } catch {
                rejection = RejectedWriteError(key: key, reason: error)
                leaveGateAndUnlock(gate, replaced: replaced)
                return result
            }
            storedValue = proposed
        } else {
            do {
                result = try body(&storedValue)
            } catch {
                saveThroughGateAndUnlock(gate, oldValue: oldValue, origin: origin, announcedByHand: announcedByHand)
                throw error
            }
        }
        saveThroughGateAndUnlock(gate, oldValue: oldValue, origin: origin, announcedByHand: announcedByHand)
        return result
    }

    /// Counts the change just made, saves it through `gate` without the lock, leaves the gate and
    /// publishes the change.
    private func saveThroughGateAndUnlock(
        _ gate: WriteGate<Value>, oldValue: Value?, origin: ChangeOrigin, announcedByHand: Bool
    ) {
        storedVersion &+= 1
        let (value, version) = (storedValue, storedVersion)
        lock.unlock()
        gate.save(value, version: version)
        lock.lock()
        gate.leave(storing: version)
        publishAndUnlock(oldValue: oldValue, announcedByHand: announcedByHand, origin: origin)
    }

    /// Leaves `gate` after a write that changed nothing, publishing the outside value that the
    /// gate brought in first, if any.
    private func leaveGateAndUnlock(_ gate: WriteGate<Value>, replaced: Value?) {
        gate.leave(storing: storedVersion)
        guard let replaced else { return lock.unlock() }
        publishAndUnlock(oldValue: wantsChangeRecords ? replaced : nil, origin: .external)
    }
}
