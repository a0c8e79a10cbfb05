/// Thrown by a remote-sync sink's `send` when it delivered nothing because the remote copy's
/// value replaced what it was handed (a conflict its policy resolved for the server): the sink's
/// pipeline counts the changes as coalesced, not sent, and does not retry them.
package struct SupersededByRemoteValue: Error {
    package init() {}
}
