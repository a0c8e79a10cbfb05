/// Where a change came from: the user's own code, the server, another process, or undo and redo.
///
/// Every ``StateChange`` carries one (``StateChange/origin``), so a sink can tell the user's edits
/// from values that only arrived:
///
/// ```swift
/// let plan = SyncedState("free", key: "plan") {
///     ClosureSink { changes in
///         for change in changes where change.origin == .local { print("the user chose", change.newValue) }
///     }
/// }
/// ```
///
/// Remote-sync sinks are never handed ``remote`` changes, and ``StateHistory`` records only local
/// changes and transactions.
public enum ChangeOrigin: String, Sendable, Hashable, Codable {
    /// Made by this process's code: a write, a `modify`, a transaction, a merge of a remote value
    /// into unsent local edits.
    case local
    /// Taken from a remote copy through a ``RemoteChannel``: a pull, or a conflict the server won.
    /// Remote-sync sinks do not send it back, and ``StateHistory`` never records or reverts it.
    case remote
    /// Written to the container's storage outside its containers (another process, a replaced
    /// file, other code writing `UserDefaults`) and taken in by the storage watcher; or a key move
    /// (`previousKeys`) that took the stored value to a new key, leaving the container its default.
    case external
    /// Made by ``StateHistory/undo()``.
    case undo
    /// Made by ``StateHistory/redo()``.
    case redo
}
