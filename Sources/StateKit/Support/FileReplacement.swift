import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whole-file writes the way storage needs them: a new file written in full, a file replaced in
/// one step (a temporary file beside it, then `rename`), and a file forced to disk.
///
/// A reader never sees a partly written file under the final name; a writer killed half-way leaves
/// at most a hidden temporary file.
package enum FileReplacement {
    /// Writes all of `data` to `path`: a new file if `exclusive` (failing if one exists), else
    /// the file truncated. Forces it to disk if `durably`. On failure nothing is left at `path`.
    static func writeWhole(_ data: Data, toPath path: String, exclusive: Bool = true, durably: Bool) throws {
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC)
        let descriptor = open(path, flags, 0o644)
        guard descriptor >= 0 else { throw currentError() }
        defer { close(descriptor) }
        do {
            try data.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw currentError()
                    }
                    offset += written
                }
            }
            guard !durably || fsync(descriptor) == 0 else { throw currentError() }
        } catch {
            unlink(path)
            throw error
        }
    }

    /// Replaces the file at `path` with `data` in one step: a hidden temporary file beside it,
    /// forced to disk first if `durably`, renamed over it.
    static func replace(_ path: String, with data: Data, durably: Bool) throws {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else {
            return try replace(path, in: ".", with: data, durably: durably)
        }
        try replace(
            String(path[path.utf8.index(after: slash)...]), in: String(path[..<slash]), with: data, durably: durably)
    }

    /// Replaces the file `name` in `directory` with `data`, as ``replace(_:with:durably:)`` does;
    /// for the hot path of keys shared across processes, which knows both parts (joining strings
    /// costs less than splitting a path).
    static func replace(_ name: String, in directory: String, with data: Data, durably: Bool) throws {
        let path = directory + "/" + name
        let temporary = directory + "/." + name + ".tmp-\(getpid())-\(UUID().uuidString)"
        try writeWhole(data, toPath: temporary, durably: durably)
        guard rename(temporary, path) == 0 else {
            let error = currentError()
            unlink(temporary)
            throw error
        }
    }

    /// Forces the file (or directory) at `path`, as it is now, to disk; does nothing if it is gone.
    static func synchronize(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// Swaps what the paths `first` and `second` name, in one step, so that no reader ever finds
    /// either missing (StateKit's fault tests break a storage directory this way: a file takes
    /// its place). `renameat2` with `RENAME_EXCHANGE` on Linux 3.15 and later, looked up at run time
    /// (Swift's Glibc module leaves it out); `renamex_np` with `RENAME_SWAP` on Apple platforms.
    package static func exchange(_ first: String, _ second: String) -> Bool {
        #if canImport(Darwin)
        return renamex_np(first, second, UInt32(RENAME_SWAP)) == 0
        #else
        typealias Renameat2 = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UnsafePointer<CChar>, UInt32) -> Int32
        let renameExchange: UInt32 = 2
        guard let symbol = dlsym(nil, "renameat2") else { return false }
        return unsafeBitCast(symbol, to: Renameat2.self)(AT_FDCWD, first, AT_FDCWD, second, renameExchange) == 0
        #endif
    }

    private static func currentError() -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
    }
}
