/// The error a validator's rejection becomes: which container refused which write, and why.
///
/// Thrown by the throwing write APIs (``MonitoredState/set(_:)``, ``MonitoredState/update(_:)``);
/// the non-throwing ones (``State/modify(_:)-5lmnc``, `~>`) report it as a
/// ``StateDiagnostic/Kind/rejectedWrite`` diagnostic. Either way the value and version stay as they were.
public struct RejectedWriteError: Error, CustomStringConvertible {
    /// The key of the container that refused the write.
    public let key: String
    /// What the validator threw.
    public let reason: any Error

    /// Creates the error for a rejection of a write to `key`.
    public init(key: String, reason: any Error) {
        self.key = key
        self.reason = reason
    }

    /// Names the key and the validator's reason.
    public var description: String {
        "write to '\(key)' rejected by its validator: \(reason)"
    }

    @usableFromInline
    func report() {
        StateDiagnostics.report(StateDiagnostic(kind: .rejectedWrite, keys: [key], message: description, error: reason))
    }
}
