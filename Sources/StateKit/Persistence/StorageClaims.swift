/// Which live persisted containers hold which key in which storage, and with what value type,
/// so that two containers claiming one key with different types are reported.
final class StorageClaims: @unchecked Sendable {
    /// A container's hold on its key, released when the container (its only owner) goes away.
    final class Token: @unchecked Sendable {
        fileprivate var release: (@Sendable () -> Void)?

        deinit { release?() }
    }

    private struct Claim {
        let type: Any.Type
        weak var token: Token?
    }

    static let shared = StorageClaims()

    private let lock = Lock()
    private var claims: [String: [Claim]] = [:]

    /// Claims `key` in the storage at `location` for values of `type`.
    ///
    /// A live claim of another type on the same key is reported as a
    /// ``StateDiagnostic/Kind/keyConflict``, and this claim is not recorded.
    /// - Returns: The token that holds the claim, and whether it was granted: only then may the
    ///   container read and write the key.
    func claim(key: String, location: String, type: Any.Type) -> (token: Token, isGranted: Bool) {
        let token = Token()
        let name = location + "\u{0}" + key
        let conflictingType: Any.Type? = lock.withLock {
            var live = claims[name, default: []].filter { $0.token != nil }
            if let other = live.first(where: { $0.type != type }) {
                return other.type
            }
            live.append(Claim(type: type, token: token))
            claims[name] = live
            token.release = { [weak self] in self?.prune(name) }
            return nil
        }
        if let conflictingType {
            StoredValueRecovery.reportConflict(key: key, in: location, type: type, claimedBy: conflictingType)
        }
        return (token, conflictingType == nil)
    }

    /// Forgets the claims on `name` whose containers are gone.
    private func prune(_ name: String) {
        lock.withLock {
            let live = claims[name, default: []].filter { $0.token != nil }
            claims[name] = live.isEmpty ? nil : live
        }
    }
}
