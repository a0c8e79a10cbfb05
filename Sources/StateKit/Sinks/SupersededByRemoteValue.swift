/// Thrown by a remote-sync sink's `send` when it delivered nothing because the remote copy's
/// value replaced what it was handed (a conflict its policy resolved for the server): the sink's
/// pipeline counts the changes as coalesced, not sent, does not retry them, and their receipts
/// say they were discarded, for `reason`.
package struct SupersededByRemoteValue: Error {
    /// Names the policy and the destination, for ``WriteOutcome/discarded(reason:)``.
    package let reason: String

    package init(reason: String) {
        self.reason = reason
    }
}
