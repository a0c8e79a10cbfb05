import Foundation
import StateKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A remote-sync sink over standard HTTP: keeps a container and a JSON resource on a server
/// in step, both ways, with conditional requests.
///
/// Pushing: remote sync needs the newest value, not every step, so pending changes are coalesced
/// (``StateKit/SinkPolicy/latestValue``) and each write carries the container's newest value:
/// - the body is the value, JSON-encoded with the `encoder` given to ``init(endpoint:method:headers:timeout:encoder:decoder:conflictPolicy:maximumConflictRounds:loadsOnStart:policy:configuration:prepare:)`` (sorted keys unless given);
/// - `If-Match: <ETag>` with the `ETag` of the last successful answer (remembered across launches
///   in the container's ``StateKit/SyncRecord`` when it persists), or `If-None-Match: *` while the
///   resource is not known to exist, so a write never overwrites what another client wrote;
/// - `Idempotency-Key` is the change's ``StateKit/StateChange/idempotencyKey`` at the version sent
///   (`"profile#7"` behind a durable outbox, `"profile#1f0e9a3c5b7d2e48:7"` otherwise; a Structured
///   Field String as draft-ietf-httpapi-idempotency-key-header says); `State-Version` and
///   `State-Key` add the version and the container's key.
///
/// Conflicts: 412, and 409 or 404 answered to a (always conditional) write, mean the server's
/// copy may have changed. The sink reads it: a server holding exactly the bytes being sent (an
/// earlier attempt went through) is a success, and one whose content is still the last agreed
/// value (only its `ETag` moved) is written again. Only a server that changed since is a
/// conflict, resolved by ``conflictPolicy``: ``SyncConflictPolicy/serverWins`` (reporting the
/// unsent local value it discards as ``StateKit/StateDiagnostic/Kind/localChangesDiscarded``),
/// ``SyncConflictPolicy/clientWins`` or a three-way ``SyncConflictPolicy/merge(_:)`` with the true
/// base. After ``maximumConflictRounds`` refused rounds the change is given up and reported
/// (``StateKit/StateDiagnostic/Kind/syncConflictUnresolved``).
///
/// Pulling: the container loads the server's value as soon as it starts, without any write
/// (unless `loadsOnStart` is `false`), and on ``StateKit/SyncedState/refresh()``, with
/// `If-None-Match` on the remembered `ETag` so an unchanged resource costs a 304. A remote value
/// enters the container as a ``StateKit/ChangeOrigin/remote`` change that is not sent back nor
/// counted as sent; local changes not yet sent go through the conflict policy, never overwritten
/// silently.
///
/// Across launches: a persisted container's record says whether local changes are unsent; at the
/// next launch they are sent with `If-Match` on the `ETag` they were made against. See the
/// Syncing article's launch sequence.
///
/// Everything else: 2xx is success; 408, 429 and 5xx are retried with backoff, waiting at least a
/// `Retry-After`; a redirect of a write is followed only for 307 and 308 (same origin, same method
/// and body), any other is a failure, never counted as sent; every request fails after ``timeout``.
///
/// ```swift
/// let profile = SyncedState(Profile(), key: "profile") {
///     HTTPSyncSink(endpoint: URL(string: "https://api.example.com/profile")!, conflictPolicy: .serverWins) {
///         request in request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
///     }
/// }
/// ```
///
/// - Note: All operations on `HTTPSyncSink` are thread-safe; copies share what they know of the
///   server, and one sink serves one container, or every persisted container of one key in one
///   storage that writes to its endpoint (``destination``).
public struct HTTPSyncSink<Value: Sendable & Codable>: RemoteSyncSink {
    /// How the sink is fed; ``StateKit/SinkPolicy/latestValue`` unless given.
    public let policy: SinkPolicy
    private let engine: HTTPSyncEngine<Value>

    /// Where the values are sent.
    public var endpoint: URL { engine.configuration.endpoint }
    /// The write method; `PUT` unless given.
    public var method: String { engine.configuration.method }
    /// Extra header fields sent with every request, such as `Authorization`.
    public var headers: [String: String] { engine.configuration.headers }
    /// How long a request may take, from sending to the last byte of the answer, before it fails
    /// (and is retried).
    public var timeout: Duration { engine.configuration.timeout }
    /// What happens when the server's copy changed under a write or a pull.
    public var conflictPolicy: SyncConflictPolicy<Value> { engine.configuration.conflictPolicy }
    /// How many refused writes in a row one change may meet before it is given up.
    public var maximumConflictRounds: Int { engine.configuration.maximumConflictRounds }

