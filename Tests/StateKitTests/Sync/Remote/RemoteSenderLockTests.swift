import Foundation
import StateKit
import StateKitHTTP
import Testing

/// Semantics 25, the synced half: a key persisted in storage shared across processes and synced
/// to a server is sent by one process at a time (``RemoteSenderLock``); the other processes'
/// changes reach the server through the file. Two real child processes against the real servers.
@Suite(.timeLimit(.minutes(3)), .serialized) struct RemoteSenderLockTests {
    init() { DiagnosticsRecorder.start() }

    @Test(arguments: RealHTTPServer.Kind.allCases)
    func twoProcessesSyncingOneKeyNeverSendConflictingWrites(kind: RealHTTPServer.Kind) async throws {
        guard let server = try await RealHTTPServer.start(kind) else { return }
        let directory = TemporaryDirectory()
        defer {
            server.stop()
            directory.cleanUp()
        }
        try FileManager.default.createDirectory(at: directory.url, withIntermediateDirectories: true)
        let url = server.resource()
        let key = uniqueKey("counter")
        let perProcess = 150
        let arguments = [
            "sync-shared-count", directory.url.path, key, url.absoluteString, "\(perProcess)",
            server.headers["Authorization"] ?? "-",
        ]
        let first = try await SinksHelper.launch(arguments)
        let second = try await SinksHelper.launch(arguments)
        #expect(first.firstLine == "ready 0")
        #expect(second.firstLine == "ready 0")
        #expect(FileManager.default.createFile(atPath: directory.url.appending(path: "go").path, contents: nil))

        // Both count; whichever sends, the server ends at every increment of both.
        var held = 0
        let deadline = ContinuousClock.now + .seconds(60)
        while held != 2 * perProcess && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            held = try await serverValue(server, url) ?? 0
        }
        #expect(held == 2 * perProcess)
        await first.kill()
        await second.kill()
        let conflicts = [first, second].flatMap { child in
            child.diagnostics.split(separator: "\n").filter { $0.hasPrefix("conflict") }
        }
        #expect(conflicts.isEmpty, "conflicting writes: \(conflicts.prefix(5))")

        // A relaunch (this process) takes over sending, from the shared value.
        let storage = FileStateStorage.file(directory.url, sharedAcrossProcesses: true)
        let sink = HTTPSyncSink<Int>(endpoint: url, timeout: .seconds(10), conflictPolicy: .serverWins) { request in
            for (field, value) in server.headers { request.setValue(value, forHTTPHeaderField: field) }
        }
        let state = SyncedState(0, key: key, storage: storage, sinks: [sink])
        #expect(await state.flush(timeout: .seconds(20)))
        #expect(state.value == 2 * perProcess)
        state.modify { $0 += 1 }
        #expect(await state.flush(timeout: .seconds(20)))
        #expect(try await serverValue(server, url) == 2 * perProcess + 1)
    }

    private func serverValue(_ server: RealHTTPServer, _ url: URL) async throws -> Int? {
        for attempt in 1... {
            do {
                let (status, body, _) = try await server.request("GET", url)
                return status == 200 ? try JSONDecoder().decode(Int.self, from: body) : nil
            } catch  where attempt < 5 {
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        return nil
    }
}
