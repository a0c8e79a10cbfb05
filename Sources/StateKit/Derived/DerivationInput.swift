/// A container a derived state's computation reads, directly or through projections and other
/// derived states: its version tells whether a cached result is still current.
@usableFromInline
protocol DerivationLeaf: AnyObject {
    /// Reads the container's version, under its lock.
    var versionReader: VersionReader { get }
    /// Reads the value, so that an open transaction records the container as read.
    func touchValue()
    /// The container's ``State/cellID``, by which a transaction knows it.
    var cellID: ObjectIdentifier { get }
}

extension State: DerivationLeaf {
    @usableFromInline
    func touchValue() {
        _ = untrackedValue
    }

    /// The current value, as ``State/value`` reads it but without registering the read with
    /// Observation: what a derived state's computation reads.
    @usableFromInline
    final var untrackedValue: Value {
        if let log = openTransactionLog { return transactionalValue(in: log) }
        lock.lock()
        defer { lock.unlock() }
        return storedValue
    }
}

/// Reads a container's version without going through code generic over its value type: the
/// container's lock and the address of its version field.
///
/// A derived state reads its leaves' versions twice per computation; through the generic
/// ``State/version`` in code not specialised for the value type, each read looked up the
/// container's field layout at run time (~300 instructions).
@usableFromInline
struct VersionReader {
    /// Keeps the container, whose fields `version` points into, alive.
    let container: AnyObject
    let lock: Lock
    let version: UnsafePointer<UInt64>

    /// The container's version, read under its lock.
    var current: UInt64 {
        lock.lock()
        defer { lock.unlock() }
        return version.pointee
    }
}

extension State {
    /// A reader of this container's version; see ``VersionReader``.
    @usableFromInline
    var versionReader: VersionReader {
        VersionReader(container: self, lock: lock, version: versionField)
    }
}

/// Something whose changes make a derived state recompute: a container, or one key path of it.
///
/// A derived state watches these (not the derived states it reads), so a chain of derived states
/// is told of a change once, by the containers at its root, and reads its way up the chain.
@usableFromInline
struct DerivationInput {
    /// The container whose version says whether this input may have changed.
    let leaf: any DerivationLeaf
    /// Identifies the input, so that a diamond watches its shared root once.
    let id: AnyHashable
    /// Subscribes `handler` to the input's changes, from the next one on.
    let watch: (@escaping () -> Void) -> Subscription
}

extension Array where Element == DerivationInput {
    /// The inputs without repeats (by ``DerivationInput/id``), in their first order.
    func removingRepeatedInputs() -> [DerivationInput] {
        var seen = Set<AnyHashable>()
        return filter { seen.insert($0.id).inserted }
    }
}
