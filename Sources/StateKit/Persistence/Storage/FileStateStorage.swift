import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A ``StateStorage`` that keeps each key in its own JSON file in a directory you choose.
///
/// Each save writes a temporary file next to the destination, flushes it to disk, then renames
/// it over the destination; a rename within one directory is atomic, so a reader — or the next
/// launch after a crash or `kill -9` — finds either the previous file or the new one, never a torn
/// one. File names are the keys, with every character other than letters, digits, `-`, `_` and
/// `.` percent-encoded (`"profile/name"` is `profile%2Fname.json`).
///
/// ```swift
/// let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
/// let directory = support.appending(path: "State")
/// let settings = PersistedState(Settings(), key: "settings", storage: .file(directory))
/// ```
///
/// The directory is created when a container first uses it. One directory is one storage however
/// it is spelled: the path is made absolute, with `..`, trailing slashes and symbolic links
/// resolved, so containers on `…/state`, `…/state/` and a link to it share their keys.
///
/// A process killed mid-save may leave a hidden temporary file (`.<name>.tmp-<pid>-<uuid>`)
/// behind; it is never read, and the first container to use the directory removes those whose
/// process is gone (and nothing else). Containers are told when a file changes outside them
/// (another process, a sync tool replacing it): through inotify on Linux and a dispatch source on
/// Apple platforms, one per directory, with a twice-a-second check as the fallback.
///
/// Several processes (an app and its extensions, through an App Group container) can share a
/// directory as one storage: make it with ``init(directory:sharedAcrossProcesses:)`` or
/// ``StateStorage/file(_:sharedAcrossProcesses:)``, and every write of a key is atomic against
/// every process using it (see ``isSharedAcrossProcesses``).
///
/// - Note: All operations on `FileStateStorage` are thread-safe.
public struct FileStateStorage: StateStorage {
    /// The directory holding the files.
    public let directory: URL

    /// Whether the keys' writes are atomic against other processes that use the directory as a
    /// shared storage too.
    ///
    /// When `true`, `modify`, `~>` and `set` on a persisted container of a key in this storage
    /// (``PersistedState``, `@Persisted`, a persisted ``SyncedState``) take the key's lock, an
    /// advisory `flock` on a lock file beside the value (`.<file>.lock`) that the kernel releases
    /// when its process dies; read the stored value first if another process changed it since
    /// this one last knew it; apply the change; write it (a temporary file renamed into place,
    /// flushed to disk shortly after, coalesced, as every save is); release the lock; and only
    /// then notify. So `counter.modify { $0 += 1 }` loses no increment, whichever processes make
    /// them, and a process killed inside a `modify` body leaves the value it found and blocks
    /// nobody. Reads stay in memory; another process's change reaches subscribers within about
    /// 250 ms, through the directory's watcher, each change on its own (every write also goes to a
    /// journal of the key's last changes, `.<file>.journal`). A synced key is sent by one process
    /// at a time.
    ///
    /// It costs each write a lock, a `stat`, a write and a rename on the writer's thread (a median
    /// of about 45 µs uncontended on tmpfs on a busy 2-core Linux VM; more where every rename
    /// waits for a disk's journal), instead of a save coalesced on a background queue.
    /// A ``withStateTransaction(_:)`` over such keys takes their locks in one order (by file name)
    /// for its commit, and writes an intent record before it replaces the first file, so other
    /// processes read all of its changes or none, even when its process is killed mid-commit;
    /// ``StateHistory`` undoes and redoes such changes the same way.
    ///
    /// Whether a key is shared is decided for the process by the first container of the key: use
    /// one setting for a directory everywhere.
    ///
    /// > Note: `UserDefaults` suites, App Group ones included, cannot offer this: `cfprefsd` owns
    /// > their file and merges writes, so a read-modify-write there is never atomic across
    /// > processes. Keep state that extensions change in shared file storage.
    public let isSharedAcrossProcesses: Bool

    /// Creates a storage that keeps its files in `directory`.
    ///
    /// The directory is resolved at once (see above), so ``directory`` may differ from the URL
    /// you pass: for example without a trailing slash, or with symbolic links followed.
    public init(directory: URL) {
        self.init(directory: directory, sharedAcrossProcesses: false)
    }

    /// Creates a storage that keeps its files in `directory`, shared with other processes or not.
    ///
    /// ```swift
    /// let storage = FileStateStorage(directory: sharedDirectory, sharedAcrossProcesses: true)
    /// let launches = PersistedState(0, key: "launches", storage: storage)
    /// launches.modify { $0 += 1 }   // atomic against every process using this directory
    /// ```
    ///
    /// - Parameters:
    ///   - directory: Where the files are kept; resolved at once, as ``init(directory:)`` does.
    ///   - sharedAcrossProcesses: Whether each key's writes are atomic against other processes
    ///     (see ``isSharedAcrossProcesses``); `false` is ``init(directory:)``.
    public init(directory: URL, sharedAcrossProcesses: Bool) {
        self.directory = Self.canonical(directory)
        self.isSharedAcrossProcesses = sharedAcrossProcesses
    }

    /// The directory's URL.
    public var location: String { directory.absoluteString }

    /// The file that holds `key`.
    public func fileURL(forKey key: String) -> URL {
        directory.appendingPathComponent(Self.fileName(forKey: key), isDirectory: false)
    }

    /// Reads the file for `key`; `nil` if it does not exist.
    public func load(forKey key: String) throws -> Data? {
        do {
            return try Data(contentsOf: fileURL(forKey: key))
        } catch CocoaError.fileReadNoSuchFile {
            return nil
        }
    }

