extension StateDiagnostic.Kind {
    /// Stored bytes did not decode to the container's value type (a corrupt file, a type changed
    /// between releases, a `UserDefaults` value of another type, a schema version the type cannot
    /// migrate).
    ///
    /// The container started from its default value; the bytes were moved aside to
    /// `"<key>.corrupt-<timestamp>"` in the same storage, and the message names that key, the
    /// storage's ``StateStorage/location`` and the decoding error (also in
    /// ``StateDiagnostic/error``).
    public static let decodingFailed = StateDiagnostic.Kind("decoding-failed")

    /// A value could not be encoded for storage; what was stored before stays as it was.
    public static let encodingFailed = StateDiagnostic.Kind("encoding-failed")

    /// A storage failed to load, save or remove a key (a full disk, a permission), or to move
    /// undecodable bytes aside. The error is in ``StateDiagnostic/error``.
    public static let storageFailed = StateDiagnostic.Kind("storage-failed")

    /// Two live persisted containers claim one key in one storage with different value types.
    ///
    /// The message names the key and both types. The container created second neither loads nor
    /// saves: it starts from its default and lives in memory only, so neither corrupts the other.
    public static let keyConflict = StateDiagnostic.Kind("key-conflict")

    /// A process was further behind another process's changes of a key shared across processes
    /// than the key's journal goes back (1,000 changes): it took the newest value as one change
    /// instead of each. The message names the key and how many changes it missed.
    public static let changesMissed = StateDiagnostic.Kind("changes-missed")
}
