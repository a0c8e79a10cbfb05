import Foundation

/// What the sender of a key shared across processes did with the key's changes, by the key's
/// journal entries: what another process's ``WriteReceipt`` resolves with.
///
/// Only the key's sender hands changes to its remote destinations (``RemoteSenderLock``); a
/// widget's write reaches them through the file, as a change of the sender's cell. Both ledgers
/// tie their versions to the journal entries they stand for (``CellLedger/journaled(_:sequence:)``):
/// the widget's for the writes it appended, the sender's for those and for the entries it read.
/// Once every remote destination of the sender settled its version of entry `n`, the entries up to
/// `n` are settled; each was delivered unless an exception lists it. An entry the sender never
/// stood at by itself (it read the file in as one value, past several entries) shares the fate of
/// the next entry it did: that value includes it, as a coalesced change shares the fate of the
/// change it was coalesced into.
///
/// The sender publishes it in a hidden file beside the key's, `.<file>.outcomes`
/// (``SharedOutcomesFile``), each time its destinations settle more; the newest
/// ``exceptionsKept`` exceptions are kept, and the entries before them are no longer answered
/// (an entry whose exception was dropped must not read as delivered).
struct SharedOutcomes: Codable, Equatable {
    /// Entries settled undelivered, and why.
    struct Exception: Codable, Equatable {
        var entries: ClosedRange<UInt64>
        /// Whether a sink refused them (``WriteOutcome/rejected(reason:)``), not a policy
        /// (``WriteOutcome/discarded(reason:)``).
        var isRejected: Bool
        var reason: String
    }

    static var exceptionsKept: Int { 256 }

    /// Every entry up to this one is settled at every remote destination of the sender.
    private(set) var settledThrough: UInt64 = 0
    /// The settled entries that were not delivered, oldest first.
    private(set) var exceptions: [Exception] = []
    /// The entries up to this one are no longer answered: their exceptions were dropped.
    private(set) var forgottenThrough: UInt64 = 0

    /// What became of the change of journal entry `sequence`: `nil` while it is not settled, and
    /// once it is too old to say.
    func outcome(ofEntry sequence: UInt64) -> WriteOutcome? {
        guard sequence <= settledThrough, sequence > forgottenThrough else { return nil }
        guard let exception = exceptions.last(where: { $0.entries.contains(sequence) }) else { return .delivered }
        return exception.isRejected
            ? .rejected(reason: exception.reason) : .discarded(reason: exception.reason)
    }

    /// The entries after those settled so far, up to `sequence`, met `outcome`.
    mutating func settle(through sequence: UInt64, as outcome: WriteOutcome) {
        guard sequence > settledThrough else { return }
        let entries = settledThrough &+ 1...sequence
        settledThrough = sequence
        switch outcome {
        case .delivered:
            return
        case .discarded(let reason):
            exceptions.append(Exception(entries: entries, isRejected: false, reason: reason))
        case .rejected(let reason):
            exceptions.append(Exception(entries: entries, isRejected: true, reason: reason))
        }
        guard exceptions.count > Self.exceptionsKept else { return }
        let dropped = exceptions.count - Self.exceptionsKept
        forgottenThrough = exceptions[dropped - 1].entries.upperBound
        exceptions.removeFirst(dropped)
    }
}
