import Foundation
import StateKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The protocol work of ``HTTPSyncSink``, shared by its copies: what the sink knows of the
/// server's copy (its `ETag`, the last value both sides agreed on) and the push, pull and
/// conflict rounds.
///
/// Connected to a container, the engine starts from the container's sync record (the `ETag` and
/// base remembered from an earlier launch) and records each agreement in it, so that after a
/// relaunch local changes are sent conditionally on what the server held when they were made, and
/// only a server that changed since is a conflict. A record that changes under the engine (a
/// process that takes over sending a key shared across processes adopts the agreement the
/// previous sender recorded) is taken in before the next push or pull.
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
        /// Bytes that do not decode as `Value` (a write torn by a client killed in the middle of
        /// it, or another app's format), and why.
        case unreadable(etag: String?, error: HTTPSyncError)
    }

    let configuration: Configuration
    private let transport: HTTPTransport
    private let gate = AsyncGate()
    private let lock = NSLock()
    private var channel: RemoteChannel<Value>?
    /// Where the sink's record is kept while no container connected it (a sink used on its own):
    /// a ledger of its own. Connected, the container's ledger keeps it; the engine keeps no copy.
    private let unattached: RemoteChannel<Value>
    // Inside the gate only:
    /// The record's note of a value being sent that the engine dealt with: its own, or one a
    /// previous launch (or sender) left, checked against the server once.
    private var knownSending: Data?
    private var hasLoaded = false

    init(configuration: Configuration, sessionConfiguration: URLSessionConfiguration) {
        self.configuration = configuration
        unattached = RemoteChannel(unattachedKey: configuration.endpoint.absoluteString, recordName: "HTTPSyncSink")
        let (seconds, attoseconds) = configuration.timeout.components
        transport = HTTPTransport(
            configuration: sessionConfiguration, timeout: Double(seconds) + Double(attoseconds) / 1e18)
    }

    deinit {
        transport.invalidate()
    }

    /// Takes the channel and what its sync record remembers; with `loadsOnStart`, loads the
    /// server's value now, conditionally on the remembered `ETag`, through the channel, so that
    /// the container's flushes wait for it and its status learns the answer. A load that fails is
    /// made again before the first push.
    func connect(_ channel: RemoteChannel<Value>) {
        lock.withLock { self.channel = channel }
        guard configuration.loadsOnStart else { return }
        channel.loadAtStart {
            try await self.gate.run {
                try await self.checkTakenOverSend()
                if !self.hasLoaded { try await self.pullInGate() }
            }
        }
    }

    private var connected: RemoteChannel<Value>? {
        lock.withLock { channel }
    }

    /// Where the sink's record is kept: the container's channel, or without one the sink's own.
    private var books: RemoteChannel<Value> {
        connected ?? unattached
    }

    /// What the server last agreed on or was seen to hold: the container's sync record (another
    /// process's agreements included, once this one took over sending), or the sink's own
    /// without a container. Inside the gate.
    private var book: SyncRecord {
        books.syncRecord
    }

    /// The `ETag` the next write is conditional on.
    private var etag: String? {
        book.validator
    }

    /// The base as the server sent it, to tell a server that changed from one that did not.
    private var baseData: Data? {
        book.base
    }

    /// The base of a three-way merge.
    private var base: Value? {
        baseData.flatMap { try? configuration.decoder.decode(Value.self, from: $0) }
    }

    /// The server holds `data` under `validator` while local changes stay unsent; see
    /// ``RemoteChannel/recordBase(_:validator:from:)``.
    private func based(_ data: Data?, validator: String?, from version: UInt64?) {
        books.recordBase(data, validator: validator, from: version)
    }

    /// The server's validator moved (or the resource is gone), its value as the base holds it.
    private func validatorMoved(to validator: String?) {
        based(baseData, validator: validator, from: 0)
    }

    /// The `ETag` the next write is conditional on; `nil` when the resource is not known to exist,
    /// or when the task is cancelled while it waits for the gate.
    var currentETag: String? {
        get async { try? await gate.run { etag } }
    }

    // MARK: Push

    func push(_ change: StateChange<Value>) async throws {
        try await gate.run {
            guard let channel = connected else {
                // No container: each change is its own value; one the server reflects is not sent.
                guard change.version > unattached.agreedVersion else { return }
                return try await write(change.newValue, version: change.version, change: change)
            }
            // First: the previous sender's own write, cut short, is no value to load.
            try await checkTakenOverSend()
            if configuration.loadsOnStart && !hasLoaded { try await pullInGate() }
            // The newest value, unless the server already holds it (sent, or taken from it).
            if channel.syncRecord.hasUnsentChanges {
                if let current = channel.current {
                    // The change's own value when the container holds none newer: what an outbox
                    // replays into a container that does not keep its value.
                    let value = change.version >= current.version ? change.newValue : current.value
                    try await write(value, version: current.version, change: change)
                } else {
                    // The container is gone (released while this change waited for a retry or a
                    // drain): the change is the newest value there is. Returning without sending
                    // it would count it as delivered, and an outbox would drop it from its log.
                    try await write(change.newValue, version: change.version, change: change)
                }
            }
            // A change the server's value replaced (at launch, on a pull, or just now) was not
            // delivered: not counted as sent.
            if channel.isDiscarded(change.version) {
                throw SupersededByRemoteValue(
                    reason: ".serverWins at \(configuration.endpoint): the server's value, changed since the "
                        + "last sync, replaced it")
            }
        }
    }

    /// A record that says a value was being sent (the previous launch, or across processes the
    /// previous sender, stopped while sending): when the server holds what it was sending, that is
    /// the base now, under the server's `ETag`, so the next write is not refused for a validator
    /// that only this key's own writes moved, and no conflict is made of the cell's own write.
    /// When it holds the first bytes of it and no more (a server that keeps what it got of a PUT
    /// whose client was killed), those bytes are the key's own write cut short: the next write
    /// replaces them, on the base the record agreed.
    private func checkTakenOverSend() async throws {
        guard let sending = book.sending, sending != knownSending else { return }
        switch try await read(conditional: true) {
        case .value(_, let data, let remoteETag) where data == sending:
            // A read of the server's value: the load at start need not read it again.
            hasLoaded = true
            if let current = connected?.current, (try? configuration.encoder.encode(current.value)) == data {
                // The container holds just that value: agreed, nothing to send.
                recordAgreement(base: data, validator: remoteETag, atVersion: current.version)
            } else {
                // The key's own write, which every value stored since includes.
                based(data, validator: remoteETag, from: connected?.current?.version ?? 0)
            }
        case .value(_, let data, let remoteETag) where Self.isCutShort(data, of: sending):
            validatorMoved(to: remoteETag)
        case .unreadable(let remoteETag, let error) where Self.isCutShort(error.body, of: sending):
            validatorMoved(to: remoteETag)
        default:
            break
        }
        knownSending = sending
    }

    /// Whether `data` is the first bytes of `sent` and not all of them (a cut-short JSON value may
    /// still decode, `11` of `110`).
    private static func isCutShort(_ data: Data, of sent: Data) -> Bool {
        data.count < sent.count && sent.starts(with: data)
    }

    private func write(_ value: Value, version: UInt64, change: StateChange<Value>) async throws {
        var local = value
        var round = 0
        // The server's value a merge in this call was made against, with its validator: the
        // request's condition and base, kept here, not in the books, until the merge is accepted.
        // A merged request that fails is retried from the container's value, which lacks the
        // merge: on the books' older validator, it meets the conflict again and merges again.
        var mergedOver: (base: Value, data: Data, validator: String?)?
        while true {
            let body = try configuration.encoder.encode(local)
            knownSending = body
            await connected?.recordSending(body)
            var request = makeRequest(method: configuration.method)
            if let condition = mergedOver.map(\.validator) ?? etag {
                request.setValue(condition, forHTTPHeaderField: "If-Match")
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
                agree(local, data: body, etag: try await etagAfterWrite(response, sent: body), version: version)
                if mergedOver != nil { adoptMerged(local, data: body, over: value, at: version) }
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
                    validatorMoved(to: nil)  // gone: create it again
                    mergedOver = mergedOver.map { ($0.base, $0.data, nil) }
                case .unreadable(let remoteETag, _):
                    // Nothing there to keep or merge (a write cut short, see pullInGate()): the
                    // value being sent goes over it.
                    reportOverwritingUnreadable()
                    validatorMoved(to: remoteETag)
                    mergedOver = mergedOver.map { ($0.base, $0.data, remoteETag) }
                case .value(let remote, let data, let remoteETag):
                    if data == body {
                        // The server holds what is being sent: an earlier attempt went through
                        // (its answer lost, or the app killed before it recorded it).
                        agree(local, data: body, etag: remoteETag, version: version)
                        if mergedOver != nil { adoptMerged(local, data: body, over: value, at: version) }
                        return
                    }
                    // Only the validator moved since the base: not a conflict, write again.
                    if let merge = mergedOver, data == merge.data {
                        mergedOver = (merge.base, data, remoteETag)
                        continue
                    }
                    if mergedOver == nil, let baseData, data == baseData {
                        validatorMoved(to: remoteETag)
                        continue
                    }
                    switch configuration.conflictPolicy {
                    case .serverWins:
                        let applied = connected?.applyRemote(remote)
                        reportDiscarded(local, through: applied.map { $0 - 1 } ?? version)
                        recordAgreement(base: data, validator: remoteETag, atVersion: applied ?? version)
                        return
                    case .clientWins:
                        // The local value wins over what the server holds now.
                        based(data, validator: remoteETag, from: version)
                    case .merge(let merge):
                        local = merge(mergedOver?.base ?? base, local, remote)
                        mergedOver = (remote, data, remoteETag)
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

    /// The server took `value` (its bytes `data`) at the container's `version`, under `etag`.
    private func agree(_ value: Value, data: Data, etag newETag: String?, version: UInt64) {
        recordAgreement(base: data, validator: newETag, atVersion: version)
    }

    /// Records an agreement in the sink's record (the container's, or its own).
    private func recordAgreement(base: Data?, validator: String?, atVersion version: UInt64) {
        books.recordAgreement(base: base, validator: validator, atVersion: version)
    }

    /// Reports the local changes a ``SyncConflictPolicy/serverWins`` conflict throws away.
    private func reportDiscarded(_ local: Value, through version: UInt64) {
        books.recordDiscarded(through: version)
        let described = String(describing: local)
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .localChangesDiscarded, keys: [connected?.key ?? configuration.endpoint.absoluteString],
                message: "HTTPSyncSink: \(configuration.endpoint) changed since the last sync; .serverWins "
                    + "discarded the local value that was not sent: "
                    + (described.count > 200 ? described.prefix(200) + "…" : described)))
    }

    /// Makes the container hold a merged value the server has just accepted.
    private func adoptMerged(_ merged: Value, data: Data, over sent: Value, at version: UInt64) {
        guard let channel = connected else { return }
        if let applied = channel.applyRemote(merged, ifVersion: version) {
            recordAgreement(base: data, validator: etag, atVersion: applied)
            return
        }
        // Local changes came meanwhile: merge again, as a local change sent next.
        guard case .merge(let merge) = configuration.conflictPolicy else { return }
        channel.modify { current in current = merge(sent, current, merged) }
    }

    // MARK: Pull

    func pull() async throws {
        try await gate.run {
            try await checkTakenOverSend()
            try await pullInGate()
        }
    }

    private func pullInGate() async throws {
        let remote = try await read(conditional: true)
        hasLoaded = true
        switch remote {
        case .unchanged:
            return
        case .absent:
            validatorMoved(to: nil)
        case .value(let remote, let data, let remoteETag):
            take(remote, data: data, etag: remoteETag)
        case .unreadable(let remoteETag, let error):
            // With an unsent local value, bytes that do not decode are most likely this cell's
            // own write cut short (killed while its body was in flight, on a server that keeps
            // what arrived): there is nothing to keep or merge, whatever the policy, and the push
            // that follows writes the local value over them, on their ETag. Otherwise the
            // container has nothing of its own to send, and it stays an error.
            guard connected?.syncRecord.hasUnsentChanges == true else { throw error }
            reportOverwritingUnreadable()
            validatorMoved(to: remoteETag)
        }
    }

    /// Reports that the unsent local value is written over what the server holds, which does not
    /// decode.
    private func reportOverwritingUnreadable() {
        StateDiagnostics.report(
            StateDiagnostic(
                kind: .decodingFailed, keys: [connected?.key ?? configuration.endpoint.absoluteString],
                message: "HTTPSyncSink: the value at \(configuration.endpoint) cannot be decoded as \(Value.self) "
                    + "(a write cut short?); the unsent local value is written over it"))
    }

    /// Takes a value read from the server: into the container when it holds no unsent local
    /// changes; through the conflict policy when it does and the server changed since the base.
    private func take(_ remote: Value, data: Data, etag remoteETag: String?) {
        guard let channel = connected else {
            // No container to take it: it is what the server holds, as of no change.
            return recordAgreement(base: data, validator: remoteETag, atVersion: 0)
        }
        while let current = channel.current {
            let localData = try? configuration.encoder.encode(current.value)
            if localData == data {
                recordAgreement(base: data, validator: remoteETag, atVersion: current.version)
                return
            }
            // A value marked unsent that is the base itself holds no edit: a kill came after the
            // mark was stored and before the edit's value was (the value went out meanwhile, or
            // not at all). Three-way, the server's value is the answer, and nothing is discarded.
            let isLocalEdit = channel.syncRecord.hasUnsentChanges && (baseData == nil || localData != baseData)
            if !isLocalEdit || configuration.onConflict != nil {
                guard let applied = channel.applyRemote(remote, ifVersion: current.version) else { continue }
                recordAgreement(base: data, validator: remoteETag, atVersion: applied)
                return
            }
            // Unsent local changes over a server that did not change since the base: the next
            // push sends them, conditionally on the `ETag` just read.
            if let baseData, data == baseData { return validatorMoved(to: remoteETag) }
            switch configuration.conflictPolicy {
            case .serverWins:
                let applied = channel.applyRemote(remote)
                reportDiscarded(current.value, through: applied.map { $0 - 1 } ?? current.version)
                recordAgreement(base: data, validator: remoteETag, atVersion: applied ?? current.version)
            case .clientWins:
                based(data, validator: remoteETag, from: current.version)
            case .merge(let merge):
                let agreed = base
                let merged = channel.modify { local in local = merge(agreed, local, remote) }
                based(data, validator: remoteETag, from: merged)
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
                return .unreadable(
                    etag: response.value(forHTTPHeaderField: "ETag"),
                    error: HTTPSyncError(
                        statusCode: response.statusCode, body: data, retryAfter: nil, isRetryable: false,
                        reason: "the value at \(configuration.endpoint) cannot be decoded as \(Value.self)"))
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
