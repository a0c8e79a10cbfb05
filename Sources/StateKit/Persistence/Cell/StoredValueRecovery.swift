import Foundation

/// What persisted containers do with stored data they cannot use: keep it aside and say so.
enum StoredValueRecovery {
    /// A key for keeping the value of `key` aside that nothing in `storage` holds yet:
    /// `"<key>.corrupt-<timestamp>-<random>"`, so set-asides made in the same millisecond, or by
    /// two processes at once, never overwrite each other.
    static func unusedAsideKey(for key: String, isUsed: (String) throws -> Bool) rethrows -> String {
        while true {
            let candidate = "\(key).corrupt-\(timestamp())-\(UUID().uuidString.prefix(8))"
            if try !isUsed(candidate) { return candidate }
        }
    }

    /// A readable account of a decoding error: the property that failed, by its path, and why.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        let context: DecodingError.Context
        let problem: String
        switch error {
        case .keyNotFound(let key, let found):
            let path = (found.codingPath + [key]).map(\.stringValue).joined(separator: ".")
            return "property '\(path)' is missing and the default value has none (\(found.debugDescription))"
        case .typeMismatch(let type, let found):
            context = found
            problem = "is not a \(type)"
        case .valueNotFound(let type, let found):
            context = found
            problem = "is null where a \(type) is needed"
        case .dataCorrupted(let found):
            context = found
            problem = "is not valid"
        @unknown default:
            return "\(error)"
        }
        let path = context.codingPath.map(\.stringValue).joined(separator: ".")
        let subject = path.isEmpty ? "the stored value" : "property '\(path)'"
        return "\(subject) \(problem) (\(context.debugDescription))"
    }

    /// Reports a key already claimed in `storage` for another type.
    static func reportConflict(key: String, in storage: String, type: Any.Type, claimedBy other: Any.Type) {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .keyConflict, keys: [key],
                message: "a container of \(type) claims the key in \(storage), already held by a container of "
                    + "\(other); the new container keeps its value in memory only"))
    }

    /// The diagnostic for a storage operation that threw.
    static func failure(_ operation: String, key: String, in storage: String, error: any Error) -> StateDiagnostic {
        StateDiagnostic(
            kind: .storageFailed, keys: [key], message: "\(operation) in \(storage) failed: \(error)", error: error)
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
