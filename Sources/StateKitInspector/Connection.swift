import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One accepted TCP connection: reads a request head, writes whole buffers, and can be shut down
/// from another thread to wake a thread blocked in a read or write on it.
///
/// - Note: All operations on `Connection` are thread-safe: the descriptor is set once, closed
///   once (by ``close()``, which only the connection's own thread calls), and shutting it down
///   from another thread is what `shutdown(2)` is for.
final class Connection: Sendable {
    let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// Reads until the end of the request head (a blank line), at most `limit` bytes; `nil` when
    /// the peer closed first or sent more than `limit` bytes.
    func readHead(limit: Int = 16_384) -> [UInt8]? {
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while head.count < limit {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            head.append(contentsOf: buffer[0..<count])
            if head.containsHeadEnd { return head }
        }
        return nil
    }

    /// Writes all of `bytes`; returns `false` when the peer is gone or the connection was shut down.
    @discardableResult
    func write(_ bytes: some DataProtocol) -> Bool {
        let data = Array(bytes)
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    /// Wakes whoever reads or writes the connection; they see it closed.
    func shutDown() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    /// Closes the descriptor. Called once, by the thread that served the connection.
    func close() {
        #if canImport(Glibc)
        _ = Glibc.close(descriptor)
        #else
        _ = Darwin.close(descriptor)
        #endif
    }
}

extension Collection where Element == UInt8 {
    /// Whether the bytes contain `\r\n\r\n`, the end of an HTTP head.
    fileprivate var containsHeadEnd: Bool {
        let bytes = Array(self)
        guard bytes.count >= 4 else { return false }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return true
        }
        return false
    }
}
