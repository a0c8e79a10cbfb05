import Foundation
import StateKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The protocol work of ``HTTPSyncSink``, shared by its copies: what the sink knows of the
/// server's copy (its `ETag`, the last value both sides agreed on) and the push, pull and
/// conflict rounds.
///
/// Pushes and pulls pass one at a time through `gate`; the fields below it are touched only
/// inside the gate (which orders them), the channel only under `lock`.
final class HTTPSyncEngine<Value: Sendable & Codable>: @unchecked Sendable {
    struct Configuration: Sendable {
        var endpoint: URL
        var method: String
        var headers: [String: String]
        var timeout: Duration
        var encoder: JSONEncoder
        var decoder: JSONDecoder
        var prepare: (@Sendable (inout URLRequest) async throws -> Void)?
        var conflictPolicy: SyncConflictPolicy<Value>
        var maximumConflictRounds: Int
        var loadsOnStart: Bool
        var onConflict: (@Sendable (HTTPSyncConflict<Value>) async -> Void)?
    }

    /// What the server answered to a read.
    private enum Remote {
        case unchanged
        case absent
        case value(Value, data: Data, etag: String?)
    }

    let configuration: Configuration
    private let transport: HTTPTransport
    private let gate = AsyncGate()
    private let lock = NSLock()
    private var channel: RemoteChannel<Value>?
    // Inside the gate only:
    private var etag: String?
    private var base: Value?
    private var agreedVersion: UInt64 = 0
    private var hasLoaded = false

    init(configuration: Configuration, sessionConfiguration: URLSessionConfiguration) {
        self.configuration = configuration
        let (seconds, attoseconds) = configuration.timeout.components
        transport = HTTPTransport(
            configuration: sessionConfiguration, timeout: Double(seconds) + Double(attoseconds) / 1e18)
    }

    deinit {
        transport.invalidate()
    }

    func connect(_ channel: RemoteChannel<Value>) {
        lock.withLock { self.channel = channel }
    }

    private var connected: RemoteChannel<Value>? {
        lock.withLock { channel }
    }

    /// The `ETag` the next write is conditional on; `nil` when the resource is not known to exist.
    var currentETag: String? {
        get async { try? await gate.run { etag } }
    }

    // MARK: Push

    func push(_ change: StateChange<Value>) async throws {
        try await gate.run {
            if configuration.loadsOnStart && !hasLoaded && connected != nil {
                try await pullInGate()
            }
            let current = connected?.current ?? (change.newValue, change.version)
            // A version the server already reflects: sent before, or taken from the server.
            if current.version <= agreedVersion && (connected != nil || change.version <= agreedVersion) {
                return
            }
            try await write(current.value, version: current.version, change: change)
        }
    }

    private func write(_ value: Value, version: UInt64, change: StateChange<Value>) async throws {
        var local = value
        var merged = false
        var round = 0
        while true {
            let body = try configuration.encoder.encode(local)
            var request = makeRequest(method: configuration.method)
            if let etag {
                request.setValue(etag, forHTTPHeaderField: "If-Match")
            } else {
                request.setValue("*", forHTTPHeaderField: "If-None-Match")
            }
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.setValue(String(version), forHTTPHeaderField: "State-Version")
            request.setValue(
                Self.idempotencyKeyField(change.idempotencyKey(atVersion: version)),
                forHTTPHeaderField: "Idempotency-Key")
            request.setValue(change.key, forHTTPHeaderField: "State-Key")
            request.httpBody = body
            try await configuration.prepare?(&request)
            let (answer, response) = try await transport.data(for: request)
            let status = response.statusCode
            switch status {
            case 200..<300:
                etag = try await etagAfterWrite(response, sent: body)
                base = local
                agreedVersion = max(agreedVersion, version)
                if merged { adoptMerged(local, over: value, at: version) }
                return
            case 412, 409, 404:
                if let onConflict = configuration.onConflict {
                    await onConflict(HTTPSyncConflict(change: change, statusCode: status, body: answer))
                    return
                }
                round += 1
                guard round <= configuration.maximumConflictRounds else {
                    StateDiagnostics.report(
                        StateDiagnostic(
                            kind: .syncConflictUnresolved, keys: [change.key],
                            message: "HTTPSyncSink: \(configuration.endpoint) refused version \(version) "
                                + "\(round - 1) times (last HTTP \(status)); giving the change up"))
                    throw HTTPSyncError(
                        statusCode: status, body: answer, retryAfter: nil, isRetryable: false,
                        reason: "conflict unresolved after \(round - 1) rounds")
                }
                switch try await read(conditional: false) {
                case .unchanged, .absent:
                    etag = nil  // gone: create it again
                case .value(let remote, _, let remoteETag):
                    etag = remoteETag
                    switch configuration.conflictPolicy {
                    case .serverWins:
                        base = remote
                        let applied = connected?.applyRemote(remote)
                        agreedVersion = max(agreedVersion, applied ?? version)
                        return
                    case .clientWins:
                        base = remote
                    case .merge(let merge):
                        local = merge(base, local, remote)
                        base = remote
                        merged = true
                    }
                }
            case 300..<400:
                throw HTTPSyncError(
                    statusCode: status, body: answer, retryAfter: nil, isRetryable: false,
                    reason: "redirect of a \(configuration.method) not followed (only 307 and 308 keep the body)")
            case 408, 429, 500..<600:
                let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap {
                    HTTPSyncSink<Value>.retryAfter(from: $0)
                }
                throw HTTPSyncError(statusCode: status, body: answer, retryAfter: retryAfter, isRetryable: true)
            default:
                throw HTTPSyncError(statusCode: status, body: answer, retryAfter: nil, isRetryable: false)
            }
        }
    }

