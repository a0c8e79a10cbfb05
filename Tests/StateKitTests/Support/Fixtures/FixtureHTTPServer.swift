import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for sink tests: records each request and answers as the
/// test scripts it (succeed, fail, reject, or hold the answer until the test releases it).
///
/// One connection at a time, `Connection: close`, at most `maximumRequests` answered (later
/// connections are closed at once), loopback only.
final class FixtureHTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        var path: String
        /// Header fields, names lowercased.
        var headers: [String: String]
        var body: Data
    }

    struct Response: Sendable {
        var status: Int
        var headers: [String: String] = [:]
        var body: Data = Data()
        /// When set, the answer waits until the test calls `release()` for it.
        var waitsForRelease = false

        static let ok = Response(status: 200)
    }

    let port: UInt16
    private let socket: Int32
    private let maximumRequests: Int
    private let lock = NSLock()
    private var script: [Response]
    private let fallback: Response
    private var recorded: [Request] = []
    private var heldAnswers: [Duration] = []
    private var countWaiters: [(count: Int, resumer: OnceResumer)] = []
    private let releases = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    var url: URL { URL(string: "http://127.0.0.1:\(port)/state")! }
    var requests: [Request] { lock.withLock { recorded } }
    /// For each held answer the client gave up on, how long after its request it hung up, as the
    /// serving thread saw it: a client's own timeout, apart from how busy the test process is.
    var hangUps: [Duration] { lock.withLock { heldAnswers } }

    /// The first of ``hangUps``, once there is one, or `nil` after `seconds`.
    func firstHangUp(within seconds: Int = 60) async -> Duration? {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if let first = hangUps.first { return first }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return hangUps.first
    }

    /// Starts serving: answers with `script` in order, then with `fallback`.
    init(script: [Response] = [], fallback: Response = .ok, maximumRequests: Int = 50) throws {
        self.script = script
        self.fallback = fallback
        self.maximumRequests = maximumRequests
        let (socket, port) = try LoopbackSocket.bind(reusingAddress: true)
        guard listen(socket, 16) == 0 else {
            let error = POSIXError(.init(rawValue: errno) ?? .EIO)
            close(socket)
            throw error
        }
        self.socket = socket
        self.port = port
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Stops listening and waits for the serving thread to end.
    func stop() {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
        releases.signal()
        finished.wait()
    }

    /// Lets one held answer go.
    func release() {
        releases.signal()
    }

    /// Returns once at least `count` requests have arrived, or fails the test after `seconds`.
    func received(_ count: Int, within seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async {
        await bounded("\(count) requests at the fixture server", seconds: seconds, sourceLocation: sourceLocation) {
            resumer in
            lock.lock()
            if recorded.count >= count {
                lock.unlock()
                resumer.resume()
            } else {
                countWaiters.append((count, resumer))
                lock.unlock()
            }
        }
    }

    private func serve() {
        defer { finished.signal() }
        var answered = 0
        while true {
            let connection = accept(socket, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            guard answered < maximumRequests, let request = read(from: connection) else { continue }
            answered += 1
            let response = record(request)
            if response.waitsForRelease { hold(connection) }
            write(response, to: connection)
        }
    }

    /// Waits for `release()`, noting when the client hangs up meanwhile.
    private func hold(_ connection: Int32) {
        let start = ContinuousClock.now
        var hungUp = false
        while releases.wait(timeout: .now() + .milliseconds(10)) == .timedOut {
            guard !hungUp else { continue }
            var byte: UInt8 = 0
            if recv(connection, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) == 0 {
                hungUp = true
                let after = ContinuousClock.now - start
                lock.withLock { heldAnswers.append(after) }
            }
        }
    }

    private func record(_ request: Request) -> Response {
        lock.lock()
        recorded.append(request)
        var response = script.isEmpty ? fallback : script.removeFirst()
        // A write accepted without an ETag would make the sink read it back (as it does with
        // Apache); the fixture answers like most servers, with a fresh ETag, unless scripted.
        if request.method != "GET", (200..<300).contains(response.status),
            !response.headers.keys.contains(where: { $0.lowercased() == "etag" })
        {
            response.headers["ETag"] = "\"fixture-\(recorded.count)\""
        }
        let ready = countWaiters.filter { $0.count <= recorded.count }
        countWaiters.removeAll { $0.count <= recorded.count }
        lock.unlock()
        for waiter in ready { waiter.resumer.resume() }
        return response
    }

    private func read(from connection: Int32) -> Request? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator = Data("\r\n\r\n".utf8)
        var headerEnd: Range<Data.Index>?
        var contentLength = 0
        while true {
            if headerEnd == nil, let range = data.range(of: separator) {
                headerEnd = range
                let head = String(decoding: data[..<range.lowerBound], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
            if let headerEnd, data.count - headerEnd.upperBound >= contentLength { break }
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            data.append(contentsOf: buffer[0..<count])
        }
        guard let headerEnd else { return nil }
        let lines = String(decoding: data[..<headerEnd.lowerBound], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 {
                headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        let body = data[headerEnd.upperBound..<(headerEnd.upperBound + contentLength)]
        return Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: Data(body))
    }

    private func write(_ response: Response, to connection: Int32) {
        var head =
            "HTTP/1.1 \(response.status) Fixture\r\nContent-Length: \(response.body.count)\r\nConnection: close\r\n"
        for (field, value) in response.headers { head += "\(field): \(value)\r\n" }
        head += "\r\n"
        var bytes = Data(head.utf8)
        bytes.append(response.body)
        var sent = 0
        bytes.withUnsafeBytes { raw in
            while sent < raw.count {
                let count = send(connection, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard count > 0 else { return }
                sent += count
            }
        }
    }
}
