/// Writing: how a write changes the value and version under the lock and hands the change to the
/// dispatcher (`State+Dispatch.swift`). A write reaches here through its front door
/// (`Transactions/State+WriteRouting.swift`) when no transaction is open on its thread.
///
/// A write updates the value and version under the lock, so a read after it returns sees it.
/// Functions named `…AndUnlock` are entered with the lock held and return with it released.
extension State {
    /// ``write(unlessAlready:origin:_:)`` when no transaction is open on this thread.
    ///
    /// Observation's `didSet` is called at each exit rather than deferred, and the rare exit calls
    /// it out of line (``ObservationPoint/unlockAndDidSet(_:)``).
    @inlinable
    final func writeOutsideTransaction(
        unlessAlready isUnchanged: (Value) -> Bool,
        origin: ChangeOrigin = .local,
        _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        lock.lock()
        if isUnchanged(storedValue) {
            lock.unlock()
            return nil
        }
        var rejection: RejectedWriteError?
        guard let observation = observation.unretained else {
            writeAndUnlock(rejection: &rejection, origin: origin, body)
            return rejection
        }
        lock.unlock()
        observation._withUnsafeGuaranteedRef { $0.willSet() }
        lock.lock()
        if isUnchanged(storedValue) {
            observation._withUnsafeGuaranteedRef { $0.unlockAndDidSet(lock) }
            return nil
        }
        writeAndUnlock(rejection: &rejection, origin: origin, body)
        observation._withUnsafeGuaranteedRef { $0.didSet() }
        return rejection
    }

    /// ``write(unlessAlready:confinedTo:_:)`` when no transaction is open on this thread:
    /// ``writeOutsideTransaction(unlessAlready:origin:_:)``, with the scope of the change found
    /// after `body` ran, with the lock held.
    final func writeOutsideTransaction(
        unlessAlready isUnchanged: (Value) -> Bool,
        confinedTo scope: () -> ProjectionGroupBase?,
        _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        lock.lock()
        if isUnchanged(storedValue) {
            lock.unlock()
            return nil
        }
        guard let observation = observation.unretained else {
            return writeConfinedAndUnlock(scope, body)
        }
        lock.unlock()
        observation._withUnsafeGuaranteedRef { $0.willSet() }
        defer { observation._withUnsafeGuaranteedRef { $0.didSet() } }
        lock.lock()
        if isUnchanged(storedValue) {
            lock.unlock()
            return nil
        }
        return writeConfinedAndUnlock(scope, body)
    }

    /// ``writeAndUnlock(rejection:origin:_:)`` for a write confined to the part of `scope`'s
    /// group; with a validator (which sees the whole value), as any write.
    private func writeConfinedAndUnlock(
        _ scope: () -> ProjectionGroupBase?, _ body: (inout Value) -> Void
    ) -> RejectedWriteError? {
        var rejection: RejectedWriteError?
        guard validator == nil && hasAudience else {
            writeAndUnlock(rejection: &rejection, body)
            return rejection
        }
        let oldValue = wantsChangeRecords ? storedValue : nil
        body(&storedValue)
        storedVersion &+= 1
        publishAndUnlock(oldValue: oldValue, scope: scope())
        return nil
    }

    /// ``mutate(rejection:_:)`` when no transaction is open on this thread.
    @inlinable
    final func mutateOutsideTransaction<Result>(
        rejection: inout RejectedWriteError?,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        let observation = self.observation.unretained
        observation?._withUnsafeGuaranteedRef { $0.willSet() }
        defer { observation?._withUnsafeGuaranteedRef { $0.didSet() } }
        lock.lock()
        return try writeAndUnlock(rejection: &rejection, body)
    }

    /// Applies `body` to the value as one change, validating it first when there is a validator.
    ///
    /// A rejected change leaves value and version as they were and sets `rejection`; so does a
    /// body that throws when there is a validator (its partial changes were made to a copy).
    /// Without a validator, what a throwing body changed stays and is announced. Inlinable so
    /// that the common case (no validator) is specialised for the client's `Value`.
    @inlinable
    final func writeAndUnlock<Result>(
        rejection: inout RejectedWriteError?,
        origin: ChangeOrigin = .local,
        _ body: (inout Value) throws -> Result
    ) rethrows -> Result {
        if validator == nil && !hasAudience {
            defer {
                storedVersion &+= 1
                lock.unlock()
            }
            return try body(&storedValue)
        }
        if validator != nil {
            var proposed = storedValue
            let result: Result
            do {
                result = try body(&proposed)
            } catch {
                lock.unlock()
                throw error
            }
            rejection = commitValidatedAndUnlock(proposed, origin: origin)
            return result
        }
        let oldValue = wantsChangeRecords ? storedValue : nil
        let result: Result
        do {
            result = try body(&storedValue)
        } catch {
            commitAndUnlock(oldValue: oldValue, origin: origin)
            throw error
        }
        commitAndUnlock(oldValue: oldValue, origin: origin)
        return result
    }

    /// Stores `proposed` if the validator accepts it.
    @usableFromInline
    final func commitValidatedAndUnlock(_ proposed: Value, origin: ChangeOrigin) -> RejectedWriteError? {
        do {
            try validator?(storedValue, proposed)
        } catch {
            lock.unlock()
            return RejectedWriteError(key: key, reason: error)
        }
        let oldValue = wantsChangeRecords ? storedValue : nil
        storedValue = proposed
        commitAndUnlock(oldValue: oldValue, origin: origin)
        return nil
    }

    /// Counts the change just made and publishes it.
    @inlinable
    final func commitAndUnlock(oldValue: Value?, origin: ChangeOrigin = .local) {
        storedVersion &+= 1
        if hasAudience {
            publishAndUnlock(oldValue: oldValue, origin: origin)
        } else {
            lock.unlock()
        }
    }
}
