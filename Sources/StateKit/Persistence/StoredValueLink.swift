/// A container's tie to its ``StoredValue``, and what the container knows of it: guarded by the
/// container's lock.
final class StoredValueLink<Value>: @unchecked Sendable {
    let storedValue: StoredValue<Value>
    /// The newest sequence this container applied or recorded.
    var appliedSequence: UInt64
    /// The container version of the newest incoming change (0 when none).
    var incomingVersion: UInt64 = 0
    /// The newest container version already handed to the stored value or found incoming.
    var handledVersion: UInt64 = 0

    init(_ storedValue: StoredValue<Value>, sequence: UInt64) {
        self.storedValue = storedValue
        self.appliedSequence = sequence
    }
}

extension State {
    /// Applies a value of the shared stored value as an incoming change: one change, notified
    /// as any other, not saved again. Ignored when the container already applied or made a newer
    /// one; an equal value (when `Value` is `Equatable`) is taken note of but is no change.
    final func applyStoredValue(_ newValue: Value, sequence: UInt64, link: StoredValueLink<Value>) {
        let rejection = write(
            unlessAlready: { current in
                if link.appliedSequence >= sequence { return true }
                guard let isEqual = self.isEqual, isEqual(current, newValue) else { return false }
                link.appliedSequence = sequence
                return true
            },
            { stored in
                stored = newValue
                link.appliedSequence = sequence
                link.incomingVersion = self.storedVersion &+ 1
            }
        )
        rejection?.report()
    }

    /// Hands the container's newest change to its stored value (saved, and applied by every
    /// other container), unless it was incoming or is already handed over.
    ///
    /// Called after every change; it looks at the newest value rather than the change being
    /// announced, so a change overtaken by a newer one is not shared on its own.
    final func shareNewestChange(link: StoredValueLink<Value>) {
        lock.lock()
        let version = storedVersion
        guard version > link.handledVersion else {
            lock.unlock()
            return
        }
        link.handledVersion = version
        guard version != link.incomingVersion else {
            lock.unlock()
            return
        }
        let newValue = storedValue
        let sequence = link.storedValue.record(newValue)
        link.appliedSequence = sequence
        lock.unlock()
        link.storedValue.share(newValue, sequence: sequence, from: self)
    }

    /// Saves the container's newest value now, retrying a failed save (see ``StoredValue/flush()``).
    ///
    /// The newest change may still be queued behind another thread's delivery, so it is handed
    /// over here rather than when it is delivered.
    final func flushStoredValue(link: StoredValueLink<Value>) {
        shareNewestChange(link: link)
        link.storedValue.flush()
    }

    /// Joins `link`'s stored value, applying anything it missed since it read its first value.
    final func join(_ link: StoredValueLink<Value>, as member: any StoredValueMember<Value>) {
        if let (missed, sequence) = link.storedValue.add(member, seen: link.appliedSequence) {
            applyStoredValue(missed, sequence: sequence, link: link)
        }
    }
}
