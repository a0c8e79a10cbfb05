import Foundation

/// A write of a ``SyncedState`` that has no outcome yet, as ``SyncedState/pendingWrites`` lists it:
/// the visible outbox.
public struct PendingWrite: Sendable, Hashable {
    /// The write's ``State/version``.
    public let version: UInt64
    /// When it was made.
    public let timestamp: Date
    /// Where it came from.
    public let origin: ChangeOrigin
    /// How many times a sink has tried to deliver it so far (the most of any sink).
    public let attempts: Int
    /// The last error of a sink it waits for, one line, or `nil`.
    public let lastError: String?
    /// The names of the sinks it waits for, in the order the sinks were given.
    public let waitsFor: [String]
}
