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

    /// The outcome of a write at all its sinks, so far `sofar`, with one more sink's: a refusal
    /// outweighs a policy's discard, which outweighs a delivery; an unsettled sink (`nil`) leaves
    /// the write unsettled.
    static func combining(_ sofar: WriteOutcome?, _ sink: WriteOutcome?) -> WriteOutcome? {
        guard let sofar, let sink else { return nil }
        switch (sofar, sink) {
        case (.rejected, _): return sofar
        case (_, .rejected): return sink
        case (.discarded, _): return sofar
        default: return sink
        }
    }

    /// `delivered`, or the outcome with its reason.
    public var description: String {
        switch self {
        case .delivered: "delivered"
        case .discarded(let reason): "discarded: \(reason)"
        case .rejected(let reason): "rejected: \(reason)"
        }
    }
}
