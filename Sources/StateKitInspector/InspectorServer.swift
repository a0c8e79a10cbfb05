import Dispatch
import Foundation
import StateKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The inspector's HTTP/1.1 server: a listening socket, a thread that accepts, and a thread per
/// connection that answers one request (or, for the event stream, writes events until the page
/// goes away).
///
/// Every request must carry the token (403 otherwise); undo, redo and "back to this step" are
/// `POST` only (405 otherwise).
///
/// - Note: All operations on `InspectorServer` are thread-safe.
final class InspectorServer: Sendable {
    /// What the server's lock guards.
    private struct Books: Sendable {
        var connections: [Connection] = []
        var isStopped = false
    }

    let port: UInt16
    let token: String
    let sampler = ChangeSampler()
    private let listener: Int32
    private let books = LockedBox(Books())
    /// Signalled when the accepting thread ended.
    private let acceptEnded = DispatchSemaphore(value: 0)
    /// Counts connection threads still running, so that ``stop()`` returns after them.
    private let serving = DispatchGroup()

    /// Listens on `address` and `port`.
    init(address: String, port: UInt16) throws {
        let fail = { (reason: String) in StateInspectorError(address: address, port: port, reason: reason) }
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = port.bigEndian
        guard inet_pton(AF_INET, address, &socketAddress.sin_addr) == 1 else {
            throw fail("not an IPv4 address")
        }
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw fail(String(cString: strerror(errno))) }
        // Lets a stopped inspector's port be listened on again at once; never shares a port that
        // another socket listens on.
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 64) == 0 else {
            let reason = String(cString: strerror(errno))
            _ = close(descriptor)
            throw fail(reason)
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.listener = descriptor
        self.port = UInt16(bigEndian: actual.sin_port)
        var generator = SystemRandomNumberGenerator()
        self.token = (0..<4).map { _ in String(generator.next() as UInt64, radix: 16) }.joined()
    }

    /// Starts accepting connections and sampling changes.
    func run() {
        sampler.run()
        let thread = Thread { [self] in
            acceptConnections()
            acceptEnded.signal()
        }
        thread.name = "StateKitInspector.accept"
        thread.start()
    }

    /// Stops accepting, closes every connection, and returns once the port is free and every
    /// connection's thread ended. Calling it again does nothing.
    func stop() {
        // Shut down under the lock, which a connection's thread takes to close its descriptor:
        // a descriptor closed and reused meanwhile is never shut down.
        let isFirstStop = books.withLock { books in
            guard !books.isStopped else { return false }
            books.isStopped = true
            for connection in books.connections { connection.shutDown() }
            return true
        }
        guard isFirstStop else { return }
        // Wakes the accepting thread: its accept fails once the socket is shut down.
        _ = shutdown(listener, Int32(SHUT_RDWR))
        acceptEnded.wait()
        _ = close(listener)
        sampler.stop()
        serving.wait()
    }

    private func acceptConnections() {
        while true {
            let descriptor = accept(listener, nil, nil)
            if descriptor < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            let connection = Connection(descriptor: descriptor)
            let isAccepted = books.withLock { books in
                guard !books.isStopped else { return false }
                books.connections.append(connection)
                serving.enter()
                return true
            }
            guard isAccepted else {
                connection.close()
                return
            }
            let thread = Thread { [self] in
                serve(connection)
                books.withLock { books in
                    books.connections.removeAll { $0 === connection }
                    connection.close()
                }
                serving.leave()
            }
            thread.name = "StateKitInspector.connection"
            thread.start()
        }
    }

    /// Answers one request on `connection`.
    private func serve(_ connection: Connection) {
        guard let head = connection.readHead() else { return }
        guard let request = HTTPRequest(head: head) else {
            connection.write(HTTPResponse.text(400, "bad request").bytes)
            return
        }
        guard let given = request.token, isToken(given) else {
            connection.write(
                HTTPResponse.text(403, "forbidden: this page needs the token in the inspector's URL").bytes)
            return
        }
        if request.path == "/events" {
            guard request.method == "GET" else {
                connection.write(HTTPResponse.text(405, "use GET").bytes)
                return
            }
            streamEvents(to: connection)
            return
        }
        connection.write(respond(to: request).bytes)
    }

    private func respond(to request: HTTPRequest) -> HTTPResponse {
        let parts = request.path.split(separator: "/").map(String.init)
        if parts.isEmpty || parts == ["index.html"] {
            guard request.method == "GET" else { return .text(405, "use GET") }
            return HTTPResponse(
                status: 200, contentType: "text/html; charset=utf-8", body: Data(InspectorPage.html.utf8))
        }
        if parts == ["api", "state"] {
            guard request.method == "GET" else { return .text(405, "use GET") }
            return .json(InspectorSnapshot.take().json())
        }
        if parts.count == 4, parts[0] == "api", parts[1] == "history", ["undo", "redo", "back"].contains(parts[3]) {
            guard request.method == "POST" else {
                var response = HTTPResponse.text(405, "\(parts[3]) needs POST")
                response.extraHeaders = ["Allow: POST"]
                return response
            }
            return timeTravel(parts[3], historyID: parts[2], query: request.query)
        }
        return .text(404, "not found")
    }

    /// Undo, redo, or back to a step of the history `historyID`.
    private func timeTravel(_ action: String, historyID: String, query: [String: String]) -> HTTPResponse {
        guard
            let history = InspectionRegistry.shared.histories.first(where: {
                InspectorSnapshot.identifier(of: $0) == historyID
            })
        else {
            return .text(404, "no such history")
        }
        let isDone: Bool
        switch action {
        case "undo": isDone = history.undo()
        case "redo": isDone = history.redo()
        default:
            guard let steps = query["steps"].flatMap(Int.init), steps >= 0 else {
                return .text(400, "back needs steps=<the number of steps to keep>")
            }
            isDone = history.undo(toStepCount: steps) > 0
        }
        // A short answer: the page reads the state again, and a process with many large values
        // does not encode them all for a button press.
        return isDone ? .json(Data(#"{"done":true}"#.utf8)) : .text(409, "nothing to \(action)")
    }

    private func streamEvents(to connection: Connection) {
        let client = EventClient(connection: connection)
        guard let replay = sampler.add(client) else { return }
        client.writeEvents(replaying: replay)
        sampler.remove(client)
    }

    /// Compares in time independent of where the strings differ.
    private func isToken(_ given: String) -> Bool {
        let expected = Array(token.utf8)
        let candidate = Array(given.utf8)
        var difference = UInt8(truncatingIfNeeded: expected.count ^ candidate.count)
        for index in expected.indices {
            difference |= expected[index] ^ (index < candidate.count ? candidate[index] : 0)
        }
        return difference == 0
    }
}
