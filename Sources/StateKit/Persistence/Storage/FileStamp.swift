import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// What a file looked like when it was looked at: identity, size and modification time; all
/// zero (size -1) when it does not exist.
struct FileStamp: Equatable {
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = -1
    var seconds: Int = 0
    var nanoseconds: Int = 0

    init(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        #if canImport(Darwin)
        seconds = Int(info.st_mtimespec.tv_sec)
        nanoseconds = Int(info.st_mtimespec.tv_nsec)
        #else
        seconds = Int(info.st_mtim.tv_sec)
        nanoseconds = Int(info.st_mtim.tv_nsec)
        #endif
    }
}
