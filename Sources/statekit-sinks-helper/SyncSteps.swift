import Foundation
import StateKit
import StateKitHTTP

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The value the local-first sync tests edit (see LocalFirstSyncTests), encoded as
/// `{"color":"…"}` here and in the test process alike.
struct Paint: Codable, Sendable {
    var color: String
}

/// Where a `sync-kill-at` child stops to be killed, in the order a change goes through.
enum SyncStep: String {
    /// `teal` is synced: the value saved, then the clean sync record.
    case baseSaved = "base-saved"
    /// The record marking `orange` unsent is saved, and the process dies before `orange` is:
    /// the ledger stores a local change's mark before its value.
    case markSaved = "mark-saved"
    /// `orange` is saved and its record says unsent; nothing was sent.
    case changeSaved = "change-saved"
    /// The `PUT` of `orange` reached the server; the sink never hears the answer.
    case requestSent = "request-sent"
    /// The sink has the answer to the `PUT` of `orange` and is reading the new `ETag` back (a
    /// server that sends none with a `PUT`, Apache); the record is not saved yet.
    case answerReceived = "answer-received"
    /// The server took `orange`, and the record of that agreement is saved after the value.
    case agreementSaved = "agreement-saved"
    /// The `PUT` of `orange` reached the server, its answer never heard, and meanwhile the user
    /// wrote `green`, which is saved.
    case newerWriteSaved = "newer-write-saved"
}

/// The network the helper's sink meets: online, offline (every request fails before it is
/// sent), or stopping for good at a step of a write.
final class SyncNetwork: @unchecked Sendable {
    struct Offline: Error {}

    private let held = DispatchSemaphore(value: 0)
    private let authorization: String?
    private let lock = NSLock()
    private var isOffline = false
    private var holdsAt: SyncStep?
    private var hasSentAPut = false

    /// `authorization`: the `Authorization` field every request needs (moto's), or `-`.
    init(authorization: String) {
        self.authorization = authorization == "-" ? nil : authorization
    }

    func goOffline() {
        lock.withLock { isOffline = true }
    }

    /// From now on, the first request at `step` stops there for good.
    func hold(at step: SyncStep) {
        lock.withLock { holdsAt = step }
    }

    /// Waits until a request stopped at the step given to ``hold(at:)``.
    func waitUntilHeld() {
        held.wait()
    }

    /// The sink's `prepare`.
    func prepare(_ request: inout URLRequest) async throws {
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let isPut = request.httpMethod == "PUT"
        let (isOffline, holdsAt, afterPut) = lock.withLock {
            defer { hasSentAPut = hasSentAPut || isPut }
            return (self.isOffline, self.holdsAt, hasSentAPut)
        }
        if isOffline { throw Offline() }
        switch holdsAt {
        case .requestSent? where isPut, .newerWriteSaved? where isPut:
            // The request goes out (sent here, as the sink would) and its answer is never heard.
            _ = try await URLSession.shared.data(for: request)
        case .answerReceived? where afterPut && !isPut:
            break
        default:
            return
        }
        held.signal()
        waitToBeKilled()
    }
}

/// A persisted `Paint` container in `directory` (through `storage` when given) synced to `url`
/// through `network`, behind a durable outbox at `outbox` when given. The sink pauses after three
/// quick failures.
func syncedPaint(
    directory: String, key: String, url: String, network: SyncNetwork, outbox: String?,
    storage: (any StateStorage)? = nil
) -> SyncedState<Paint> {
    var policy = SinkPolicy.latestValue
    policy.retry = RetryPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(10), maximumAttempts: 3)
    policy.afterRepeatedFailures = .pauseAndKeep(retryEvery: .seconds(3_600))
    let sink = HTTPSyncSink<Paint>(endpoint: URL(string: url)!, timeout: .seconds(10), policy: policy) {
        try await network.prepare(&$0)
    }
    let storage = storage ?? FileStateStorage.file(URL(fileURLWithPath: directory))
    guard let outbox else { return SyncedState(Paint(color: "none"), key: key, storage: storage, sinks: [sink]) }
    let outboxed = DurableOutbox(fileURL: URL(fileURLWithPath: outbox), wrapping: sink)
    return SyncedState(Paint(color: "none"), key: key, storage: storage, sinks: [outboxed])
}

