/// The receipt of one write of a ``SyncedState``: its version, whether it is saved, and what
/// became of it at the sinks.
///
/// ``SyncedState/write(_:)`` returns one; ``SyncedState/receipt(for:)`` gives one for any version
/// this launch wrote, or an earlier launch logged in a ``DurableOutbox``. A receipt resolves once,
/// to a final ``WriteOutcome``, for the container that gave it, and says so again after a relaunch:
/// an outbox keeps what became of its changes.
///
/// ```swift
/// let receipt = cart.write { $0.items.append(book) }
/// if await receipt.saved(timeout: .seconds(1)) {
///     print("version \(receipt.version) survives a power loss")
/// }
/// print(await receipt.outcome(timeout: .seconds(30)) ?? .discarded(reason: "not yet"))
/// ```
///
/// - Note: A receipt is a small value; copies of it, and receipts of one version, agree.
/// - Note: For a key shared across processes (``FileStateStorage/file(_:sharedAcrossProcesses:)``),
///   one process at a time sends to a remote destination. In the others, a write's outcome at
///   that destination waits until their process sends (when the sender exits, or dies): until
///   then ``outcome(timeout:)`` returns `nil` at its deadline there.
public struct WriteReceipt: Sendable {
    private let book: (any ReceiptSource)?
    private let fixedVersion: UInt64
    /// An outcome decided when the write was made (a validator refused it).
    private let decided: WriteOutcome?
    /// For a write inside a transaction: the version its commit gives it.
    private let slot: TransactionReceiptSlot?

    init(book: any ReceiptSource, version: UInt64) {
        self.book = book
        self.fixedVersion = version
        self.decided = nil
        self.slot = nil
    }

    init(book: (any ReceiptSource)?, version: UInt64, decided: WriteOutcome) {
        self.book = book
        self.fixedVersion = version
        self.decided = decided
        self.slot = nil
    }

    init(book: any ReceiptSource, slot: TransactionReceiptSlot) {
        self.book = book
        self.fixedVersion = 0
        self.decided = nil
        self.slot = slot
    }

    /// The container's ``State/version`` after this write.
    ///
    /// A write refused by the container's validator changed nothing: it is the version the
    /// container had. Inside a transaction the version is known once the transaction commits, and
    /// reads 0 until then.
    public var version: UInt64 {
        slot?.state.version ?? fixedVersion
    }

    /// Waits, for at most `timeout`, until storage or a ``DurableOutbox`` holds this write (or a
    /// newer value, which includes it) on disk, forced past the kernel's cache: then it survives a
    /// power loss. Returns whether it does.
    ///
    /// A returned write already survives `kill -9` of its process; this is the stronger promise.
    /// A container with neither storage nor an outbox never holds a write on disk: `false` at once.
    public func saved(timeout: Duration) async -> Bool {
        if decided != nil { return false }
        guard let book, let version = committedVersion else { return false }
        return await book.saved(version, timeout: timeout)
    }

    /// Waits, for at most `timeout`, for what became of this write at every sink of its container,
    /// and returns it; `nil` if it is still on its way at the deadline (or the task was cancelled).
    ///
    /// ``WriteOutcome/delivered`` once every sink holds its effect, ``WriteOutcome/rejected(reason:)``
    /// if a sink refused it (the first such sink, in the order the sinks were given), otherwise
    /// ``WriteOutcome/discarded(reason:)`` if a policy dropped it at some sink.
    public func outcome(timeout: Duration) async -> WriteOutcome? {
        if let decided { return decided }
        guard let book else { return nil }
        if let slot {
            switch slot.state {
            case .pending: return nil
            case .committed(let version): return await book.outcome(of: version, timeout: timeout)
            case .unchanged: return .delivered
            case .abandoned(let reason): return .discarded(reason: reason)
            case .refused(let reason): return .rejected(reason: reason)
            }
        }
        return await book.outcome(of: fixedVersion, timeout: timeout)
    }

    /// The version to ask about: a transaction's, once it committed.
    private var committedVersion: UInt64? {
        guard let slot else { return fixedVersion }
        switch slot.state {
        case .committed(let version), .unchanged(let version): return version
        case .pending, .abandoned, .refused: return nil
        }
    }
}

/// What a ``WriteReceipt`` asks of its container's books.
protocol ReceiptSource: AnyObject, Sendable {
    /// Waits for the outcome of `version` for at most `timeout`.
    func outcome(of version: UInt64, timeout: Duration) async -> WriteOutcome?
    /// Waits for `version` to be held on disk for at most `timeout`.
    func saved(_ version: UInt64, timeout: Duration) async -> Bool
}
