import Foundation
import StateKitHTTP
import Testing

@testable import StateKit

#if canImport(Glibc)
import Glibc
#endif

/// Semantics 25, the synced half: a key persisted in storage shared across processes and synced
/// to a server is sent by one process at a time (``RemoteSenderLock``); the other processes'
/// changes reach the server through the file. Two real child processes against the real servers.
@Suite(.timeLimit(.minutes(3)), .serialized) struct RemoteSenderLockTests {
    init() { DiagnosticsRecorder.start() }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func twoProcessesSyncingOneKeyNeverSendConflictingWrites(kind: RealHTTPServer.Kind) async throws {
        try await RealHTTPServer.with(kind) { server, directory in
            let url = server.resource()
            let key = uniqueKey("counter")
            let perProcess = 150
            let arguments = [
                "sync-shared-count", directory.path, key, url.absoluteString, "\(perProcess)",
                server.headers["Authorization"] ?? "-",
            ]
            let first = try await SinksHelper.launch(arguments)
            let second = try await SinksHelper.launch(arguments)
            #expect(first.firstLine == "ready 0")
            #expect(second.firstLine == "ready 0")
            #expect(FileManager.default.createFile(atPath: directory.appending(path: "go").path, contents: nil))

            // Both count; whichever sends, the server ends at every increment of both.
            var held = 0
            let deadline = ContinuousClock.now + .seconds(60)
            while held != 2 * perProcess && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                // A read racing the children's PUTs may come back cut short (wsgidav): poll again.
                if let value = try? await server.value(Int.self, at: url) { held = value }
            }
            #expect(held == 2 * perProcess)
            await first.kill()
            await second.kill()
            let conflicts = [first, second].flatMap { child in
                child.diagnostics.split(separator: "\n").filter { $0.hasPrefix("conflict") }
            }
            #expect(conflicts.isEmpty, "conflicting writes: \(conflicts.prefix(5))")

            // A relaunch (this process) takes over sending, from the shared value.
            let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
            let sink = HTTPSyncSink<Int>(endpoint: url, timeout: .seconds(10), conflictPolicy: .serverWins) { request in
                for (field, value) in server.headers { request.setValue(value, forHTTPHeaderField: field) }
            }
            let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
            #expect(await state.flush(timeout: .seconds(60)))
            #expect(state.value == 2 * perProcess)
            state.modify { $0 += 1 }
            #expect(await state.flush(timeout: .seconds(60)))
            #expect(try await server.value(Int.self, at: url) == 2 * perProcess + 1)
        }
    }

    /// How the key's sender stops sending in ``senderHandoverSendsNoConflictingWrite(kind:handover:)``.
    enum Handover: String, CaseIterable, CustomStringConvertible {
        /// It flushes and exits.
        case exit
        /// `kill -9`, with its sends in flight.
        case kill
        /// `kill -9` as soon as the others have counted, likely before it saw their last writes:
        /// no change follows for another process to take over at.
        case killAfterTheOthersCounted
        var description: String { rawValue }
    }

    /// The sender stops while the two other processes are counting: one of them takes the sender
    /// lock and sends on from the agreement the first left, so no write of any process meets a
    /// conflict, and the server, the file and each process end at every increment.
    @Test(arguments: RealHTTPServer.Kind.allCases, Handover.allCases)
    func senderHandoverSendsNoConflictingWrite(kind: RealHTTPServer.Kind, handover: Handover) async throws {
        try await RealHTTPServer.with(kind) { server, directory in
            let url = server.resource()
            let key = uniqueKey("relay")
            let counts = ["a": 100, "b": 300, "c": 300]
            var children: [String: SinksHelper] = [:]
            for (name, count) in counts.sorted(by: { $0.key < $1.key }) {
                let child = try await SinksHelper.launch([
                    "sync-shared-relay", directory.path, key, url.absoluteString, "\(count)",
                    server.headers["Authorization"] ?? "-", name,
                ])
                #expect(child.firstLine == "ready 0")
                children[name] = child
            }
            let file = { (name: String) in directory.appending(path: name).path }
            // a counts alone and so is the sender; then b and c count, and a sends their changes.
            #expect(FileManager.default.createFile(atPath: file("go-a"), contents: nil))
            try await waitUntil("a counted") { FileManager.default.fileExists(atPath: file("counted-a")) }
            for name in ["b", "c"] {
                #expect(FileManager.default.createFile(atPath: file("go-\(name)"), contents: nil))
            }
            try await waitUntil("b and c being sent") { (try? await server.value(Int.self, at: url)) ?? 0 >= 160 }
            switch handover {
            case .exit:
                #expect(FileManager.default.createFile(atPath: file("stop-a"), contents: nil))
                #expect(await children["a"]?.exitStatus() == 0)
            case .kill:
                await children["a"]?.kill()
            case .killAfterTheOthersCounted:
                try await waitUntil("b and c counted") {
                    ["b", "c"].allSatisfy { FileManager.default.fileExists(atPath: file("counted-\($0)")) }
                }
                await children["a"]?.kill()
            }

            let total = counts.values.reduce(0, +)
            try await waitUntil("b and c counted") {
                ["b", "c"].allSatisfy { FileManager.default.fileExists(atPath: file("counted-\($0)")) }
            }
            try await waitUntil("the server at \(total)") { (try? await server.value(Int.self, at: url)) == total }
            for name in ["b", "c"] {
                #expect(FileManager.default.createFile(atPath: file("stop-\(name)"), contents: nil))
            }
            for name in ["b", "c"] { await children[name]?.waitForExit() }
            for name in ["b", "c"] {
                let final = FileManager.default.contents(atPath: file("final-\(name)")).map {
                    String(decoding: $0, as: UTF8.self)
                }
                #expect(final == "\(total)", "\(name)'s value")
            }
            #expect(try await server.value(Int.self, at: url) == total)
            let stored = PersistedState(
                0, key: key, storage: FileStateStorage.file(directory, sharedAcrossProcesses: true))
            #expect(stored.value == total)
            let conflicts = children.values.flatMap { child in
                child.diagnostics.split(separator: "\n").filter { $0.hasPrefix("conflict") || $0.contains("HTTP 412") }
            }
            #expect(conflicts.isEmpty, "\(conflicts.count) conflicting writes: \(conflicts.prefix(5))")
        }
    }

    /// A sender killed in the middle of a PUT, on a server that keeps what it got of it (wsgidav
    /// does): the server holds the first bytes of the key's own value, cut short, empty or still
    /// decodable. The process that takes over finds them to be a prefix of what its record says was
    /// being sent, and writes the value over them: no conflict, no merge, no error.
    @Test(arguments: RealHTTPServer.Kind.allCases, [0, 1, 2])
    func aTakeoverWritesOverThePreviousSendersPutCutShort(kind: RealHTTPServer.Kind, kept: Int) async throws {
        try await RealHTTPServer.with(kind) { server, directory in
            let url = server.resource()
            let key = uniqueKey("torn")
            // The first sender counts to 105, is agreed with the server, and dies.
            let first = try await SinksHelper.launch([
                "sync-shared-count", directory.path, key, url.absoluteString, "105",
                server.headers["Authorization"] ?? "-",
            ])
            #expect(first.firstLine == "ready 0")
            #expect(FileManager.default.createFile(atPath: directory.appending(path: "go").path, contents: nil))
            try await waitUntil("the server at 105") { try await server.value(Int.self, at: url) == 105 }
            try await waitUntil("the agreement at 105 stored") {
                try records(directory, key).values.first?.base == Data("105".utf8)
            }
            await first.kill()

            // What the kill left, had it come in the middle of sending 110: storage holds it, the
            // record says it was being sent, and the server kept `kept` bytes of it.
            let sending = Data("110".utf8)
            let storage = FileStateStorage.file(directory, sharedAcrossProcesses: true)
            try sending.write(to: storage.fileURL(forKey: key))
            var stored = try records(directory, key)
            let name = try #require(stored.keys.first)
            stored[name]?.hasUnsentChanges = true
            stored[name]?.sending = sending
            try JSONEncoder().encode(["records": stored]).write(to: recordFile(directory, key))
            let (status, _, _) = try await server.request(
                "PUT", url, body: sending.prefix(kept),
                headers: ["If-Match": stored[name]?.validator ?? "*", "Content-Type": "application/json"])
            #expect((200..<300).contains(status))

            let merges = LockedBox(0)
            let sink = HTTPSyncSink<Int>(
                endpoint: url, timeout: .seconds(10),
                conflictPolicy: .merge { _, local, remote in
                    merges.withLock { $0 += 1 }
                    return max(local, remote)
                }
            ) { request in
                for (field, value) in server.headers { request.setValue(value, forHTTPHeaderField: field) }
            }
            let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
            #expect(state.value == 110)
            #expect(await state.flush(timeout: .seconds(60)))
            #expect(try await server.value(Int.self, at: url) == 110)
            #expect(state.value == 110)
            #expect(merges.withLock { $0 } == 0)
            #expect(state.syncStatus.value.lastError == nil)
        }
    }

    private func recordFile(_ directory: URL, _ key: String) -> URL {
        directory.appending(path: FileStateStorage.fileName(forKey: SyncRecordStore.storageKey(for: key)))
    }

    /// Takes the sender lock of `key` as another process would: a lock on another open file
    /// description of the lock file. Returns the descriptor, to unlock or close.
    private func holdAnotherSendersLock(_ directory: URL, _ key: String) -> Int32 {
        let lockPath = directory.appending(path: ".\(FileStateStorage.fileName(forKey: key)).sender.lock").path
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        #expect(descriptor >= 0)
        #expect(flock(descriptor, LOCK_EX | LOCK_NB) == 0)
        return descriptor
    }

    private func records(_ directory: URL, _ key: String) throws -> [String: SyncRecord] {
        guard let data = FileManager.default.contents(atPath: recordFile(directory, key).path) else { return [:] }
        return try JSONDecoder().decode([String: [String: SyncRecord]].self, from: data)["records"] ?? [:]
    }

    /// Only the key's sender writes its sync record: a process that is not the sender never
    /// rewrites what the sender recorded, and writes it once it takes over.
    @Test func onlyTheSenderWritesTheSyncRecord() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let key = uniqueKey("record")
        let storage = FileStateStorage.file(directory.url, sharedAcrossProcesses: true)
        let recordFile = directory.url.appending(
            path: FileStateStorage.fileName(forKey: SyncRecordStore.storageKey(for: key))
        ).path
        let descriptor = holdAnotherSendersLock(directory.url, key)
        defer { close(descriptor) }
        let theirs = Data(#"{"records":{}}"#.utf8)
        #expect(FileManager.default.createFile(atPath: recordFile, contents: theirs))

        let sink = TestRemoteSink<Int>(destination: "memory")
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
        for _ in 0..<20 { state.modify { $0 += 1 } }
        _ = await state.flush(timeout: .seconds(5))
        try await Task.sleep(for: .milliseconds(200))
        #expect(FileManager.default.contents(atPath: recordFile) == theirs)
        #expect(sink.sent.isEmpty)

        // The sender is gone: the next change takes over, and its agreement is recorded.
        #expect(flock(descriptor, LOCK_UN) == 0)
        state.modify { $0 += 1 }
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(sink.sent.last == 21)
        #expect(FileManager.default.contents(atPath: recordFile) != theirs)
    }

    /// A process whose changes the sender never saw sends them once the sender is gone, with no
    /// change of its own after that: its last changes are not left on the file alone until some
    /// process writes the key again.
    @Test func changesTheSenderNeverSawAreSentOnceItIsGone() async throws {
        let directory = TemporaryDirectory()
        defer { directory.cleanUp() }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let key = uniqueKey("unseen")
        let storage = FileStateStorage.file(directory.url, sharedAcrossProcesses: true)
        // Held until that process dies without sending our changes.
        let descriptor = holdAnotherSendersLock(directory.url, key)
        defer { close(descriptor) }

        let sink = TestRemoteSink<Int>(destination: "memory")
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
        for _ in 0..<20 { state.modify { $0 += 1 } }
        _ = await state.flush(timeout: .seconds(5))
        #expect(sink.sent.isEmpty)

        #expect(flock(descriptor, LOCK_UN) == 0)
        try await waitUntil("the value sent") { sink.sent.last == 20 }
        #expect(await state.flush(timeout: .seconds(60)))
        #expect(sink.server == 20)
        #expect(try records(directory.url, key).values.map(\.base) == [Data("20".utf8)])
        withExtendedLifetime(state) {}
    }
}
