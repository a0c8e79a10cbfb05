import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP socket bound to 127.0.0.1: what ``FixtureHTTPServer`` listens on and ``RefusedPort``
/// holds.
enum LoopbackSocket {
    /// A socket bound to `port` (0: one the kernel picks), and the port it got.
    ///
    /// - Parameter reusingAddress: Sets `SO_REUSEADDR`, as a server does. On Linux, two sockets
    ///   share a port only if both set it and neither listens.
    static func bind(port: UInt16 = 0, reusingAddress: Bool) throws -> (socket: Int32, port: UInt16) {
        #if canImport(Glibc)
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let socket = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard socket >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        if reusingAddress {
            var reuse: Int32 = 1
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemBind(socket, $0, length) }
        }
        guard bound == 0 else {
            let error = POSIXError(.init(rawValue: errno) ?? .EIO)
            close(socket)
            throw error
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        return (socket, UInt16(bigEndian: address.sin_port))
    }

    /// The system's `bind`, which ``bind(port:reusingAddress:)`` shadows.
    private static func systemBind(_ socket: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.bind(socket, address, length)
        #else
        Darwin.bind(socket, address, length)
        #endif
    }
}
