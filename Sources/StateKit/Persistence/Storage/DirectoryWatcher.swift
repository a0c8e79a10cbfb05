import Dispatch
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Tells persisted containers when their files change outside them: another process writing a
/// file (atomically or in place), a sync tool replacing it, a user deleting it.
///
/// One watcher serves the whole process, and watches each directory once, however many
/// containers use it:
/// - on Linux, one inotify descriptor for the process, with one watch per directory, read by a
///   dispatch source on a shared queue (no thread of its own). It reports a file closed after
///   writing, moved in, moved away or deleted; not each write, so a file being written in place
///   is read once its writer closes it.
/// - on Apple platforms, a dispatch source on each directory (one descriptor per directory)
///   reports entries added, renamed or removed, which is how atomic writes and deletes look.
/// - as the fallback (files written in place on Apple platforms; a directory inotify cannot
///   watch, or one removed and created again), a timer checks each watched file's identity, size
///   and modification time twice a second, and tries again to watch the directory.
///
/// A container's handler may be called when nothing changed (its own write, another file's);
/// containers compare what the file holds with what they wrote or read last.
final class DirectoryWatcher: @unchecked Sendable {
    static let shared = DirectoryWatcher()
    /// How often the fallback checks: the bound on how late a change it finds arrives.
    static let pollInterval = DispatchTimeInterval.milliseconds(500)

    /// Keeps a file watched until released.
    final class Token {
        fileprivate let directory: String
        fileprivate let id: Int
        fileprivate weak var watcher: DirectoryWatcher?

        fileprivate init(directory: String, id: Int, watcher: DirectoryWatcher) {
            self.directory = directory
            self.id = id
            self.watcher = watcher
        }

        deinit { watcher?.remove(id, from: directory) }
    }

    private struct Watch {
        let fileName: String
        let onChange: @Sendable () -> Void
    }

    private final class Directory {
        let path: String
        var watches: [Int: Watch] = [:]
        var stamps: [String: FileStamp] = [:]
        /// The inotify watch descriptor, or `nil` when the fallback checks the directory.
        var descriptor: Int32?
        #if canImport(Darwin)
        var source: (any DispatchSourceFileSystemObject)?
        #endif

        init(path: String) {
            self.path = path
        }
    }

    private let lock = Lock()
    private let queue = DispatchQueue(label: "StateKit.persistence.watcher", qos: .utility)
    private var directories: [String: Directory] = [:]
    private var nextID = 0
    private var timer: (any DispatchSourceTimer)?
    #if os(Linux)
    private var inotify: Int32 = -1
    private var inotifySource: (any DispatchSourceRead)?
    private var paths: [Int32: String] = [:]
    #endif

    /// Calls `onChange` when the file named `fileName` in `storage`'s directory may have changed,
    /// while the returned token lives. The first watch of a directory creates it and removes the
    /// temporary files that killed processes left there.
    func watch(_ storage: FileStateStorage, fileName: String, onChange: @escaping @Sendable () -> Void) -> AnyObject {
        let path = storage.directory.path
        return lock.withLock {
            let directory: Directory
            if let existing = directories[path] {
                directory = existing
            } else {
                try? FileManager.default.createDirectory(at: storage.directory, withIntermediateDirectories: true)
                storage.removeStaleTemporaryFiles()
                directory = Directory(path: path)
                directories[path] = directory
                startWatchingLocked(directory)
            }
            nextID += 1
            directory.watches[nextID] = Watch(fileName: fileName, onChange: onChange)
            if directory.stamps[fileName] == nil {
                directory.stamps[fileName] = FileStamp(path: path + "/" + fileName)
            }
            updateTimerLocked()
            return Token(directory: path, id: nextID, watcher: self)
        }
    }

    private func remove(_ id: Int, from path: String) {
        lock.withLock {
            guard let directory = directories[path] else { return }
            directory.watches[id] = nil
            guard directory.watches.isEmpty else { return }
            stopWatchingLocked(directory)
            directories[path] = nil
            updateTimerLocked()
        }
    }

    /// The handlers of the watches on `fileName` in `directory` (all of them for `nil`).
    private func handlersLocked(_ directory: Directory, fileName: String?) -> [@Sendable () -> Void] {
        directory.watches.values.filter { fileName == nil || $0.fileName == fileName }.map(\.onChange)
    }

    // MARK: Fallback checks

    /// Runs the timer while some directory needs it (on Apple platforms, while any is watched).
    private func updateTimerLocked() {
        #if canImport(Darwin)
        let needsTimer = !directories.isEmpty
        #else
        let needsTimer = directories.values.contains { $0.descriptor == nil }
        #endif
        if needsTimer && timer == nil {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(
                deadline: .now() + Self.pollInterval, repeating: Self.pollInterval, leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in self?.poll() }
            timer.resume()
            self.timer = timer
        } else if !needsTimer, let timer {
            timer.cancel()
            self.timer = nil
        }
    }

