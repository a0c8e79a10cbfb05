import Foundation

/// What a remote-sync sink and its server last agreed on, kept beside the container's value so
/// that sync picks up where it stopped after a relaunch or a `kill -9`.
///
/// A persisted ``SyncedState`` saves it in the same storage as its value (under the key
/// `"<key>.sync-record"`), atomically, after the value it describes: at launch the sink knows
/// whether local changes are still unsent, which server version they were made against
/// (``validator``), and the value both sides last agreed on (``base``), the base of a three-way
/// merge. A remote-sync sink reads it with ``RemoteChannel/syncRecord`` and updates it with
/// ``RemoteChannel/recordAgreement(base:validator:atVersion:)``.
public struct SyncRecord: Sendable, Codable, Equatable {
    /// The last value both sides agreed on, encoded as the sink encodes values; `nil` before they
    /// ever did.
    public var base: Data?
    /// The server's validator for ``base`` (an HTTP `ETag`); `nil` while none is known.
    public var validator: String?
    /// Whether the container holds local changes the server has not taken.
    public var hasUnsentChanges: Bool
    /// The value being sent when the record was stored, until the answer's agreement replaces
    /// it (``RemoteChannel/recordSending(_:)``). A launch after a kill, or a process that takes over
    /// sending a key shared across processes after the sender died, finds it here: a server
    /// holding it holds the key's own value, not another writer's.
    public var sending: Data?

    /// Creates a record.
    public init(base: Data? = nil, validator: String? = nil, hasUnsentChanges: Bool = false) {
        self.base = base
        self.validator = validator
        self.hasUnsentChanges = hasUnsentChanges
    }
}
