import Foundation

/// The parts of an HTTP/1.1 request head the inspector reads: method, path, query and headers.
struct HTTPRequest {
    let method: String
    let path: String
    let query: [String: String]
    /// Header names lowercased.
    let headers: [String: String]

    /// Parses a request head; `nil` when it is not one.
    init?(head: [UInt8]) {
        guard let text = String(bytes: head, encoding: .utf8) else { return nil }
        var lines = text.components(separatedBy: "\r\n")
        let parts = lines.removeFirst().split(separator: " ")
        guard parts.count == 3, parts[2].hasPrefix("HTTP/1."), let components = URLComponents(string: String(parts[1]))
        else { return nil }
        method = String(parts[0])
        path = components.path
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        self.query = query
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        self.headers = headers
    }

    /// The token the request carries: in the `token` query item or the `X-Inspector-Token` header.
    var token: String? {
        query["token"] ?? headers["x-inspector-token"]
    }
}

/// A complete HTTP/1.1 response, closing the connection after it.
struct HTTPResponse {
    let status: Int
    let contentType: String
    let body: Data
    var extraHeaders: [String] = []

    static func text(_ status: Int, _ message: String) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "text/plain; charset=utf-8", body: Data((message + "\n").utf8))
    }

    static func json(_ body: Data) -> HTTPResponse {
        HTTPResponse(status: 200, contentType: "application/json", body: body)
    }

    /// The head and body, ready to write.
    var bytes: Data {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        head += "Content-Type: \(contentType)\r\nContent-Length: \(body.count)\r\n"
        head += "Cache-Control: no-store\r\nConnection: close\r\n"
        // The page loads nothing from elsewhere and must not be framed by another site.
        head += "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
        head += "style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'\r\n"
        for header in extraHeaders { head += header + "\r\n" }
        return Data((head + "\r\n").utf8) + body
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        default: "Error"
        }
    }
}
