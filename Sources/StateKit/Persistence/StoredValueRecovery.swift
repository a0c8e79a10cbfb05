import Foundation

/// What persisted containers do with stored data they cannot use: keep it aside and say so.
enum StoredValueRecovery {
    /// Moves the value under `key` to `"<key>.corrupt-<timestamp>"` and reports a
    /// ``StateDiagnostic/Kind/decodingFailed`` naming the key, the storage and `error`.
    ///
    /// - Returns: Whether the bytes are safe aside, so the container may overwrite `key`.
    static func setAside(
        key: String,
        in storage: any StateStorage,
        expected type: Any.Type,
        error: any Error
    ) -> Bool {
        let asideKey = "\(key).corrupt-\(timestamp())"
        let problem = "the value stored in \(storage.location) does not decode as \(type): \(error)"
        do {
            try storage.moveValue(forKey: key, toKey: asideKey)
        } catch let moveError {
            StateDiagnostics.report(
                StateDiagnostic(
                    kind: .decodingFailed, keys: [key],
                    message: "\(problem); started from the default value, and will not save, because moving the "
                        + "stored value aside to '\(asideKey)' failed: \(moveError)",
                    error: error))
            return false
        }
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .decodingFailed, keys: [key],
                message: "\(problem); started from the default value and kept the stored value as '\(asideKey)'",
                error: error))
        return true
    }

    /// Reports a key already claimed in `storage` for another type.
    static func reportConflict(key: String, in storage: String, type: Any.Type, claimedBy other: Any.Type) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .keyConflict, keys: [key],
                message: "a container of \(type) claims the key in \(storage), already held by a container of "
                    + "\(other); the new container keeps its value in memory only"))
    }

    /// Reports a storage operation that threw.
    static func reportFailure(_ operation: String, key: String, in storage: String, error: any Error) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .storageFailed, keys: [key], message: "\(operation) in \(storage) failed: \(error)",
                error: error))
    }

    /// The time as `20260522T101112.123Z`: sortable, and safe in file names.
    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss.SSS'Z'"
        return formatter.string(from: Date())
    }
}