    private func poll() {
        let handlers: [@Sendable () -> Void] = lock.withLock {
            var handlers: [@Sendable () -> Void] = []
            for directory in directories.values {
                #if os(Linux)
                if directory.descriptor != nil { continue }
                if addInotifyWatchLocked(directory) {
                    handlers += handlersLocked(directory, fileName: nil)
                    continue
                }
                #endif
                for fileName in Set(directory.watches.values.map(\.fileName)) {
                    let stamp = FileStamp(path: directory.path + "/" + fileName)
                    guard stamp != directory.stamps[fileName] else { continue }
                    directory.stamps[fileName] = stamp
                    handlers += handlersLocked(directory, fileName: fileName)
                }
            }
            updateTimerLocked()
            return handlers
        }
        for handler in handlers { handler() }
    }

    // MARK: Platform events

    private func startWatchingLocked(_ directory: Directory) {
        #if os(Linux)
        _ = addInotifyWatchLocked(directory)
        #elseif canImport(Darwin)
        let descriptor = open(directory.path, O_EVTONLY)
        guard descriptor >= 0 else { return }
        let source = DispatchSource.makeFileSystemObjectSource(
            fileDescriptor: descriptor, eventMask: [.write, .delete, .rename, .link], queue: queue)
        source.setEventHandler { [weak self, weak directory] in
            guard let self, let directory else { return }
            let handlers = self.lock.withLock { self.handlersLocked(directory, fileName: nil) }
            for handler in handlers { handler() }
        }
        source.setCancelHandler { close(descriptor) }
        source.resume()
        directory.source = source
        #endif
    }

    private func stopWatchingLocked(_ directory: Directory) {
        #if os(Linux)
        if let descriptor = directory.descriptor {
            inotify_rm_watch(inotify, descriptor)
            paths[descriptor] = nil
            directory.descriptor = nil
        }
        #elseif canImport(Darwin)
        directory.source?.cancel()
        directory.source = nil
        #endif
    }

    #if os(Linux)
    private static let eventMask = UInt32(
        IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF)

    /// Watches `directory` with inotify (opening the process's inotify descriptor on first use);
    /// whether it worked.
    private func addInotifyWatchLocked(_ directory: Directory) -> Bool {
        if inotify < 0 && !openInotifyLocked() { return false }
        let descriptor = inotify_add_watch(inotify, directory.path, Self.eventMask)
        guard descriptor >= 0 else { return false }
        directory.descriptor = descriptor
        paths[descriptor] = directory.path
        return true
    }

    private func openInotifyLocked() -> Bool {
        let descriptor = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard descriptor >= 0 else { return false }
        inotify = descriptor
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.readEvents() }
        source.resume()
        inotifySource = source
        return true
    }

    /// Reads the pending inotify events and calls the handlers of the files they name.
    private func readEvents() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var handlers: [@Sendable () -> Void] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { break }
            lock.withLock {
                var offset = 0
                while offset + 16 <= count {
                    let (descriptor, mask, length) = buffer.withUnsafeBytes { bytes in
                        (
                            bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self),
                            bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self),
                            Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                        )
                    }
                    let nameBytes = buffer[(offset + 16)..<(offset + 16 + length)].prefix { $0 != 0 }
                    offset += 16 + length
                    handlers += handlersLocked(
                        forEvent: descriptor, mask: mask, name: String(decoding: nameBytes, as: UTF8.self))
                }
            }
        }
        for handler in handlers { handler() }
    }

    private func handlersLocked(forEvent descriptor: Int32, mask: UInt32, name: String) -> [@Sendable () -> Void] {
        if mask & UInt32(IN_Q_OVERFLOW) != 0 {
            return directories.values.flatMap { handlersLocked($0, fileName: nil) }
        }
        guard let path = paths[descriptor], let directory = directories[path] else { return [] }
        if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
            // The directory is gone or moved: the fallback checks it until it can be watched again.
            if mask & UInt32(IN_IGNORED) != 0 {
                paths[descriptor] = nil
                if directory.descriptor == descriptor { directory.descriptor = nil }
            } else {
                inotify_rm_watch(inotify, descriptor)
            }
            for fileName in directory.stamps.keys {
                directory.stamps[fileName] = FileStamp(path: path + "/" + fileName)
            }
            updateTimerLocked()
            return handlersLocked(directory, fileName: nil)
        }
        return handlersLocked(directory, fileName: name)
    }
    #endif
}
