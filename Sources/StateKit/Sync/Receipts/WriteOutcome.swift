/// What became of one write of a ``SyncedState``, for all of its sinks: the end of a
/// ``WriteReceipt``.
///
/// An outcome is final: a receipt that resolved to one never changes its mind, in this launch or
/// the next.
///
/// ```swift
/// switch await cart.write({ $0.items.append(book) }).outcome(timeout: .seconds(5)) {
/// case .delivered?: print("every sink has it")
/// case .discarded(let reason)?, .rejected(let reason)?: print("lost:", reason)
/// case nil: print("still on its way")
/// }
/// ```
public enum WriteOutcome: Sendable, Hashable, CustomStringConvertible {
    /// Every sink holds the write's effect: the write itself, a newer value that includes it, or
    /// a merge of it. An analytics sink holds it once it took the event.
    case delivered
    /// A policy dropped it; `reason` names the policy and the sink or destination (a full buffer's
    /// overflow rule, ``SinkPolicy/Failure/giveUpAndReport``, a conflict the server won).
    case discarded(reason: String)
    /// A sink refused it for good (or the container's validator did); `reason` says who and why.
    case rejected(reason: String)

    /// `delivered`, or the outcome with its reason.
    public var description: String {
        switch self {
        case .delivered: "delivered"
        case .discarded(let reason): "discarded: \(reason)"
        case .rejected(let reason): "rejected: \(reason)"
        }
    }
}
