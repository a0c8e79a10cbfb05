extension StateDiagnostic.Kind {
    /// Resolving a conflict with a remote copy threw away local changes that were never sent,
    /// as the conflict policy said (`.serverWins` when the server changed since the last sync).
    /// The message says what was discarded.
    public static let localChangesDiscarded = StateDiagnostic.Kind("local-changes-discarded")
}