/// Writes `teal` and syncs it; exits when the server did not take it.
func syncTeal(_ state: SyncedState<Paint>) async {
    state.modify(Paint(color: "teal"))
    await state.flush()
    guard state.statistics[0].sent == 1 else {
        FileHandle.standardOutput.write(Data("teal was not synced: \(state.statistics[0])\n".utf8))
        exit(1)
    }
}

/// Syncs `teal`, goes offline, writes `orange` and saves it, then prints "edited <version>" and
/// waits to be killed.
func editOffline(_ state: SyncedState<Paint>, network: SyncNetwork) async -> Never {
    await syncTeal(state)
    network.goOffline()
    state.modify(Paint(color: "orange"))
    await state.flush()  // the value is saved; the sink pauses after failing to send it
    FileHandle.standardOutput.write(Data("edited \(state.version)\n".utf8))
    waitToBeKilled()
}

/// Syncs `teal`, then stops at `step` of writing `orange`, prints "at <step>" and waits to be killed.
func stop(
    at step: SyncStep, _ state: SyncedState<Paint>, key: String, directory: String, network: SyncNetwork,
    storage: DyingStorage
) async -> Never {
    switch step {
    case .baseSaved:
        await syncTeal(state)
    case .agreementSaved:
        await syncTeal(state)
        state.modify(Paint(color: "orange"))
        await state.flush()
    case .markSaved:
        await syncTeal(state)
        storage.dieAfterTheNextUnsentMark()
        state.modify(Paint(color: "orange"))
        waitToBeKilled()
    case .changeSaved:
        await syncTeal(state)
        network.goOffline()
        state.modify(Paint(color: "orange"))
        await state.flush()
    case .requestSent, .answerReceived:
        await syncTeal(state)
        network.hold(at: step)
        state.modify(Paint(color: "orange"))
        network.waitUntilHeld()
        // The value is saved before the kill, as it is once the save queue ran.
        PersistedState(Paint(color: "none"), key: key, storage: FileStateStorage.file(URL(fileURLWithPath: directory)))
            .flush()
    case .newerWriteSaved:
        await syncTeal(state)
        network.hold(at: step)
        state.modify(Paint(color: "orange"))
        network.waitUntilHeld()
        state.modify(Paint(color: "green"))
        PersistedState(Paint(color: "none"), key: key, storage: FileStateStorage.file(URL(fileURLWithPath: directory)))
            .flush()
    }
    FileHandle.standardOutput.write(Data("at \(step.rawValue)\n".utf8))
    waitToBeKilled()
}

/// File storage that, once told, kills its own process with SIGKILL right after it saves a sync
/// record marking a change unsent, before anything else is saved (printing "at mark-saved" first).
final class DyingStorage: StateStorage, @unchecked Sendable {
    private let base: FileStateStorage
    private let lock = NSLock()
    private var isArmed = false

    init(directory: String) {
        base = FileStateStorage.file(URL(fileURLWithPath: directory))
    }

    var location: String { base.location }

    func dieAfterTheNextUnsentMark() {
        lock.withLock { isArmed = true }
    }

    func load(forKey key: String) throws -> Data? {
        try base.load(forKey: key)
    }

    func save(_ data: Data, forKey key: String) throws {
        try base.save(data, forKey: key)
        let isMark =
            key.hasSuffix(".sync-record") && String(decoding: data, as: UTF8.self).contains("\"hasUnsentChanges\":true")
        guard isMark, lock.withLock({ isArmed }) else { return }
        FileHandle.standardOutput.write(Data("at \(SyncStep.markSaved.rawValue)\n".utf8))
        kill(getpid(), SIGKILL)
    }

    func remove(forKey key: String) throws {
        try base.remove(forKey: key)
    }
}
