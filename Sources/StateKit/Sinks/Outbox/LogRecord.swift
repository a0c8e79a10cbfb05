/// One line of an outbox log: a change to deliver, or the version up to which everything was
/// settled, and what became of changes settled without being delivered.
struct LogRecord<Value: Codable>: Codable {
    var change: StateChange<Value>?
    var acknowledged: UInt64?
    var settled: LoggedOutcome?
}

/// A run of changes a sink settled without delivering them, as an outbox log keeps it: a
/// discard or a refusal (a change coalesced into a newer one shares that one's, and is not kept).
struct LoggedOutcome: Codable {
    var from: UInt64
    var through: UInt64
    var discarded: String?
    var rejected: String?

    init?(_ versions: ClosedRange<UInt64>, _ fate: SinkOutcomes.Fate) {
        from = versions.lowerBound
        through = versions.upperBound
        switch fate {
        case .discarded(let reason): discarded = reason
        case .rejected(let reason): rejected = reason
        case .coalesced: return nil
        }
    }

    var fate: SinkOutcomes.Fate {
        if let rejected { return .rejected(reason: rejected) }
        return .discarded(reason: discarded ?? "")
    }
}
