/// What a poller has not yet looked at: the origins of the changes made since it last read the
/// container.
///
/// Off by default, and then it costs writes nothing: a write only reaches it on the path taken
/// when a change has an audience (``ContainerFields/hasAudience``), and turning it on is what puts
/// a container on that path. On, each change records its origin in a bit set and as the last
/// origin, under the container's lock; the poller reads and clears them with the value
/// (``State/readTallyAndValue()``). Nothing is allocated and no change record is built, so a
/// container whose only audience is the tally returns from the write right after recording it.
@usableFromInline
struct ChangeTally {
    /// Whether changes are counted.
    @usableFromInline
    var isOn = false
    /// Whether the tally is the container's whole audience, so that a change needs nothing else.
    @usableFromInline
    var isAlone = false
    /// One bit per ``ChangeOrigin`` seen since the last read.
    @usableFromInline
    var seen: UInt8 = 0
    /// The origin of the last change counted.
    @usableFromInline
    var last = ChangeOrigin.local

    /// Records a change of `origin`. Called with the lock held.
    @inlinable
    mutating func count(_ origin: ChangeOrigin) {
        seen |= origin.tallyBit
        last = origin
    }
}

extension ChangeOrigin {
    /// This origin's bit in ``ChangeTally/seen``.
    @inlinable
    var tallyBit: UInt8 {
        switch self {
        case .local: 1
        case .remote: 2
        case .external: 4
        case .undo: 8
        case .redo: 16
        }
    }

    /// The origins whose bits are set in `bits`, in declaration order.
    static func origins(in bits: UInt8) -> [ChangeOrigin] {
        [.local, .remote, .external, .undo, .redo].filter { bits & $0.tallyBit != 0 }
    }
}
