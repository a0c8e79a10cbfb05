/// Where a write made inside a transaction learns its version: the transaction's commit fills it
/// in, or its end says the write never happened.
final class TransactionReceiptSlot: @unchecked Sendable {
    enum State {
        /// The transaction has not finished.
        case pending
        /// The commit made the container's change of this version.
        case committed(UInt64)
        /// The commit found the container's value already as the transaction left it: nothing
        /// to deliver, the container stays at this version.
        case unchanged(UInt64)
        /// The write is gone: its body ran again, threw, or was rolled back.
        case abandoned(String)
        /// The container's validator refused the write.
        case refused(String)

        var version: UInt64 {
            switch self {
            case .committed(let version), .unchanged(let version): version
            case .pending, .abandoned, .refused: 0
            }
        }
    }

    /// The container written to, as a transaction knows it (``State/cellID``).
    let container: ObjectIdentifier
    private let lock = Lock()
    private var current = State.pending

    init(container: ObjectIdentifier) {
        self.container = container
    }

    var state: State {
        lock.withLock { current }
    }

    /// Settles the slot, once: later calls change nothing.
    func settle(_ state: State) {
        lock.withLock {
            guard case .pending = current else { return }
            current = state
        }
    }
}
