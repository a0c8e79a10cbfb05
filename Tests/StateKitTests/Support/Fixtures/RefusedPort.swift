import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A port on 127.0.0.1 that refuses every connection for as long as the test holds it.
///
/// A stopped server's port is no such thing: the kernel may hand it to the next server a test
/// running in parallel starts, whose script the requests meant to be refused then use up (a CI
/// run saw it: the network-error test's requests were answered by the 405 test's server, and both
/// failed). A socket bound without listening keeps the port from every other socket, and the
/// kernel answers a connection to it with a reset.
final class RefusedPort: Sendable {
    let port: UInt16
    private let socket: Int32

    init() throws {
        (socket, port) = try LoopbackSocket.bind(reusingAddress: false)
    }

    deinit {
        close(socket)
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/state")! }
}