    /// Writes `data` to a temporary file, flushes it, and renames it over the file for `key`.
    public func save(_ data: Data, forKey key: String) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileReplacement.replace(fileURL(forKey: key).path, with: data, durably: true)
    }

    /// Deletes the file for `key`, if there is one.
    public func remove(forKey key: String) throws {
        do {
            try FileManager.default.removeItem(at: fileURL(forKey: key))
        } catch CocoaError.fileNoSuchFile {
            return
        }
    }

    /// Renames the file for `key` to the file for `destinationKey`, in one atomic step.
    public func moveValue(forKey key: String, toKey destinationKey: String) throws {
        guard rename(fileURL(forKey: key).path, fileURL(forKey: destinationKey).path) == 0 else {
            if errno == ENOENT { return }
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
    }

    /// The lock file of `key`, when the storage is shared across processes (see
    /// ``SharedKeyLock``): hidden, beside the key's file.
    func lockFileURL(forKey key: String) -> URL {
        directory.appendingPathComponent(".\(Self.fileName(forKey: key)).lock", isDirectory: false)
    }

    /// ``save(_:forKey:)`` without forcing the new file to disk: a process killed right after finds
    /// it (the kernel has it), and ``synchronize(forKey:)`` later makes it last a power loss.
    ///
    /// For a writer on the hot path of shared keys: the paths are joined as strings (no `URL`
    /// operations) and the directory is created only when it is missing.
    ///
    /// - Parameter fileName: The key's file name, ``fileName(forKey:)``.
    func replace(_ data: Data, fileName: String) throws {
        let directoryPath = directory.path
        do {
            try FileReplacement.replace(fileName, in: directoryPath, with: data, durably: false)
        } catch let error as POSIXError where error.code == .ENOENT {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try FileReplacement.replace(fileName, in: directoryPath, with: data, durably: false)
        }
    }

    /// Forces the file of `key`, as it is now, to disk.
    func synchronize(forKey key: String) {
        FileReplacement.synchronize(fileURL(forKey: key).path)
    }

    /// `directory` as an absolute path with `.`, `..`, trailing slashes and symbolic links
    /// resolved; a part that does not exist yet is appended to its resolved existing ancestor.
    static func canonical(_ directory: URL) -> URL {
        var existing = directory.standardizedFileURL.path
        var missing: [String] = []
        while true {
            if let resolved = realpath(existing, nil) {
                defer { free(resolved) }
                var url = URL(fileURLWithPath: String(cString: resolved), isDirectory: true)
                for component in missing { url.appendPathComponent(component, isDirectory: true) }
                return url
            }
            let parent = (existing as NSString).deletingLastPathComponent
            guard parent != existing, !parent.isEmpty else { return directory.standardizedFileURL }
            missing.insert((existing as NSString).lastPathComponent, at: 0)
            existing = parent
        }
    }

    /// Removes the temporary files that killed processes left in the directory: files named as
    /// ``save(_:forKey:)`` names them, whose process no longer runs (or, written before the
    /// process id was part of the name, older than a minute). Nothing else is touched.
    func removeStaleTemporaryFiles() {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        for name in names where name.hasPrefix(".") {
            guard let marker = name.range(of: ".json.tmp-", options: .backwards) else { continue }
            let suffix = name[marker.upperBound...]
            let parts = suffix.split(separator: "-", maxSplits: 1)
            let path = directory.appendingPathComponent(name, isDirectory: false).path
            if parts.count == 2, let pid = Int32(parts[0]), UUID(uuidString: String(parts[1])) != nil {
                guard pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            } else if UUID(uuidString: String(suffix)) != nil {
                guard
                    let modified = try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date,
                    modified.timeIntervalSinceNow < -60
                else { continue }
            } else {
                continue
            }
            unlink(path)
        }
    }

    /// `key` with every character outside `[A-Za-z0-9._-]` percent-encoded (and a leading `.`,
    /// so no key names a hidden file), plus `.json`.
    static func fileName(forKey key: String) -> String {
        var name = ""
        for (index, byte) in key.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
                name.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: ".") where index > 0:
                name.append(".")
            default:
                name += String(format: "%%%02X", byte)
            }
        }
        return name + ".json"
    }
}

extension FileStateStorage: WatchableStateStorage {
    func watch(key: String, onChange: @escaping @Sendable () -> Void) -> AnyObject? {
        DirectoryWatcher.shared.watch(self, fileName: Self.fileName(forKey: key), onChange: onChange)
    }
}

extension StateStorage where Self == FileStateStorage {
    /// A storage keeping one JSON file per key in `directory`; see ``FileStateStorage``.
    ///
    /// ```swift
    /// @Persisted(key: "theme", storage: .file(settingsDirectory)) var theme = Theme.light
    /// ```
    public static func file(_ directory: URL) -> FileStateStorage {
        FileStateStorage(directory: directory)
    }

    /// A storage keeping one JSON file per key in `directory`, whose writes are atomic against
    /// other processes when `sharedAcrossProcesses` is `true`; see
    /// ``FileStateStorage/isSharedAcrossProcesses``.
    ///
    /// For an app and its extensions, use the App Group's container:
    ///
    /// ```swift
    /// let storage = FileStateStorage.file(sharedDirectory, sharedAcrossProcesses: true)
    /// let launches = PersistedState(0, key: "launches", storage: storage)
    /// launches.modify { $0 += 1 }   // atomic against every process using this directory
    /// ```
    ///
    /// - Parameters:
    ///   - directory: Where the files are kept.
    ///   - sharedAcrossProcesses: Whether each key's writes are atomic against other processes;
    ///     `false` is ``StateStorage/file(_:)``.
    public static func file(_ directory: URL, sharedAcrossProcesses: Bool) -> FileStateStorage {
        FileStateStorage(directory: directory, sharedAcrossProcesses: sharedAcrossProcesses)
    }
}