    /// Creates a sink keeping `endpoint` and its container in step.
    ///
    /// - Parameters:
    ///   - endpoint: The URL of the resource that mirrors the container.
    ///   - method: The write method; default `PUT`.
    ///   - headers: Extra header fields for every request.
    ///   - timeout: How long a request may take; default 30 seconds.
    ///   - encoder: Encodes request bodies; default a `JSONEncoder` with `.sortedKeys`, so equal
    ///     values make equal bytes. A given encoder is used as it is.
    ///   - decoder: Decodes the server's value; default a `JSONDecoder`.
    ///   - conflictPolicy: How conflicts are resolved; default ``SyncConflictPolicy/serverWins``.
    ///   - maximumConflictRounds: At least 1; default 3.
    ///   - loadsOnStart: Whether the container loads the server's value as soon as it starts, and
    ///     before its first write if that load failed; default `true`.
    ///   - policy: Batching, buffering and retries; default ``StateKit/SinkPolicy/latestValue``.
    ///   - configuration: The URL session configuration; default `.ephemeral`. The sink sets its
    ///     timeouts and handles redirects itself.
    ///   - prepare: Called with every request just before it is sent, to add credentials, sign it
    ///     or log it; throw to fail the attempt (it is retried).
    public init(
        endpoint: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        timeout: Duration = .seconds(30),
        encoder: JSONEncoder = HTTPSyncSink.sortedKeysEncoder(),
        decoder: JSONDecoder = JSONDecoder(),
        conflictPolicy: SyncConflictPolicy<Value> = .serverWins,
        maximumConflictRounds: Int = 3,
        loadsOnStart: Bool = true,
        policy: SinkPolicy = .latestValue,
        configuration: URLSessionConfiguration = .ephemeral,
        prepare: (@Sendable (inout URLRequest) async throws -> Void)? = nil
    ) {
        precondition(maximumConflictRounds >= 1, "HTTPSyncSink.maximumConflictRounds must be at least 1")
        self.policy = policy
        engine = HTTPSyncEngine(
            configuration: .init(
                endpoint: endpoint, method: method, headers: headers, timeout: timeout, encoder: encoder,
                decoder: decoder, prepare: prepare, conflictPolicy: conflictPolicy,
                maximumConflictRounds: maximumConflictRounds, loadsOnStart: loadsOnStart, onConflict: nil),
            sessionConfiguration: configuration)
    }

    /// Creates a sink that hands 409 and 412 answers to `onConflict` instead of resolving them.
    @available(
        *, deprecated,
        message:
            "use init(endpoint:method:headers:timeout:encoder:decoder:conflictPolicy:...) and a SyncConflictPolicy; the session's configuration is used, with the sink's own redirect handling"
    )
    public init(
        endpoint: URL,
        method: String = "PUT",
        headers: [String: String] = [:],
        timeout: Duration = .seconds(30),
        policy: SinkPolicy = .latestValue,
        session: URLSession,
        onConflict: (@Sendable (HTTPSyncConflict<Value>) async -> Void)? = nil
    ) {
        self.policy = policy
        engine = HTTPSyncEngine(
            configuration: .init(
                endpoint: endpoint, method: method, headers: headers, timeout: timeout,
                encoder: HTTPSyncSink.sortedKeysEncoder(), decoder: JSONDecoder(), prepare: nil,
                conflictPolicy: .serverWins, maximumConflictRounds: 3, loadsOnStart: false, onConflict: onConflict),
            sessionConfiguration: session.configuration)
    }

    /// A `JSONEncoder` writing keys in sorted order: the default ``HTTPSyncSink`` encoder.
    public static func sortedKeysEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }

    /// Writes the container's newest value (changes older than it are superseded).
    ///
    /// - Throws: ``HTTPSyncError`` for an answer that is not a success or a resolved conflict;
    ///   `URLError` for network failures and timeouts (retried); `CancellationError` when the
    ///   task is cancelled while it waits for an earlier push or pull, or during the request.
    public func send(_ changes: [StateChange<Value>]) async throws {
        guard let change = changes.last else { return }
        try await engine.push(change)
    }

    /// The endpoint's absolute URL: persisted containers of one key whose sinks write to one
    /// endpoint share one of them (see ``StateKit/RemoteSyncSink/destination``).
    public var destination: String? { endpoint.absoluteString }

    /// Takes the channel into the container; called by ``StateKit/SyncedState``.
    public func connect(_ channel: RemoteChannel<Value>) {
        engine.connect(channel)
    }

    /// Loads the server's value into the container (a 304 when it has not changed).
    ///
    /// - Throws: ``HTTPSyncError`` or `URLError` when the server cannot be read;
    ///   `CancellationError` when the task is cancelled while it waits for an earlier push or
    ///   pull, or during the request.
    public func refresh() async throws {
        try await engine.pull()
    }

    /// The `ETag` the next write is conditional on; `nil` while the resource is not known to exist.
    ///
    /// Read after the pushes and pulls already under way have finished; a task cancelled while it
    /// waits for them gets `nil`.
    public var currentETag: String? {
        get async { await engine.currentETag }
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
