/// How ``HTTPSyncSink`` resolves a conflict: the server refused a write because its copy changed
/// (412, or 409/404 to a conditional write), or a pull found a new server value while local
/// changes were not yet sent.
///
/// ```swift
/// let cart = SyncedState(Cart(), key: "cart") {
///     HTTPSyncSink(endpoint: cartURL, conflictPolicy: .merge { base, local, remote in
///         var merged = remote
///         merged.items.formUnion(local.items.subtracting(base?.items ?? []))
///         return merged
///     })
/// }
/// ```
public enum SyncConflictPolicy<Value: Sendable>: Sendable {
    /// The container takes the server's value, as a change marked remote that is not sent back.
    case serverWins
    /// The local value is written again over the server's, conditional on the server's new `ETag`.
    case clientWins
    /// A three-way merge: `base` is the last value both sides agreed on (`nil` before they ever
    /// did), `local` the container's value, `remote` the server's. The result is written to the
    /// server (conditional on its new `ETag`) and becomes the container's value.
    case merge(@Sendable (_ base: Value?, _ local: Value, _ remote: Value) -> Value)
}
