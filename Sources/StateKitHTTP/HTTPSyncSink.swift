import Foundation
import StateKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A remote-sync sink: sends a container's latest value as JSON to an HTTP endpoint.
///
/// Remote sync needs the newest value, not every step, so pending changes are coalesced to the
/// newest (``StateKit/SinkPolicy/latestValue``) and each request carries one value. Each request
/// says which change it is, so the server can keep itself consistent:
/// - the body is the value, JSON-encoded;
/// - `State-Version` is the change's ``StateKit/StateChange/version``: a server that already has
///   a newer version can refuse the stale write with 409 or 412, as with `If-Match`;
/// - `Idempotency-Key` is the change's ``StateKit/StateChange/idempotencyKey``, so a retried
///   request the server already applied can be recognised and dropped;
/// - `State-Key` is the container's key.
///
/// Answers: 2xx is success. 409 and 412 go to the conflict handler (without one, the change is
/// reported and dropped). 429, 5xx and network errors are retried with backoff, waiting at least
/// what a `Retry-After` header asks. Any other status is reported and dropped: retrying cannot help.
///
/// ```swift
/// let profile = SyncedState(Profile(), key: "profile") {
///     HTTPSyncSink(endpoint: URL(string: "https://api.example.com/profile")!) { conflict in
///         await refetchProfile()
///     }
/// }
/// ```
///
/// - Note: All operations on `HTTPSyncSink` are thread-safe.
public struct HTTPSyncSink<Value: Sendable & Encodable>: StateSink {
    /// How the sink is fed; ``StateKit/SinkPolicy/latestValue`` unless given.
    public let policy: SinkPolicy
    /// Where the values are sent.
    public let endpoint: URL
    /// The request method; `PUT` unless given.
    public let method: String
    /// Extra header fields sent with every request, such as `Authorization`.
    public let headers: [String: String]
    /// How long a request may take before it fails (and is retried).
    public let timeout: Duration
    private let session: URLSession
    private let onConflict: (@Sendable (HTTPSyncConflict<Value>) async -> Void)?

    /// Creates a sink sending each latest value to `endpoint`.
    ///
    /// - Parameters:
    ///   - endpoint: The URL of the resource that mirrors the container.
    ///   - method: The request method; default `PUT`.
    ///   - headers: Extra header fields for every request.
    ///   - timeout: How long a request may take; default 30 seconds.
    ///   - policy: Batching, buffering and retries; default ``StateKit/SinkPolicy/latestValue``.
    ///   - session: The session to send with; default an ephemeral session of the sink's own.
    ///   - onConflict: Told when the server refuses a change as stale (409 or 412). The change then
    ///     counts as handled. Without a handler, it is reported and dropped.
    public init(
        endpoint: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        timeout: Duration = .seconds(30),
        policy: SinkPolicy = .latestValue,
        session: URLSession = URLSession(configuration: .ephemeral),
        onConflict: (@Sendable (HTTPSyncConflict<Value>) async -> Void)? = nil
    ) {
        self.endpoint = endpoint
        self.method = method
        self.headers = headers
        self.timeout = timeout
        self.policy = policy
        self.session = session
        self.onConflict = onConflict
    }

    /// Sends the newest change of `changes` (older ones are superseded by it).
    ///
    /// - Throws: ``HTTPSyncError`` for an answer that is not a success or a handled conflict;
    ///   `URLError` for network failures (retried).
    public func send(_ changes: [StateChange<Value>]) async throws {
        guard let change = changes.last else { return }
        let (seconds, attoseconds) = timeout.components
        var request = URLRequest(url: endpoint, timeoutInterval: Double(seconds) + Double(attoseconds) / 1e18)
        request.httpMethod = method
        for (field, value) in headers { request.setValue(value, forHTTPHeaderField: field) }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(String(change.version), forHTTPHeaderField: "State-Version")
        request.setValue(change.idempotencyKey, forHTTPHeaderField: "Idempotency-Key")
        request.setValue(change.key, forHTTPHeaderField: "State-Key")
        request.httpBody = try JSONEncoder().encode(change.newValue)
        let (body, response) = try await session.data(for: request)
        guard let response = response as? HTTPURLResponse else {
            throw URLError(.badServerResponse)
        }
        let status = response.statusCode
        switch status {
        case 200..<300:
            return
        case 409, 412:
            guard let onConflict else {
                throw HTTPSyncError(statusCode: status, body: body, retryAfter: nil, isRetryable: false)
            }
            await onConflict(HTTPSyncConflict(change: change, statusCode: status, body: body))
        case 429, 500..<600:
            let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap { Self.retryAfter(from: $0) }
            throw HTTPSyncError(statusCode: status, body: body, retryAfter: retryAfter, isRetryable: true)
        default:
            throw HTTPSyncError(statusCode: status, body: body, retryAfter: nil, isRetryable: false)
        }
    }

    /// The wait a `Retry-After` field asks for: delay-seconds or an HTTP date.
    static func retryAfter(from field: String, now: Date = Date()) -> Duration? {
        let trimmed = field.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 {
            return .seconds(seconds)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .milliseconds(max(0, Int((date.timeIntervalSince(now) * 1000).rounded(.up))))
    }
}

/// A change a server refused as stale (409 Conflict or 412 Precondition Failed).
public struct HTTPSyncConflict<Value: Sendable>: Sendable {
    /// The change that was refused.
    public let change: StateChange<Value>
    /// 409 or 412.
    public let statusCode: Int
    /// The response body, often the server's current version of the resource.
    public let body: Data
}

/// An HTTP answer that was neither a success nor a handled conflict.
public struct HTTPSyncError: StateSinkError, CustomStringConvertible {
    /// The response's status code.
    public let statusCode: Int
    /// The response body.
    public let body: Data
    /// The wait the server asked for with `Retry-After`, if any.
    public let retryAfter: Duration?
    /// Whether the request may succeed later: `true` for 429 and 5xx.
    public let isRetryable: Bool

    /// `"HTTP 503 (retryable)"`, with the body's first 200 characters.
    public var description: String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        return "HTTP \(statusCode) (\(isRetryable ? "retryable" : "not retryable"))\(text.isEmpty ? "" : ": \(text)")"
    }
}
