import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A TCP connection to the inspector on 127.0.0.1, with every read and write bounded by a timeout
/// so that a test never hangs. The bound is generous: in the full test run, `/api/state` reads
/// the containers every other test is using at the same time.
final class RawHTTPClient {
    let descriptor: Int32

    /// Connects to `port`; `receiveBuffer` shrinks the socket's receive buffer, for a page that
    /// never reads.
    init(port: UInt16, receiveBuffer: Int32? = nil, timeout: Int = 60) throws {
        #if canImport(Glibc)
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            close(descriptor)
            throw error
        }
    }

    deinit {
        close(descriptor)
    }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Reads what arrives until the peer closes, or the timeout.
    func readAll() -> String {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            received.append(contentsOf: buffer[0..<count])
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads until `text` has arrived or `deadline` passed; returns whether it arrived.
    func read(until text: String, deadline: Date) -> Bool {
        var received = ""
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while Date() < deadline {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            received += String(decoding: buffer[0..<count], as: UTF8.self)
            if received.contains(text) { return true }
        }
        return false
    }

    /// Sends one request and returns the status code and body of the response.
    static func request(
        _ method: String, _ path: String, port: UInt16, headers: [String] = []
    ) throws -> (status: Int, body: String) {
        let client = try RawHTTPClient(port: port)
        let extra = headers.map { $0 + "\r\n" }.joined()
        client.send("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: 0\r\n\(extra)\r\n")
        let response = client.readAll()
        let status = response.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
        let body = response.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        return (status, body)
    }
}