    /// The `ETag` of what was just written: from the answer, or (servers such as Apache mod_dav
    /// send none with a `PUT`) read back, and trusted only if the server holds exactly the bytes
    /// sent; otherwise another writer came between, and the next write will meet the conflict.
    private func etagAfterWrite(_ response: HTTPURLResponse, sent body: Data) async throws -> String? {
        if let etag = response.value(forHTTPHeaderField: "ETag") { return etag }
        var request = makeRequest(method: "GET")
        try await configuration.prepare?(&request)
        let (data, answer) = try await transport.data(for: request)
        guard answer.statusCode == 200, data == body else { return nil }
        return answer.value(forHTTPHeaderField: "ETag")
    }

    /// Makes the container hold a merged value the server has just accepted.
    private func adoptMerged(_ merged: Value, over sent: Value, at version: UInt64) {
        guard let channel = connected else { return }
        if let applied = channel.applyRemote(merged, ifVersion: version) {
            agreedVersion = max(agreedVersion, applied)
            return
        }
        // Local changes came meanwhile: merge again, as a local change sent next.
        guard case .merge(let merge) = configuration.conflictPolicy else { return }
        channel.modify { current in current = merge(sent, current, merged) }
    }

    // MARK: Pull

    func pull() async throws {
        try await gate.run { try await pullInGate() }
    }

    private func pullInGate() async throws {
        hasLoaded = true
        switch try await read(conditional: true) {
        case .unchanged:
            return
        case .absent:
            etag = nil
        case .value(let remote, let data, let remoteETag):
            take(remote, data: data, etag: remoteETag)
        }
    }

    private func take(_ remote: Value, data: Data, etag remoteETag: String?) {
        etag = remoteETag
        guard let channel = connected else {
            base = remote
            return
        }
        while let current = channel.current {
            let isUnsent = current.version > agreedVersion
            if (try? configuration.encoder.encode(current.value)) == data {
                base = remote
                if !isUnsent { agreedVersion = current.version }
                return
            }
            if !isUnsent || configuration.onConflict != nil {
                guard let applied = channel.applyRemote(remote, ifVersion: current.version) else { continue }
                base = remote
                agreedVersion = applied
                return
            }
            switch configuration.conflictPolicy {
            case .serverWins:
                base = remote
                agreedVersion = channel.applyRemote(remote) ?? agreedVersion
            case .clientWins:
                base = remote
            case .merge(let merge):
                let agreed = base
                base = remote
                channel.modify { local in local = merge(agreed, local, remote) }
            }
            return
        }
    }

    /// Reads the resource; conditional on the known `ETag` when `conditional`.
    private func read(conditional: Bool) async throws -> Remote {
        var request = makeRequest(method: "GET")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        if conditional, let etag {
            request.setValue(etag, forHTTPHeaderField: "If-None-Match")
        }
        try await configuration.prepare?(&request)
        let (data, response) = try await transport.data(for: request)
        switch response.statusCode {
        case 304:
            return .unchanged
        case 404, 410:
            return .absent
        case 200..<300:
            guard let value = try? configuration.decoder.decode(Value.self, from: data) else {
                throw HTTPSyncError(
                    statusCode: response.statusCode, body: data, retryAfter: nil, isRetryable: false,
                    reason: "the value at \(configuration.endpoint) cannot be decoded as \(Value.self)")
            }
            return .value(value, data: data, etag: response.value(forHTTPHeaderField: "ETag"))
        case 408, 429, 500..<600:
            let retryAfter = response.value(forHTTPHeaderField: "Retry-After").flatMap {
                HTTPSyncSink<Value>.retryAfter(from: $0)
            }
            throw HTTPSyncError(statusCode: response.statusCode, body: data, retryAfter: retryAfter, isRetryable: true)
        default:
            throw HTTPSyncError(statusCode: response.statusCode, body: data, retryAfter: nil, isRetryable: false)
        }
    }

    private func makeRequest(method: String) -> URLRequest {
        var request = URLRequest(url: configuration.endpoint)
        request.httpMethod = method
        request.cachePolicy = .reloadIgnoringLocalCacheData
        for (field, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: field) }
        return request
    }

    /// `key` as a Structured Field String (RFC 8941), the form draft-ietf-httpapi-idempotency-key-header
    /// gives `Idempotency-Key`: quoted, `\` and `"` escaped, bytes outside printable ASCII (and `%`)
    /// percent-encoded.
    static func idempotencyKeyField(_ key: String) -> String {
        var field = "\""
        for byte in key.utf8 {
            switch byte {
            case UInt8(ascii: "\\"), UInt8(ascii: "\""):
                field += "\\" + String(UnicodeScalar(byte))
            case UInt8(ascii: "%"), 0..<0x20, 0x7F...:
                field += String(format: "%%%02X", byte)
            default:
                field += String(UnicodeScalar(byte))
            }
        }
        return field + "\""
    }
}
